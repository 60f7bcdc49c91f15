-- Dollars in the treasury: each dollar location's holdings (its dollars and their peso carrying value,
-- which a dollar expense leaves at), and the account an organization books exchange differences to.
-- Commands lock and move the holdings in the transaction that appends the movement; like every
-- write-model row they can be rebuilt from the events.
alter table treasury_locations
    add column native_balance     bigint not null default 0,
    add column functional_balance bigint not null default 0;

alter table organizations add column exchange_difference_account_id uuid;
