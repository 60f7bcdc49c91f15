//! `/api/v1/tags` (Style A objects) and the apply routes of customers, suppliers, products and sales.

use crate::http::auth::Auth;
use crate::http::body::{JsonBody, RawJson};
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::list::{ListEnvelope, ListParams, parse_id};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use commands::protocol::Command;
use commands::tags::{Tag, TagCommand, Taggable, parse_apply, parse_create, parse_update};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::{ApiResponse, Object, OpenApi};
use projections::ProjectionId;
use projections::tags::{self as read, TagRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

const PROJECTION: ProjectionId = ProjectionId::Tags;

/// A tag. Resources carry their tags in `tags`, each in this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Object)]
pub struct TagData {
    /// Always `tag`.
    pub object: String,
    pub id: Uuid,
    pub name: String,
    /// `#rrggbb`.
    pub color: Option<String>,
    /// Set while the tag is archived: it can no longer be applied, and stays shown where assigned.
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
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
            color: row.color,
            archived_at: row.archived_at.map(ar_time),
            created_at: ar_time(row.created_at),
            updated_at: ar_time(row.updated_at),
        }
    }

    fn from_state(tag: Tag) -> Self {
        Self {
            object: "tag".into(),
            id: tag.id,
            name: tag.fields.name,
            color: tag.fields.color,
            archived_at: tag.archived_at.map(ar_time),
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
    resource_type: &str,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<TagData>>, ApiError> {
    let found = read::tags_for(&state.pool, org_id, resource_type, ids).await?;
    Ok(found.into_iter().map(|(id, rows)| (id, rows.into_iter().map(TagData::from_row).collect())).collect())
}

/// The tags one resource carries.
pub async fn tags_of_one(
    state: &AppState,
    org_id: Uuid,
    resource_type: &str,
    id: Uuid,
) -> Result<Vec<TagData>, ApiError> {
    Ok(tags_of(state, org_id, resource_type, &[id]).await?.remove(&id).unwrap_or_default())
}

#[derive(Debug, Object)]
pub struct TagInput {
    pub name: String,
    /// `#rrggbb`.
    pub color: Option<String>,
}

/// Any of a new `name`, a `color` (null clears it), and `archived` (true archives, false restores).
#[derive(Debug, Object)]
pub struct TagPatch {
    pub name: Option<String>,
    pub color: Option<String>,
    pub archived: Option<bool>,
}

/// Tags to add to and remove from resources of one kind.
#[derive(Debug, Object)]
pub struct ApplyInput {
    /// The resources (1 to 1000).
    pub ids: Vec<Uuid>,
    /// Tags to add (not archived).
    pub add: Option<Vec<Uuid>>,
    /// Tags to remove.
    pub remove: Option<Vec<Uuid>>,
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

#[derive(ApiResponse)]
enum Created {
    /// The tag.
    #[oai(status = 201)]
    Created(RawJson<TagEnvelope>),
}

#[derive(ApiResponse)]
enum Single {
    /// The tag.
    #[oai(status = 200)]
    Ok(RawJson<TagEnvelope>),
}

#[derive(ApiResponse)]
enum Tags {
    /// A page of tags, oldest first.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<TagData>>),
}

#[derive(ApiResponse)]
enum Applied {
    /// Applied; every resource shows its tags at once.
    #[oai(status = 200)]
    Ok(RawJson<TagApplicationEnvelope>),
}

type Key = Header<Option<String>>;

fn accepted_tag(value: Value) -> Result<TagData, ApiError> {
    let tag: Tag = serde_json::from_value(value).map_err(|_| ApiError::internal())?;
    Ok(TagData::from_state(tag))
}

#[allow(clippy::too_many_arguments, reason = "the handler's extracted parts, passed on")]
async fn apply(
    segment: &str,
    resource_type: Taggable,
    auth: Auth,
    state: &AppState,
    request_id: RequestId,
    version: ServiceVersion,
    key: Key,
    body: JsonBody<ApplyInput>,
) -> Result<Applied, ApiError> {
    auth.0.require(resource_type.write_scope())?;
    let command = parse_apply(&body.value, resource_type).map_err(ApiError::validation)?;
    let operation = format!("apply{segment}Tags");
    let claim = idempotency::claim(key.0, false, &operation, &[], version.0.as_deref(), Some(&body.value))?;
    let accepted = state.dispatch(&auth.0, &request_id.0, claim, Command::ApplyTags(command)).await?;
    state.await_read(PROJECTION, &auth.0, accepted.commit).await?;
    let data: TagApplicationData = serde_json::from_value(accepted.state).map_err(|_| ApiError::internal())?;
    Ok(Applied::Ok(RawJson::new(Style::a(&TagApplicationEnvelope { request_id: request_id.0, data }))))
}

pub struct TagsApi;

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Tags")]
impl TagsApi {
    /// List tags
    ///
    /// Scope `tags:read`. A cursor list in creation order; archived tags only with `include_archived=true`.
    #[oai(path = "/tags", method = "get", operation_id = "listTags")]
    async fn list(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        include_archived: Query<Option<bool>>,
        /// 1 to 100, default 50.
        limit: Query<Option<String>>,
        /// The `next_cursor` of the previous page.
        cursor: Query<Option<String>>,
        /// Not supported: lists are paged with `cursor`.
        page: Query<Option<String>>,
    ) -> Result<Tags, ApiError> {
        auth.0.require(Scope::TagsRead)?;
        let params = ListParams::parse(limit.0, cursor.0, page.0, &state.cursors, "tags")?;
        let after = params.after.as_deref().map(|a| parse_id(a, "cursor")).transpose()?;
        let mut rows =
            read::list(&state.pool, auth.0.org_id, include_archived.0.unwrap_or(false), after, params.limit + 1)
                .await?;
        let next = params.finish_page(&mut rows, &state.cursors, "tags", |r| r.id.to_string());
        let has_more = next.is_some();
        let data = rows.into_iter().map(TagData::from_row).collect();
        let body = ListEnvelope::new(request_id.0, "/api/v1/tags", data, has_more, next);
        Ok(Tags::Ok(RawJson::new(Style::a(&body))))
    }

    /// Create a tag
    ///
    /// Scope `tags:write`. Names are unique in the organization (ignoring case).
    #[oai(path = "/tags", method = "post", operation_id = "createTag")]
    async fn create(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        /// Optional: a retry with the same key and body returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<TagInput>,
    ) -> Result<Created, ApiError> {
        auth.0.require(Scope::TagsWrite)?;
        let fields = parse_create(&body.value).map_err(ApiError::validation)?;
        let claim = idempotency::claim(key.0, false, "createTag", &[], version.0.as_deref(), Some(&body.value))?;
        let command = TagCommand::Create { id: Uuid::now_v7(), fields };
        let accepted = state.dispatch(&auth.0, &request_id.0, claim, Command::Tag(command)).await?;
        state.await_read(PROJECTION, &auth.0, accepted.commit).await?;
        let data = accepted_tag(accepted.state)?;
        Ok(Created::Created(RawJson::new(Style::a(&TagEnvelope { request_id: request_id.0, data }))))
    }

    /// Get a tag
    ///
    /// Scope `tags:read`.
    #[oai(path = "/tags/:tag_id", method = "get", operation_id = "getTag")]
    async fn get(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        tag_id: Path<String>,
    ) -> Result<Single, ApiError> {
        auth.0.require(Scope::TagsRead)?;
        let id = parse_id(&tag_id.0, "tag")?;
        let row = read::get(&state.pool, auth.0.org_id, id).await?.ok_or_else(|| ApiError::not_found("tag"))?;
        let body = TagEnvelope { request_id: request_id.0, data: TagData::from_row(row) };
        Ok(Single::Ok(RawJson::new(Style::a(&body))))
    }

    /// Rename, recolour, archive or restore a tag
    ///
    /// Scope `tags:write`. Archived tags stay shown on the resources that carry them.
    #[oai(path = "/tags/:tag_id", method = "patch", operation_id = "updateTag")]
    async fn update(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        tag_id: Path<String>,
        /// Optional: a retry with the same key and body returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<TagPatch>,
    ) -> Result<Single, ApiError> {
        auth.0.require(Scope::TagsWrite)?;
        let id = parse_id(&tag_id.0, "tag")?;
        let (name, color, archived) = parse_update(&body.value).map_err(ApiError::validation)?;
        let claim =
            idempotency::claim(key.0, false, "updateTag", &[&tag_id.0], version.0.as_deref(), Some(&body.value))?;
        let command = TagCommand::Update { id, name, color, archived };
        let accepted = state.dispatch(&auth.0, &request_id.0, claim, Command::Tag(command)).await?;
        state.await_read(PROJECTION, &auth.0, accepted.commit).await?;
        let data = accepted_tag(accepted.state)?;
        Ok(Single::Ok(RawJson::new(Style::a(&TagEnvelope { request_id: request_id.0, data }))))
    }

    /// Tag customers
    ///
    /// Scope `customers:write`. Adds and removes tags on the listed customers, all at once.
    #[oai(path = "/customers/tags/apply", method = "post", operation_id = "applyCustomerTags")]
    async fn apply_customers(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        #[oai(name = "Idempotency-Key")] key: Key,
        body: JsonBody<ApplyInput>,
    ) -> Result<Applied, ApiError> {
        apply("customers", Taggable::Customer, auth, &state, request_id, version, key, body).await
    }

    /// Tag suppliers
    ///
    /// Scope `suppliers:write`. Adds and removes tags on the listed suppliers, all at once.
    #[oai(path = "/suppliers/tags/apply", method = "post", operation_id = "applySupplierTags")]
    async fn apply_suppliers(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        #[oai(name = "Idempotency-Key")] key: Key,
        body: JsonBody<ApplyInput>,
    ) -> Result<Applied, ApiError> {
        apply("suppliers", Taggable::Supplier, auth, &state, request_id, version, key, body).await
    }

    /// Tag products
    ///
    /// Scope `products:write`. Adds and removes tags on the listed product variants, all at once.
    #[oai(path = "/products/tags/apply", method = "post", operation_id = "applyProductTags")]
    async fn apply_products(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        #[oai(name = "Idempotency-Key")] key: Key,
        body: JsonBody<ApplyInput>,
    ) -> Result<Applied, ApiError> {
        apply("products", Taggable::Product, auth, &state, request_id, version, key, body).await
    }

    /// Tag sales
    ///
    /// Scope `sales:write`. Adds and removes tags on the listed sales, all at once.
    #[oai(path = "/sales/tags/apply", method = "post", operation_id = "applySaleTags")]
    async fn apply_sales(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        #[oai(name = "Idempotency-Key")] key: Key,
        body: JsonBody<ApplyInput>,
    ) -> Result<Applied, ApiError> {
        apply("sales", Taggable::Sale, auth, &state, request_id, version, key, body).await
    }
}
