//! Quotes (Style A, snake_case, `object: "quote"`): create, replace and delete (each with an
//! `Idempotency-Key`), read and list. Amounts are canonical; a reservation of stock is taken, adjusted
//! and released with the quote.

use crate::http::Key;
use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::discounts::{QuoteDiscountData, QuoteDiscountInput};
use crate::http::error::ApiError;
use crate::http::inventory::StockWarning;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::orders;
use crate::http::presence::{Nullable, Optional};
use crate::http::routes_group::routes;
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::schema::{Blank, Cents, QuantityIn, QuantityText, rules};
use crate::http::shared_filters::{id_filter, one_of, search};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use commands::orders::OrderCommand;
use commands::protocol::{Command, CommandKind};
use commands::quotes::{QuoteCommand, QuoteOutcome, READ_ONLY, parse_quote};
use events::catalogue::{QuoteState, QuoteStatus};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use projections::quotes::{self as read, QuoteRow};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY: &str = "The organization blocks negative stock and a reserved line asks for more than is available \
                   (`INSUFFICIENT_STOCK`, one detail per short line); nothing was saved";

operations! {
    QuotesApi, INPUT_RULES;
    LIST_QUOTES = read("listQuotes", Some(Scope::QuotesRead));
    GET_QUOTE = read("getQuote", Some(Scope::QuotesRead));
    CREATE_QUOTE =
        write("createQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote).unprocessable(WHY);
    REPLACE_QUOTE =
        write("replaceQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote).unprocessable(WHY);
    DELETE_QUOTE = write("deleteQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote);
    SEND_QUOTE = write("sendQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote);
    ACCEPT_QUOTE = write("acceptQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote);
    REJECT_QUOTE = write("rejectQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Quote);
    CONVERT_QUOTE =
        write("convertQuote", Scope::QuotesWrite, Idempotency::Required, CommandKind::Order).unprocessable(WHY);
}

const QUOTES: Kind = Kind::new("quote", ProjectionId::Quotes, "/api/v1/quotes", "quotes");

/// `draft`, `sent`, `accepted`, `rejected`, `expired` or `converted`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum QuoteStatusData {
    Draft,
    Sent,
    Accepted,
    Rejected,
    Expired,
    Converted,
}

impl From<QuoteStatus> for QuoteStatusData {
    fn from(s: QuoteStatus) -> Self {
        match s {
            QuoteStatus::Draft => Self::Draft,
            QuoteStatus::Sent => Self::Sent,
            QuoteStatus::Accepted => Self::Accepted,
            QuoteStatus::Rejected => Self::Rejected,
            QuoteStatus::Expired => Self::Expired,
            QuoteStatus::Converted => Self::Converted,
        }
    }
}

/// A stored line: what was sent (lines carry no computed amounts).
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct QuoteLineData {
    pub product_id: Uuid,
    pub quantity: QuantityText,
    pub unit_price: i64,
    pub tax_rate_id: i32,
    pub warehouse_id: Nullable<Uuid>,
    pub discount: Nullable<QuoteDiscountData>,
}

/// A reserved line.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct ReservedLineData {
    pub product_id: Uuid,
    pub warehouse_id: Uuid,
    pub quantity: QuantityText,
}

/// The quote's active reservation.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct ReservationData {
    #[serde(with = "events::catalogue::iso_date")]
    pub reserved_through_date: Date,
    pub lines: Vec<ReservedLineData>,
}

/// A quote.
///
/// | status | send | accept | reject | convert | replace, delete | by itself |
/// |---|---|---|---|---|---|---|
/// | `draft` (new quotes) | → `sent` | 409 | 409 | → `converted` | yes | → `expired` after `expires_at` |
/// | `sent` | 409 | → `accepted` | → `rejected` (reservation released) | → `converted` | 409 | → `expired` after `expires_at` |
/// | `accepted` | 409 | 409 | 409 | → `converted` | 409 | none |
/// | `rejected`, `expired`, `converted` | 409 | 409 | 409 | 409 | 409 | none |
///
/// Every 409 is `STATE_CONFLICT` with the current state in its detail's metadata, and changes nothing.
/// Converting creates an order (`converted_order_id`) and moves the quote's active reservation to it in
/// the same transaction.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct QuoteData {
    /// Always `quote`.
    pub object: String,
    pub id: Uuid,
    /// Gap-free per organization, from 1.
    pub number: i64,
    /// `P-00000042`.
    pub formatted_number: String,
    pub status: QuoteStatusData,
    pub customer_id: Uuid,
    pub customer_name: String,
    pub items: Vec<QuoteLineData>,
    pub items_count: i64,
    pub price_list_id: Nullable<Uuid>,
    pub salesperson_member_id: Nullable<Uuid>,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub expires_at: Nullable<Date>,
    pub notes: Nullable<String>,
    pub global_discount_amount: Nullable<i64>,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub discount_amount: i64,
    pub total: i64,
    /// The stock held for the quote now (null when none is active).
    pub reservation: Nullable<ReservationData>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The order the quote was converted into (null until it is `converted`).
    pub converted_order_id: Nullable<Uuid>,
    /// Write answers only: true when this is the stored outcome of an earlier request with the same key
    /// and body.
    pub idempotent_replay: Option<bool>,
    /// Write answers only: reserved lines that asked for more than was available (negative stock
    /// allowed).
    pub warnings: Option<Vec<StockWarning>>,
}

impl QuoteData {
    fn from_state(id: Uuid, q: &QuoteState, created_at: OffsetDateTime, updated_at: OffsetDateTime) -> Self {
        Self {
            object: "quote".into(),
            id,
            number: q.number,
            formatted_number: format!("P-{:08}", q.number),
            status: q.status.into(),
            customer_id: q.customer_id,
            customer_name: q.customer_name.clone(),
            items: q
                .items
                .iter()
                .map(|l| QuoteLineData {
                    product_id: l.variant_id,
                    quantity: l.quantity.into(),
                    unit_price: l.unit_price.get(),
                    tax_rate_id: l.tax_rate_id.code(),
                    warehouse_id: l.warehouse_id.into(),
                    discount: l.discount.map(QuoteDiscountData::from).into(),
                })
                .collect(),
            items_count: q.items.len() as i64,
            price_list_id: q.price_list_id.into(),
            salesperson_member_id: q.salesperson_member_id.into(),
            expires_at: q.expires_at.into(),
            notes: q.notes.clone().into(),
            global_discount_amount: q.global_discount_amount.map(events::domain::Cents::get).into(),
            subtotal: q.subtotal.get(),
            tax_amount: q.tax_amount.get(),
            discount_amount: q.discount_amount.get(),
            total: q.total.get(),
            reservation: None.into(),
            converted_order_id: q.converted_order_id.into(),
            created_at: ar_time(created_at),
            updated_at: ar_time(updated_at),
            idempotent_replay: None,
            warnings: None,
        }
    }
}

/// The active reservations of quotes `ids`, by quote (the first line of each tells through when it
/// holds).
async fn active_reservations(
    state: &AppState,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, ReservationData>, ApiError> {
    let held = crate::http::inventory::held_by_owner(state, org_id, ids).await?;
    Ok(held
        .into_iter()
        .filter_map(|(quote, lines)| {
            let through = lines.first()?.3;
            let lines = lines
                .into_iter()
                .map(|(product_id, warehouse_id, quantity, _)| ReservedLineData {
                    product_id,
                    warehouse_id,
                    quantity: quantity.into(),
                })
                .collect();
            Some((quote, ReservationData { reserved_through_date: through, lines }))
        })
        .collect())
}

/// Stored quotes with their active reservations (read for all of them at once).
async fn render_rows(state: &AppState, org_id: Uuid, rows: Vec<QuoteRow>) -> Result<Vec<QuoteData>, ApiError> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut reservations = active_reservations(state, org_id, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let mut data = QuoteData::from_state(row.id, &row.quote, row.created_at, row.updated_at);
            data.reservation = reservations.remove(&row.id).into();
            data
        })
        .collect())
}

