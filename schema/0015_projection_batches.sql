-- One round trip per projector batch. A projector that renders its fold as SQL sends, in one simple
-- query: begin; projection_batch_begin(...); its statements; projection_batch_end(...); commit.
-- The projector keeps the checkpoints it last wrote in memory; projection_batch_begin takes the
-- projection's shared lock (a rebuild's swap takes it exclusively) and then checks, under row locks,
-- that the checkpoints are still the ones the projector filtered the batch with. When anything moved
-- them (a swap, another instance) it raises SQLSTATE BOCP1: the projector rolls back, reloads them
-- and tries again. The lock is taken before any read table is touched, as in the three-round-trip
-- path, so a swap and a batch always take their locks in the same order.
create function projection_batch_begin(p_projection text, p_orgs uuid[], p_transaction_ids xid8[], p_positions bigint[])
returns void language plpgsql as $$
declare
    moved bigint;
begin
    perform pg_advisory_xact_lock_shared(hashtextextended('projection ' || p_projection, 0));
    -- A statement of its own, so its snapshot is taken after the lock: a swap that just committed is seen.
    select count(*) into moved
    from unnest(p_orgs, p_transaction_ids, p_positions) as expected(org_id, transaction_id, position)
    left join (select c.org_id, c.transaction_id, c.position from projection_checkpoints c
               where c.projection = p_projection and c.org_id = any(p_orgs)
               for update) current using (org_id)
    where (coalesce(current.transaction_id, '0'::xid8), coalesce(current.position, 0))
          <> (expected.transaction_id, expected.position);
    if moved > 0 then
        raise exception using errcode = 'BOCP1', message = 'projection checkpoints moved: ' || p_projection;
    end if;
end $$;

-- Moves the checkpoints of a batch's organizations (in the batch's transaction).
create function projection_batch_end(p_projection text, p_orgs uuid[], p_transaction_ids xid8[], p_positions bigint[])
returns void language plpgsql as $$
begin
    insert into projection_checkpoints (projection, org_id, transaction_id, position)
    select p_projection, moved.org_id, moved.transaction_id, moved.position
    from unnest(p_orgs, p_transaction_ids, p_positions) as moved(org_id, transaction_id, position)
    on conflict (projection, org_id) do update
    set transaction_id = excluded.transaction_id, position = excluded.position;
end $$;
