-- Every fold adds to a rollup row that already exists. While the measures rode in the key's index
-- (`include`), no such update could stay on its heap page (HOT): each left a dead tuple and a new index
-- entry, and the table swelled with its own history. The key alone is indexed now, and the pages keep
-- room for the updated rows; a report reads the few heap pages of the rows it sums.
do $$
declare
    key_name text;
begin
    select conname into strict key_name from pg_constraint
    where conrelid = 'report_rollups'::regclass and contype = 'p';
    execute format('alter table report_rollups drop constraint %I', key_name);
end
$$;
alter table report_rollups add primary key (org_id, report, period, dimension, day, key, epoch);
alter table report_rollups set (fillfactor = 80);

-- A rebuild's shadow table keeps its original's storage parameters (the fillfactor above):
-- `like … including all` copies columns, constraints and indexes, not those.
create or replace function projection_shadow_create(tables text[]) returns void
language plpgsql as $$
declare
    t text;
    options text[];
begin
    foreach t in array tables loop
        execute format('drop table if exists %I', t || '_next');
        execute format('create unlogged table %I (like %I including all)', t || '_next', t);
        select reloptions into options from pg_class where oid = t::regclass;
        if options is not null then
            execute format('alter table %I set (%s)', t || '_next', array_to_string(options, ', '));
        end if;
    end loop;
end
$$;
