//! The command side: imperative commands, pure aggregates (`decide`/`evolve`), the validation of
//! everything a command carries, the engine that runs each command (in one statement or one Postgres
//! transaction), and the protocol the gateway uses to reach it over NATS.
//!
//! Each domain has one home (`contacts`, `products`, `metafields`, `price_lists`, `records`, `tags`,
//! `webhooks`): its aggregate and parsing in `mod.rs`, its [`handler::Handler`] in `handler.rs`.
//! The engine (`engine/`) holds no domain code; `registry.rs` lists every command once. `fiscal/` is
//! the tax authority's adapter (its only HTTP client, to the authority; it serves none).

pub mod aggregate;
pub mod client;
pub mod contacts;
pub mod engine;
pub mod fiscal;
pub mod handler;
pub mod idempotency;
pub mod inventory;
pub mod metafields;
pub mod organization;
pub mod price_lists;
pub mod products;
pub mod protocol;
pub mod purchases;
pub mod quotes;
pub mod records;
mod registry;
pub mod sales;
pub mod tags;
pub mod tax;
pub mod validate;
pub mod webhooks;

pub use aggregate::{Aggregate, BusinessDetail, Rejection};
pub use validate::FieldError;