/// A line of a quote body.
#[derive(Debug, Object)]
pub struct QuoteLineInput {
    /// An active product variant of the organization.
    pub product_id: Uuid,
    pub quantity: QuantityIn<true>,
    /// Cents, VAT included.
    pub unit_price: Cents,
    /// Required on physical-product and combo lines when reserving (a combo reserves its components
    /// there): an active warehouse of the organization.
    pub warehouse_id: Optional<Uuid>,
    /// Either an `amount` (cents) or a `percentage` (0 to 100, decimals allowed), not both.
    pub discount: Optional<QuoteDiscountInput>,
}

/// Whether and until when stock is held for the quote.
#[derive(Debug, Object)]
pub struct ReservationInput {
    pub enabled: Optional<bool>,
    /// Required when enabled: today's Argentine date or later, and not after `expires_at`.
    pub reserved_through_date: Optional<Date>,
}

/// A quote body (create, and replace of the whole mutable representation). The read-only fields
/// (`number`, `formatted_number`, `status`, `subtotal`, `tax_amount`, `discount_amount`, `total`,
/// `created_at`, `updated_at`, `converted_sale_id`) and unknown fields are refused.
#[derive(Debug, Object)]
pub struct QuoteInput {
    /// An active customer of the organization.
    pub customer_id: Uuid,
    /// At least one line, at most 200.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub items: Vec<QuoteLineInput>,
    /// A price list of the organization; omitted on replace means cleared.
    pub price_list_id: Optional<Uuid>,
    pub salesperson_member_id: Optional<Uuid>,
    pub expires_at: Optional<Date>,
    pub notes: Optional<Blank<2000>>,
    /// Cents, off the total.
    pub global_discount_amount: Optional<Cents>,
    /// Omitted (or omitted on replace): no reservation.
    pub reservation: Optional<ReservationInput>,
}

