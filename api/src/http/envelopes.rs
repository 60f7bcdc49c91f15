//! The response envelopes every resource shares: Style B single objects and page lists, the v2 page
//! envelope, the typed response enums that document them, and the page-list parameters.

use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use poem_openapi::{ApiResponse, Object};
use serde::Serialize;

/// Style B single resource.
#[derive(Debug, Serialize, Object)]
pub struct StyleB<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    pub success: bool,
    pub data: T,
}

/// Style B page list.
#[derive(Debug, Serialize, Object)]
pub struct PageList<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    pub success: bool,
    pub data: Vec<T>,
    pub pagination: Pagination,
}

#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct Pagination {
    pub page: i64,
    pub limit: i64,
    pub total: i64,
    pub total_pages: i64,
}

#[derive(ApiResponse)]
pub enum Created<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    /// Created.
    #[oai(status = 201)]
    Created(RawJson<StyleB<T>>),
}

#[derive(ApiResponse)]
pub enum Single<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    /// The resource.
    #[oai(status = 200)]
    Ok(RawJson<StyleB<T>>),
}

#[derive(ApiResponse)]
pub enum CursorList<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    /// A page, in creation order.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<T>>),
}

#[derive(ApiResponse)]
pub enum Pages<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    /// A numbered page.
    #[oai(status = 200)]
    Ok(RawJson<PageList<T>>),
}

/// v2 read success envelope.
#[derive(Debug, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct V2Page<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    pub request_id: String,
    pub success: bool,
    pub data: Vec<T>,
    pub pagination: Pagination,
}

#[derive(ApiResponse)]
pub enum V2Pages<T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync> {
    /// A numbered page.
    #[oai(status = 200)]
    Ok(RawJson<V2Page<T>>),
}

/// `page` (from 1, default 1) and `limit` (1 to 100, default 20) of a page list.
pub fn page_params(page: Option<String>, limit: Option<String>) -> Result<(i64, i64), ApiError> {
    let mut error = ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid");
    let page = match page.as_deref().map(str::parse::<i64>) {
        None => 1,
        Some(Ok(n)) if (1..=1_000_000).contains(&n) => n,
        Some(_) => {
            error = error.with_detail(Some("page"), "out_of_range", "page must be an integer of 1 or more");
            1
        }
    };
    let limit = match limit.as_deref().map(str::parse::<i64>) {
        None => 20,
        Some(Ok(n)) if (1..=100).contains(&n) => n,
        Some(_) => {
            error = error.with_detail(Some("limit"), "out_of_range", "limit must be an integer from 1 to 100");
            20
        }
    };
    if error.body.details.is_empty() { Ok((page, limit)) } else { Err(error) }
}

impl Pagination {
    pub fn new(page: i64, limit: i64, total: i64) -> Self {
        Self { page, limit, total, total_pages: (total + limit - 1) / limit }
    }
}

/// `page` on a cursor list: not documented (cursor lists are paged with `cursor`), but read so that a
/// client sending it learns that instead of silently getting the first page.
pub struct PageParam(pub Option<String>);

impl<'a> poem::FromRequest<'a> for PageParam {
    async fn from_request(request: &'a poem::Request, _body: &mut poem::RequestBody) -> poem::Result<Self> {
        let query = request.uri().query().unwrap_or_default();
        let page =
            url::form_urlencoded::parse(query.as_bytes()).find(|(name, _)| name == "page").map(|(_, v)| v.into_owned());
        Ok(Self(page))
    }
}
