-- Read side: tables folded from the event stream by the projectors, plus their checkpoints.

-- One row per (projection, organization): the commit-order key of the last event applied for that
-- organization. The row with the nil organization is a floor set by a rebuild: every event at or
-- below it is already reflected. A checkpoint moves in the same transaction as the read rows.
create table projection_checkpoints (
    projection     text   not null,
    org_id         uuid   not null,
    transaction_id xid8   not null,
    position       bigint not null,
    primary key (projection, org_id)
);

create table customers_view (
    org_id       uuid        not null,
    id           uuid        not null,
    name         text        not null,
    email        text,
    phone        text,
    tax_id       text,
    tax_id_type  text,
    tax_category text,
    person_type  text,
    country      text,
    province     text,
    city         text,
    address      text,
    apartment    text,
    postal_code  text,
    is_active    boolean     not null,
    created_at   timestamptz not null,
    updated_at   timestamptz not null,
    primary key (org_id, id)
);

-- Rebuilds fill a shadow copy of each table, then swap it in within one short transaction, so readers
-- never see a half-built table. Kept here so that all DDL lives in the schema folder.
create function projection_shadow_create(tables text[]) returns void
language plpgsql as $$
declare
    t text;
begin
    foreach t in array tables loop
        execute format('drop table if exists %I', t || '_next');
        execute format('create unlogged table %I (like %I including all)', t || '_next', t);
    end loop;
end
$$;

-- Makes the shadow tables crash-safe before the swap (a rewrite, done outside the swap's locks).
create function projection_shadow_seal(tables text[]) returns void
language plpgsql as $$
declare
    t text;
begin
    foreach t in array tables loop
        execute format('alter table %I set logged', t || '_next');
    end loop;
end
$$;

create function projection_shadow_swap(tables text[]) returns void
language plpgsql as $$
declare
    t text;
    idx record;
begin
    foreach t in array tables loop
        execute format('alter table %I rename to %I', t, t || '_old');
        execute format('alter table %I rename to %I', t || '_next', t);
        execute format('drop table %I', t || '_old');
        for idx in
            select indexname from pg_indexes
            where schemaname = current_schema() and tablename = t and indexname like t || '\_next%'
        loop
            execute format('alter index %I rename to %I', idx.indexname,
                           t || substr(idx.indexname, length(t || '_next') + 1));
        end loop;
    end loop;
end
$$;
