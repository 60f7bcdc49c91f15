-- What a sale owes may fall below zero: a credit note for more than the sale still owed leaves the
-- difference against it, so a payment voided later gives back only what the sale then owes (a sale paid
-- at the till, credited in full, then its payment voided, owes nothing). Until now the write model
-- (`open_documents.due`) and the sales read model (`sales_view.amount_due`) held it at zero and lost the
-- difference; readers now show what is owed as never below zero.
--
-- Every change to what a sale owes, from the event store: its opening balance, the credit notes that
-- correct it, and customer payments' allocations (a payment taken with the sale is in its balance).
create temporary table sale_due_changes on commit drop as
select org_id, stream_id as sale_id, transaction_id, position, false as credit,
       greatest(0, (data->>'balance')::bigint) as change
from events
where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' <> 'credit_note'
union all
select org_id, (data->>'associated_sale_id')::uuid, transaction_id, position, true, -(data->>'total')::bigint
from events
where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' = 'credit_note'
  and data->>'associated_sale_id' is not null
union all
select p.org_id, (a->>'document_id')::uuid, p.transaction_id, p.position, false,
       case when p.event_type = 'CustomerPaymentVoided' then 1 else -1 end * (a->>'amount')::bigint
from events p, json_array_elements(p.data->'allocations') a
where p.stream_type = 'customer_payment'
  and (p.event_type in ('CustomerPaymentAllocated', 'CustomerPaymentVoided')
       or (p.event_type = 'CustomerPaymentRecorded' and p.data->>'sale_id' is null));

-- Only a sale a credit note corrected can have lost anything. The write model moves with its events.
update open_documents d set due = c.due
from (select org_id, sale_id, sum(change) as due from sale_due_changes group by 1, 2 having bool_or(credit)) c
where d.org_id = c.org_id and d.kind = 'sale' and d.id = c.sale_id;

-- The read model holds what the sales projection has folded: the events at or below its checkpoint for
-- the organization, or below the floor a rebuild left (the nil organization's row).
update sales_view v set amount_due = c.due
from (select ch.org_id, ch.sale_id, sum(ch.change) as due
      from sale_due_changes ch
      where exists (select 1 from projection_checkpoints k
                    where k.projection = 'sales'
                      and k.org_id in (ch.org_id, '00000000-0000-0000-0000-000000000000')
                      and (ch.transaction_id, ch.position) <= (k.transaction_id, k.position))
      group by 1, 2 having bool_or(ch.credit)) c
where v.org_id = c.org_id and v.id = c.sale_id;