#[derive(Debug, Serialize, Object)]
pub struct QuoteEnvelope {
    pub request_id: String,
    pub data: QuoteData,
}

/// What deleting a quote did.
#[derive(Debug, Serialize, Object)]
pub struct QuoteDeletedData {
    /// Always `quote`.
    pub object: String,
    pub id: Uuid,
    /// Always true.
    pub deleted: bool,
    /// Whether an active reservation was released with it.
    pub reservation_released: bool,
    /// True when this is the stored outcome of an earlier request with the same key.
    pub idempotent_replay: bool,
}

#[derive(Debug, Serialize, Object)]
pub struct QuoteDeletedEnvelope {
    pub request_id: String,
    pub data: QuoteDeletedData,
}

responses! {
    Converted: Created(RawJson<crate::http::orders::OrderEnvelope>) = 201, "The order made of the quote.";
    Created: Created(RawJson<QuoteEnvelope>) = 201, "The quote, a draft.";
    Single: Ok(RawJson<QuoteEnvelope>) = 200, "The quote.";
    Deleted: Ok(RawJson<QuoteDeletedEnvelope>) = 200, "The quote is gone and its reservation released.";
    Quotes: Ok(RawJson<ListEnvelope<QuoteData>>) = 200, "A page of quotes, newest first.";
}

/// A line discount is an amount or a percentage, not both; the read-only fields are refused.
fn quote_shapes() -> serde_json::Value {
    serde_json::json!({ "allOf": [
        rules::refused(READ_ONLY),
        { "properties": { "items": { "items": { "properties": { "discount": { "anyOf": [
            { "required": ["amount"], "not": { "required": ["percentage"] } },
            { "required": ["percentage"], "not": { "required": ["amount"] } },
        ] } } } } } },
    ] })
}

pub struct QuotesApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "QuoteInput", rule: quote_shapes },
    InputRule::Closed { schema: "QuoteInput" },
    InputRule::Closed { schema: "QuoteLineInput" },
    InputRule::Closed { schema: "ReservationInput" },
    InputRule::Closed { schema: "QuoteDiscountInput" },
    InputRule::Query {
        operation: "listQuotes",
        parameter: "customer_id",
        schema: || serde_json::json!({ "type": "string", "format": "uuid" }),
    },
    InputRule::Query {
        operation: "listQuotes",
        parameter: "status",
        schema: || serde_json::json!({ "type": "string", "enum": QuoteStatus::NAMES }),
    },
];

async fn dispatched(
    call: &Call<'_>,
    write: Write<'_>,
    command: QuoteCommand,
) -> Result<(QuoteOutcome, bool), ApiError> {
    let accepted = call.dispatch(write, Command::Quote(command)).await?;
    call.await_reads(&accepted, [ProjectionId::Quotes, ProjectionId::Inventory]).await?;
    Ok((decode_state(accepted.state, "quote")?, accepted.replayed))
}

