-- Treasury: where money is kept (bank accounts, cash registers, safes), the chart of accounts and cost
-- centers behind them, the operator's central-bank rates, and the read models of the journal.

-- Write model (commands read and lock these; every row can be rebuilt from the events).
alter table ledger_accounts add column currency text not null default 'PES' check (currency in ('PES', 'DOL'));

create table cost_centers (
    org_id    uuid    not null,
    id        uuid    primary key,
    code      text    not null,
    name      text    not null,
    is_active boolean not null default true,
    unique (org_id, code)
);

-- One uuid may name both a register and a safe: the kind is part of the identity.
create table treasury_locations (
    org_id            uuid not null,
    kind              text not null check (kind in ('bank_account', 'cash_register', 'safe')),
    id                uuid not null,
    currency          text not null check (currency in ('PES', 'DOL')),
    ledger_account_id uuid not null,
    status            text not null check (status in ('active', 'inactive')),
    primary key (org_id, kind, id)
);

-- Central-bank rates the operator loads (`backoffice admin load-rates`): pesos per unit, per date.
create table exchange_rates (
    currency text    not null,
    rate_on  date    not null,
    rate     numeric not null check (rate > 0),
    primary key (currency, rate_on)
);

-- Read models (the `treasury` projection).
create table treasury_locations_view (
    org_id     uuid        not null,
    kind       text        not null,
    id         uuid        not null,
    currency   text        not null,
    status     text        not null,
    doc        jsonb       not null,
    created_at timestamptz not null,
    updated_at timestamptz not null,
    primary key (org_id, kind, id)
);

-- Every journal line that touches a location, in the order its entry was recorded, with the location's
-- balance after it: a balance as of any instant is the running figure of the last line recorded by
-- then. Reversals are lines too; nothing here is ever removed.
create table journal_lines (
    org_id             uuid        not null,
    location_kind      text        not null,
    location_id        uuid        not null,
    recorded_at        timestamptz not null,
    position           bigint      not null,
    line_no            integer     not null,
    entry_id           uuid        not null,
    functional         bigint      not null,
    native             bigint,
    created_by         text,
    running_functional bigint      not null,
    running_native     bigint,
    -- Lines so far of this location whose native amount is unknown (a dollar line without its dollars).
    running_gaps       bigint      not null,
    primary key (org_id, location_kind, location_id, recorded_at, position, line_no)
);

-- The movements as they stand: one row per location line of a live movement (a replaced or deleted
-- manual movement's rows go; the journal keeps them).
create table treasury_movements_view (
    org_id               uuid        not null,
    id                   uuid        not null,
    treasury_movement_id uuid        not null,
    location_kind        text        not null,
    location_id          uuid        not null,
    movement_type        text        not null,
    occurred_on          date        not null,
    created_by           text,
    doc                  jsonb       not null,
    created_at           timestamptz not null,
    primary key (org_id, id)
);
create index treasury_movements_view_recent
    on treasury_movements_view (org_id, occurred_on desc, created_at desc, id desc);
create index treasury_movements_view_movement on treasury_movements_view (org_id, treasury_movement_id);

create table funds_transfers_view (
    org_id           uuid        not null,
    id               uuid        not null,
    source_kind      text        not null,
    source_id        uuid        not null,
    destination_kind text        not null,
    destination_id   uuid        not null,
    occurred_on      date        not null,
    created_by       text,
    doc              jsonb       not null,
    created_at       timestamptz not null,
    primary key (org_id, id)
);
create index funds_transfers_view_recent on funds_transfers_view (org_id, occurred_on desc, created_at desc, id desc);
