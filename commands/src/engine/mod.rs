//! The command engine's machinery, which holds no domain code and knows no command: what every
//! handler runs with (the connection, load, pure decide, append with optimistic concurrency), group
//! commit, idempotency claims, waking the relay, the services in scope and what is observed of each
//! command. The worker (`worker/`) serves the queue group with it; domains use it.
//!
//! - `execute`: one decision against one aggregate instance, and the lookups domains share;
//! - `append`: group commit of concurrent appends;
//! - `claims`: idempotency keys claimed and outcomes stored in a command's transaction;
//! - `relay`: waking the relay after commits;
//! - `services`: the tax authority's adapter, in scope for commands and jobs;
//! - `observe`: each command's outcome, retries and phase times.

mod append;
mod claims;
mod execute;
mod observe;
mod relay;
mod services;

pub use append::Appender;
pub use execute::{
    Committed, Conn, ExecuteError, Executed, FollowUps, NoFollowUps, Sink, WithId, accepted, append_together,
    append_typed, execute, fold_stream, load, name_taken, reject_fields,
};
pub use services::{Services, fiscal, with_services};

pub(crate) use append::APPEND_LANES;
pub use claims::stored_conflict;
pub(crate) use claims::{KeyClaim, claim_keys, in_progress, store_outcomes};
pub(crate) use execute::CONFLICT_RETRIES;
pub(crate) use observe::{observed, record, retried};
pub(crate) use relay::RelayNudge;
