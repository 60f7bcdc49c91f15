-- projection_batch_move, same contract, moving each organization's checkpoint with its own statement
-- instead of one update joined to the unnested arrays. A live batch names one or a few organizations,
-- and for those a keyed update is much cheaper than the join (which materialises the arrays and builds a
-- hash table on every call): 20,000 one-organization calls took about 2.2 s before and 0.55 s after, in
-- one backend on the two-core benchmark machine. The work per batch is what every write's
-- read-your-writes wait goes through.
--
-- Per organization: an update conditioned on the expected value; where none was expected and none
-- matched, an insert that does nothing if a row appeared meanwhile. Either must touch the row, or the
-- checkpoint moved under the projector: SQLSTATE BOCP1, which rolls the fold back with it.
create or replace function projection_batch_move(
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
    floor_transaction_id xid8;
    floor_position bigint;
begin
    for i in 1 .. coalesce(cardinality(p_orgs), 0) loop
        update projection_checkpoints
        set transaction_id = p_to_transaction_ids[i], position = p_to_positions[i]
        where projection = p_projection and org_id = p_orgs[i]
          and transaction_id = p_from_transaction_ids[i] and position = p_from_positions[i];
        if not found and p_from_transaction_ids[i] = '0'::xid8 and p_from_positions[i] = 0 then
            insert into projection_checkpoints (projection, org_id, transaction_id, position)
            values (p_projection, p_orgs[i], p_to_transaction_ids[i], p_to_positions[i])
            on conflict (projection, org_id) do nothing;
        end if;
        if not found then
            raise exception using errcode = 'BOCP1', message = 'projection checkpoints moved: ' || p_projection;
        end if;
    end loop;
    select f.transaction_id, f.position into floor_transaction_id, floor_position
    from projection_checkpoints f
    where f.projection = p_projection and f.org_id = '00000000-0000-0000-0000-000000000000';
    if p_floor_transaction_id <> coalesce(floor_transaction_id, '0'::xid8)
       or p_floor_position <> coalesce(floor_position, 0)
    then
        raise exception using errcode = 'BOCP1', message = 'projection checkpoints moved: ' || p_projection;
    end if;
end $$;
