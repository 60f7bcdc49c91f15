-- Only the reports projection looks facts up by document, and only those of sales (a change of fiscal
-- status) and payments (a void). Stock and purchase facts carry their document too, but no one asks for
-- them by it: keep them out of the index, one entry fewer for every fact a movement or purchase writes.
-- A rebuild swaps in a table whose indexes were named by Postgres (`projection_shadow_swap`), so the old
-- index is found by its columns, not by the name 0036 gave it.
do $$
declare
    name text;
begin
    for name in
        select indexname from pg_indexes
        where schemaname = current_schema() and tablename = 'report_facts'
          and indexdef like '%(org_id, document_id)%'
    loop
        execute format('drop index %I', name);
    end loop;
end
$$;
create index report_facts_by_document on report_facts (org_id, document_id)
    where document_id is not null and report in ('sales', 'payments');
