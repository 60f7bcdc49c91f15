-- What each customer and supplier owes (the `accounts` projection): one row per fact that moves a
-- contact's account. `amount` is what the contact's balance moves by: positive for what increases it (a
-- sale or debit note a customer owes, a purchase owed to a supplier, a voided payment), negative for
-- what lowers it (a payment, a credit note). Balances and statements are sums over these rows, dated
-- by each fact's business date (Argentine calendar) and ordered by the event store's position.
create table contact_ledger (
    org_id      uuid        not null,
    side        text        not null check (side in ('customer', 'supplier')),
    contact_id  uuid        not null,
    -- The fact's own id: the document, the payment, its void (the reversal entry's id), or the payment a
    -- sale took with it.
    entry_id    uuid        not null,
    kind        text        not null check (kind in ('sale', 'debit_note', 'credit_note', 'purchase', 'payment',
                                                     'payment_void')),
    -- The sale, purchase or payment the row belongs to.
    document_id uuid        not null,
    occurred_on date        not null,
    position    bigint      not null,
    amount      bigint      not null,
    description text,
    primary key (org_id, entry_id)
);
create index contact_ledger_statement on contact_ledger (org_id, side, contact_id, occurred_on, position);
