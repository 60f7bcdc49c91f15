//! The event catalogue: one versioned enum per aggregate. A stream or event name, once written, is
//! stored forever and is never renamed; older payload versions are upcast here, on read.

/// Writes `impl EventPayload` for an aggregate's payload enum from its stream type and its variants,
/// each stored under its own name: `Name(_)` stores its value, `Name(Box)` its boxed value, a bare
/// `Name` stores `{}`. A variant's current schema version is 1 unless written after it (`Name(_) @ 2`);
/// older versions are read by the upcasts listed after a `;` (`upcast Name 1 with f`: the stored payload
/// parsed as `f`'s argument, then turned by `f` into the current event). Any other version of a known
/// name is `UnknownVersion`, any other name `UnknownType`.
macro_rules! payloads {
    (@version) => { 1 };
    (@version $version:literal) => { $version };
    (@pattern $variant:ident, $payload:ident) => { Self::$variant };
    (@pattern $variant:ident ($kind:tt), $payload:ident) => { Self::$variant($payload) };
    (@data $payload:ident) => { Ok(::serde_json::Value::Object(Default::default())) };
    (@data $payload:ident ($kind:tt)) => { $crate::catalogue::to_value($payload) };
    (@decode $variant:ident, $event_type:ident, $data:ident) => { Ok(Self::$variant) };
    (@decode $variant:ident (_), $event_type:ident, $data:ident) => {
        $crate::catalogue::parse($event_type, $data).map(Self::$variant)
    };
    (@decode $variant:ident (Box), $event_type:ident, $data:ident) => {
        $crate::catalogue::parse($event_type, $data).map(|payload| Self::$variant(Box::new(payload)))
    };
    (
        $enum:ident, $stream:literal,
        $($variant:ident $(($kind:tt))? $(@ $version:literal)?),+ $(,)?
        $(; $(upcast $old:ident $old_version:literal with $upcast:path),+ $(,)?)?
    ) => {
        impl $crate::catalogue::EventPayload for $enum {
            const STREAM_TYPE: &'static str = $stream;

            fn event_type(&self) -> &'static str {
                match self {
                    $(Self::$variant { .. } => stringify!($variant),)+
                }
            }

            fn schema_version(&self) -> i32 {
                match self {
                    $(Self::$variant { .. } => payloads!(@version $($version)?),)+
                }
            }

            fn to_data(&self) -> Result<::serde_json::Value, ::serde_json::Error> {
                match self {
                    $(payloads!(@pattern $variant $(($kind))?, payload) => payloads!(@data payload $(($kind))?),)+
                }
            }

            fn decode(
                event_type: &str,
                schema_version: i32,
                data: ::serde_json::Value,
            ) -> Result<Self, $crate::catalogue::DecodeError> {
                match (event_type, schema_version) {
                    $($((stringify!($old), $old_version) => $crate::catalogue::parse(event_type, data).map($upcast),)+)?
                    $((stringify!($variant), payloads!(@version $($version)?)) => {
                        payloads!(@decode $variant $(($kind))?, event_type, data)
                    })+
                    $((stringify!($variant), _))|+ => Err($crate::catalogue::DecodeError::UnknownVersion {
                        event_type: event_type.to_owned(),
                        schema_version,
                    }),
                    (other, _) => Err($crate::catalogue::DecodeError::UnknownType {
                        stream_type: Self::STREAM_TYPE.to_owned(),
                        event_type: other.to_owned(),
                    }),
                }
            }
        }
    };
}

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
    delivery_note,
    metafield,
    order,
    organization,
    payment,
    price_list,
    product,
    purchase,
    quote,
    records,
    sale,
    stock,
    tag,
    treasury,
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

    /// The payload's stored form; an error (a payload that does not encode) refuses the write.
    fn to_data(&self) -> Result<Value, serde_json::Error>;

    /// Decodes a stored payload of any known version into the current shape.
    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError>;

    fn to_new_event(&self) -> Result<NewEvent, serde_json::Error> {
        Ok(NewEvent {
            event_id: Uuid::now_v7(),
            event_type: self.event_type(),
            schema_version: self.schema_version(),
            data: self.to_data()?,
        })
    }
}

/// Deserializes a payload whose version is known to be current.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(event_type: &str, data: Value) -> Result<T, DecodeError> {
    serde_json::from_value(data).map_err(|source| DecodeError::Malformed { event_type: event_type.to_owned(), source })
}

/// A payload's JSON. Plain data structs always encode, but a payload that did not (a map keyed by
/// something other than text, a custom form that fails) is an error, never a `null` event.
pub(crate) fn to_value<T: serde::Serialize>(payload: &T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_refuse_unknown_versions_of_known_names_and_unknown_names_at_any_version() {
        let decode =
            |event_type, version| TagEvent::decode(event_type, version, serde_json::json!({})).expect_err("refused");
        assert!(matches!(decode("TagArchived", 2), DecodeError::UnknownVersion { schema_version: 2, .. }));
        assert!(matches!(decode("TagVanished", 1), DecodeError::UnknownType { .. }));
        assert!(matches!(decode("TagVanished", 2), DecodeError::UnknownType { .. }));
        assert_eq!(TagEvent::TagArchived.to_data().expect("encodes"), serde_json::json!({}));
        assert_eq!(OrganizationEvent::SettingsChanged(OrganizationSettings::default()).schema_version(), 1);
    }
}
