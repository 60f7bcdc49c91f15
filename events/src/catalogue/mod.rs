//! The event catalogue: one versioned enum per aggregate. A stream or event name, once written, is
//! stored forever and is never renamed; older payload versions are upcast here, on read.

/// Every aggregate's file, each one's public items re-exported here: a new aggregate is one line of
/// this list (its events are then `events::catalogue::TheirName`).
macro_rules! catalogue {
    ($($module:ident,)+) => {
        $(
            mod $module;
            pub use $module::*;
        )+
    };
}

catalogue! {
    customer,
    metafield,
    organization,
    price_list,
    product,
    purchase,
    quote,
    records,
    sale,
    stock,
    tag,
    vat,
    webhook,
}

use crate::envelope::NewEvent;
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown event type {stream_type}/{event_type}")]
    UnknownType { stream_type: String, event_type: String },
    #[error("unsupported schema version {schema_version} of {event_type}")]
    UnknownVersion { event_type: String, schema_version: i32 },
    #[error("malformed {event_type} payload: {source}")]
    Malformed {
        event_type: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A payload enum of one aggregate.
pub trait EventPayload: Sized {
    /// The stream type of the aggregate (stored in `events.stream_type` and used in bus subjects).
    const STREAM_TYPE: &'static str;

    fn event_type(&self) -> &'static str;

    /// The current schema version of this event type, written on append.
    fn schema_version(&self) -> i32 {
        1
    }

    fn to_data(&self) -> Value;

    /// Decodes a stored payload of any known version into the current shape.
    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError>;

    fn to_new_event(&self) -> NewEvent {
        NewEvent {
            event_id: Uuid::now_v7(),
            event_type: self.event_type(),
            schema_version: self.schema_version(),
            data: self.to_data(),
        }
    }
}

/// Deserializes a payload whose version is known to be current.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(event_type: &str, data: Value) -> Result<T, DecodeError> {
    serde_json::from_value(data).map_err(|source| DecodeError::Malformed { event_type: event_type.to_owned(), source })
}

pub(crate) fn to_value<T: serde::Serialize>(payload: &T) -> Value {
    // Serializing plain data structs into a Value cannot fail (no maps with non-string keys).
    serde_json::to_value(payload).unwrap_or(Value::Null)
}
