//! Payment methods, warehouses, categories (Style B objects) and points of sale (Style A): the
//! configuration resources. Each kind describes itself once ([`ResourceKind`]); the handlers share one
//! implementation per verb, over the shared handler sequence (`resource.rs`).

use crate::http::Key;
use crate::http::schema::IdText;
use crate::cache::Resource;
use crate::http::auth::Auth;
use crate::http::body::{JsonBody, RawJson};
use crate::http::envelopes::PageParam;
use crate::http::envelopes::{Created, CursorList, PageList, Pages, Pagination, Single, StyleB, page_params};
use crate::http::error::ApiError;
use crate::http::operations::InputRule;
use crate::http::operations::{Idempotency, Operation};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, PageParams, Write};
use crate::http::routes_group::api_group;
use crate::http::schema::{Blank, FeePercentage, Limit, PageNumber, Text};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::FieldError;
use commands::protocol::{Command, CommandKind};
use commands::records::{Record, RecordCommand, parse_category, parse_payment_method, parse_warehouse};
use events::catalogue::{
    CategoryEvent, CategoryFields, PaymentMethodEvent, PaymentMethodFields, PointOfSaleEvent, PointOfSaleFields,
    RecordEvent, WarehouseEvent, WarehouseFields,
};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::{Path, Query};
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use projections::records::{self as read, PageQuery, RecordRow, RecordsProjection, SortBy};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The one operation written out by hand (see `records_api!` for the others).
pub const LIST_CATEGORIES: Operation = Operation::read("listCategories", Some(Scope::CategoriesRead));

/// A configuration resource as the HTTP surface shows it.
pub trait ResourceKind: RecordEvent {
    type Data: Serialize + Type + ParseFromJSON + ToJSON + Send + Sync;
    /// Its read model's table (the records projection of this kind).
    const PROJECTION: RecordsProjection<Self>;
    const KIND: Kind;

    fn render(
        id: Uuid,
        fields: Self::Fields,
        is_default: bool,
        created: OffsetDateTime,
        updated: OffsetDateTime,
    ) -> Self::Data;
    fn parse(body: &Value) -> Result<Self::Fields, Vec<FieldError>>;
    fn command(command: RecordCommand<Self>) -> Command;
}

fn number_as_json<S: Serializer>(value: &Nullable<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value.0 {
        Some(v) if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 => serializer.serialize_i64(v as i64),
        Some(v) => serializer.serialize_f64(v),
        None => serializer.serialize_none(),
    }
}

/// A payment method.
#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct PaymentMethodData {
    pub id: Uuid,
    pub name: String,
    pub icon: Nullable<String>,
    pub fee_percentage: Nullable<String>,
    #[serde(serialize_with = "number_as_json")]
    pub fee_fixed: Nullable<f64>,
    pub requires_reference: bool,
    pub is_active: bool,
    pub is_default: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Payment method write body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PaymentMethodInput {
    /// 1 to 50 characters.
    pub name: Text<50>,
    pub icon: Optional<Blank<50>>,
    /// A percentage written as text, for example `"3.5"` (0 to 100).
    pub fee_percentage: Optional<FeePercentage>,
    #[oai(validator(minimum(value = "0")))]
    pub fee_fixed: Optional<f64>,
    /// Default false.
    pub requires_reference: Optional<bool>,
    /// Default true.
    pub is_active: Optional<bool>,
    /// Default false. Making one payment method the default takes the flag from the previous one.
    pub is_default: Optional<bool>,
}

impl ResourceKind for PaymentMethodEvent {
    type Data = PaymentMethodData;
    const PROJECTION: RecordsProjection<Self> = projections::records::PAYMENT_METHODS;
    const KIND: Kind = Kind {
        label: "payment method",
        projection: Self::PROJECTION.id,
        cache: Some(Resource::PaymentMethod),
        list: ListAt { url: "/api/v1/payment-methods", binding: "/api/v1/payment-methods" },
    };

