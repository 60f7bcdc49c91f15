//! Grouped reports (`POST /api/v1/reports/query`): sales, purchases, payments and inventory, grouped by
//! periods and dimensions, filtered, sorted and paged, today or as the history stood at an earlier
//! position of the event store, as JSON or (`Accept: text/csv`) as streamed CSV. Served from the
//! `reports` projection (`projections::reports`); the parser here is the one the CLI's
//! `reports query` uses too.

mod input;

pub use input::{ReportFiltersInput, ReportQueryInput, ReportRequest, parse};

use crate::http::auth::Auth;
use crate::http::body::JsonBody;
use crate::http::error::ApiError;
use crate::http::operations::InputRule;
use crate::http::presence::Nullable;
use crate::http::resource::Call;
use crate::http::shared_operations::operations;
use crate::http::{ApiTags, RequestId};
use crate::state::AppState;
use bytes::Bytes;
use events::domain::Scope;
use input::combinations;
use poem::web::Data;
use poem::{IntoResponse, Response};
use poem_openapi::param::Header;
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Object, OpenApi};
use projections::reports::query::{self as report, AsOf, Metric, Query};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// Groups a JSON page holds by default.
pub const DEFAULT_LIMIT: i64 = 100;

operations! {
    ReportsApi, INPUT_RULES;
    QUERY_REPORT = read("queryReport", Some(Scope::ReportsRead));
}

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "ReportQueryInput", rule: combinations },
    InputRule::Closed { schema: "ReportQueryInput" },
    InputRule::Closed { schema: "ReportFiltersInput" },
];

/// Voucher type codes and their names, for the `voucher_type` group.
pub fn voucher_types() -> Vec<(i32, &'static str)> {
    crate::http::reference::voucher_type_names()
}

/// A group's key as answered.
#[derive(Debug, Clone, Serialize, Object)]
pub struct ReportKeyData {
    /// The group (`month`, `category`, ...).
    pub group: String,
    /// The period (`2026-11`), id, voucher code, currency or side; null for facts without one (a line
    /// without a product, a product without a category or tags).
    pub value: Nullable<String>,
    /// What it identifies as it is named today (the period itself for periods; null when deleted or
    /// none).
    pub name: Nullable<String>,
}

/// Metrics as answered: those of the query only. Amounts are integer cents; quantities exact decimal
/// text.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, Serialize, Object)]
pub struct ReportMetricsData {
    pub count: Option<i64>,
    pub quantity: Option<String>,
    pub net: Option<i64>,
    pub tax: Option<i64>,
    pub total: Option<i64>,
    pub cost: Option<i64>,
    pub margin: Option<i64>,
    pub amount: Option<i64>,
    pub fee: Option<i64>,
    pub on_hand: Option<String>,
    pub value: Option<i64>,
}

impl ReportMetricsData {
    fn of(metrics: &[Metric], values: Vec<report::Value>) -> Self {
        let mut data = Self::default();
        for (metric, value) in metrics.iter().zip(values) {
            let (integer, decimal) = match value {
                report::Value::Integer(i) => (Some(i), None),
                report::Value::Decimal(d) => (None, Some(d)),
            };
            match metric {
                Metric::Count => data.count = integer,
                Metric::Quantity => data.quantity = decimal,
                Metric::Net => data.net = integer,
                Metric::Tax => data.tax = integer,
                Metric::Total => data.total = integer,
                Metric::Cost => data.cost = integer,
                Metric::Margin => data.margin = integer,
                Metric::Amount => data.amount = integer,
                Metric::Fee => data.fee = integer,
                Metric::OnHand => data.on_hand = decimal,
                Metric::Value => data.value = integer,
            }
        }
        data
    }
}

/// One group.
#[derive(Debug, Clone, Serialize, Object)]
pub struct ReportRowData {
    /// Its keys, in `group_by` order.
    pub keys: Vec<ReportKeyData>,
    pub metrics: ReportMetricsData,
}

/// The point of the history an answer reflects.
#[derive(Debug, Clone, Serialize, Object)]
pub struct ReportAsOfData {
    /// Every event of the organization at or below this event-store position is counted, and none
    /// after it.
    pub position: i64,
}

