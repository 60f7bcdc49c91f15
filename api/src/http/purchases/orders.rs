//! Purchase orders: the order with its lines and receipts, its bodies, how it is rendered, and the
//! write every order route shares.

use super::data::{
    ExchangeRateIn, PurchaseCurrency, PurchaseItemData, PurchaseItemInput, SupplierRef, items, v1_refusal,
};
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Write, decode_state};
use crate::http::schema::{Blank, Int, QuantityIn, QuantityText};
use crate::http::shared_responses::responses;
use crate::http::tags::{TagData, tags_of_one};
use crate::http::{Style, ar_time};
use crate::state::AppState;
use commands::protocol::Command;
use commands::purchases::orders::{PurchaseOrder, PurchaseOrderStatus};
use commands::tags::Taggable;
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A line of a purchase order, with what arrived so far.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct OrderLineData {
    pub product_id: Uuid,
    pub ordered: QuantityText,
    pub received: QuantityText,
    pub pending: QuantityText,
}

/// A receipt of a purchase order.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ReceiptData {
    pub id: Uuid,
    pub warehouse_id: Uuid,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<ReceivedLineData>,
    /// The receipt allowed receiving more than was pending.
    pub over_receipt: bool,
    pub notes: Nullable<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ReceivedLineData {
    pub product_id: Uuid,
    pub quantity: QuantityText,
}

/// `draft`, `confirmed`, `partially_received`, `received` or `closed`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum OrderState {
    Draft,
    Confirmed,
    PartiallyReceived,
    Received,
    Closed,
}

impl From<PurchaseOrderStatus> for OrderState {
    fn from(s: PurchaseOrderStatus) -> Self {
        match s {
            PurchaseOrderStatus::Draft => Self::Draft,
            PurchaseOrderStatus::Confirmed => Self::Confirmed,
            PurchaseOrderStatus::PartiallyReceived => Self::PartiallyReceived,
            PurchaseOrderStatus::Received => Self::Received,
            PurchaseOrderStatus::Closed => Self::Closed,
        }
    }
}

/// A purchase order.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct PurchaseOrderData {
    pub id: Uuid,
    /// Gap-free per organization, from 1.
    pub number: i64,
    pub status: OrderState,
    pub supplier: SupplierRef,
    /// Where receipts arrive unless they name another warehouse.
    pub warehouse_id: Uuid,
    pub voucher_type: i32,
    pub currency: String,
    pub exchange_rate: String,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub expected_on: Nullable<Date>,
    pub notes: Nullable<String>,
    pub items: Vec<PurchaseItemData>,
    /// Ordered, received and pending per product.
    pub lines: Vec<OrderLineData>,
    pub receipts: Vec<ReceiptData>,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub total: i64,
    pub total_ars: i64,
    pub tags: Vec<TagData>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl PurchaseOrderData {
    fn from_state(
        order: &PurchaseOrder,
        supplier_name: Option<String>,
        names: &HashMap<Uuid, (String, String)>,
    ) -> Self {
        let received = order.received();
        let pending = order.pending();
        Self {
            id: order.id,
            number: order.number,
            status: order.status.into(),
            supplier: SupplierRef { id: order.supplier_id, name: supplier_name.into() },
            warehouse_id: order.warehouse_id,
            voucher_type: order.voucher_type,
            currency: order.currency.clone(),
            exchange_rate: order.exchange_rate.to_string(),
            expected_on: order.expected_on.into(),
            notes: order.notes.clone().into(),
            items: items(&order.lines, names),
            lines: order
                .ordered()
                .into_iter()
                .map(|(product_id, ordered)| OrderLineData {
                    product_id,
                    ordered: ordered.into(),
                    received: received.get(&product_id).copied().unwrap_or_default().into(),
                    pending: pending.iter().find(|(v, _)| *v == product_id).map(|(_, q)| *q).unwrap_or_default().into(),
                })
                .collect(),
            receipts: order
                .receipts
                .iter()
                .map(|r| ReceiptData {
                    id: r.id,
                    warehouse_id: r.warehouse_id,
                    occurred_on: r.occurred_on,
                    lines: r
                        .lines
                        .iter()
                        .map(|l| ReceivedLineData { product_id: l.variant_id, quantity: l.quantity.into() })
                        .collect(),
                    over_receipt: r.over_receipt,
                    notes: r.notes.clone().into(),
                    created_at: ar_time(r.created_at),
                })
                .collect(),
            subtotal: order.amounts.subtotal.get(),
            tax_amount: order.amounts.tax_amount.get(),
            total: order.amounts.total.get(),
            total_ars: order.amounts.total_ars.get(),
            tags: Vec::new(),
            created_at: ar_time(order.created_at),
            updated_at: ar_time(order.updated_at),
        }
    }
}

