//! The event side of the back office: the event catalogue, the stored envelope, the Postgres event
//! store (append, commit-order reads, export, hash-chain verification), the relay to NATS JetStream
//! and the helpers every subscriber uses.

// First, so that `named_enum!` is in scope by name in every module below.
#[macro_use]
mod names;

pub mod bus;
pub mod catalogue;
pub mod chain;
pub mod domain;
pub mod envelope;
pub mod follower;
pub mod relay;
pub mod secrets;
pub mod store;
pub mod unnest;

pub use catalogue::EventPayload;
pub use envelope::{CommitKey, Metadata, NewEvent, RecordedEvent};
pub use names::Named;

/// An error and its sources on one line, `: `-separated: how an outbound call's failure (the tax
/// authority's, a webhook's) is told in logs and stored reasons.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    std::iter::successors(Some(error), |e| e.source()).map(ToString::to_string).collect::<Vec<_>>().join(": ")
}
