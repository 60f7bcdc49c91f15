-- `stock_reserved_now` (0041) once per statement instead of once per level: the reservations of every
-- key, read with one fresh snapshot. The lock statement passes the keys it locked as arrays built from its
-- own output, so the call runs only once every level is locked (the arguments cannot be known before),
-- and it sees every reservation the locks' holders made. One PL/pgSQL call and one query for a command,
-- where each level paid a call of its own.
create function stock_reserved_now(org uuid, variants uuid[], warehouses uuid[], through date)
returns table (variant_id uuid, warehouse_id uuid, reserved bigint)
language plpgsql volatile as $$
begin
    return query
        select r.variant_id, r.warehouse_id, sum(r.quantity)::bigint
        from stock_reservations r
        join unnest(variants, warehouses) as k(v, w) on r.variant_id = k.v and r.warehouse_id = k.w
        where r.org_id = org and r.reserved_through >= through
        group by r.variant_id, r.warehouse_id;
end
$$;

drop function stock_reserved_now(uuid, uuid, uuid, date);
