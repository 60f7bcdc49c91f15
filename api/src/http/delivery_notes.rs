//! Delivery notes (remitos; Style A, snake_case, `object: "delivery_note"`): created from scratch, for
//! a sale or for an order (each with an `Idempotency-Key`), read, listed and deleted, and the signed
//! download of the printed remito (its PDF, without prices).

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::documents::link;
use crate::http::error::ApiError;
use crate::http::inventory::StockWarning;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::routes_group::routes;
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::schema::{Blank, QuantityIn, QuantityText};
use crate::http::shared_filters::{Filters, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, Style, ar_time};
use crate::state::AppState;
use commands::aggregate::Rejection;
use commands::delivery_notes::{NoteCommand, NoteOutcome, parse_note};
use commands::protocol::{Command, CommandKind};
use events::catalogue::{DeliveryNoteState, DeliveryOrigin, formatted_number};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use projections::delivery_notes::{self as read, NoteFilter, NoteRow};
use projections::documents::OwnerKind;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY: &str = "The organization blocks negative stock and a line asks for more than is available \
                   (`INSUFFICIENT_STOCK`, one detail per short line), or an order line would be delivered \
                   beyond what is left of it (`PRECONDITION_FAILED`, naming the line); nothing was saved";

operations! {
    DeliveryNotesApi, INPUT_RULES;
    LIST_NOTES = read("listDeliveryNotes", Some(Scope::SalesRead));
    GET_NOTE = read("getDeliveryNote", Some(Scope::SalesRead));
    CREATE_NOTE = write("createDeliveryNote", Scope::SalesWrite, Idempotency::Required, CommandKind::DeliveryNote)
        .unprocessable(WHY);
    DELETE_NOTE = write("deleteDeliveryNote", Scope::SalesWrite, Idempotency::Required, CommandKind::DeliveryNote);
    GET_NOTE_DOCUMENT = read("getDeliveryNoteDocument", Some(Scope::SalesRead));
}

const NOTES: Kind = Kind::new("delivery_note", ProjectionId::DeliveryNotes, "/api/v1/delivery-notes", "delivery_notes");

/// `custom`, `sale` or `order`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum OriginType {
    Custom,
    Sale,
    Order,
}

/// What the note documents.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct OriginData {
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: OriginType,
    /// `sale`: the sale.
    pub sale_id: Option<Uuid>,
    /// `order`: the order.
    pub order_id: Option<Uuid>,
}

/// A delivered line.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct DeliveryLineData {
    /// The product variant (null on a custom line).
    pub product_id: Nullable<Uuid>,
    pub name: String,
    pub quantity: QuantityText,
    /// The order line it delivers (origin `order`).
    pub order_line_id: Nullable<Uuid>,
}

/// A delivery note (remito): what left, for whom, and from where. It shows no prices.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct DeliveryNoteData {
    /// Always `delivery_note`.
    pub object: String,
    pub id: Uuid,
    pub origin: OriginData,
    pub point_of_sale_id: Uuid,
    /// Gap-free per point of sale, never reused after a delete.
    pub number: i64,
    /// `R-0003-00000042`.
    pub formatted_number: String,
    /// The Argentine date it was issued.
    #[serde(with = "events::catalogue::iso_date")]
    pub date: Date,
    pub customer_id: Uuid,
    pub customer_name: String,
    /// Where the goods left from (null when the note moved nothing: origin `sale`).
    pub warehouse_id: Nullable<Uuid>,
    pub notes: Nullable<String>,
    pub lines: Vec<DeliveryLineData>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Write answers only: true when this is the stored outcome of an earlier request with the same key
    /// and body.
    pub idempotent_replay: Option<bool>,
    /// Write answers only: lines that took more than was available (negative stock allowed).
    pub warnings: Option<Vec<StockWarning>>,
}

