-- How report_rollups' upserts fare with the measures in the key's index (`include`, before 0038) and
-- with the key alone and room on each page (0038): the same rollup keys folded 2,000 batches at a
-- time, twice per table, then their sizes, their HOT updates and a month report over them.
-- Run: psql -h 127.0.0.1 -U postgres -d postgres -f scripts/rollup_update_probe.sql
-- It creates and leaves the database rollup_update_probe (drop it afterwards).
drop database if exists rollup_update_probe;
create database rollup_update_probe;
\c rollup_update_probe
\timing off
create table measures_in_key (org_id uuid not null, report text not null, period text not null, dimension text not null, key text not null, day date not null, epoch bigint not null,
 count bigint not null, quantity bigint not null, net bigint not null, tax bigint not null, total bigint not null, cost bigint not null, amount bigint not null, fee bigint not null, value bigint not null,
 primary key (org_id, report, period, dimension, day, key, epoch) include (count, quantity, net, tax, total, cost, amount, fee, value));
create table key_only (like measures_in_key including defaults);
alter table key_only add primary key (org_id, report, period, dimension, day, key, epoch);
alter table key_only set (fillfactor = 80);
create or replace procedure fold(t text, rounds int) language plpgsql as $$
begin
  for r in 1..rounds loop
    execute format($q$insert into %I as t
      select '00000000-0000-0000-0000-000000000001'::uuid, 'inventory', p, 'product', 'k' || k, date '2026-12-05', 0, 1, 3000, 0,0,0,0,0,0, 100
      from (select distinct (random()*2000)::int k from generate_series(1, 300)) ks, (values ('day'), ('month')) v(p)
      on conflict (org_id, report, period, dimension, day, key, epoch) do update set
        count = t.count + excluded.count, quantity = t.quantity + excluded.quantity, value = t.value + excluded.value$q$, t);
    commit;
  end loop;
end $$;
\timing on
call fold('measures_in_key', 2000);
call fold('key_only', 2000);
call fold('measures_in_key', 2000);
call fold('key_only', 2000);
\timing off
select relname, n_tup_upd, n_tup_hot_upd, n_dead_tup, pg_size_pretty(pg_table_size(relid)) heap, pg_size_pretty(pg_indexes_size(relid)) idx from pg_stat_user_tables order by relname;
\timing on
\set month_report 'where org_id = ''00000000-0000-0000-0000-000000000001'' and report = ''inventory'' and period = ''month'' and dimension = ''product'''
select sum(count), sum(value) from measures_in_key :month_report;
select sum(count), sum(value) from key_only :month_report;
select sum(count), sum(value) from measures_in_key :month_report;
select sum(count), sum(value) from key_only :month_report;
