-- A rendered projector batch checks and moves its checkpoints in one call at its end, instead of
-- checking them under row locks before the fold (projection_batch_begin) and moving them after it
-- (projection_batch_end). The batch now reads: begin; the projection's shared lock (a plain
-- pg_advisory_xact_lock_shared, still taken before any read table is touched, so a batch and a
-- rebuild's swap take their locks in the same order); the fold; projection_batch_move(...); commit.
--
-- Each organization's checkpoint moves only from where the projector expected it (an update whose
-- condition is the expected value, or an insert where it expected none). A checkpoint another
-- instance moved meanwhile is not matched (an update waiting on that instance's row lock re-checks
-- the row it commits), and neither is a rebuild floor other than the expected one (a swap changes it
-- only under the exclusive lock, which this batch's shared lock excludes). Either way it raises
-- SQLSTATE BOCP1, which rolls back the fold with it: the projector reloads the checkpoints and renders
-- the batch again.
create function projection_batch_move(
    p_projection text,
    p_floor_transaction_id xid8,
    p_floor_position bigint,
    p_orgs uuid[],
    p_from_transaction_ids xid8[],
    p_from_positions bigint[],
    p_to_transaction_ids xid8[],
    p_to_positions bigint[]
) returns void language plpgsql as $$
declare
    moved bigint;
    added bigint := 0;
    floor_transaction_id xid8;
    floor_position bigint;
begin
    update projection_checkpoints c
    set transaction_id = m.to_transaction_id, position = m.to_position
    from unnest(p_orgs, p_from_transaction_ids, p_from_positions, p_to_transaction_ids, p_to_positions)
         as m(org_id, from_transaction_id, from_position, to_transaction_id, to_position)
    where c.projection = p_projection and c.org_id = m.org_id
      and c.transaction_id = m.from_transaction_id and c.position = m.from_position;
    get diagnostics moved = row_count;
    if moved < cardinality(p_orgs) then
        insert into projection_checkpoints (projection, org_id, transaction_id, position)
        select p_projection, m.org_id, m.to_transaction_id, m.to_position
        from unnest(p_orgs, p_from_transaction_ids, p_from_positions, p_to_transaction_ids, p_to_positions)
             as m(org_id, from_transaction_id, from_position, to_transaction_id, to_position)
        where m.from_transaction_id = '0'::xid8 and m.from_position = 0
        on conflict (projection, org_id) do nothing;
        get diagnostics added = row_count;
    end if;
    select f.transaction_id, f.position into floor_transaction_id, floor_position
    from projection_checkpoints f
    where f.projection = p_projection and f.org_id = '00000000-0000-0000-0000-000000000000';
    if moved + added < cardinality(p_orgs)
       or p_floor_transaction_id <> coalesce(floor_transaction_id, '0'::xid8)
       or p_floor_position <> coalesce(floor_position, 0)
    then
        raise exception using errcode = 'BOCP1', message = 'projection checkpoints moved: ' || p_projection;
    end if;
end $$;
