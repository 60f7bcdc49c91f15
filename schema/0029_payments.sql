-- Payments: what customers paid and what the business paid suppliers, allocated to the documents they
-- settle, each posted to the treasury's journal.

alter table organizations
    add column receivables_account_id  uuid,
    add column payables_account_id     uuid,
    add column payment_fees_account_id uuid;

-- Write model: every sale (invoices and debit notes) and purchase with what is still owed on it. Sales
-- and purchases open their row in the transaction that records them; a credit note lowers the sale it
-- corrects; payments lock the rows they settle and lower them, and a void gives the amounts back.
create table open_documents (
    org_id     uuid   not null,
    kind       text   not null check (kind in ('sale', 'purchase')),
    id         uuid   not null,
    contact_id uuid   not null,
    total      bigint not null,
    due        bigint not null,
    due_date   date,
    primary key (org_id, kind, id)
);
create index open_documents_contact on open_documents (org_id, kind, contact_id);

-- Sales and purchases recorded before payments existed.
insert into open_documents (org_id, kind, id, contact_id, total, due, due_date)
select org_id, 'sale', stream_id, (data->'customer'->>'id')::uuid, (data->>'total')::bigint,
       (data->>'balance')::bigint, (data->>'due_date')::date
from events
where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' in ('invoice', 'debit_note')
on conflict do nothing;
update open_documents d set due = greatest(0, d.due - notes.total)
from (select org_id, (data->>'associated_sale_id')::uuid as sale_id, sum((data->>'total')::bigint) as total
      from events
      where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' = 'credit_note'
        and data->>'associated_sale_id' is not null
      group by 1, 2) notes
where d.org_id = notes.org_id and d.kind = 'sale' and d.id = notes.sale_id;
insert into open_documents (org_id, kind, id, contact_id, total, due, due_date)
select org_id, 'purchase', stream_id, (data->>'supplier_id')::uuid, (data->'amounts'->>'total_ars')::bigint,
       (data->'amounts'->>'total_ars')::bigint, (data->>'due_date')::date
from events
where stream_type = 'purchase' and event_type = 'PurchaseRecorded'
on conflict do nothing;

-- Read model (the `payments` projection): customer and supplier payments as they stand.
create table payments_view (
    org_id      uuid        not null,
    side        text        not null check (side in ('customer', 'supplier')),
    id          uuid        not null,
    contact_id  uuid        not null,
    occurred_on date        not null,
    status      text        not null,
    -- The locations of its lines, `kind/id`: a delegated token sees the payment when it sees them all.
    locations   text[]      not null,
    created_by  text,
    doc         jsonb       not null,
    created_at  timestamptz not null,
    updated_at  timestamptz not null,
    primary key (org_id, id)
);
create index payments_view_recent on payments_view (org_id, side, occurred_on desc, created_at desc, id desc);
