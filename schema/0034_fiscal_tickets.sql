-- The tax authority's login tickets (WSAA), one per certificate (its SHA-256): every process reads the
-- same ticket, and one login at a time per certificate renews it (a transaction-scoped advisory lock),
-- since the authority refuses a second login while a ticket is valid. A ticket serves invoicing for
-- twelve hours; the key that obtains one stays sealed in fiscal_certificates.
create table fiscal_tickets (
    fingerprint bytea       primary key,
    token       text        not null,
    sign        text        not null,
    generation  timestamptz not null,
    expiration  timestamptz not null,
    obtained_at timestamptz not null
);