    fn render(
        id: Uuid,
        f: PaymentMethodFields,
        is_default: bool,
        created: OffsetDateTime,
        updated: OffsetDateTime,
    ) -> PaymentMethodData {
        PaymentMethodData {
            id,
            name: f.name,
            icon: f.icon.into(),
            fee_percentage: f.fee_percentage.into(),
            fee_fixed: f.fee_fixed.and_then(|n| n.as_f64()).into(),
            requires_reference: f.requires_reference,
            is_active: f.is_active,
            is_default,
            created_at: ar_time(created),
            updated_at: ar_time(updated),
        }
    }

    fn parse(body: &Value) -> Result<PaymentMethodFields, Vec<FieldError>> {
        parse_payment_method(body)
    }

    fn command(command: RecordCommand<Self>) -> Command {
        Command::PaymentMethod(command)
    }
}

/// A warehouse.
#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct WarehouseData {
    pub id: Uuid,
    pub name: String,
    pub address: Nullable<String>,
    pub is_default: bool,
    pub is_active: bool,
}

/// Warehouse write body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct WarehouseInput {
    /// 1 to 100 characters.
    pub name: Text<100>,
    pub address: Optional<Blank<200>>,
    /// Default false. Making one warehouse the default takes the flag from the previous one.
    pub is_default: Optional<bool>,
    /// Default true.
    pub is_active: Optional<bool>,
}

impl ResourceKind for WarehouseEvent {
    type Data = WarehouseData;
    const PROJECTION: RecordsProjection<Self> = projections::records::WAREHOUSES;
    const KIND: Kind = Kind {
        label: "warehouse",
        projection: Self::PROJECTION.id,
        cache: Some(Resource::Warehouse),
        list: ListAt { url: "/api/v1/warehouses", binding: "/api/v1/warehouses" },
    };

    fn render(id: Uuid, f: WarehouseFields, is_default: bool, _: OffsetDateTime, _: OffsetDateTime) -> WarehouseData {
        WarehouseData { id, name: f.name, address: f.address.into(), is_default, is_active: f.is_active }
    }

    fn parse(body: &Value) -> Result<WarehouseFields, Vec<FieldError>> {
        parse_warehouse(body)
    }

    fn command(command: RecordCommand<Self>) -> Command {
        Command::Warehouse(command)
    }
}

/// A category.
#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct CategoryData {
    pub id: Uuid,
    pub name: String,
    /// The parent category, or null for a top-level category.
    pub parent_id: Nullable<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Category write body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct CategoryInput {
    /// 1 to 100 characters.
    pub name: Text<100>,
    /// A category of the organization (null: top level); not the category itself nor one of its
    /// descendants, at most 32 levels deep.
    pub parent_id: Optional<Uuid>,
}

impl ResourceKind for CategoryEvent {
    type Data = CategoryData;
    const PROJECTION: RecordsProjection<Self> = projections::records::CATEGORIES;
    const KIND: Kind = Kind {
        label: "category",
        projection: Self::PROJECTION.id,
        cache: Some(Resource::Category),
        list: ListAt { url: "/api/v1/categories", binding: "/api/v1/categories" },
    };

    fn render(id: Uuid, f: CategoryFields, _: bool, created: OffsetDateTime, updated: OffsetDateTime) -> CategoryData {
        CategoryData {
            id,
            name: f.name,
            parent_id: f.parent_id.into(),
            created_at: ar_time(created),
            updated_at: ar_time(updated),
        }
    }

    fn parse(body: &Value) -> Result<CategoryFields, Vec<FieldError>> {
        parse_category(body)
    }

    fn command(command: RecordCommand<Self>) -> Command {
        Command::Category(command)
    }
}

