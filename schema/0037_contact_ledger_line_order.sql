-- A sale and the payment it took are one event, so their two ledger rows share a position. `line_no`
-- is a row's place among the rows its event wrote (the document 0, its payment 1), and statements order
-- by it after the position: the sale before its payment, whatever their ids.
alter table contact_ledger add column line_no smallint not null default 0;
update contact_ledger payment set line_no = 1
from contact_ledger document
where payment.kind = 'payment' and document.kind in ('sale', 'debit_note', 'credit_note')
  and document.org_id = payment.org_id and document.position = payment.position;
drop index contact_ledger_statement;
create index contact_ledger_statement on contact_ledger (org_id, side, contact_id, occurred_on, position, line_no);
