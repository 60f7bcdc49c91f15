//! What list handlers do with the rows they read, written once: each row with its tags, and a v2 page
//! answered in its envelope.

use crate::http::Style;
use crate::http::envelopes::{Pagination, V2Page, page_params};
use crate::http::error::ApiError;
use crate::http::resource::Call;
use crate::http::schema::{Limit, PageNumber};
use crate::http::tags::{TagData, tags_of};
use crate::state::AppState;
use bytes::Bytes;
use commands::tags::Taggable;
use poem_openapi::param::Query;
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use serde::Serialize;
use uuid::Uuid;

/// Each of `rows` (of the taggable kind `kind`, its id read by `id`) with the tags it carries, in order.
pub async fn tagged<R>(
    state: &AppState,
    org_id: Uuid,
    kind: Taggable,
    rows: Vec<R>,
    id: impl Fn(&R) -> Uuid,
) -> Result<Vec<(R, Vec<TagData>)>, ApiError> {
    let ids: Vec<Uuid> = rows.iter().map(&id).collect();
    let mut tags = tags_of(state, org_id, kind, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let tags = tags.remove(&id(&row)).unwrap_or_default();
            (row, tags)
        })
        .collect())
}

/// The `page` (from 1, default 1) and `limit` (1 to 100, default 20) of a v2 page list, as received.
pub fn v2_page_params(page: Query<Option<PageNumber>>, limit: Query<Option<Limit>>) -> Result<(i64, i64), ApiError> {
    page_params(page.0.map(|p| p.0), limit.0.map(|l| l.0))
}

/// One v2 page of `data`, the `page` of `limit` rows out of `total`, in the v2 envelope.
pub fn v2_page<T>(call: &Call<'_>, data: Vec<T>, page: i64, limit: i64, total: i64) -> Result<Bytes, ApiError>
where
    T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync,
{
    v2_envelope(call, data, Pagination::new(page, limit, total))
}

/// `data` and its `pagination` in the v2 envelope.
pub fn v2_envelope<T>(call: &Call<'_>, data: Vec<T>, pagination: Pagination) -> Result<Bytes, ApiError>
where
    T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync,
{
    Style::a(&V2Page { request_id: call.request_id.to_owned(), success: true, data, pagination })
}
