-- Customers carry the ledger account their movements default to.
alter table customers_view add column default_account_id uuid;