impl DeliveryNoteData {
    fn from_state(id: Uuid, n: &DeliveryNoteState, created_at: OffsetDateTime) -> Self {
        let origin = match n.origin {
            DeliveryOrigin::Custom => OriginData { kind: OriginType::Custom, sale_id: None, order_id: None },
            DeliveryOrigin::Sale { sale_id } => {
                OriginData { kind: OriginType::Sale, sale_id: Some(sale_id), order_id: None }
            }
            DeliveryOrigin::Order { order_id } => {
                OriginData { kind: OriginType::Order, sale_id: None, order_id: Some(order_id) }
            }
        };
        Self {
            object: "delivery_note".into(),
            id,
            origin,
            point_of_sale_id: n.point_of_sale_id,
            number: n.number,
            formatted_number: formatted_number(n),
            date: n.date,
            customer_id: n.customer_id,
            customer_name: n.customer_name.clone(),
            warehouse_id: n.warehouse_id.into(),
            notes: n.notes.clone().into(),
            lines: n
                .lines
                .iter()
                .map(|l| DeliveryLineData {
                    product_id: l.variant_id.into(),
                    name: l.name.clone(),
                    quantity: l.quantity.into(),
                    order_line_id: l.order_line_id.into(),
                })
                .collect(),
            created_at: ar_time(created_at),
            idempotent_replay: None,
            warnings: None,
        }
    }

    fn of_row(row: &NoteRow) -> Self {
        Self::from_state(row.id, &row.note, row.created_at)
    }
}

/// An origin as sent.
#[derive(Debug, Object)]
pub struct OriginInput {
    #[oai(rename = "type")]
    pub kind: OriginType,
    /// Required for `sale`: a sale of the organization that sent out goods (one delivery note per sale); a
    /// credit or debit note sends none and is 409 `STATE_CONFLICT` naming it.
    pub sale_id: Optional<Uuid>,
    /// Required for `order`: an open order of the organization.
    pub order_id: Optional<Uuid>,
}

/// An item as sent: for `custom`, a `product_id` or `is_custom: true` with a `name`; for `order`, an
/// `order_line_id` (omit `items` to deliver everything left).
#[derive(Debug, Object)]
pub struct DeliveryItemInput {
    /// An active product variant of the organization (a combo moves its components).
    pub product_id: Optional<Uuid>,
    pub is_custom: Optional<bool>,
    /// Required on custom lines; on product lines it replaces the product's name.
    pub name: Optional<Blank<200>>,
    /// `order` only: the order line delivered.
    pub order_line_id: Optional<Uuid>,
    /// No more than is left to deliver of an order line.
    pub quantity: QuantityIn<true>,
}

/// A delivery note. `custom`: `customer_id`, `point_of_sale_id` and at least one item; the stock
/// leaves `warehouse_id` (default: the organization's default warehouse). `sale`: the note documents
/// the sale's goods, whose stock already moved: it moves nothing and takes no items, customer or
/// warehouse. `order`: the items (or everything left) leave the order's warehouse (or `warehouse_id`),
/// consuming its reservation; an inactive one is 404 naming `warehouse_id` (name an active one).
/// Unknown fields are refused.
#[derive(Debug, Object)]
pub struct DeliveryNoteInput {
    pub origin: OriginInput,
    /// Required for `custom`: an active customer of the organization. `order`: the order's customer when
    /// sent (another one is 409 `CONFLICT` naming it).
    pub customer_id: Optional<Uuid>,
    /// A point of sale of the organization: the note's numbering series.
    pub point_of_sale_id: Uuid,
    pub warehouse_id: Optional<Uuid>,
    #[oai(validator(max_items = 200))]
    pub items: Optional<Vec<DeliveryItemInput>>,
    pub notes: Optional<Blank<2000>>,
}

#[derive(Debug, Serialize, Object)]
pub struct DeliveryNoteEnvelope {
    pub request_id: String,
    pub data: DeliveryNoteData,
}

/// What deleting a delivery note did.
#[derive(Debug, Serialize, Object)]
pub struct DeliveryNoteDeletedData {
    /// Always `delivery_note`.
    pub object: String,
    pub id: Uuid,
    /// Always true.
    pub deleted: bool,
    /// True when this is the stored outcome of an earlier request with the same key.
    pub idempotent_replay: bool,
}

#[derive(Debug, Serialize, Object)]
pub struct DeliveryNoteDeletedEnvelope {
    pub request_id: String,
    pub data: DeliveryNoteDeletedData,
}

