-- API platform: credentials with scopes and delegation, per-organization rate limits, idempotency
-- keys, points of sale, and the read models of the configuration resources.

alter table api_keys rename to credentials;
alter table credentials rename column key_hash to secret_hash;
alter index api_keys_org rename to credentials_org;
alter table credentials
    add column kind       text   not null default 'api_key' check (kind in ('api_key', 'delegated_token')),
    add column user_name  text,
    add column visibility text   check (visibility in ('own', 'organization')),
    add column registers  uuid[] not null default '{}',
    add column safes      uuid[] not null default '{}';

alter table organizations
    add column rate_limit_per_minute integer not null default 120 check (rate_limit_per_minute > 0),
    add column rate_limit_per_hour   integer not null default 5000 check (rate_limit_per_hour > 0);

-- One row per (organization, key): the outcome of the first request that used it, written in the same
-- transaction as that request's events. Kept at least 24 hours.
create table idempotency_keys (
    org_id       uuid        not null,
    key          text        not null,
    operation    text        not null,
    request_hash bytea       not null,
    response     jsonb       not null,
    created_at   timestamptz not null default now(),
    primary key (org_id, key)
);
create index idempotency_keys_created on idempotency_keys (created_at);

-- Point-of-sale numbers are unique per organization.
create table points_of_sale (
    org_id uuid    not null,
    id     uuid    primary key,
    number integer not null check (number between 1 and 99999),
    unique (org_id, number)
);

create table organizations_view (
    id                    uuid        primary key,
    name                  text        not null,
    slug                  text        not null,
    country               text        not null,
    rate_limit_per_minute integer     not null,
    rate_limit_per_hour   integer     not null,
    created_at            timestamptz not null,
    updated_at            timestamptz not null
);

-- Configuration resources share one shape: the stored fields as a document plus the columns lists
-- filter and sort on.
create table payment_methods_view (
    org_id     uuid        not null,
    id         uuid        not null,
    name       text        not null,
    is_default boolean     not null default false,
    parent_id  uuid,
    doc        jsonb       not null,
    created_at timestamptz not null,
    updated_at timestamptz not null,
    primary key (org_id, id)
);
create table warehouses_view (like payment_methods_view including all);
create table categories_view (like payment_methods_view including all);
create index categories_view_name on categories_view (org_id, lower(name), id);
create table points_of_sale_view (like payment_methods_view including all);

-- Ledger accounts a contact may default to (the chart of accounts is seeded per organization).
create table ledger_accounts (
    org_id    uuid    not null,
    id        uuid    primary key,
    code      text    not null,
    name      text    not null,
    is_active boolean not null default true,
    unique (org_id, code)
);
