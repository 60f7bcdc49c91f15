//! API tests: the gateway driven over real HTTP with every role running against a fresh database.

mod command_batches;
mod customers;
mod helpers;
mod openapi;
mod platform;
mod platform_rules;
mod price_lists;
mod products;
mod receiver;
mod resources;
mod suppliers;
mod tags;
mod tenancy;
mod webhooks;
