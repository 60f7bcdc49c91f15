-- The ledger lists its rows in the order they are folded: commit order, (transaction id, position),
-- then the change's index within its event (`seq`). Positions alone do not follow commit order (a
-- transaction can take a lower position than one that commits before it), so a ledger ordered and
-- paged by `seq` put a row folded late behind a page already served, and a client walking it by
-- cursor never saw that row. `transaction_id` is the event's, as `events.transaction_id::text::int8`.
alter table inventory_movements add column transaction_id bigint;
update inventory_movements m set transaction_id = e.transaction_id::text::int8
from events e
where e.position = m.seq / 1000 and e.org_id = m.org_id;
alter table inventory_movements alter column transaction_id set not null;
-- The key is the ledger's order (a redelivered event's rows, the same transaction's, still conflict and
-- are left out), so the list pages on it with no index more than before. A rebuild swaps in a table
-- whose indexes it named itself, so the old key and indexes are found by table, not by name.
do $$
declare
    old record;
begin
    for old in select conname from pg_constraint where conrelid = 'inventory_movements'::regclass and contype = 'p'
    loop
        execute format('alter table inventory_movements drop constraint %I', old.conname);
    end loop;
    for old in select indexname from pg_indexes
               where schemaname = current_schema() and tablename = 'inventory_movements'
    loop
        execute format('drop index %I', old.indexname);
    end loop;
end
$$;
alter table inventory_movements add primary key (org_id, transaction_id, seq);
create index inventory_movements_variant on inventory_movements (org_id, variant_id, transaction_id, seq);
create index inventory_movements_warehouse on inventory_movements (org_id, warehouse_id, transaction_id, seq);
