-- Price lists: the list's settings and its explicit prices. `revision` is the list's stream version,
-- so it moves with every change of the list.
create table price_lists_view (
    org_id                 uuid        not null,
    id                     uuid        not null,
    name                   text        not null,
    description            text,
    is_automatic           boolean     not null,
    automatic_pricing_mode text,
    adjustment_hundredths  bigint,
    tax_inclusive          boolean     not null,
    is_active              boolean     not null,
    revision               bigint      not null,
    created_at             timestamptz not null,
    updated_at             timestamptz not null,
    primary key (org_id, id)
);

create table price_list_prices (
    org_id        uuid   not null,
    price_list_id uuid   not null,
    product_id    uuid   not null,
    unit_price    bigint not null,
    primary key (org_id, price_list_id, product_id)
);

-- The position of the last product event of an organization that could move a price (creation, cost,
-- price, markup, VAT rate, active flag): with a list's revision it makes the list's pricing revision.
create table product_pricing_revisions (
    org_id   uuid   not null primary key,
    revision bigint not null
);

-- Automatic margin pricing of products (hundredths of a percent over cost), shown on the detail.
alter table products_view add column markup_hundredths bigint;
