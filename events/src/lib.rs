//! The event side of the back office: the event catalogue, the stored envelope, the Postgres event
//! store (append, commit-order reads, export, hash-chain verification), the relay to NATS JetStream
//! and the helpers every subscriber uses.

pub mod bus;
pub mod catalogue;
pub mod chain;
pub mod domain;
pub mod envelope;
pub mod follower;
pub mod relay;
pub mod secrets;
pub mod store;

pub use catalogue::EventPayload;
pub use envelope::{CommitKey, Metadata, NewEvent, RecordedEvent};
