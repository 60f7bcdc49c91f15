//! API tests: the gateway driven over real HTTP with every role running against a fresh database.

mod categories;
mod command_batches;
mod configuration;
mod customers;
mod documents;
mod fiscal_simulator;
mod helpers;
mod hostile;
mod inventory;
mod openapi;
mod organization;
mod payment_methods;
mod platform;
mod platform_rules;
mod points_of_sale;
mod price_lists;
mod products;
mod purchases;
mod receiver;
mod reference;
mod sales;
mod suppliers;
mod tags;
mod tenancy;
mod warehouses;
mod webhooks;
