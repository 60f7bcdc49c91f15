-- What a sale owes may fall below zero: a credit note for more than the sale still owed leaves the
-- difference against it, so after a payment voided later the sale owes its total less its credits and
-- the payments that remain (a sale paid at the till, credited in full, then its payment voided, owes
-- nothing). Until now the write model (`open_documents.due`) and the sales read model
-- (`sales_view.amount_due`) held it at zero and lost the difference; readers now show what is owed as
-- never below zero.
--
-- Workers and projectors of other processes may be running: holding both tables until this commits, no
-- change to what a sale owes and no sales projector batch (with the checkpoint it moves) lands between
-- reading the events and writing the sums. A process of an earlier build started after this still holds
-- what is owed at zero: upgrade every worker and projector.
lock table open_documents in exclusive mode;
lock table sales_view in exclusive mode;

-- Only a sale a credit note corrected can have lost anything.
create temporary table credited_sales on commit drop as
select distinct org_id, (data->>'associated_sale_id')::uuid as sale_id
from events
where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' = 'credit_note'
  and data->>'associated_sale_id' is not null;

-- Every change to what those sales owe: the opening balance, the credit notes, and customer payments'
-- allocations (a payment taken with the sale is in its balance; its void gives its allocation back).
create temporary table sale_due_changes on commit drop as
select e.org_id, e.stream_id as sale_id, e.transaction_id, e.position,
       greatest(0, (e.data->>'balance')::bigint) as change
from credited_sales c
join events e on e.stream_id = c.sale_id and e.org_id = c.org_id
where e.stream_type = 'sale' and e.event_type = 'SaleRecorded' and e.data->>'document_kind' <> 'credit_note'
union all
select org_id, (data->>'associated_sale_id')::uuid, transaction_id, position, -(data->>'total')::bigint
from events
where stream_type = 'sale' and event_type = 'SaleRecorded' and data->>'document_kind' = 'credit_note'
  and data->>'associated_sale_id' is not null
union all
select p.org_id, (a->>'document_id')::uuid, p.transaction_id, p.position,
       case when p.event_type = 'CustomerPaymentVoided' then 1 else -1 end * (a->>'amount')::bigint
from events p, json_array_elements(p.data->'allocations') a
where p.stream_type = 'customer_payment'
  and (p.event_type in ('CustomerPaymentAllocated', 'CustomerPaymentVoided')
       or (p.event_type = 'CustomerPaymentRecorded' and p.data->>'sale_id' is null))
  and exists (select 1 from credited_sales c where c.org_id = p.org_id and c.sale_id = (a->>'document_id')::uuid);

-- The write model moves with its events.
update open_documents d set due = c.due
from (select org_id, sale_id, sum(change) as due from sale_due_changes group by 1, 2) c
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
      group by 1, 2) c
where v.org_id = c.org_id and v.id = c.sale_id;
