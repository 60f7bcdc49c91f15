-- The tax authority's simulator (api/src/fiscal_simulator): the vouchers it approved, so its
-- numbering survives a restart as the real authority's does. Its own state, outside the event store:
-- nothing but the simulator reads or writes it, and it is never rebuilt from events (the service
-- stores the authority's numbers and CAEs on its sales; a simulator that forgot would hand the same
-- numbers out again). Authorizations of one series are serialized by a transaction-scoped advisory
-- lock on 'fiscal-simulator <cuit>/<point of sale>/<voucher type>'.
create table fiscal_simulator_vouchers (
    issuer_tax_id bigint      not null,
    point_of_sale integer     not null,
    voucher_type  integer     not null,
    number        bigint      not null check (number > 0),
    voucher_date  date        not null,
    cae           text        not null,
    cae_due       date        not null,
    -- What FECompConsultar answers (`ResultGet`), amounts as exact numbers.
    stored        jsonb       not null,
    approved_at   timestamptz not null default now(),
    primary key (issuer_tax_id, point_of_sale, voucher_type, number)
);