responses! {
    Created: Created(RawJson<DeliveryNoteEnvelope>) = 201, "The delivery note.";
    Single: Ok(RawJson<DeliveryNoteEnvelope>) = 200, "The delivery note.";
    Deleted: Ok(RawJson<DeliveryNoteDeletedEnvelope>) = 200, "The note is deleted and what it moved restored.";
    Notes: Ok(RawJson<ListEnvelope<DeliveryNoteData>>) = 200, "A page of delivery notes, newest first.";
    DocumentRedirect: Found(#[oai(header = "Location")] String) =
        302, "A signed link to the PDF, valid five minutes (see the description).";
}

pub struct DeliveryNotesApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Closed { schema: "DeliveryNoteInput" },
    InputRule::Closed { schema: "DeliveryItemInput" },
    InputRule::Closed { schema: "OriginInput" },
    InputRule::Query { operation: "listDeliveryNotes", parameter: "customer_id", schema: uuid_schema },
    InputRule::Query { operation: "listDeliveryNotes", parameter: "sale_id", schema: uuid_schema },
    InputRule::Query { operation: "listDeliveryNotes", parameter: "order_id", schema: uuid_schema },
    InputRule::Query {
        operation: "listDeliveryNotes",
        parameter: "origin_type",
        schema: || serde_json::json!({ "type": "string", "enum": DeliveryOrigin::NAMES }),
    },
];

