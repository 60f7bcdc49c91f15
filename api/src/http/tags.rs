//! `/api/v1/tags` (Style A objects) and the apply routes of customers, suppliers, products and sales.

use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::InputRule;
use crate::http::operations::{Idempotency, Operation};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, PageParams, Write, decode_state};
use crate::http::routes_group::api_group;
use crate::http::schema::rules;
use crate::http::schema::{Color, Text};
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::protocol::{Command, CommandKind};
use commands::tags::{Tag, TagCommand, Taggable, parse_apply, parse_create, parse_update};
use events::domain::Scope;
use poem_openapi::Object;
use poem_openapi::param::Query;
use projections::ProjectionId;
use projections::tags::{self as read, TagRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// The operations this module serves (see `operations.rs`).
pub const LIST_TAGS: Operation = Operation::read("listTags", Some(Scope::TagsRead));
pub const CREATE_TAG: Operation =
    Operation::write("createTag", Scope::TagsWrite, Idempotency::Optional, CommandKind::Tag);
pub const GET_TAG: Operation = Operation::read("getTag", Some(Scope::TagsRead));
pub const UPDATE_TAG: Operation =
    Operation::write("updateTag", Scope::TagsWrite, Idempotency::Optional, CommandKind::Tag);

/// A tag application on resources of one kind: the write scope of that kind.
const fn apply_tags(id: &'static str, scope: Scope) -> Operation {
    Operation::write(id, scope, Idempotency::Optional, CommandKind::ApplyTags)
}

/// Tags, as the shared handler sequence sees them (tag applications wait on the same projection).
const TAGS: Kind = Kind {
    label: "tag",
    projection: ProjectionId::Tags,
    cache: None,
    list: ListAt { url: "/api/v1/tags", binding: "tags" },
};

/// A tag. Resources carry their tags in `tags`, each in this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Object)]
pub struct TagData {
    /// Always `tag`.
    pub object: String,
    pub id: Uuid,
    pub name: String,
    /// `#rrggbb`.
    pub color: Nullable<String>,
    /// Set while the tag is archived: it can no longer be applied, and stays shown where assigned.
    #[serde(with = "crate::http::presence::rfc3339_nullable")]
    pub archived_at: Nullable<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl TagData {
    pub fn from_row(row: TagRow) -> Self {
        Self {
            object: "tag".into(),
            id: row.id,
            name: row.name,
            color: row.color.into(),
            archived_at: row.archived_at.map(ar_time).into(),
            created_at: ar_time(row.created_at),
            updated_at: ar_time(row.updated_at),
        }
    }

    fn from_state(tag: Tag) -> Self {
        Self {
            object: "tag".into(),
            id: tag.id,
            name: tag.fields.name,
            color: tag.fields.color.into(),
            archived_at: tag.archived_at.map(ar_time).into(),
            created_at: ar_time(tag.created_at),
            updated_at: ar_time(tag.updated_at),
        }
    }
}

/// The tags each of `ids` carries (ordered by name; archived ones included), for resource details and
/// lists.
pub async fn tags_of(
    state: &AppState,
    org_id: Uuid,
    resource_type: Taggable,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<TagData>>, ApiError> {
    let found = read::tags_for(&state.pool, org_id, resource_type.as_str(), ids).await?;
    Ok(found.into_iter().map(|(id, rows)| (id, rows.into_iter().map(TagData::from_row).collect())).collect())
}

/// The tags one resource carries.
pub async fn tags_of_one(
    state: &AppState,
    org_id: Uuid,
    resource_type: Taggable,
    id: Uuid,
) -> Result<Vec<TagData>, ApiError> {
    Ok(tags_of(state, org_id, resource_type, &[id]).await?.remove(&id).unwrap_or_default())
}

#[derive(Debug, Object)]
pub struct TagInput {
    /// 1 to 50 characters, unique in the organization (case-insensitively).
    pub name: Text<50>,
    /// `#rrggbb`.
    pub color: Optional<Color>,
}

/// Any of a new `name`, a `color` (null clears it), and `archived` (true archives, false restores).
#[derive(Debug, Object)]
pub struct TagPatch {
    pub name: Option<Text<50>>,
    pub color: Optional<Color>,
    pub archived: Optional<bool>,
}

/// Tags to add to and remove from resources of one kind.
#[derive(Debug, Object)]
pub struct ApplyInput {
    /// The resources (1 to 1000).
    #[oai(validator(min_items = 1, max_items = 1000))]
    pub ids: Vec<Uuid>,
    /// Tags to add (not archived), at most 50.
    #[oai(validator(max_items = 50))]
    pub add: Optional<Vec<Uuid>>,
    /// Tags to remove, at most 50.
    #[oai(validator(max_items = 50))]
    pub remove: Optional<Vec<Uuid>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct TagApplicationData {
    /// Always `tag_application`.
    pub object: String,
    pub resource_type: String,
    pub ids: Vec<Uuid>,
    pub added: Vec<Uuid>,
    pub removed: Vec<Uuid>,
}

#[derive(Debug, Serialize, Object)]
pub struct TagEnvelope {
    pub request_id: String,
    pub data: TagData,
}

#[derive(Debug, Serialize, Object)]
pub struct TagApplicationEnvelope {
    pub request_id: String,
    pub data: TagApplicationData,
}

responses! {
    Created: Created(RawJson<TagEnvelope>) = 201, "The tag.";
    Single: Ok(RawJson<TagEnvelope>) = 200, "The tag.";
    Tags: Ok(RawJson<ListEnvelope<TagData>>) = 200, "A page of tags, oldest first.";
    Applied: Ok(RawJson<TagApplicationEnvelope>) = 200, "Applied; every resource shows its tags at once.";
}

fn tag_envelope(request_id: &str, data: TagData) -> Result<bytes::Bytes, ApiError> {
    Style::a(&TagEnvelope { request_id: request_id.to_owned(), data })
}

/// Runs a tag's create or update and answers with the tag it left, in its envelope.
async fn saved(call: &Call<'_>, write: Write<'_>, command: TagCommand) -> Result<Bytes, ApiError> {
    call.write(&TAGS, write, Command::Tag(command), |accepted| {
        let tag = decode_state::<Tag>(accepted.state, "tag")?;
        tag_envelope(call.request_id, TagData::from_state(tag))
    })
    .await
}

/// Adds and removes tags on resources of one kind, all at once.
async fn apply(call: &Call<'_>, write: Write<'_>, body: &Value, resource_type: Taggable) -> Result<Bytes, ApiError> {
    let command = parse_apply(body, resource_type).map_err(ApiError::validation)?;
    call.write(&TAGS, write, Command::ApplyTags(command), |accepted| {
        let data: TagApplicationData = decode_state(accepted.state, "tag application")?;
        Style::a(&TagApplicationEnvelope { request_id: call.request_id.to_owned(), data })
    })
    .await
}

/// One tag, in its envelope.
async fn tag(call: &Call<'_>, id: Uuid) -> Result<Option<Bytes>, ApiError> {
    let row = read::get(&call.state.pool, call.org_id(), id).await?;
    row.map(|row| tag_envelope(call.request_id, TagData::from_row(row))).transpose()
}

/// A patch names a new `name`, a `color` (null clears it) or `archived`.
fn patch_changes_something() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        { "required": ["name"] },
        { "required": ["color"] },
        { "required": ["archived"], "properties": { "archived": { "type": "boolean" } } },
    ] })
}