#[derive(Debug, Serialize, Object)]
pub struct PurchaseOrderEnvelope {
    /// Always true.
    pub success: bool,
    pub data: PurchaseOrderData,
}

responses! {
    pub(super) OrderCreated: Created(RawJson<PurchaseOrderEnvelope>) = 201, "The purchase order, a draft.";
    pub(super) OrderRead: Ok(RawJson<PurchaseOrderEnvelope>) = 200, "The purchase order.";
    pub(super) OrderList: Ok(RawJson<ListEnvelope<PurchaseOrderData>>) =
        200, "A page of purchase orders, oldest first.";
}

/// A purchase order body. Every field also accepts its snake_case spelling.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PurchaseOrderInput {
    /// An active supplier of the organization.
    pub supplier_id: Uuid,
    /// An active warehouse of the organization: where receipts arrive unless they name another.
    pub warehouse_id: Uuid,
    /// The voucher type expected from the supplier (1 by default): decides whether costs are net of VAT.
    pub voucher_type: Optional<Int<1, 95>>,
    pub currency: Optional<PurchaseCurrency>,
    /// Required for DOL; 1 (or omitted) for PES.
    pub exchange_rate: Optional<ExchangeRateIn>,
    pub expected_on: Optional<Date>,
    pub notes: Optional<Blank<1000>>,
    /// 1 to 200 lines.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub items: Vec<PurchaseItemInput>,
}

/// A line that arrived.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReceiptLineInput {
    /// A product of the order, once per receipt.
    pub product_id: Uuid,
    /// Positive; at most what is pending unless `allowOverReceipt`.
    pub quantity: QuantityIn<true>,
}

/// A receipt: what arrived of a confirmed or partially received order.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ReceiptInput {
    /// 1 to 200 lines.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub lines: Vec<ReceiptLineInput>,
    /// The order's warehouse by default.
    pub warehouse_id: Optional<Uuid>,
    /// Today by default; never later.
    pub occurred_on: Optional<Date>,
    /// Receive more than is pending (false by default: such a receipt is refused with 422).
    pub allow_over_receipt: Optional<bool>,
    pub notes: Optional<Blank<1000>>,
}

pub(super) async fn render_order(
    state: &AppState,
    org_id: Uuid,
    order: &PurchaseOrder,
    supplier_name: Option<String>,
) -> Result<PurchaseOrderData, ApiError> {
    let ids: Vec<Uuid> = order.lines.iter().map(|l| l.variant_id).collect();
    let names = projections::products::names(&state.pool, org_id, &ids).await?;
    let mut data = PurchaseOrderData::from_state(order, supplier_name, &names);
    data.tags = tags_of_one(state, org_id, Taggable::PurchaseOrder, order.id).await?;
    Ok(data)
}

/// A DOL order names its exchange rate; a PES one has none but 1.
pub(super) fn order_shapes() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        { "required": ["currency", "exchangeRate"], "properties": { "currency": { "enum": ["DOL"] },
          "exchangeRate": { "anyOf": [{ "type": "number" }, { "type": "string" }] } } },
        { "not": { "required": ["currency"], "properties": { "currency": { "enum": ["DOL"] } } },
          "properties": { "exchangeRate": { "nullable": true, "anyOf": [{ "enum": [1, "1"] }] } } },
    ] })
}

/// Sends an order command and answers the order after it (also the stock it moved, once readable).
pub(super) async fn order_write(call: &Call<'_>, write: Write<'_>, command: Command) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let accepted = call.dispatch(write, command).await.map_err(v1_refusal)?;
    let order: PurchaseOrder = decode_state(accepted.state.clone(), "purchase order")?;
    call.await_reads(&accepted, [ProjectionId::Purchases, ProjectionId::Inventory]).await?;
    let supplier = projections::customers::get(
        &state.pool,
        projections::customers::SUPPLIERS_TABLE,
        call.org_id(),
        order.supplier_id,
    )
    .await?
    .map(|s| s.name);
    let data = render_order(state, call.org_id(), &order, supplier).await?;
    Style::b(&PurchaseOrderEnvelope { success: true, data })
}
