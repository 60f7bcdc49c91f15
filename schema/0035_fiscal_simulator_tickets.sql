-- The tax authority's simulator (api/src/fiscal_simulator/login.rs): the login tickets its
-- authentication service (WSAA) issued, so it can refuse a second login for a certificate while one is
-- valid and check the token and sign of every invoicing call, across restarts and processes. Logins of
-- one certificate are serialized by a transaction-scoped advisory lock on its fingerprint.
create table fiscal_simulator_tickets (
    token       text        primary key,
    sign        text        not null,
    -- SHA-256 of the certificate that logged in.
    fingerprint bytea       not null,
    service     text        not null,
    -- The CUIT the certificate names: the one the ticket represents.
    cuit        bigint      not null,
    generation  timestamptz not null,
    expiration  timestamptz not null
);
create index fiscal_simulator_tickets_certificate on fiscal_simulator_tickets (fingerprint, service, expiration);