/// Creates or replaces a quote and answers it as stored, in its envelope.
async fn saved(call: &Call<'_>, write: Write<'_>, command: QuoteCommand) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let (outcome, replayed) = dispatched(call, write, command).await?;
    let data = answer(state, call, outcome, replayed).await?;
    Style::a(&QuoteEnvelope { request_id: call.request_id.to_owned(), data })
}

/// Deletes a quote and answers what that did, in its envelope.
async fn deleted(call: &Call<'_>, write: Write<'_>, command: QuoteCommand) -> Result<bytes::Bytes, ApiError> {
    let (outcome, replayed) = dispatched(call, write, command).await?;
    let data = QuoteDeletedData {
        object: "quote".into(),
        id: outcome.id,
        deleted: true,
        reservation_released: outcome.reservation_released,
        idempotent_replay: replayed,
    };
    Style::a(&QuoteDeletedEnvelope { request_id: call.request_id.to_owned(), data })
}

async fn answer(
    state: &AppState,
    call: &Call<'_>,
    outcome: QuoteOutcome,
    replayed: bool,
) -> Result<QuoteData, ApiError> {
    let quote = outcome.quote.as_ref().ok_or_else(ApiError::internal)?;
    // Write answers show the quote as stored by this request (a replay shows the original).
    let mut data = QuoteData::from_state(outcome.id, quote, outcome.at, outcome.at);
    if let Some(row) = read::get(&state.pool, call.org_id(), outcome.id).await? {
        data.created_at = ar_time(row.created_at);
    }
    data.reservation = active_reservations(state, call.org_id(), &[outcome.id]).await?.remove(&outcome.id).into();
    data.idempotent_replay = Some(replayed);
    data.warnings = Some(outcome.warnings.into_iter().map(Into::into).collect());
    Ok(data)
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Quotes")]
    QuotesApi {
        /// Convert a quote into an order
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. A `draft`, `sent` or `accepted` quote becomes
        /// `converted` and an `open` order is created of it (its customer, lines with their VAT-inclusive
        /// prices, discounts and notes; `assigned_warehouse_id` the first line's warehouse), answered here.
        /// The quote's active reservation becomes the order's in the same transaction (nothing is released
        /// in between, so no other quote can take those units), held until the order is delivered, completed
        /// or cancelled. Any other state is 409 `STATE_CONFLICT` naming it; an inactive customer is 404.
        #[oai(path = "/quotes/:quote_id/convert", method = "post", operation_id = "convertQuote")]
        async fn convert(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            version: ServiceVersion,
            quote_id: Path<IdText>,
            /// Required: a retry with the same key returns the first outcome.
            #[oai(name = "Idempotency-Key")]
            key: Key,
        ) -> Result<Converted, ApiError> {
            let call = Call::new(CONVERT_QUOTE, &state, &auth, request_id)?;
            let quote_id = call.id(&QUOTES, &quote_id.0)?;
            let text = quote_id.to_string();
            let path = [text.as_str()];
            // The order's id derives from the quote's: a quote makes one order, whatever the key.
            let command = OrderCommand::Convert { id: Uuid::new_v5(&quote_id, b"order"), quote_id };
            let body = orders::saved(&call, Write::bare(key.0, &version, &path), command).await?;
            Ok(Converted::Created(RawJson::new(body)))
        }
    }
    writes: {
        /// Create a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required (a retry with the same key and body answers the
        /// stored quote with `idempotent_replay: true`, even if it changed since; another body is 409
        /// `IDEMPOTENCY_CONFLICT`; permissions are checked again on every retry). A new quote is a `draft`
        /// with a gap-free `number`. With `reservation.enabled`, stock of every physical line is held in its
        /// warehouse through `reserved_through_date`, in the same transaction: shortfalls are `warnings`
        /// when the organization allows negative stock and 422 with nothing saved when it blocks it.
        /// An inactive product, or a combo with an inactive component, is unknown to a quote (404).
        create("/quotes", "createQuote", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> Created::Created = CREATE_QUOTE, |call, write, body: QuoteInput| {
                let input = parse_quote(&body.value).map_err(ApiError::validation)?;
                let command = QuoteCommand::Create { id: Uuid::now_v7(), input };
                saved(&call, write, command).await?
            }

        /// Replace a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. Replaces the whole mutable representation
        /// (customer and every line to keep are sent again; an omitted `price_list_id` is cleared and an
        /// omitted `reservation` means none) and adjusts or releases the reservation in the same
        /// transaction. A quote that is not a draft is 409 `STATE_CONFLICT` with detail `QUOTE_NOT_DRAFT`.
        /// An inactive product, or a combo with an inactive component, is unknown to a quote (404).
        replace("/quotes/:quote_id", "replaceQuote", "put")
            (quote_id, "Required: a retry with the same key and body returns the first outcome.")
            -> Single::Ok = REPLACE_QUOTE, |call, write, body: QuoteInput| {
                let id = call.id(&QUOTES, &quote_id.0)?;
                let input = parse_quote(&body.value).map_err(ApiError::validation)?;
                let command = QuoteCommand::Replace { id, input };
                saved(&call, write, command).await?
            }
    }
    cursor_lists: {
        /// List quotes
        ///
        /// Scope `quotes:read`. Newest first (`created_at`, then `id`); `query` matches the customer's name
        /// or the quote's number (`42` or as shown, `P-00000042`); `customer_id` and `status` filter.
        list("/quotes", "listQuotes") -> Quotes = LIST_QUOTES, quotes {
            query: Query<Option<String>>,
            customer_id: Query<Option<String>>,
            status: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a quote
        ///
        /// Scope `quotes:read`. With its stored lines, header totals and the active reservation.
        get("/quotes/:quote_id", "getQuote") -> Single = GET_QUOTE, QUOTES, quote_id => quote;
    }
    actions: {
        /// Send a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. A `draft` becomes `sent` (it still expires
        /// after `expires_at`); any other state is 409 `STATE_CONFLICT` naming it.
        send("/quotes/:quote_id/send", "sendQuote")
            -> Single = SEND_QUOTE, QUOTES, quote_id
            => saved(|id| QuoteCommand::Send { id });

        /// Accept a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. A `sent` quote becomes `accepted` (its
        /// reservation is kept); any other state is 409 `STATE_CONFLICT` naming it.
        accept("/quotes/:quote_id/accept", "acceptQuote")
            -> Single = ACCEPT_QUOTE, QUOTES, quote_id
            => saved(|id| QuoteCommand::Accept { id });

        /// Reject a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. A `sent` quote becomes `rejected` and its
        /// reservation is released; any other state is 409 `STATE_CONFLICT` naming it.
        reject("/quotes/:quote_id/reject", "rejectQuote")
            -> Single = REJECT_QUOTE, QUOTES, quote_id
            => saved(|id| QuoteCommand::Reject { id });

        /// Delete a quote
        ///
        /// Scope `quotes:write`; `Idempotency-Key` required. Removes a draft quote and releases its
        /// reservation atomically (`reservation_released`); a quote that is not a draft is 409
        /// `STATE_CONFLICT` with detail `QUOTE_NOT_DRAFT`.
        delete("/quotes/:quote_id", "deleteQuote", method = "delete")
            -> Deleted = DELETE_QUOTE, QUOTES, quote_id
            => deleted(|id| QuoteCommand::Delete { id });
    }
}

/// One quote, in its envelope.
async fn quote(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::get(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let data = render_rows(call.state, call.org_id(), vec![row]).await?.remove(0);
    Ok(Some(Style::a(&QuoteEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// A page of quotes, newest first.
async fn quotes(
    call: &Call<'_>,
    params: PageParams,
    query: Option<String>,
    customer_id: Option<String>,
    status: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let customer = id_filter(customer_id, "customer_id")?;
    let status = one_of(status, "status", QuoteStatus::NAMES)?;
    let search = search(query);
    let bound = format!("quotes{:?}", (&search, &customer, &status));
    call.cursor_list(
        params,
        QUOTES.list.bound(&bound),
        async |after, n| {
            let status = status.as_deref();
            Ok(read::list(&state.pool, call.org_id(), search.as_deref(), customer, status, after, n).await?)
        },
        |row: &QuoteRow| (row.created_at, row.id),
        async |rows| render_rows(state, call.org_id(), rows).await,
    )
    .await
}
