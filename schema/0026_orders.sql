-- Orders: the read model the `orders` projection folds, a whole state per order beside the columns its
-- list filters on. Orders are never removed (cancelled ones stay, `status` says so).
create table orders_view (
    org_id             uuid        not null,
    id                 uuid        not null,
    number             bigint      not null,
    customer_id        uuid        not null,
    status             text        not null,
    fulfillment_status text        not null,
    doc                jsonb       not null,
    created_at         timestamptz not null,
    updated_at         timestamptz not null,
    primary key (org_id, id)
);
create index orders_view_recent on orders_view (org_id, created_at desc, id desc);

-- Delivery notes: the one note a sale may have (removed with the note), and the read model the
-- `delivery_notes` projection folds (deleted notes stay, marked).
create table sale_delivery_notes (
    org_id  uuid not null,
    sale_id uuid not null,
    note_id uuid not null,
    primary key (org_id, sale_id)
);

create table delivery_notes_view (
    org_id           uuid        not null,
    id               uuid        not null,
    origin_type      text        not null,
    origin_id        uuid,
    point_of_sale_id uuid        not null,
    number           bigint      not null,
    customer_id      uuid        not null,
    deleted          boolean     not null,
    doc              jsonb       not null,
    created_at       timestamptz not null,
    updated_at       timestamptz not null,
    primary key (org_id, id)
);
create index delivery_notes_view_recent on delivery_notes_view (org_id, created_at desc, id desc);
