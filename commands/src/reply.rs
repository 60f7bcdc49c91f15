//! What a command answers, whatever its domain, and the idempotency key it may carry: the part of the
//! gateway–worker protocol the engine and every domain share. The requests themselves, which carry the
//! registry's `Command`, are in `protocol.rs`.

use crate::aggregate::Rejection;
use events::CommitKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Who is acting, as recorded in event metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// `api_key:<id>`, `token:<id>`, `admin` or `system`.
    pub name: String,
    pub credential_id: Option<Uuid>,
}

/// The idempotency key of a request, with what identifies the request it was first used for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Idempotency {
    pub key: String,
    /// The operation (for example `createCustomer`): a key reused on another operation is a conflict.
    pub operation: String,
    /// SHA-256 of the operation, the delegated grant sending it, its path parameters, the contract
    /// version and the canonical body.
    pub request_hash: RequestHash,
}

impl Idempotency {
    /// Whether the request stored under the key as `operation` with `hash` is this one (a replay), not
    /// another (a conflict).
    pub fn is_request(&self, operation: &str, hash: &[u8]) -> bool {
        operation == self.operation && hash == self.request_hash.as_bytes()
    }
}

/// What identifies a request under its idempotency key: a digest, hex on the wire and bytes at rest. A
/// request whose hash is not hex does not decode, so a worker answers it as malformed and stores nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHash(Vec<u8>);

impl RequestHash {
    pub fn new(digest: impl Into<Vec<u8>>) -> RequestHash {
        RequestHash(digest.into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::str::FromStr for RequestHash {
    type Err = hex::FromHexError;

    fn from_str(text: &str) -> Result<RequestHash, hex::FromHexError> {
        hex::decode(text).map(RequestHash)
    }
}

impl Serialize for RequestHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&hex::encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for RequestHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<RequestHash, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CommandReply {
    /// The command was applied (or had nothing to change). `state` is the aggregate after it;
    /// `commit` is the commit-order key of the last event written, for read-your-writes waits.
    Accepted {
        commit: Option<CommitKey>,
        created: bool,
        state: Value,
        /// True when this is the stored outcome of an earlier request with the same idempotency key.
        #[serde(default)]
        replayed: bool,
        /// For a command that wrote streams of several types: the key of the last event of each type,
        /// so a gateway waits on each projection for the events it folds (empty: `commit` for all).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        keys: Vec<StreamKey>,
    },
    /// The command was refused; nothing was written.
    Rejected { rejection: Rejection },
    /// The outcome could not be stored; nothing was written. `retryable` tells whether the same
    /// request may succeed later; `cause` whether the event store could not be reached at all.
    Failed {
        retryable: bool,
        message: String,
        /// Absent from the replies of workers of earlier releases, which read as `internal`.
        #[serde(default)]
        cause: FailureCause,
    },
}

impl CommandReply {
    /// An applied command's reply answering `state`, with the commit key of its last event and, for a
    /// command that wrote streams of several types, `keys`. The state is encoded here, once for every
    /// domain: one that cannot be is an error, never a null answer.
    pub fn accepted(
        commit: Option<CommitKey>,
        created: bool,
        state: &impl Serialize,
        keys: Vec<StreamKey>,
    ) -> Result<Self, serde_json::Error> {
        Ok(CommandReply::Accepted { commit, created, state: serde_json::to_value(state)?, replayed: false, keys })
    }
}

/// The last event of one stream type a command wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamKey {
    pub stream_type: String,
    pub key: CommitKey,
}

/// Why a command failed in the worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The event store could not be reached or dropped the connection (a restart, an outage, no free
    /// connection): the same request may well succeed once it is back.
    StorageUnavailable,
    /// Other writes to the same stream kept committing first, until the optimistic-concurrency retries
    /// ran out: nothing was written, and the same request may succeed when retried.
    Contended,
    /// Anything else: a fault of the service itself. Also what a cause this release does not know
    /// reads as (a newer worker's); it stays last for that.
    #[default]
    #[serde(other)]
    Internal,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn an_accepted_reply_carries_its_state_encoded_or_is_an_error() {
        let state = serde_json::json!({ "id": 7, "status": "open" });
        let reply = CommandReply::accepted(None, true, &state, Vec::new()).expect("encoded");
        let CommandReply::Accepted { state: encoded, created, replayed, .. } = reply else { panic!("accepted") };
        assert_eq!((encoded, created, replayed), (state, true, false));
        // A map keyed by pairs has no JSON form: the command fails rather than answering null.
        let unencodable = BTreeMap::from([((1, 2), "pair")]);
        assert!(CommandReply::accepted(None, true, &unencodable, Vec::new()).is_err());
    }

    #[test]
    fn a_request_hash_travels_as_hex_and_one_that_is_not_hex_does_not_decode() {
        let hash = RequestHash::new(vec![0x0e, 0xff]);
        assert_eq!(serde_json::to_string(&hash).expect("encodes"), r#""0eff""#);
        assert_eq!(serde_json::from_str::<RequestHash>(r#""0eff""#).expect("decodes"), hash);
        let claim = r#"{"key": "k1", "operation": "createX", "request_hash": "not hex"}"#;
        assert!(serde_json::from_str::<Idempotency>(claim).is_err(), "no silent empty hash");
    }
}
