//! The shape every aggregate has: a pure `decide` that turns a command into events or a rejection,
//! and a pure `evolve` that folds an event into the state. Neither does IO: facts that need IO are
//! looked up by the worker beforehand and passed in with the command.

use crate::validate::FieldError;
use events::EventPayload;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::OffsetDateTime;

pub trait Aggregate: Sized + Clone {
    type Command;
    type Event: EventPayload;

    fn decide(state: Option<&Self>, command: &Self::Command) -> Result<Vec<Self::Event>, Rejection>;

    /// Folds one event into the state; `at` is when the event was recorded.
    fn evolve(state: Option<Self>, event: &Self::Event, at: OffsetDateTime) -> Option<Self>;

    fn fold<'a>(events: impl IntoIterator<Item = (&'a Self::Event, OffsetDateTime)>) -> Option<Self>
    where
        Self::Event: 'a,
    {
        events.into_iter().fold(None, |state, (event, at)| Self::evolve(state, event, at))
    }
}

/// Why a command was refused. A rejection writes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// The command's data breaks a field rule.
    #[error("invalid request: {} field error(s)", errors.len())]
    Invalid { errors: Vec<FieldError> },
    /// The target, or something it references, does not exist for this organization.
    #[error("{resource} not found")]
    NotFound { resource: String },
    /// The command does not fit the current state.
    #[error("{code}: {message}")]
    Conflict { code: String, message: String },
    /// The idempotency key was used for another request, or its first request is still running.
    #[error("{code}: {message}")]
    Idempotency { code: String, message: String, retryable: bool },
    /// The resource is not in a state that allows the operation (409 `STATE_CONFLICT`): each detail says
    /// why, with the current state in its metadata.
    #[error("STATE_CONFLICT: {message}")]
    StateConflict { message: String, details: Vec<BusinessDetail> },
    /// The request is well formed but the organization's state forbids it (not enough stock, a total
    /// that does not match): 422, each detail naming its field with the facts behind it.
    #[error("{code}: {message}")]
    Unprocessable { code: String, message: String, details: Vec<BusinessDetail> },
}

/// One reason a request could not be processed: the field it concerns and the facts behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusinessDetail {
    pub field: Option<String>,
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
}

/// A rejection naming every offending field, or nothing when there are none.
pub fn reject_fields(errors: Vec<FieldError>) -> Result<(), Rejection> {
    if errors.is_empty() { Ok(()) } else { Err(Rejection::Invalid { errors }) }
}

impl Rejection {
    pub fn not_found(resource: &str) -> Self {
        Self::NotFound { resource: resource.to_owned() }
    }

    /// 400 with one field error.
    pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> Self {
        Self::Invalid { errors: vec![FieldError::new(field, code, message)] }
    }

    pub fn conflict(code: &str, message: impl Into<String>) -> Self {
        Self::Conflict { code: code.to_owned(), message: message.into() }
    }

    /// 422 with one business detail naming `field`.
    pub fn unprocessable(code: &str, field: &str, message: &str) -> Self {
        Self::unprocessable_on(code, &[field], message)
    }

    /// 422 with one business detail for each of `fields`, all at fault for the same reason (both ends
    /// of a transfer, say).
    pub fn unprocessable_on(code: &str, fields: &[&str], message: &str) -> Self {
        let detail = |field: &&str| BusinessDetail {
            field: Some((*field).into()),
            code: code.into(),
            message: message.into(),
            metadata: Default::default(),
        };
        Self::Unprocessable { code: code.into(), message: message.into(), details: fields.iter().map(detail).collect() }
    }

    /// The same refusal with its business details naming `field` (the request's field whose referent is
    /// in the wrong state, say); a rejection without business details is left as it is.
    pub fn on(mut self, field: &str) -> Self {
        if let Self::StateConflict { details, .. } | Self::Unprocessable { details, .. } = &mut self {
            details.iter_mut().for_each(|detail| detail.field = Some(field.to_owned()));
        }
        self
    }

    /// 409 `STATE_CONFLICT` with one detail (`code`, e.g. `QUOTE_NOT_DRAFT`) naming the current state.
    pub fn state_conflict(code: &str, current_state: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::StateConflict {
            message: message.clone(),
            details: vec![BusinessDetail {
                field: None,
                code: code.to_owned(),
                message,
                metadata: BTreeMap::from([("current_state".to_owned(), Value::String(current_state.to_owned()))]),
            }],
        }
    }
}
