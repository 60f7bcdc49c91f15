//! Metafield definition events: the custom fields an organization defines for its products (a
//! configuration record, created and then replaced as a whole).

use super::records::record_events;
use serde::{Deserialize, Serialize};

/// A product custom field definition: values stored under `key` must satisfy `value_type` (`text`,
/// `integer`, `decimal`, `boolean`, `date` or `choice`), `choices` and `max_length`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetafieldDefinitionFields {
    pub key: String,
    /// A human label.
    pub name: String,
    pub value_type: String,
    #[serde(default)]
    pub choices: Vec<String>,
    pub max_length: Option<i64>,
}

record_events!(
    /// Product custom field definitions (stream type `metafield_definition`).
    MetafieldDefinitionEvent, "metafield_definition", MetafieldDefinitionFields, MetafieldDefinitionCreated,
    MetafieldDefinitionReplaced
);
