//! Style A cursor lists: the envelope, and the `limit`/`cursor` rules every v1 list shares.

use crate::http::cursor::CursorCodec;
use crate::http::error::ApiError;
use crate::http::presence::Nullable;
use poem_openapi::Object;
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use serde::Serialize;
use uuid::Uuid;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;

/// A Style A list response.
#[derive(Debug, Serialize, Object)]
pub struct ListEnvelope<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    pub request_id: String,
    /// Always `list`.
    pub object: String,
    /// The requested list path.
    pub url: String,
    pub data: Vec<T>,
    /// Whether another page exists.
    pub has_more: bool,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Nullable<String>,
}

impl<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> ListEnvelope<T> {
    pub fn new(request_id: String, url: &str, data: Vec<T>, has_more: bool, next_cursor: Option<String>) -> Self {
        Self {
            request_id,
            object: "list".to_owned(),
            url: url.to_owned(),
            data,
            has_more,
            next_cursor: next_cursor.into(),
        }
    }
}

pub struct ListParams {
    pub limit: i64,
    /// Where the page starts, decoded from a genuine cursor of this list.
    pub after: Option<String>,
}

impl ListParams {
    /// Applies the shared rules: `limit` 1 to 100 (default 50), no `page`, a cursor issued for `scope`.
    pub fn parse(
        limit: Option<String>,
        cursor: Option<String>,
        page: Option<String>,
        codec: &CursorCodec,
        scope: &str,
    ) -> Result<Self, ApiError> {
        let mut error = ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid");
        if page.is_some() {
            error = error.with_detail(Some("page"), "unsupported", "page is not supported: pass next_cursor as cursor");
        }
        let limit = match limit.as_deref().map(str::parse::<i64>) {
            None => DEFAULT_LIMIT,
            Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => n,
            Some(_) => {
                error = error.with_detail(
                    Some("limit"),
                    "out_of_range",
                    format!("limit must be an integer from 1 to {MAX_LIMIT}"),
                );
                DEFAULT_LIMIT
            }
        };
        if !error.body.details.is_empty() {
            return Err(error);
        }
        let after = cursor.filter(|c| !c.is_empty()).map(|c| codec.decode(scope, &c)).transpose()?;
        Ok(Self { limit, after })
    }

    /// Cuts `rows`, fetched as `limit + 1`, to one page; when more follow, the cursor resuming after the
    /// page's last row (its position written by `position`) for the list described by `scope`.
    pub fn finish_page<T>(
        &self,
        rows: &mut Vec<T>,
        codec: &CursorCodec,
        scope: &str,
        position: impl Fn(&T) -> String,
    ) -> Option<String> {
        let has_more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        if has_more { rows.last().map(|row| codec.encode(scope, &position(row))) } else { None }
    }
}

/// Parses an id sent in the query parameter `parameter` (a filter such as `default_supplier_id`, or the
/// position inside a `cursor`): anything else is a 400 naming the parameter. An id in a path is read
/// with `Kind::id` instead (not an id: not found).
pub fn parse_id(text: &str, parameter: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(text).map_err(|_| {
        ApiError::invalid_request("INVALID_PARAMETERS", format!("{parameter} is not a valid id")).with_detail(
            Some(parameter),
            "invalid_id",
            "must be an id (UUID)",
        )
    })
}
