-- Webhooks: endpoints (read model), durable deliveries and their attempts, and the key that encrypts
-- signing secrets at rest when SECRETS_KEY is not set.

insert into service_settings (name, value) values ('secrets_key', gen_random_bytes(32)) on conflict do nothing;

create table webhook_endpoints_view (
    org_id              uuid        not null,
    id                  uuid        not null,
    label               text        not null,
    url                 text        not null,
    enabled_events      text[]      not null,
    api_version         text        not null,
    -- active, paused or disabled
    status              text        not null,
    secret_nonce        text        not null,
    secret_ciphertext   text        not null,
    owner_credential_id uuid,
    created_at          timestamptz not null,
    updated_at          timestamptz not null,
    primary key (org_id, id)
);
create index webhook_endpoints_view_id on webhook_endpoints_view (id);

-- One row per (endpoint, event): the signed body is fixed when the row is made, so every attempt sends
-- the same bytes under the same event id. Operational state, not rebuilt from events.
create table webhook_deliveries (
    id              uuid        primary key,
    org_id          uuid        not null,
    endpoint_id     uuid        not null,
    event_id        uuid        not null,
    event_type      text        not null,
    payload         text        not null,
    is_test         boolean     not null default false,
    -- pending, succeeded, failed or cancelled
    status          text        not null default 'pending',
    attempts        integer     not null default 0,
    next_attempt_at timestamptz not null default now(),
    lease_until     timestamptz,
    created_at      timestamptz not null default now(),
    completed_at    timestamptz,
    unique (endpoint_id, event_id)
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, created_at desc, id desc);

create table webhook_attempts (
    delivery_id  uuid        not null references webhook_deliveries (id),
    attempt      integer     not null,
    started_at   timestamptz not null,
    duration_ms  integer     not null,
    status_code  integer,
    error        text,
    primary key (delivery_id, attempt)
);
