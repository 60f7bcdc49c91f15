//! The envelope every stored event travels in, and the commit-order key that orders them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// Position of an event in commit order: `(transaction_id, position)`. Every follower of the event
/// store (relay, sealer, projectors) sees events in increasing key order, so "the reader has passed
/// key K" means "every event at or below K has been seen".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct CommitKey {
    pub transaction_id: i64,
    pub position: i64,
}

impl CommitKey {
    pub const ZERO: CommitKey = CommitKey { transaction_id: 0, position: 0 };

    pub fn new(transaction_id: i64, position: i64) -> Self {
        Self { transaction_id, position }
    }
}

impl std::fmt::Display for CommitKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.transaction_id, self.position)
    }
}

/// Who caused an event and in answer to what. Stored with every event; never holds personal data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// `api_key:<id>`, `token:<id>`, `admin` or `system`.
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<Uuid>,
}

impl Metadata {
    pub fn system(actor: &str) -> Self {
        Self { actor: actor.to_owned(), ..Self::default() }
    }
}

/// An event about to be appended.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: &'static str,
    pub schema_version: i32,
    pub data: Value,
}

/// An event as stored (read from a row of [`crate::store::EVENT_COLUMNS`], one column a field), and as
/// published on the bus (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RecordedEvent {
    pub position: i64,
    pub transaction_id: i64,
    pub org_id: Uuid,
    pub stream_type: String,
    pub stream_id: Uuid,
    pub version: i32,
    pub event_id: Uuid,
    pub event_type: String,
    pub schema_version: i32,
    pub data: Value,
    pub metadata: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub recorded_at: OffsetDateTime,
}

impl RecordedEvent {
    pub fn key(&self) -> CommitKey {
        CommitKey::new(self.transaction_id, self.position)
    }
}
