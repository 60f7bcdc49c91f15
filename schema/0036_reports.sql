-- Reports (the `reports` projection): the facts grouped reports sum, kept with the event-store position
-- that recorded each, so a report can be answered as the history stood at any earlier position.

-- One row per fact: a line of a sale or purchase, a line of a payment, a change of stock. Amounts are
-- signed as the report counts them (credit notes and voids subtract). Dimensions are those the fact had
-- when it was recorded (a product's category and tags then); a fact never changes once written.
create table report_facts (
    org_id            uuid        not null,
    report            text        not null check (report in ('sales', 'purchases', 'payments', 'inventory')),
    -- The event that recorded it, and its place among that event's facts.
    position          bigint      not null,
    seq               integer     not null,
    -- The document's business date (Argentine calendar).
    day               date        not null,
    -- Sales: the fiscal status; payments: `recorded` or `voided`; a change of status moves the document's
    -- facts from the old status to the new one with a pair of opposite rows.
    status            text,
    document_id       uuid,
    customer_id       uuid,
    supplier_id       uuid,
    product_id        uuid,
    category_id       uuid,
    tag_ids           uuid[]      not null default '{}',
    warehouse_id      uuid,
    point_of_sale_id  uuid,
    voucher_type      integer,
    payment_method_id uuid,
    location_id       uuid,
    side              text,
    currency          text,
    count             bigint      not null default 0,
    -- Thousandths of a unit.
    quantity          bigint      not null default 0,
    net               bigint      not null default 0,
    tax               bigint      not null default 0,
    total             bigint      not null default 0,
    cost              bigint      not null default 0,
    amount            bigint      not null default 0,
    fee               bigint      not null default 0,
    value             bigint      not null default 0,
    primary key (org_id, position, seq)
);
create index report_facts_by_day on report_facts (org_id, report, day);
create index report_facts_by_document on report_facts (org_id, document_id) where document_id is not null;

-- The same facts summed per business day (`period` `day`) and per month (`month`, dated its first day),
-- and one dimension's value (`all` with key '' for none), per epoch of 1,024 positions: a report grouped
-- by periods and at most one dimension reads these instead of the facts, and as of a position it reads
-- the epochs before that position's and the facts of its own epoch up to it.
create table report_rollups (
    org_id    uuid   not null,
    report    text   not null,
    period    text   not null check (period in ('day', 'month')),
    dimension text   not null,
    key       text   not null,
    day       date   not null,
    epoch     bigint not null,
    count     bigint not null,
    quantity  bigint not null,
    net       bigint not null,
    tax       bigint not null,
    total     bigint not null,
    cost      bigint not null,
    amount    bigint not null,
    fee       bigint not null,
    value     bigint not null,
    -- The measures ride in the key's index, so a report reads the rows it sums from the index alone.
    primary key (org_id, report, period, dimension, day, key, epoch)
        include (count, quantity, net, tax, total, cost, amount, fee, value)
);

-- What the projection knows of each variant as it folds: its category, its tags and its cost, as the
-- product and tag events left them up to the event being folded.
create table report_products (
    org_id      uuid    not null,
    variant_id  uuid    not null,
    category_id uuid,
    tag_ids     uuid[]  not null default '{}',
    cost        bigint  not null default 0,
    primary key (org_id, variant_id)
);

-- When each folded event was recorded, so `as_of` a timestamp finds the last position recorded by then.
create table report_marks (
    org_id      uuid        not null,
    position    bigint      not null,
    recorded_at timestamptz not null,
    primary key (org_id, position)
);
