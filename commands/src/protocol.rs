//! What travels between the gateway and the command workers over NATS request/reply: requests carry
//! a [`Command`] of the registry; replies and idempotency claims are domain-free ([`crate::reply`]).

pub use crate::engine::stored_conflict;
pub use crate::registered::{Command, CommandKind};
pub use crate::reply::{Actor, CommandReply, FailureCause, Idempotency, RequestHash, StreamKey};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Queue group shared by every command worker.
pub const QUEUE_GROUP: &str = "commands";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRequest {
    pub org_id: Uuid,
    pub actor: Actor,
    pub request_id: String,
    pub idempotency: Option<Idempotency>,
    pub command: Command,
}

/// Several requests sent as one NATS request on the batch subject; the worker runs them concurrently
/// (each exactly as if it had come alone) and answers with one [`CommandBatchReply`]. It decodes each
/// request on its own: one it cannot read is answered as malformed in its place, and the others run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandBatch {
    pub requests: Vec<CommandRequest>,
}

/// The outcomes of a [`CommandBatch`], in the order of its requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandBatchReply {
    pub replies: Vec<CommandReply>,
}