/// A report's answer.
#[derive(Debug, Clone, Serialize, Object)]
pub struct ReportData {
    /// Always `report`.
    pub object: String,
    pub report: String,
    pub group_by: Vec<String>,
    pub metrics: Vec<String>,
    pub as_of: ReportAsOfData,
    /// The groups of this page, in the query's order.
    pub rows: Vec<ReportRowData>,
    /// The metrics over everything the query counts (a line under several tags counted once).
    pub totals: ReportMetricsData,
    pub has_more: bool,
    /// Pass it as `cursor` with the same query for the next page (null on the last).
    pub next_cursor: Nullable<String>,
}

#[derive(Debug, Clone, Serialize, Object)]
pub struct ReportEnvelope {
    pub request_id: String,
    pub data: ReportData,
}

/// What a cursor binds: the query without its paging and point (the cursor carries that), nor its
/// reader's visibility (which every page applies again, and which the cursor's text would show).
fn cursor_scope(org_id: Uuid, query: &Query) -> String {
    format!("reports:{org_id}:{:?}", Query { as_of: AsOf::Now, visibility: Default::default(), ..query.clone() })
}

/// Where a cursor resumes: the offset and the position the first page reflected.
fn resume(state: &AppState, org_id: Uuid, request: &ReportRequest) -> Result<(i64, Option<i64>), ApiError> {
    let Some(cursor) = &request.cursor else { return Ok((0, None)) };
    let after = state.cursors.decode(&cursor_scope(org_id, &request.query), cursor)?;
    let (offset, position) = after.split_once(':').unwrap_or_default();
    match (offset.parse::<i64>(), position.parse::<i64>()) {
        (Ok(offset), Ok(position)) if offset >= 0 && position >= 0 => Ok((offset, Some(position))),
        _ => Err(ApiError::invalid_request("INVALID_CURSOR", "the cursor is not valid for this list")),
    }
}

/// The position an answer reflects, which its facts are cut at: a cursor's, or the query's `as_of`
/// (a position past what the projection folded reflects what it folded).
async fn cut(
    conn: &mut sqlx::PgConnection,
    org_id: Uuid,
    query: &Query,
    pinned: Option<i64>,
) -> Result<report::Reflects, sqlx::Error> {
    report::reflects(conn, org_id, pinned.map_or(query.as_of, AsOf::Position)).await
}

/// A JSON page of a report; `cursors` signs the next page's cursor (none: the page holds every group).
pub async fn answer(
    pool: &sqlx::PgPool,
    cursors: Option<&crate::http::cursor::CursorCodec>,
    org_id: Uuid,
    request: &ReportRequest,
    (offset, pinned): (i64, Option<i64>),
) -> Result<ReportData, ApiError> {
    let query = &request.query;
    // One snapshot for the position and the page: what the projector folds meanwhile is in neither, so
    // the cursor's position is the one the first page shows.
    let mut snapshot = pool.begin().await?;
    sqlx::query("set transaction isolation level repeatable read, read only").execute(&mut *snapshot).await?;
    let at = cut(&mut snapshot, org_id, query, pinned).await?;
    let limit = match cursors {
        Some(_) => request.limit.unwrap_or(DEFAULT_LIMIT),
        None => request.limit.unwrap_or(i64::MAX / 2),
    };
    let page = report::page(&mut snapshot, org_id, query, at, &voucher_types(), (offset, limit)).await?;
    snapshot.commit().await?;
    let next_cursor = match (page.has_more, cursors) {
        (true, Some(codec)) => Some(codec.encode(
            &cursor_scope(org_id, query),
            &format!("{}:{}", offset + page.rows.len() as i64, page.reflects.position),
        )),
        _ => None,
    };
    Ok(ReportData {
        object: "report".to_owned(),
        report: query.report.as_str().to_owned(),
        group_by: query.group_by.iter().map(|g| g.as_str().to_owned()).collect(),
        metrics: query.metrics.iter().map(|m| m.as_str().to_owned()).collect(),
        as_of: ReportAsOfData { position: page.reflects.position },
        rows: page
            .rows
            .into_iter()
            .map(|row| ReportRowData {
                keys: query
                    .group_by
                    .iter()
                    .zip(row.keys)
                    .map(|(group, (value, name))| ReportKeyData {
                        group: group.as_str().to_owned(),
                        value: value.into(),
                        name: name.into(),
                    })
                    .collect(),
                metrics: ReportMetricsData::of(&query.metrics, row.metrics),
            })
            .collect(),
        totals: ReportMetricsData::of(&query.metrics, page.totals),
        has_more: page.has_more,
        next_cursor: next_cursor.into(),
    })
}

