-- What each sale and purchase still owes, as reads show it: the sales projection folds customer payments
-- (and credit notes) into `sales_view.amount_due`, the purchases projection supplier payments into
-- `purchases_view.amount_due`; the payment status follows from it and the total.
alter table sales_view add column amount_due bigint;
update sales_view set amount_due = case when doc->>'document_kind' = 'credit_note' then 0
                                        else greatest(0, (doc->>'balance')::bigint) end;
alter table sales_view alter column amount_due set not null;
alter table sales_view add column payment_status text not null generated always as (
    case when amount_due <= 0 then 'paid' when amount_due < total then 'partially_paid' else 'pending' end) stored;
create index sales_view_payment_status on sales_view (org_id, payment_status, id);

-- Every sale but a credit note can be settled (voucher 90 and the historical contract's kinds too).
insert into open_documents (org_id, kind, id, contact_id, total, due, due_date)
select org_id, 'sale', stream_id, (data->'customer'->>'id')::uuid, (data->>'total')::bigint,
       greatest(0, (data->>'balance')::bigint), (data->>'due_date')::date
from events
where stream_type = 'sale' and event_type = 'SaleRecorded'
  and data->>'document_kind' not in ('invoice', 'debit_note', 'credit_note')
on conflict do nothing;

alter table purchases_view add column amount_due bigint;
update purchases_view set amount_due = total_ars;
alter table purchases_view alter column amount_due set not null;
alter table purchases_view add column payment_status text not null generated always as (
    case when amount_due <= 0 then 'paid' when amount_due < total_ars then 'partially_paid' else 'pending' end) stored;
