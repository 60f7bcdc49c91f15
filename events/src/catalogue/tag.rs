//! Events of the tag aggregate (stream type `tag`): a tag's name and colour, its archiving, and which
//! resources carry it.

use super::{DecodeError, EventPayload, parse, to_value};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagFields {
    pub name: String,
    pub color: Option<String>,
}

/// Resources of one kind (`customer`, `supplier`, `product`) gaining or losing the tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagTargets {
    pub resource_type: String,
    pub resource_ids: Vec<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagEvent {
    TagCreated(TagFields),
    TagChanged(TagFields),
    TagArchived,
    TagRestored,
    TagApplied(TagTargets),
    TagRemoved(TagTargets),
}

impl EventPayload for TagEvent {
    const STREAM_TYPE: &'static str = "tag";

    fn event_type(&self) -> &'static str {
        match self {
            Self::TagCreated(_) => "TagCreated",
            Self::TagChanged(_) => "TagChanged",
            Self::TagArchived => "TagArchived",
            Self::TagRestored => "TagRestored",
            Self::TagApplied(_) => "TagApplied",
            Self::TagRemoved(_) => "TagRemoved",
        }
    }

    fn to_data(&self) -> Value {
        match self {
            Self::TagCreated(fields) | Self::TagChanged(fields) => to_value(fields),
            Self::TagArchived | Self::TagRestored => json!({}),
            Self::TagApplied(targets) | Self::TagRemoved(targets) => to_value(targets),
        }
    }

    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
        if schema_version != 1 {
            return Err(DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version });
        }
        match event_type {
            "TagCreated" => parse(event_type, data).map(Self::TagCreated),
            "TagChanged" => parse(event_type, data).map(Self::TagChanged),
            "TagArchived" => Ok(Self::TagArchived),
            "TagRestored" => Ok(Self::TagRestored),
            "TagApplied" => parse(event_type, data).map(Self::TagApplied),
            "TagRemoved" => parse(event_type, data).map(Self::TagRemoved),
            other => Err(DecodeError::UnknownType {
                stream_type: Self::STREAM_TYPE.to_owned(),
                event_type: other.to_owned(),
            }),
        }
    }
}
