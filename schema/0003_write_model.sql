-- Write-model rows: facts later commands must see consistently, written in the same transaction as
-- the events that establish them. They are derived from events and could be rebuilt from them.

create table organizations (
    id         uuid        primary key,
    name       text        not null,
    slug       text        not null unique,
    created_at timestamptz not null
);

-- API keys are stored as SHA-256 of the secret; the secret itself is shown once and never stored.
create table api_keys (
    id         uuid        primary key,
    org_id     uuid        not null references organizations (id),
    key_hash   bytea       not null unique,
    scopes     text[]      not null,
    created_at timestamptz not null,
    revoked_at timestamptz
);
create index api_keys_org on api_keys (org_id);

-- Settings the service needs for itself (for example the key that signs list cursors).
create table service_settings (
    name  text primary key,
    value bytea not null
);
insert into service_settings (name, value) values ('cursor_signing_key', gen_random_bytes(32));