/// At least one tag to add or remove.
fn applies_a_tag() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        { "required": ["add"], "properties": { "add": { "type": "array", "minItems": 1 } } },
        { "required": ["remove"], "properties": { "remove": { "type": "array", "minItems": 1 } } },
    ] })
}

pub struct TagsApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "TagInput", rule: || rules::refused(&["archived", "archived_at"]) },
    InputRule::Body { schema: "TagPatch", rule: patch_changes_something },
    InputRule::Body { schema: "ApplyInput", rule: applies_a_tag },
];

/// The tags API: the routes of tags themselves (`operations`, then their rows of `writes`,
/// `cursor_lists` and `gets`, as `routes!` reads them) and one apply route per taggable kind, each a
/// row of `apply`: its doc (summary, blank line, description), method name, path, `operationId`, the
/// write scope it needs and the `Taggable` it names. Writes the `Operations` and the `#[OpenApi]` impl,
/// so a row is the whole route.
macro_rules! tags_api {
    (
        operations: [$($operation:ident),* $(,)?];
        writes: { $($writes:tt)* }
        cursor_lists: { $($lists:tt)* }
        gets: { $($gets:tt)* }
        apply: {
            $(
                $(#[doc = $doc:tt])*
                $method:ident($path:tt, $id:tt, $scope:ident, $taggable:ident);
            )*
        }
    ) => {
        api_group! {
            TagsApi,
            operations: [$($operation,)* $(apply_tags($id, Scope::$scope),)*],
            input_rules: INPUT_RULES,
            #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Tags")]
            routes: {}
            writes: {
                $($writes)*
                $(
                    $(#[doc = $doc])*
                    $method($path, $id, "post") ("")
                        -> Applied::Ok = apply_tags($id, Scope::$scope), |call, write, body: ApplyInput| {
                            apply(&call, write, &body.value, Taggable::$taggable).await?
                        }
                )*
            }
            cursor_lists: { $($lists)* }
            gets: { $($gets)* }
        }
    };
}

/// A page of tags in creation order, the archived ones only when asked for.
async fn tags(call: &Call<'_>, params: PageParams, include_archived: Option<bool>) -> Result<Bytes, ApiError> {
    let include_archived = include_archived.unwrap_or(false);
    let bound = crate::http::shared_filters::binding("tags", &[&include_archived]);
    call.cursor_list(
        params,
        TAGS.list.bound(&bound),
        async |after, n| Ok(read::list(&call.state.pool, call.org_id(), include_archived, after, n).await?),
        |row: &TagRow| row.id,
        async |rows| Ok(rows.into_iter().map(TagData::from_row).collect()),
    )
    .await
}

tags_api! {
    operations: [LIST_TAGS, CREATE_TAG, GET_TAG, UPDATE_TAG];
    writes: {
        /// Create a tag
        ///
        /// Scope `tags:write`. Names are unique in the organization (ignoring case).
        create("/tags", "createTag", "post")
            ("Optional: a retry with the same key and body returns the first outcome.")
            -> Created::Created = CREATE_TAG, |call, write, body: TagInput| {
                let fields = parse_create(&body.value).map_err(ApiError::validation)?;
                saved(&call, write, TagCommand::Create { id: Uuid::now_v7(), fields }).await?
            }

        /// Rename, recolour, archive or restore a tag
        ///
        /// Scope `tags:write`. Archived tags stay shown on the resources that carry them.
        update("/tags/:tag_id", "updateTag", "patch")
            (tag_id, "Optional: a retry with the same key and body returns the first outcome.")
            -> Single::Ok = UPDATE_TAG, |call, write, body: TagPatch| {
                let id = TAGS.id(&tag_id.0)?;
                let (name, color, archived) = parse_update(&body.value).map_err(ApiError::validation)?;
                saved(&call, write, TagCommand::Update { id, name, color, archived }).await?
            }
    }
    cursor_lists: {
        /// List tags
        ///
        /// Scope `tags:read`. A cursor list in creation order; archived tags only with `include_archived=true`.
        list("/tags", "listTags") -> Tags = LIST_TAGS, tags { include_archived: Query<Option<bool>> };
    }
    gets: {
        /// Get a tag
        ///
        /// Scope `tags:read`.
        get("/tags/:tag_id", "getTag") -> Single = GET_TAG, TAGS, tag_id => tag;
    }
    apply: {
        /// Tag customers
        ///
        /// Scope `customers:write`. Adds and removes tags on the listed customers, all at once.
        apply_customers("/customers/tags/apply", "applyCustomerTags", CustomersWrite, Customer);

        /// Tag suppliers
        ///
        /// Scope `suppliers:write`. Adds and removes tags on the listed suppliers, all at once.
        apply_suppliers("/suppliers/tags/apply", "applySupplierTags", SuppliersWrite, Supplier);

        /// Tag products
        ///
        /// Scope `products:write`. Adds and removes tags on the listed product variants, all at once.
        apply_products("/products/tags/apply", "applyProductTags", ProductsWrite, Product);

        /// Tag sales
        ///
        /// Scope `sales:write`. Adds and removes tags on the listed sales, all at once.
        apply_sales("/sales/tags/apply", "applySaleTags", SalesWrite, Sale);

        /// Tag stock transfers
        ///
        /// Scope `transfers:write`. Adds and removes tags on the listed stock transfers, all at once.
        apply_stock_transfers("/stock-transfers/tags/apply", "applyStockTransferTags", TransfersWrite, StockTransfer);

        /// Tag purchases
        ///
        /// Scope `purchases:write`. Adds and removes tags on the listed purchases, all at once.
        apply_purchases("/purchases/tags/apply", "applyPurchaseTags", PurchasesWrite, Purchase);

        /// Tag purchase orders
        ///
        /// Scope `purchases:write`. Adds and removes tags on the listed purchase orders, all at once.
        apply_purchase_orders("/purchase-orders/tags/apply", "applyPurchaseOrderTags", PurchasesWrite, PurchaseOrder);
    }
}
