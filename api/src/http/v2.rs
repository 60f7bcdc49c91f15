//! The machine-first v2 surface (`/api/v2`): camelCase page lists in the v2 envelopes.

use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::envelopes::{V2Page, V2Pages, page_params};
use crate::http::error::ApiError;
use crate::http::operations::{Operation, Operations};
use crate::http::records::{WarehouseData, record_page};
use crate::http::resource::Call;
use crate::http::schema::{Limit, PageNumber};
use crate::http::{ApiTags, RequestId, Style};
use crate::state::AppState;
use events::catalogue::WarehouseEvent;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::OpenApi;
use poem_openapi::param::Query;
use projections::records::{PageQuery, SortBy};
use std::sync::Arc;

/// The operations this module serves (see `operations.rs`).
pub const V2_LIST_WAREHOUSES: Operation = Operation::read("v2ListWarehouses", Some(Scope::WarehousesRead));

pub struct V2Api;

impl Operations for V2Api {
    const OPERATIONS: &'static [Operation] = &[V2_LIST_WAREHOUSES];
}

#[OpenApi(prefix_path = "/api/v2")]
impl V2Api {
    /// List warehouses (v2)
    ///
    /// Discovery for purchases that receive stock: a page list, by name.
    #[oai(path = "/warehouses", method = "get", operation_id = "v2ListWarehouses", tag = "ApiTags::V2")]
    async fn list_warehouses(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        /// Page number, from 1 (default 1).
        page: Query<Option<PageNumber>>,
        /// 1 to 100, default 20.
        limit: Query<Option<Limit>>,
        /// Only warehouses whose name contains this text (case-insensitive).
        search: Query<Option<String>>,
    ) -> Result<V2Pages<WarehouseData>, ApiError> {
        let call = Call::new(V2_LIST_WAREHOUSES, &state, &auth, &request_id)?;
        let (page, limit) = page_params(page.0.map(|p| p.0), limit.0.map(|l| l.0))?;
        let search = search.0.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let query = PageQuery { search, sort: SortBy::Name, descending: false, page, limit };
        let (data, pagination) = record_page::<WarehouseEvent>(&call, &query).await?;
        let body = V2Page { request_id: request_id.0, success: true, data, pagination };
        Ok(V2Pages::Ok(RawJson::new(Style::a(&body))))
    }
}
