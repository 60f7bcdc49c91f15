//! The query filters of list handlers, written once: an optional id, an optional `YYYY-MM-DD` date, one
//! of a list of names, a trimmed search text; the schemas their input rules document; and the text a
//! cursor is bound to. A list parses its filters with one [`Filters`], which names every bad one at once.

use crate::http::error::{ApiError, ErrorDetail};
use crate::http::list::parse_id;
use std::fmt::Debug;
use time::Date;
use uuid::Uuid;

/// The filters of one list request being parsed: each bad one leaves its detail, and [`Filters::check`]
/// refuses them all together.
#[derive(Default)]
pub struct Filters {
    details: Vec<ErrorDetail>,
}

impl Filters {
    /// An optional id sent in `parameter` (not an id: `invalid_id`).
    pub fn id(&mut self, text: Option<String>, parameter: &str) -> Option<Uuid> {
        self.keep(id_filter(text, parameter))
    }

    /// An optional `YYYY-MM-DD` date sent in `parameter` (else `invalid_date`).
    pub fn date(&mut self, text: Option<String>, parameter: &str) -> Option<Date> {
        self.keep(date_filter(text, parameter))
    }

    /// An optional value of `parameter` that must be one of `names` (else `invalid_value`).
    pub fn one_of(&mut self, text: Option<String>, parameter: &str, names: &[&str]) -> Option<String> {
        self.keep(one_of(text, parameter, names))
    }

    /// What `result` holds, or none with its details kept.
    pub fn keep<T>(&mut self, result: Result<Option<T>, ApiError>) -> Option<T> {
        result.unwrap_or_else(|error| {
            self.details.extend(error.body.details);
            None
        })
    }

    /// Every bad filter named at once: 400 `INVALID_PARAMETERS`.
    pub fn check(self) -> Result<(), ApiError> {
        if self.details.is_empty() {
            return Ok(());
        }
        let mut error = invalid();
        error.body.details = self.details;
        Err(error)
    }
}

fn invalid() -> ApiError {
    ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid")
}

/// An optional id filter: anything else is a 400 naming the parameter.
pub fn id_filter(text: Option<String>, parameter: &str) -> Result<Option<Uuid>, ApiError> {
    text.as_deref().map(|t| parse_id(t, parameter)).transpose()
}

/// An optional `YYYY-MM-DD` filter.
pub fn date_filter(text: Option<String>, parameter: &str) -> Result<Option<Date>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    events::catalogue::parse_date(&text).map(Some).ok_or_else(|| {
        ApiError::invalid_request("INVALID_PARAMETERS", format!("{parameter} is not a date")).with_detail(
            Some(parameter),
            "invalid_date",
            "must be a date written YYYY-MM-DD",
        )
    })
}

/// An optional filter that must be one of `names`.
pub fn one_of(text: Option<String>, parameter: &str, names: &[&str]) -> Result<Option<String>, ApiError> {
    match text {
        Some(value) if !names.contains(&value.as_str()) => {
            Err(invalid().with_detail(Some(parameter), "invalid_value", format!("must be one of {}", names.join(", "))))
        }
        value => Ok(value),
    }
}

/// A search text as sent, trimmed; blank is none.
pub fn search(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

/// What a cursor of `list` is bound to: the list and its filters (each list's own spelling, so cursors
/// already issued stay valid), so a cursor never serves other filters.
pub fn binding(list: &str, filters: &[&dyn Debug]) -> String {
    format!("{list}{filters:?}")
}

/// The schema an id query parameter is documented with.
pub fn uuid_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "format": "uuid" })
}

/// The schema a date query parameter is documented with.
pub fn date_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "format": "date" })
}
