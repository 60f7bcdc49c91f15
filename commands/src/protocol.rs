//! What travels between the gateway and the command workers over NATS request/reply.

use crate::aggregate::Rejection;
use crate::customer::CustomerCommand;
use events::CommitKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Queue group shared by every command worker.
pub const QUEUE_GROUP: &str = "commands";

/// Who is acting, as recorded in event metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// `api_key:<id>`, `token:<id>`, `admin` or `system`.
    pub name: String,
    pub credential_id: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRequest {
    pub org_id: Uuid,
    pub actor: Actor,
    pub request_id: String,
    pub idempotency_key: Option<String>,
    pub command: Command,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "aggregate", content = "command", rename_all = "snake_case")]
pub enum Command {
    Customer(CustomerCommand),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CommandReply {
    /// The command was applied (or had nothing to change). `state` is the aggregate after it;
    /// `commit` is the commit-order key of the last event written, for read-your-writes waits.
    Accepted { commit: Option<CommitKey>, created: bool, state: Value },
    /// The command was refused; nothing was written.
    Rejected { rejection: Rejection },
    /// The outcome could not be stored; nothing was written. `retryable` tells whether the same
    /// request may succeed later.
    Failed { retryable: bool, message: String },
}