/// A point of sale (fiscal numbering series).
#[derive(Debug, Clone, Serialize, Object)]
pub struct PointOfSaleData {
    /// Always `point_of_sale`.
    pub object: String,
    pub id: Uuid,
    pub number: i32,
    pub name: String,
    pub is_active: bool,
    /// `electronic` (the tax authority numbers and authorizes its vouchers) or `manual` (the service
    /// numbers them, gap-free).
    pub kind: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl ResourceKind for PointOfSaleEvent {
    type Data = PointOfSaleData;
    const PROJECTION: RecordsProjection<Self> = projections::records::POINTS_OF_SALE;
    const KIND: Kind = Kind {
        label: "point of sale",
        projection: Self::PROJECTION.id,
        cache: Some(Resource::PointOfSale),
        list: ListAt { url: "/api/v1/points-of-sale", binding: "/api/v1/points-of-sale" },
    };

    fn render(
        id: Uuid,
        f: PointOfSaleFields,
        _: bool,
        created: OffsetDateTime,
        updated: OffsetDateTime,
    ) -> PointOfSaleData {
        PointOfSaleData {
            object: "point_of_sale".into(),
            id,
            number: f.number,
            name: f.name,
            is_active: f.is_active,
            kind: f.kind,
            created_at: ar_time(created),
            updated_at: ar_time(updated),
        }
    }

    fn parse(_: &Value) -> Result<PointOfSaleFields, Vec<FieldError>> {
        Err(vec![FieldError::new("body", "read_only", "points of sale are created by operators")])
    }

    fn command(_: RecordCommand<Self>) -> Command {
        unreachable!("points of sale are not written through the API")
    }
}

fn from_row<K: ResourceKind>(row: RecordRow) -> Result<K::Data, ApiError> {
    let fields: K::Fields = serde_json::from_value(row.doc).map_err(|error| {
        tracing::error!(%error, resource = K::KIND.label, "unreadable stored record");
        ApiError::internal()
    })?;
    Ok(K::render(row.id, fields, row.is_default, row.created_at, row.updated_at))
}

fn from_state<K: ResourceKind>(state: Value) -> Result<K::Data, ApiError> {
    let record: Record<K> = serde_json::from_value(state).map_err(|error| {
        tracing::error!(%error, resource = K::KIND.label, "unexpected record from the command worker");
        ApiError::internal()
    })?;
    let doc = serde_json::to_value(&record.fields).unwrap_or_default();
    let is_default = doc["is_default"] == Value::Bool(true);
    Ok(K::render(record.id, record.fields, is_default, record.created_at, record.updated_at))
}

fn single<K: ResourceKind>(data: K::Data) -> Result<Bytes, ApiError> {
    Style::b(&StyleB { success: true, data })
}

/// Create or replace one record (`target`: the id in the path of a replace), answering once it is
/// readable (served as [`Call::serve`] serves every write).
async fn write<K: ResourceKind>(call: &Call<'_>, write: Write<'_>, target: Option<&str>) -> Result<Bytes, ApiError> {
    call.serve(write.clone(), async {
        let id = match target {
            None => Uuid::now_v7(),
            Some(text) => K::KIND.id(text)?,
        };
        let fields = K::parse(write.body.unwrap_or(&Value::Null)).map_err(ApiError::validation)?;
        let command = match target {
            None => RecordCommand::Create { id, fields },
            Some(_) => RecordCommand::Replace { id, fields },
        };
        call.write(&K::KIND, write, K::command(command), |accepted| single::<K>(from_state::<K>(accepted.state)?))
            .await
    })
    .await
}

async fn get_one<K: ResourceKind>(call: &Call<'_>, id: &str) -> Result<Bytes, ApiError> {
    call.get(&K::KIND, id, async |id| {
        let row = read::get(&call.state.pool, K::PROJECTION.table_name(), call.org_id(), id).await?;
        row.map(|row| single::<K>(from_row::<K>(row)?)).transpose()
    })
    .await
}

async fn cursor_list<K: ResourceKind>(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    let table = K::PROJECTION.table_name();
    call.cursor_list(
        params,
        K::KIND.list,
        async |after, n| Ok(read::list(&call.state.pool, table, call.org_id(), after, n).await?),
        |row: &RecordRow| row.id,
        async |rows| rows.into_iter().map(from_row::<K>).collect(),
    )
    .await
}

/// One numbered page of records of kind `K` (the category list, the v2 warehouse list).
pub(crate) async fn record_page<K: ResourceKind>(
    call: &Call<'_>,
    query: &PageQuery,
) -> Result<(Vec<K::Data>, Pagination), ApiError> {
    let (rows, total) = read::page(&call.state.pool, K::PROJECTION.table_name(), call.org_id(), query).await?;
    let data = rows.into_iter().map(from_row::<K>).collect::<Result<Vec<_>, _>>()?;
    Ok((data, Pagination::new(query.page, query.limit, total)))
}

pub struct RecordsApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Query {
        operation: "listCategories",
        parameter: "sortBy",
        schema: || serde_json::json!({ "type": "string", "enum": ["name", "createdAt", "updatedAt"] }),
    },
    InputRule::Query {
        operation: "listCategories",
        parameter: "sortOrder",
        schema: || serde_json::json!({ "type": "string", "enum": ["asc", "desc"] }),
    },
    InputRule::Query {
        operation: "listCategories",
        parameter: "search",
        schema: || serde_json::json!({ "type": "string", "pattern": crate::http::schema::trimmed_text(0, 100) }),
    },
];

