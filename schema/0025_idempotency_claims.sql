-- Claims the idempotency keys of the commands that run in one transaction (a lone keyed command, or
-- a group of stock movements; see `claim_keys` in `commands/src/engine/transaction.rs`): for each key,
-- in order, a transaction-scoped advisory lock on `idempotency <org> <key>` and, once held, the stored
-- outcome if any. The lookup runs after the lock is taken, with a snapshot of its own (each statement
-- of a volatile function gets one), so an outcome committed by the key's previous holder is seen.
create function idempotency_claims(p_org uuid, p_keys text[])
returns table (locked boolean, operation text, request_hash bytea, response jsonb)
language plpgsql volatile as $$
declare
    i int;
begin
    for i in 1 .. coalesce(array_length(p_keys, 1), 0) loop
        locked := pg_try_advisory_xact_lock(hashtextextended('idempotency ' || p_org::text || ' ' || p_keys[i], 0));
        operation := null;
        request_hash := null;
        response := null;
        if locked then
            select k.operation, k.request_hash, k.response into operation, request_hash, response
            from idempotency_keys k where k.org_id = p_org and k.key = p_keys[i];
        end if;
        return next;
    end loop;
end
$$;
