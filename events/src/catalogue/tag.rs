//! Events of the tag aggregate (stream type `tag`): a tag's name and colour, its archiving, and which
//! resources carry it.

use serde::{Deserialize, Serialize};
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

payloads!(TagEvent, "tag", TagCreated(_), TagChanged(_), TagArchived, TagRestored, TagApplied(_), TagRemoved(_));
