-- Inventory: the write model stock commands lock and update in their own transaction, and the read
-- model the `inventory` projection folds. Quantities are exact thousandths of a unit (bigint), never
-- floats. Every write-model row here is a fold of the event store (`backoffice admin rebuild-stock`).

-- The organization's settings (event `SettingsChanged`): the negative-stock policy, `allow` (a
-- shortfall is a warning) or `block` (422), and the fiscal profile invoicing uses.
alter table organizations
    add column negative_stock text not null default 'allow' check (negative_stock in ('allow', 'block')),
    add column legal_name text,
    add column tax_id text,
    add column tax_category text,
    add column prices_include_tax boolean not null default true;
alter table organizations_view
    add column legal_name text,
    add column tax_id text,
    add column tax_category text;

-- What stock commands need of a variant: whether it holds stock (`product`), holds none (`service`)
-- or moves as its components (`combo`).
alter table product_variants add column product_type text not null default 'product';
update product_variants v set product_type = latest.product_type
from (select distinct on (stream_id) stream_id, coalesce(data->'shared'->>'product_type', 'product') as product_type
      from events where stream_type = 'product' order by stream_id, version desc) latest
where latest.stream_id = v.group_id;

create table product_components (
    org_id       uuid   not null,
    combo_id     uuid   not null,
    component_id uuid   not null,
    quantity     bigint not null check (quantity > 0),
    primary key (org_id, combo_id, component_id)
);

-- On hand per variant and warehouse. Stock commands lock these rows (in key order, by one statement)
-- for the whole decision: that lock, not a stream version, serializes concurrent moves of the same
-- stock.
create table stock_levels (
    org_id       uuid   not null,
    variant_id   uuid   not null,
    warehouse_id uuid   not null,
    on_hand      bigint not null,
    primary key (org_id, variant_id, warehouse_id)
);

-- Opening stock recorded before this migration (product creations were the only stock events).
insert into stock_levels (org_id, variant_id, warehouse_id, on_hand)
select org_id, (s->>'variant_id')::uuid, (s->>'warehouse_id')::uuid, sum(((s->>'quantity')::numeric * 1000)::bigint)
from events, json_array_elements(coalesce(data->'opening_stock', '[]'::json)) s
where stream_type = 'product' and event_type = 'ProductCreated'
group by 1, 2, 3;

-- Active reservations, one row per reserved (variant, warehouse) of a reservation; they count in
-- `reserved` through `reserved_through` (the organization's calendar date, UTC-3) and are removed when
-- released or recorded as expired.
create table stock_reservations (
    org_id           uuid   not null,
    reservation_id   uuid   not null,
    variant_id       uuid   not null,
    warehouse_id     uuid   not null,
    quantity         bigint not null check (quantity > 0),
    reserved_through date   not null,
    primary key (org_id, reservation_id, variant_id, warehouse_id)
);
create index stock_reservations_level on stock_reservations (org_id, variant_id, warehouse_id);
create index stock_reservations_through on stock_reservations (reserved_through);

-- Read model (projection `inventory`): levels, reservations, the ledger and the transfers.
create table inventory_levels (
    org_id       uuid        not null,
    variant_id   uuid        not null,
    warehouse_id uuid        not null,
    on_hand      bigint      not null,
    updated_at   timestamptz not null,
    primary key (org_id, variant_id, warehouse_id)
);
create index inventory_levels_warehouse on inventory_levels (org_id, warehouse_id, variant_id);

create table inventory_reservations (
    org_id           uuid   not null,
    reservation_id   uuid   not null,
    variant_id       uuid   not null,
    warehouse_id     uuid   not null,
    quantity         bigint not null,
    reserved_through date   not null,
    primary key (org_id, reservation_id, variant_id, warehouse_id)
);
create index inventory_reservations_level on inventory_reservations (org_id, variant_id, warehouse_id);

-- The ledger: one row per change of on-hand. `seq` is the event's position times 1000 plus the
-- change's index in it: a stable order in which every level's rows follow its commits.
create table inventory_movements (
    org_id       uuid        not null,
    seq          bigint      not null,
    id           uuid        not null,
    variant_id   uuid        not null,
    warehouse_id uuid        not null,
    cause_type   text        not null,
    cause_id     uuid        not null,
    quantity     bigint      not null,
    on_hand      bigint      not null,
    occurred_on  date        not null,
    created_at   timestamptz not null,
    primary key (org_id, seq)
);
create index inventory_movements_variant on inventory_movements (org_id, variant_id, seq);
create index inventory_movements_warehouse on inventory_movements (org_id, warehouse_id, seq);

create table stock_transfers_view (
    org_id                   uuid        not null,
    id                       uuid        not null,
    origin_warehouse_id      uuid        not null,
    destination_warehouse_id uuid        not null,
    occurred_on              date        not null,
    doc                      jsonb       not null,
    created_at               timestamptz not null,
    primary key (org_id, id)
);
