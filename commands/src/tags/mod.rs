//! The tag aggregate: created, renamed or recoloured, archived and restored; applied to and removed
//! from customers, suppliers and products. Applying several tags to several resources is one command
//! that appends to every tag's stream at once (see the worker).

mod handler;

use crate::aggregate::{Aggregate, Rejection};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{TagEvent, TagFields};
use events::domain::Scope;
pub use handler::TagApplications;
pub(crate) use handler::tagged_products;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// Kinds of resources tags apply to, by the path segment of their apply route.
pub const TAGGABLE: &[(&str, &str)] =
    &[("customers", "customer"), ("suppliers", "supplier"), ("products", "product"), ("sales", "sale")];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    pub id: Uuid,
    pub fields: TagFields,
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TagCommand {
    Create {
        id: Uuid,
        fields: TagFields,
    },
    /// Any of a new name or colour, and archiving (`Some(true)`) or restoring (`Some(false)`).
    Update {
        id: Uuid,
        name: Option<String>,
        color: Option<Option<String>>,
        archived: Option<bool>,
    },
}

impl TagCommand {
    pub fn id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Update { id, .. } => *id,
        }
    }

    pub fn is_creation(&self) -> bool {
        matches!(self, Self::Create { .. })
    }

    /// The name the tag will have, when the command sets one.
    pub fn new_name(&self) -> Option<&str> {
        match self {
            Self::Create { fields, .. } => Some(&fields.name),
            Self::Update { name, .. } => name.as_deref(),
        }
    }
}

events::named_enum! {
    /// The kinds of resource tags apply to (stored as their snake_case names in tag events).
    pub enum Taggable {
        Customer = "customer", Supplier = "supplier", Product = "product", Sale = "sale",
        StockTransfer = "stock_transfer", Purchase = "purchase", PurchaseOrder = "purchase_order",
    }
}

impl Taggable {
    /// The scope that lets a credential change the tags of this kind of resource.
    pub fn write_scope(self) -> Scope {
        match self {
            Taggable::Customer => Scope::CustomersWrite,
            Taggable::Supplier => Scope::SuppliersWrite,
            Taggable::Product => Scope::ProductsWrite,
            Taggable::Sale => Scope::SalesWrite,
            Taggable::StockTransfer => Scope::TransfersWrite,
            Taggable::Purchase | Taggable::PurchaseOrder => Scope::PurchasesWrite,
        }
    }
}

/// Applying and removing tags on resources of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyTags {
    pub resource_type: Taggable,
    pub resource_ids: Vec<Uuid>,
    pub add: Vec<Uuid>,
    pub remove: Vec<Uuid>,
    /// Identifies the operation (for command routing).
    pub id: Uuid,
}

impl Aggregate for Tag {
    type Command = TagCommand;
    type Event = TagEvent;

    fn decide(state: Option<&Self>, command: &TagCommand) -> Result<Vec<TagEvent>, Rejection> {
        match (state, command) {
            (None, TagCommand::Create { fields, .. }) => Ok(vec![TagEvent::TagCreated(fields.clone())]),
            (Some(_), TagCommand::Create { .. }) => {
                Err(Rejection::conflict("ALREADY_EXISTS", "the tag already exists"))
            }
            (None, TagCommand::Update { .. }) => Err(Rejection::not_found("tag")),
            (Some(current), TagCommand::Update { name, color, archived, .. }) => {
                let mut events = Vec::new();
                let fields = TagFields {
                    name: name.clone().unwrap_or_else(|| current.fields.name.clone()),
                    color: color.clone().unwrap_or_else(|| current.fields.color.clone()),
                };
                if fields != current.fields {
                    events.push(TagEvent::TagChanged(fields));
                }
                match (archived, current.archived_at.is_some()) {
                    (Some(true), false) => events.push(TagEvent::TagArchived),
                    (Some(false), true) => events.push(TagEvent::TagRestored),
                    _ => {}
                }
                Ok(events)
            }
        }
    }