/// The records API, one block per kind: its type, its tag, its read scope and (if written through the
/// API) its write scope and command, body and path parameter; then its routes, each a row: its doc
/// (summary, blank line, description), verb (`list`, `create`, `get`, `replace`, or `route` for one
/// written out, with its operation), method name, path and `operationId`. Writes the `Operations` and
/// the `#[OpenApi]` impl, each route's operation from its kind's scopes.
macro_rules! records_api {
    (
        $(
            $kind:ident: $tag:tt, read $read:ident
            $(, write $write:ident => $command:ident, body $input:ident, id $param:ident)?
            { $($rows:tt)* }
        )*
    ) => {
        records_api!(@munch [] [] $([$kind $tag $read [$($write $command $input $param)?]] { $($rows)* })*);
    };

    // Every kind done: write both impls.
    (@munch [$($ops:tt)*] [$($routes:tt)*]) => {
        api_group! {
            RecordsApi,
            operations: [$($ops)*],
            input_rules: INPUT_RULES,
            #[OpenApi(prefix_path = "/api/v1")]
            routes: { $($routes)* }
        }
    };
    // A kind's rows done: the next kind.
    (@munch $ops:tt $routes:tt $facts:tt {} $($rest:tt)*) => {
        records_api!(@munch $ops $routes $($rest)*);
    };
    // A route written out.
    (
        @munch [$($ops:tt)*] [$($routes:tt)*] $facts:tt {
            route $operation:ident { $($route:tt)* }
            $($rows:tt)*
        } $($rest:tt)*
    ) => {
        records_api!(@munch [$($ops)* $operation,] [$($routes)* $($route)*] $facts { $($rows)* } $($rest)*);
    };
    // A cursor list.
    (
        @munch [$($ops:tt)*] [$($routes:tt)*] [$kind:ident $tag:tt $read:ident $write:tt] {
            $(#[doc = $doc:tt])* list $method:ident($path:tt, $id:tt);
            $($rows:tt)*
        } $($rest:tt)*
    ) => {
        records_api!(@munch [$($ops)* Operation::read($id, Some(Scope::$read)),] [$($routes)*
            $(#[doc = $doc])*
            #[oai(path = $path, method = "get", operation_id = $id, tag = $tag)]
            async fn $method(
                &self,
                auth: Auth,
                state: Data<&Arc<AppState>>,
                request_id: &RequestId,
                /// 1 to 100, default 50.
                limit: Query<Option<Limit>>,
                /// The `next_cursor` of the previous page.
                cursor: Query<Option<String>>,
                page: PageParam,
            ) -> Result<CursorList<<$kind as ResourceKind>::Data>, ApiError> {
                let call = Call::new(Operation::read($id, Some(Scope::$read)), &state, &auth, &request_id)?;
                let params = PageParams::new(limit, cursor, page);
                Ok(CursorList::Ok(RawJson::new(cursor_list::<$kind>(&call, params).await?)))
            }
        ] [$kind $tag $read $write] { $($rows)* } $($rest)*);
    };
    // A creation.
    (
        @munch [$($ops:tt)*] [$($routes:tt)*]
        [$kind:ident $tag:tt $read:ident [$write:ident $command:ident $input:ident $param:ident]] {
            $(#[doc = $doc:tt])* create $method:ident($path:tt, $id:tt);
            $($rows:tt)*
        } $($rest:tt)*
    ) => {
        records_api!(@munch [$($ops)* write_operation($id, Scope::$write, CommandKind::$command),] [$($routes)*
            $(#[doc = $doc])*
            #[oai(path = $path, method = "post", operation_id = $id, tag = $tag)]
            async fn $method(
                &self,
                auth: Auth,
                state: Data<&Arc<AppState>>,
                request_id: &RequestId,
                version: ServiceVersion,
                /// Optional: a retry with the same key and body returns the first outcome.
                #[oai(name = "Idempotency-Key")]
                key: Key,
                body: JsonBody<$input>,
            ) -> Result<Created<<$kind as ResourceKind>::Data>, ApiError> {
                let operation = write_operation($id, Scope::$write, CommandKind::$command);
                let call = Call::new(operation, &state, &auth, &request_id)?;
                let bytes = write::<$kind>(&call, Write::json(key.0, &version, &[], &body), None).await?;
                Ok(Created::Created(RawJson::new(bytes)))
            }
        ] [$kind $tag $read [$write $command $input $param]] { $($rows)* } $($rest)*);
    };
    // A read of one.
    (
        @munch [$($ops:tt)*] [$($routes:tt)*]
        [$kind:ident $tag:tt $read:ident [$write:ident $command:ident $input:ident $param:ident]] {
            $(#[doc = $doc:tt])* get $method:ident($path:tt, $id:tt);
            $($rows:tt)*
        } $($rest:tt)*
    ) => {
        records_api!(@munch [$($ops)* Operation::read($id, Some(Scope::$read)),] [$($routes)*
            $(#[doc = $doc])*
            #[oai(path = $path, method = "get", operation_id = $id, tag = $tag)]
            async fn $method(
                &self,
                auth: Auth,
                state: Data<&Arc<AppState>>,
                request_id: &RequestId,
                $param: Path<IdText>,
            ) -> Result<Single<<$kind as ResourceKind>::Data>, ApiError> {
                let call = Call::new(Operation::read($id, Some(Scope::$read)), &state, &auth, &request_id)?;
                Ok(Single::Ok(RawJson::new(get_one::<$kind>(&call, &$param.0).await?)))
            }
        ] [$kind $tag $read [$write $command $input $param]] { $($rows)* } $($rest)*);
    };
    // A replacement.
    (
        @munch [$($ops:tt)*] [$($routes:tt)*]
        [$kind:ident $tag:tt $read:ident [$write:ident $command:ident $input:ident $param:ident]] {
            $(#[doc = $doc:tt])* replace $method:ident($path:tt, $id:tt);
            $($rows:tt)*
        } $($rest:tt)*
    ) => {
        records_api!(@munch [$($ops)* write_operation($id, Scope::$write, CommandKind::$command),] [$($routes)*
            $(#[doc = $doc])*
            #[oai(path = $path, method = "put", operation_id = $id, tag = $tag)]
            async fn $method(
                &self,
                auth: Auth,
                state: Data<&Arc<AppState>>,
                request_id: &RequestId,
                version: ServiceVersion,
                $param: Path<IdText>,
                #[oai(name = "Idempotency-Key")] key: Key,
                body: JsonBody<$input>,
            ) -> Result<Single<<$kind as ResourceKind>::Data>, ApiError> {
                let operation = write_operation($id, Scope::$write, CommandKind::$command);
                let call = Call::new(operation, &state, &auth, &request_id)?;
                let id = $param.0.as_str();
                let bytes = write::<$kind>(&call, Write::json(key.0, &version, &[id], &body), Some(id)).await?;
                Ok(Single::Ok(RawJson::new(bytes)))
            }
        ] [$kind $tag $read [$write $command $input $param]] { $($rows)* } $($rest)*);
    };
}

/// A configuration write: the key is optional.
const fn write_operation(id: &'static str, scope: Scope, command: CommandKind) -> Operation {
    Operation::write(id, scope, Idempotency::Optional, command)
}

records_api! {
    PaymentMethodEvent: "ApiTags::PaymentMethods", read PaymentMethodsRead,
    write PaymentMethodsWrite => PaymentMethod, body PaymentMethodInput, id payment_method_id {
        /// List payment methods
        list list_payment_methods("/payment-methods", "listPaymentMethods");

        /// Create a payment method
        create create_payment_method("/payment-methods", "createPaymentMethod");

        /// Get a payment method
        get get_payment_method("/payment-methods/:payment_method_id", "getPaymentMethod");

        /// Replace a payment method
        ///
        /// Omitted optional fields take their defaults.
        replace replace_payment_method("/payment-methods/:payment_method_id", "replacePaymentMethod");
    }

    WarehouseEvent: "ApiTags::Warehouses", read WarehousesRead,
    write WarehousesWrite => Warehouse, body WarehouseInput, id warehouse_id {
        /// List warehouses
        list list_warehouses("/warehouses", "listWarehouses");

        /// Create a warehouse
        create create_warehouse("/warehouses", "createWarehouse");

        /// Get a warehouse
        get get_warehouse("/warehouses/:warehouse_id", "getWarehouse");

        /// Replace a warehouse
        ///
        /// Omitted optional fields take their defaults.
        replace replace_warehouse("/warehouses/:warehouse_id", "replaceWarehouse");
    }

    CategoryEvent: "ApiTags::Categories", read CategoriesRead,
    write CategoriesWrite => Category, body CategoryInput, id category_id {
        route LIST_CATEGORIES {
            /// List categories
            ///
            /// A Style B page list, searchable by name.
            #[oai(path = "/categories", method = "get", operation_id = "listCategories", tag = "ApiTags::Categories")]
            #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
            async fn list_categories(
                &self,
                auth: Auth,
                state: Data<&Arc<AppState>>,
                request_id: &RequestId,
                /// Page number, from 1 (default 1).
                page: Query<Option<PageNumber>>,
                /// 1 to 100, default 20.
                limit: Query<Option<Limit>>,
                /// Only categories whose name contains this text (case-insensitive).
                search: Query<Option<String>>,
                /// `name` (default), `createdAt` or `updatedAt`.
                #[oai(name = "sortBy")]
                sort_by: Query<Option<String>>,
                /// `asc` (default) or `desc`.
                #[oai(name = "sortOrder")]
                sort_order: Query<Option<String>>,
            ) -> Result<Pages<CategoryData>, ApiError> {
                let call = Call::new(LIST_CATEGORIES, &state, &auth, request_id)?;
                let mut error = ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid");
                let (page, limit) = match page_params(page.0.map(|p| p.0), limit.0.map(|l| l.0)) {
                    Ok(params) => params,
                    Err(invalid) => {
                        error = invalid;
                        (1, 20)
                    }
                };
                let sort = match sort_by.0.as_deref() {
                    None | Some("name") => SortBy::Name,
                    Some("createdAt") => SortBy::CreatedAt,
                    Some("updatedAt") => SortBy::UpdatedAt,
                    Some(_) => {
                        error =
                            error.with_detail(Some("sortBy"), "invalid_value", "sortBy must be name, createdAt or updatedAt");
                        SortBy::Name
                    }
                };
                let descending = match sort_order.0.as_deref() {
                    None | Some("asc") => false,
                    Some("desc") => true,
                    Some(_) => {
                        error = error.with_detail(Some("sortOrder"), "invalid_value", "sortOrder must be asc or desc");
                        false
                    }
                };
                let search = search.0.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
                if search.as_ref().is_some_and(|s| s.chars().count() > 100) {
                    error = error.with_detail(Some("search"), "too_long", "search is limited to 100 characters");
                }
                if !error.body.details.is_empty() {
                    return Err(error);
                }
                let query = PageQuery { search, sort, descending, page, limit };
                let (data, pagination) = record_page::<CategoryEvent>(&call, &query).await?;
                Ok(Pages::Ok(RawJson::new(Style::b(&PageList { success: true, data, pagination })?)))
            }
        }

        /// Create a category
        create create_category("/categories", "createCategory");

        /// Get a category
        get get_category("/categories/:category_id", "getCategory");

        /// Replace a category
        replace replace_category("/categories/:category_id", "replaceCategory");
    }

    PointOfSaleEvent: "ApiTags::PointsOfSale", read SalesRead {
        /// List points of sale
        ///
        /// Scope `sales:read`. Points of sale are created by operators (`backoffice admin create-point-of-sale`).
        list list_points_of_sale("/points-of-sale", "listPointsOfSale");
    }
}