async fn dispatched(
    call: &Call<'_>,
    write: Write<'_>,
    command: NoteCommand,
) -> Result<(NoteOutcome, bool), ApiError> {
    let accepted = call.dispatch(write, Command::DeliveryNote(command)).await?;
    call.await_reads(&accepted, [ProjectionId::DeliveryNotes, ProjectionId::Inventory, ProjectionId::Orders]).await?;
    Ok((decode_state(accepted.state, "delivery_note")?, accepted.replayed))
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::DeliveryNotes")]
    DeliveryNotesApi {
        /// Download a delivery note's PDF
        ///
        /// Scope `sales:read`. The stable, authenticated path to the printed remito (the issuer, the
        /// customer, the formatted number, the date and each line's name and quantity; no prices): 302 to
        /// a signed link, `/documents/{token}`, valid five minutes and served without a credential (do not
        /// store it; an expired or altered link answers 403); 404 while the document is not ready. A deleted
        /// note is 404.
        #[oai(
            path = "/delivery-notes/:delivery_note_id/document",
            method = "get",
            operation_id = "getDeliveryNoteDocument"
        )]
        async fn document(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            delivery_note_id: Path<IdText>,
        ) -> Result<DocumentRedirect, ApiError> {
            let call = Call::new(GET_NOTE_DOCUMENT, &state, &auth, request_id)?;
            let id = call.id(&NOTES, &delivery_note_id.0)?;
            if read::get(&state.pool, call.org_id(), id).await?.is_none_or(|r| r.deleted) {
                return Err(ApiError::not_found("delivery_note"));
            }
            Ok(DocumentRedirect::Found(link(&state, call.org_id(), OwnerKind::DeliveryNote, id).await?))
        }
    }
    writes: {
        /// Create a delivery note
        ///
        /// Scope `sales:write`; `Idempotency-Key` required. A retry with the same key and body returns the
        /// original with `idempotent_replay: true`, and 409 `STATE_CONFLICT` when that note was deleted
        /// since (no new note is made); another body under the key is 409 `IDEMPOTENCY_CONFLICT`. A second
        /// note for a sale is 409 `STATE_CONFLICT`. Numbers are gap-free per point of sale and never reused.
        /// Stock leaves under the organization's negative-stock policy (shortfalls are `warnings`, or 422
        /// with nothing saved when it blocks negative stock). For an order: delivering more than is left of
        /// a line is 422 naming it; the order's `delivered` and `fulfillment_status` follow.
        /// An inactive product, or a combo with an inactive component, is unknown to a custom note (404).
        create("/delivery-notes", "createDeliveryNote", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> Created::Created = CREATE_NOTE, |call, write, body: DeliveryNoteInput| {
                let input = parse_note(&body.value).map_err(ApiError::validation)?;
                let command = NoteCommand::Create { id: Uuid::now_v7(), input };
                let (outcome, replayed) = dispatched(&call, write, command).await?;
                let row = read::get(&call.state.pool, call.org_id(), outcome.id).await?;
                if replayed && row.as_ref().is_none_or(|r| r.deleted) {
                    return Err(ApiError::from_rejection(Rejection::state_conflict(
                        "DELIVERY_NOTE_DELETED",
                        "deleted",
                        "the delivery note this key made was deleted since; no new note was made",
                    )));
                }
                let created_at = row.map_or(outcome.at, |r| r.created_at);
                let mut data = DeliveryNoteData::from_state(outcome.id, &outcome.note, created_at);
                data.idempotent_replay = Some(replayed);
                data.warnings = Some(outcome.warnings.into_iter().map(Into::into).collect());
                Style::a(&DeliveryNoteEnvelope { request_id: call.request_id.to_owned(), data })?
            }
    }
    cursor_lists: {
        /// List delivery notes
        ///
        /// Scope `sales:read`. Newest first (`created_at`, then `id`); deleted notes are not listed.
        /// `origin_type`, `sale_id`, `order_id` and `customer_id` filter, all that are sent (a note has one
        /// origin: `sale_id` with `order_id` lists none).
        list("/delivery-notes", "listDeliveryNotes") -> Notes = LIST_NOTES, delivery_notes {
            origin_type: Query<Option<String>>,
            sale_id: Query<Option<String>>,
            order_id: Query<Option<String>>,
            customer_id: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a delivery note
        ///
        /// Scope `sales:read`. A deleted note is 404.
        get("/delivery-notes/:delivery_note_id", "getDeliveryNote") -> Single = GET_NOTE, NOTES, delivery_note_id
            => delivery_note;
    }
    actions: {
        /// Delete a delivery note
        ///
        /// Scope `sales:write`; `Idempotency-Key` required. Restores exactly what the note did: the stock
        /// it moved comes back to its warehouse, and for an order its lines' `delivered` go back and its
        /// reservation holds them again. The number is not reused; a sale may then have another note. A
        /// deleted or unknown note is 404.
        delete("/delivery-notes/:delivery_note_id", "deleteDeliveryNote", method = "delete")
            -> Deleted = DELETE_NOTE, NOTES, delivery_note_id
            => deleted(|id| NoteCommand::Delete { id });
    }
}

/// Deletes a delivery note and answers that it is gone, in its envelope.
async fn deleted(call: &Call<'_>, write: Write<'_>, command: NoteCommand) -> Result<bytes::Bytes, ApiError> {
    let (outcome, replayed) = dispatched(call, write, command).await?;
    let data = DeliveryNoteDeletedData {
        object: "delivery_note".into(),
        id: outcome.id,
        deleted: true,
        idempotent_replay: replayed,
    };
    Style::a(&DeliveryNoteDeletedEnvelope { request_id: call.request_id.to_owned(), data })
}

/// One delivery note, in its envelope (a deleted one is none).
async fn delivery_note(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::get(&call.state.pool, call.org_id(), id).await?.filter(|r| !r.deleted) else {
        return Ok(None);
    };
    let data = DeliveryNoteData::of_row(&row);
    Ok(Some(Style::a(&DeliveryNoteEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// A page of delivery notes, newest first.
async fn delivery_notes(
    call: &Call<'_>,
    params: PageParams,
    origin_type: Option<String>,
    sale_id: Option<String>,
    order_id: Option<String>,
    customer_id: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let mut filters = Filters::default();
    // Every filter applies, as in every list: `sale_id` with `order_id` lists none, never one of them.
    let filter = NoteFilter {
        origin_type: filters.one_of(origin_type, "origin_type", DeliveryOrigin::NAMES),
        sale_id: filters.id(sale_id, "sale_id"),
        order_id: filters.id(order_id, "order_id"),
        customer_id: filters.id(customer_id, "customer_id"),
    };
    filters.check()?;
    let bound = format!("delivery_notes{filter:?}");
    call.cursor_list(
        params,
        NOTES.list.bound(&bound),
        async |after, n| Ok(read::list(&state.pool, call.org_id(), &filter, after, n).await?),
        |row: &NoteRow| (row.created_at, row.id),
        async |rows| Ok(rows.iter().map(DeliveryNoteData::of_row).collect()),
    )
    .await
}
