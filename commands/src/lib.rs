//! The command side: imperative commands, pure aggregates (`decide`/`evolve`), the validation of
//! everything a command carries, the command worker that runs each command in one Postgres
//! transaction, and the protocol the gateway uses to reach it over NATS.

pub mod aggregate;
pub mod client;
pub mod customer;
pub mod idempotency;
pub mod organization;
pub mod products;
pub mod protocol;
pub mod records;
pub mod tags;
pub mod validate;
pub mod webhooks;
pub mod worker;

pub use aggregate::{Aggregate, Rejection};
pub use validate::FieldError;
