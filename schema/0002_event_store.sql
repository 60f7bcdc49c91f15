-- The event store: the only source of truth. Everything else in the database can be rebuilt from it.

create table events (
    position       bigint generated always as identity primary key,
    -- Commit-order key: readers take rows below the snapshot xmin ordered by (transaction_id, position),
    -- so a transaction that commits late can never be skipped.
    transaction_id xid8        not null default pg_current_xact_id(),
    org_id         uuid        not null,
    stream_type    text        not null,
    stream_id      uuid        not null,
    version        integer     not null check (version >= 1),
    event_id       uuid        not null unique,
    event_type     text        not null,
    schema_version integer     not null check (schema_version >= 1),
    -- json, not jsonb: the payload is stored and served exactly as written, with no re-encoding.
    data           json        not null,
    metadata       json        not null,
    recorded_at    timestamptz not null default now(),
    unique (stream_id, version)
);

create index events_commit_order on events (transaction_id, position);
create index events_org_commit_order on events (org_id, transaction_id, position);

-- The database itself refuses to rewrite history.
create function refuse_history_change() returns trigger
language plpgsql as $$
begin
    raise exception '% is append-only: % refused', tg_table_name, tg_op
        using errcode = 'insufficient_privilege';
end
$$;

create trigger events_append_only
    before update or delete on events
    for each row execute function refuse_history_change();
create trigger events_no_truncate
    before truncate on events
    for each statement execute function refuse_history_change();

-- Per-organization hash chain, written by the sealer right after events commit, in commit order.
-- Each hash covers the previous hash of the organization and the canonical form of the event.
create table event_seals (
    org_id   uuid   not null,
    seq      bigint not null check (seq >= 1),
    position bigint not null unique,
    hash     bytea  not null,
    primary key (org_id, seq)
);

create trigger event_seals_append_only
    before update or delete on event_seals
    for each row execute function refuse_history_change();
create trigger event_seals_no_truncate
    before truncate on event_seals
    for each statement execute function refuse_history_change();

-- The head of each organization's chain (derived state: could be recomputed from event_seals).
create table chain_heads (
    org_id uuid   primary key,
    seq    bigint not null,
    hash   bytea  not null
);

-- Where each follower of the commit order (relay, sealer) has got to.
create table follower_checkpoints (
    name           text   primary key,
    transaction_id xid8   not null,
    position       bigint not null
);
