-- Products. The write model keeps each variant's group and SKU, so a replace finds its group and SKUs
-- stay unique per organization (case-insensitively) in the same transaction as the events.
create table product_variants (
    org_id              uuid not null,
    variant_id          uuid not null primary key,
    group_id            uuid not null,
    sku                 text not null,
    -- What bulk adjustments filter on, kept with every write of the group.
    default_supplier_id uuid,
    category_id         uuid
);
create unique index product_variants_sku on product_variants (org_id, lower(sku));
create index product_variants_supplier on product_variants (org_id, default_supplier_id);
create index product_variants_category on product_variants (org_id, category_id);

-- The read model: one row per variant, shared fields repeated.
create table products_view (
    org_id              uuid        not null,
    id                  uuid        not null,
    group_id            uuid        not null,
    name                text        not null,
    description         text,
    category_id         uuid,
    sku                 text        not null,
    barcode             text,
    oem_code            text,
    currency            text        not null,
    cost                bigint      not null,
    price               bigint      not null,
    tax_rate_id         integer     not null,
    stock_minimum       bigint,
    default_supplier_id uuid,
    product_type        text        not null,
    is_active           boolean     not null,
    options             jsonb       not null,
    option_values       jsonb       not null,
    metafields          jsonb       not null,
    created_at          timestamptz not null,
    updated_at          timestamptz not null,
    primary key (org_id, id)
);
create index products_view_supplier on products_view (org_id, default_supplier_id, id);
create index products_view_group on products_view (org_id, group_id);
