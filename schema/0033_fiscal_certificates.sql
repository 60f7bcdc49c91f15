-- Each organization's certificate for the tax authority's login tickets: the certificate as PEM, its
-- private key sealed with the service's secrets key (like webhook secrets), and what operators see.
create table fiscal_certificates (
    org_id     uuid        primary key,
    certificate text       not null,
    sealed_key jsonb       not null,
    subject    text        not null,
    cuit       text        not null,
    not_before timestamptz not null,
    not_after  timestamptz not null,
    updated_at timestamptz not null
);
