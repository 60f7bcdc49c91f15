-- Quotes: the sweeper's write model and the read model the `quotes` projection folds.

-- Draft quotes with an expiry date: the sweeper records their expiry once the date has passed.
create table quote_expiries (
    org_id     uuid not null,
    quote_id   uuid not null,
    expires_at date not null,
    primary key (org_id, quote_id)
);
create index quote_expiries_due on quote_expiries (expires_at);

-- Read model (projection `quotes`): a quote's whole state beside the columns lists filter on. Deleted
-- quotes are removed.
create table quotes_view (
    org_id           uuid        not null,
    id               uuid        not null,
    number           bigint      not null,
    customer_id      uuid        not null,
    customer_name    text        not null,
    status           text        not null,
    doc              jsonb       not null,
    created_at       timestamptz not null,
    updated_at       timestamptz not null,
    primary key (org_id, id)
);
create index quotes_view_recent on quotes_view (org_id, created_at desc, id desc);
