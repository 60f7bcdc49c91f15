-- Purchasing: the write model purchase commands keep in their transaction, and the read model the
-- `purchases` projection folds. Amounts are integer cents; quantities exact thousandths.

-- A supplier's invoice is recorded once: per supplier and voucher type, its number (ignoring case).
create table purchase_invoices (
    org_id         uuid    not null,
    supplier_id    uuid    not null,
    voucher_type   integer not null,
    invoice_number text    not null,
    purchase_id    uuid    not null
);
create unique index purchase_invoices_number on purchase_invoices (org_id, supplier_id, voucher_type, lower(invoice_number));

-- Gap-free numbering per organization and series (`purchase_order`, and later quotes and delivery
-- notes): the row is locked by the command that takes the next number, so a refused command, which
-- rolls back, consumes none.
create table document_numbers (
    org_id uuid   not null,
    series text   not null,
    last   bigint not null,
    primary key (org_id, series)
);

-- Read model (projection `purchases`).
create table purchases_view (
    org_id                  uuid        not null,
    id                      uuid        not null,
    supplier_id             uuid        not null,
    voucher_type            integer     not null,
    supplier_invoice_number text        not null,
    invoice_date            date        not null,
    total_ars               bigint      not null,
    doc                     jsonb       not null,
    created_at              timestamptz not null,
    primary key (org_id, id)
);
create index purchases_view_supplier on purchases_view (org_id, supplier_id, id);
create index purchases_view_date on purchases_view (org_id, invoice_date, id);

create table purchase_orders_view (
    org_id      uuid        not null,
    id          uuid        not null,
    number      bigint      not null,
    supplier_id uuid        not null,
    status      text        not null,
    doc         jsonb       not null,
    created_at  timestamptz not null,
    updated_at  timestamptz not null,
    primary key (org_id, id)
);
create index purchase_orders_view_supplier on purchase_orders_view (org_id, supplier_id, id);