/// A CSV field: quoted when it holds a separator, a quote or a line break.
fn csv_field(text: &str) -> Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(text)
    }
}

/// The CSV header of `query`: each group (with `<group>_name` beside each that names something), then
/// each metric. Starts with a byte-order mark, so spreadsheets read it as UTF-8.
pub fn csv_header(query: &Query) -> String {
    let mut columns: Vec<String> = Vec::new();
    for group in &query.group_by {
        columns.push(group.as_str().to_owned());
        if !group.is_period() {
            columns.push(format!("{group}_name"));
        }
    }
    columns.extend(query.metrics.iter().map(|m| m.as_str().to_owned()));
    format!("\u{feff}{}\r\n", columns.join(","))
}

/// One group as a CSV line (`\r\n`-terminated).
pub fn csv_line(query: &Query, row: &report::Row) -> String {
    let mut fields: Vec<String> = Vec::new();
    for (group, (value, name)) in query.group_by.iter().zip(&row.keys) {
        fields.push(csv_field(value.as_deref().unwrap_or_default()).into_owned());
        if !group.is_period() {
            fields.push(csv_field(name.as_deref().unwrap_or_default()).into_owned());
        }
    }
    for value in &row.metrics {
        fields.push(match value {
            report::Value::Integer(i) => i.to_string(),
            report::Value::Decimal(d) => d.clone(),
        });
    }
    format!("{}\r\n", fields.join(","))
}

/// Sends every group of a report as CSV lines to `out`, as they are read (from `offset`, at most
/// `limit` when the request sets one); a receiver that went away stops it.
pub async fn write_csv(
    pool: &sqlx::PgPool,
    org_id: Uuid,
    request: &ReportRequest,
    (offset, pinned): (i64, Option<i64>),
    out: tokio::sync::mpsc::Sender<String>,
) -> Result<(), sqlx::Error> {
    let query = &request.query;
    let mut conn = pool.acquire().await?;
    let at = cut(&mut conn, org_id, query, pinned).await?;
    if out.send(csv_header(query)).await.is_err() {
        return Ok(());
    }
    let names = voucher_types();
    let limit = request.limit.unwrap_or(i64::MAX);
    let mut index = 0_i64;
    report::each_row(&mut conn, org_id, query, at, &names, |row| {
        let wanted = index >= offset && index - offset < limit;
        let past = index - offset >= limit;
        index += 1;
        let out = &out;
        async move {
            if past {
                return false;
            }
            !wanted || out.send(csv_line(query, &row)).await.is_ok()
        }
    })
    .await
}

/// A report's answer: JSON, or CSV streamed as it is read.
pub enum ReportAnswer {
    Json(Bytes),
    Csv(poem::Body),
}

impl IntoResponse for ReportAnswer {
    fn into_response(self) -> Response {
        match self {
            ReportAnswer::Json(bytes) => Response::builder().content_type("application/json").body(bytes),
            ReportAnswer::Csv(body) => Response::builder().content_type("text/csv; charset=utf-8").body(body),
        }
    }
}

impl ApiResponse for ReportAnswer {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "The report: JSON, or CSV with `Accept: text/csv` (a header row, then one row per \
                              group; UTF-8 with a byte-order mark, `.` as the decimal point).",
                status: Some(200),
                status_range: None,
                headers: vec![],
                content: vec![
                    MetaMediaType { content_type: "application/json", schema: ReportEnvelope::schema_ref() },
                    MetaMediaType {
                        content_type: "text/csv",
                        schema: MetaSchemaRef::Inline(Box::new(MetaSchema::new("string"))),
                    },
                ],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        ReportEnvelope::register(registry);
    }
}

