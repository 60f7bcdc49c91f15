-- Sales: the write model sale commands keep in their transaction, and the read model the `sales`
-- projection folds. Amounts are integer cents.

-- The customer a sale goes to when it names none (seeded with the organization).
alter table organizations add column default_customer_id uuid;
update organizations o set default_customer_id = (
    select stream_id from events e where e.org_id = o.id and e.stream_type = 'customer' order by position limit 1);

-- A point of sale is `electronic` (the tax authority numbers and authorizes its vouchers) or `manual`
-- (the service numbers them, gap-free).
alter table points_of_sale add column kind text not null default 'electronic' check (kind in ('electronic', 'manual'));

-- Sales whose authorization was deferred (the authority was unavailable or its answer lost), retried
-- by the fiscal worker with backoff. Derived from the sale events.
create table fiscal_pending (
    org_id          uuid        not null,
    sale_id         uuid        not null,
    attempts        integer     not null,
    next_attempt_at timestamptz not null,
    primary key (org_id, sale_id)
);
create index fiscal_pending_due on fiscal_pending (next_attempt_at);

-- Read model (projection `sales`).
create table sales_view (
    org_id             uuid        not null,
    id                 uuid        not null,
    customer_id        uuid        not null,
    customer_name      text        not null,
    invoice_date       date        not null,
    status             text        not null,
    integration_source text,
    integration_id     text,
    formatted_number   text,
    total              bigint      not null,
    doc                jsonb       not null,
    created_at         timestamptz not null,
    updated_at         timestamptz not null,
    primary key (org_id, id)
);
create index sales_view_customer on sales_view (org_id, customer_id, id);
create index sales_view_date on sales_view (org_id, invoice_date, id);
