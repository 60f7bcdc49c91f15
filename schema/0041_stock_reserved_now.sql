-- The reservations held on a stock level as they stand once the level is locked. A command locks its
-- levels with one statement (`commands::inventory::levels::lock_adding`) and reads their reservations in
-- it. Under READ COMMITTED that statement's own snapshot is taken before it waits for a level's lock, so
-- a reservation committed by whoever held the lock was not counted, and a `block` policy let a second
-- command take stock the first had just reserved. A volatile PL/pgSQL function reads with a fresh
-- snapshot at each call (and is never inlined into the caller's), and the statement calls it for each
-- level only after locking it: every reservation is written under its level's lock, so it sees all of
-- them.
create function stock_reserved_now(org uuid, variant uuid, warehouse uuid, through date) returns bigint
language plpgsql volatile as $$
begin
    return coalesce((select sum(r.quantity) from stock_reservations r
                     where r.org_id = org and r.variant_id = variant and r.warehouse_id = warehouse
                       and r.reserved_through >= through), 0);
end
$$;