/// Whether the caller asked for CSV (`text/csv` acceptable, JSON not preferred).
fn wants_csv(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    let quality = |media: &str| {
        accept.split(',').find_map(|range| {
            let mut parts = range.split(';');
            let name = parts.next()?.trim().to_ascii_lowercase();
            if name != media {
                return None;
            }
            let q = parts.find_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()));
            Some(q.unwrap_or(1.0))
        })
    };
    match (quality("text/csv"), quality("application/json")) {
        (Some(csv), Some(json)) => csv > 0.0 && csv > json,
        (Some(csv), None) => csv > 0.0,
        _ => false,
    }
}

pub struct ReportsApi;

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Reports")]
impl ReportsApi {
    /// Query a grouped report
    ///
    /// Scope `reports:read`. Sums the facts of a report (`sales`, `purchases`, `payments`,
    /// `inventory`) by the groups asked, over the filters, as JSON pages (`limit`, `cursor`) or, with
    /// `Accept: text/csv`, as one CSV streamed. Served from the `reports` projection, which folds every
    /// sale, purchase, payment and change of stock as it is recorded (it may trail a write by moments):
    /// dates are each document's business date in the Argentine calendar (UTC-3); credit notes and
    /// voids subtract (a void at its own date); a product's category and tags are those it had when the
    /// document was recorded. `as_of` answers as the history stood at an event-store position or an
    /// instant, and every answer names the position it reflects (`as_of.position`); the pages of one
    /// query answer at the first page's position. A delegated credential with assigned registers or
    /// safes, or `own` visibility, sums in the payments report only the payments it reads. An unknown
    /// report, group or metric, one that does not apply to the report, an unsupported combination, an
    /// inverted date range or an `as_of` in the future is 400 naming it.
    #[oai(path = "/reports/query", method = "post", operation_id = "queryReport")]
    async fn query_report(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: &RequestId,
        /// `text/csv` for CSV; JSON otherwise.
        #[oai(name = "Accept")]
        accept: Header<Option<String>>,
        body: JsonBody<ReportQueryInput>,
    ) -> Result<ReportAnswer, ApiError> {
        let call = Call::new(QUERY_REPORT, &state, &auth, request_id)?;
        let org_id = call.org_id();
        let mut request = parse(&body.value, OffsetDateTime::now_utc()).map_err(ApiError::validation)?;
        // A delegated credential sums the payments it reads, as it lists them: none in a register or
        // safe it is not assigned, none another user took under `own` visibility.
        request.query.visibility = crate::http::treasury::visibility(call.principal);
        let paging = resume(&state, org_id, &request)?;
        if wants_csv(accept.0.as_deref()) {
            let (sender, receiver) = tokio::sync::mpsc::channel::<String>(64);
            let (failed, failure) = tokio::sync::oneshot::channel::<()>();
            let pool = state.pool.clone();
            tokio::spawn(async move {
                if let Err(error) = write_csv(&pool, org_id, &request, paging, sender).await {
                    tracing::error!(%error, "a CSV report stopped");
                    let _ = failed.send(());
                }
            });
            // Lines as they come; a failure midway ends the body with an error, so the client sees a
            // broken transfer rather than a short report.
            let stream = futures::stream::unfold((receiver, Some(failure)), |(mut receiver, failure)| async move {
                match receiver.recv().await {
                    Some(line) => Some((Ok(Bytes::from(line)), (receiver, failure))),
                    None => match failure?.await {
                        Ok(()) => Some((Err(std::io::Error::other("the report could not be read")), (receiver, None))),
                        Err(_) => None,
                    },
                }
            });
            return Ok(ReportAnswer::Csv(poem::Body::from_bytes_stream(stream)));
        }
        let data = answer(&state.pool, Some(&state.cursors), org_id, &request, paging).await?;
        let envelope = ReportEnvelope { request_id: request_id.0.clone(), data };
        Ok(ReportAnswer::Json(crate::http::Style::a(&envelope)?))
    }
}