    fn evolve(state: Option<Self>, event: &TagEvent, at: OffsetDateTime) -> Option<Self> {
        match (state, event) {
            (_, TagEvent::TagCreated(fields)) => {
                Some(Tag { id: Uuid::nil(), fields: fields.clone(), archived_at: None, created_at: at, updated_at: at })
            }
            (Some(tag), TagEvent::TagChanged(fields)) => Some(Tag { fields: fields.clone(), updated_at: at, ..tag }),
            (Some(tag), TagEvent::TagArchived) => Some(Tag { archived_at: Some(at), updated_at: at, ..tag }),
            (Some(tag), TagEvent::TagRestored) => Some(Tag { archived_at: None, updated_at: at, ..tag }),
            // Assignments do not change the tag itself.
            (Some(tag), TagEvent::TagApplied(_) | TagEvent::TagRemoved(_)) => Some(tag),
            (None, _) => None,
        }
    }
}

fn color(r: &mut ObjectReader<'_>) -> Option<String> {
    let color = r.optional_str("color", 7)?;
    let valid = color.len() == 7 && color.starts_with('#') && color[1..].chars().all(|c| c.is_ascii_hexdigit());
    if valid {
        Some(color.to_lowercase())
    } else {
        r.reject("color", "invalid_format", "must be a colour written #rrggbb");
        None
    }
}

pub fn parse_create(body: &Value) -> Result<TagFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = r.required_str("name", 1, 50);
    let color = color(&mut r);
    if r.has("archived_at") || r.has("archived") {
        r.reject("archived", "not_allowed", "a new tag is not archived");
    }
    r.finish(TagFields { name, color })
}

/// A PATCH body: any of `name`, `color` (null clears it), `archived` (true archives, false restores).
/// What a tag PATCH changes: name, colour (`Some(None)` clears it), archived.
pub type TagChanges = (Option<String>, Option<Option<String>>, Option<bool>);

pub fn parse_update(body: &Value) -> Result<TagChanges, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = if r.has("name") { Some(r.required_str("name", 1, 50)) } else { None };
    let color = if r.has("color") { Some(color(&mut r)) } else { None };
    let archived = r.optional_bool("archived");
    if name.is_none() && color.is_none() && archived.is_none() {
        r.reject("body", "required", "change at least one of name, color or archived");
    }
    r.finish((name, color, archived))
}

/// An apply body: `ids` (the resources, 1 to 1000), `add` and `remove` (tag ids; at least one tag in
/// all, none in both).
pub fn parse_apply(body: &Value, resource_type: Taggable) -> Result<ApplyTags, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let list = |r: &mut ObjectReader<'_>, name: &str, max: usize| -> Vec<Uuid> {
        let mut out = Vec::new();
        match r.value(name).map(Value::as_array) {
            None => {}
            Some(Some(items)) if items.len() <= max => {
                for (i, item) in items.iter().enumerate() {
                    match item.as_str().map(Uuid::parse_str) {
                        Some(Ok(id)) if !out.contains(&id) => out.push(id),
                        Some(Ok(_)) => {}
                        _ => r.reject(&format!("{name}[{i}]"), "invalid_format", "must be an id (UUID)"),
                    }
                }
            }
            Some(Some(_)) => r.reject(name, "too_many", format!("at most {max} ids")),
            Some(None) => r.reject(name, "invalid_type", "must be an array of ids"),
        }
        out
    };
    let resource_ids = list(&mut r, "ids", 1000);
    let add = list(&mut r, "add", 50);
    let remove = list(&mut r, "remove", 50);
    if resource_ids.is_empty() && !r.errors.iter().any(|e| e.field.starts_with("ids")) {
        r.reject("ids", "required", "name at least one resource");
    }
    if add.is_empty() && remove.is_empty() && !r.errors.iter().any(|e| e.field.starts_with("add")) {
        r.reject("add", "required", "name at least one tag to add or remove");
    }
    if add.iter().any(|t| remove.contains(t)) {
        r.reject("remove", "conflict", "a tag cannot be added and removed at once");
    }
    r.finish(ApplyTags { resource_type, resource_ids, add, remove, id: Uuid::now_v7() })
}
