//! Purchases and purchase orders, v1 (Style B, camelCase; the snake_case spellings of the guide are
//! accepted in bodies). The purchase objects here are shared with the v2 surface (`v2.rs`).

use crate::http::auth::Auth;
use crate::http::body::{JsonBody, RawJson};
use crate::http::envelopes::PageParam;
use crate::http::error::ApiError;
use crate::http::list::{ListEnvelope, parse_id};
use crate::http::operations::{Idempotency, InputRule, Operation, Operations};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, PageParams, Write, decode_state};
use crate::http::schema::{Blank, Cents, Int, Limit, QuantityIn, QuantityText, Text, VatCode};
use crate::http::tags::{TagData, tags_of, tags_of_one};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use commands::FieldError;
use commands::protocol::{Command, CommandKind};
use commands::purchases::orders::{OrderCommand, OrderStatus, PurchaseOrder, parse_order, parse_receipt};
use commands::purchases::{Mode, PurchaseCommand, PurchaseOutcome, PurchaseWarning, parse_purchase};
use commands::tags::Taggable;
use events::catalogue::{PurchaseLine, PurchaseRecorded, ar_date};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use projections::ProjectionId;
use projections::purchases::{self as read, PurchaseFilter, PurchaseRow};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY_BLOCKED: &str = "A purchase order's receipt asks more than is pending on a line without `allowOverReceipt` \
                           (`RECEIPT_EXCEEDS_PENDING`, one detail per line with the pending and received quantities); \
                           nothing was received";

/// The operations this module serves (see `operations.rs`).
pub const LIST_PURCHASES: Operation = Operation::read("listPurchases", Some(Scope::PurchasesRead));
pub const CREATE_PURCHASE: Operation =
    Operation::write("createPurchase", Scope::PurchasesWrite, Idempotency::Required, CommandKind::Purchase);
pub const GET_PURCHASE: Operation = Operation::read("getPurchase", Some(Scope::PurchasesRead));
pub const GET_PURCHASE_DOCUMENT: Operation = Operation::read("getPurchaseDocument", Some(Scope::PurchasesRead));
pub const LIST_PURCHASE_ORDERS: Operation = Operation::read("listPurchaseOrders", Some(Scope::PurchasesRead));
pub const CREATE_PURCHASE_ORDER: Operation =
    Operation::write("createPurchaseOrder", Scope::PurchasesWrite, Idempotency::Required, CommandKind::PurchaseOrder);
pub const GET_PURCHASE_ORDER: Operation = Operation::read("getPurchaseOrder", Some(Scope::PurchasesRead));
pub const CONFIRM_PURCHASE_ORDER: Operation =
    Operation::write("confirmPurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
pub const CLOSE_PURCHASE_ORDER: Operation =
    Operation::write("closePurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
pub const REOPEN_PURCHASE_ORDER: Operation =
    Operation::write("reopenPurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
pub const RECEIVE_PURCHASE_ORDER: Operation =
    Operation::write("receivePurchaseOrder", Scope::PurchasesWrite, Idempotency::Required, CommandKind::PurchaseOrder)
        .unprocessable(WHY_BLOCKED);

pub const PURCHASES: Kind = Kind {
    label: "purchase",
    projection: ProjectionId::Purchases,
    cache: None,
    list: ListAt { url: "/api/v1/purchases", binding: "purchases" },
};

const ORDERS: Kind = Kind {
    label: "purchase order",
    projection: ProjectionId::Purchases,
    cache: None,
    list: ListAt { url: "/api/v1/purchase-orders", binding: "purchase_orders" },
};

/// The organization's date now (UTC-3).
pub fn today() -> Date {
    ar_date(OffsetDateTime::now_utc())
}

/// The supplier of a purchase or purchase order: its id and name.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SupplierRef {
    pub id: Uuid,
    pub name: Nullable<String>,
}

/// A product named by a line.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct ProductRef {
    pub id: Uuid,
    pub name: Nullable<String>,
    pub sku: Nullable<String>,
}

/// A line with its canonical amounts (cents) in the document's currency and in pesos (`...Ars`).
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct PurchaseItemData {
    pub product: ProductRef,
    pub quantity: QuantityText,
    /// Cents of the document's currency: net of VAT on A vouchers, VAT included otherwise.
    pub unit_cost: i64,
    pub tax_rate_id: i32,
    pub net: i64,
    pub vat: i64,
    pub total: i64,
    pub net_ars: i64,
    pub vat_ars: i64,
    pub total_ars: i64,
}

fn items(lines: &[PurchaseLine], names: &HashMap<Uuid, (String, String)>) -> Vec<PurchaseItemData> {
    lines
        .iter()
        .map(|l| {
            let named = names.get(&l.variant_id);
            PurchaseItemData {
                product: ProductRef {
                    id: l.variant_id,
                    name: named.map(|n| n.0.clone()).into(),
                    sku: named.map(|n| n.1.clone()).into(),
                },
                quantity: l.quantity.into(),
                unit_cost: l.unit_cost,
                tax_rate_id: l.tax_rate_id,
                net: l.net,
                vat: l.vat,
                total: l.total,
                net_ars: l.net_ars,
                vat_ars: l.vat_ars,
                total_ars: l.total_ars,
            }
        })
        .collect()
}

/// Whether a purchase's PDF can be downloaded.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "lowercase")]
#[oai(rename_all = "lowercase")]
pub enum PurchaseDocumentState {
    Ready,
    Missing,
}

/// A purchase's PDF: `url` (the authenticated document route, which redirects to a short-lived signed
/// address) only when `ready`.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct PurchaseDocument {
    pub state: PurchaseDocumentState,
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A recorded purchase (a supplier's invoice).
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct PurchaseData {
    pub id: Uuid,
    pub supplier: SupplierRef,
    pub voucher_type: i32,
    pub supplier_invoice_number: String,
    #[serde(with = "events::catalogue::iso_date")]
    pub invoice_date: Date,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub due_date: Nullable<Date>,
    /// `PES` or `DOL`.
    pub currency: String,
    /// Pesos per unit of `currency` (exact decimal text; `1` for PES).
    pub exchange_rate: String,
    pub products_received: bool,
    pub warehouse_id: Nullable<Uuid>,
    pub notes: Nullable<String>,
    pub items: Vec<PurchaseItemData>,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub total: i64,
    pub subtotal_ars: i64,
    pub tax_amount_ars: i64,
    pub total_ars: i64,
    /// Ordered by name; archived tags included.
    pub tags: Vec<TagData>,
    pub document: PurchaseDocument,
    /// Deprecated: a storage name, never a download route; use `document.url`.
    #[oai(deprecated)]
    pub pdf_path: Nullable<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl PurchaseData {
    pub fn from_recorded(
        id: Uuid,
        p: &PurchaseRecorded,
        supplier_name: Option<String>,
        names: &HashMap<Uuid, (String, String)>,
        created_at: OffsetDateTime,
    ) -> Self {
        Self {
            id,
            supplier: SupplierRef { id: p.supplier_id, name: supplier_name.into() },
            voucher_type: p.voucher_type,
            supplier_invoice_number: p.supplier_invoice_number.clone(),
            invoice_date: p.invoice_date,
            due_date: p.due_date.into(),
            currency: p.currency.clone(),
            exchange_rate: p.exchange_rate.to_string(),
            products_received: p.products_received,
            warehouse_id: p.warehouse_id.into(),
            notes: p.notes.clone().into(),
            items: items(&p.lines, names),
            subtotal: p.amounts.subtotal,
            tax_amount: p.amounts.tax_amount,
            total: p.amounts.total,
            subtotal_ars: p.amounts.subtotal_ars,
            tax_amount_ars: p.amounts.tax_amount_ars,
            total_ars: p.amounts.total_ars,
            tags: Vec::new(),
            document: PurchaseDocument { state: PurchaseDocumentState::Missing, url: None },
            pdf_path: None.into(),
            created_at: ar_time(created_at),
        }
    }
}

/// The purchase as it would be (or was) stored: defaults applied, canonical amounts.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct NormalizedPurchaseData {
    pub supplier_id: Uuid,
    pub voucher_type: i32,
    pub supplier_invoice_number: String,
    #[serde(with = "events::catalogue::iso_date")]
    pub invoice_date: Date,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub due_date: Nullable<Date>,
    pub currency: String,
    pub exchange_rate: String,
    pub products_received: bool,
    pub warehouse_id: Nullable<Uuid>,
    pub notes: Nullable<String>,
    pub items: Vec<PurchaseItemData>,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub total: i64,
    pub subtotal_ars: i64,
    pub tax_amount_ars: i64,
    pub total_ars: i64,
}

/// Stock a purchase raises in one warehouse.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct StockEntryData {
    pub product_id: Uuid,
    pub warehouse_id: Uuid,
    pub quantity: QuantityText,
    /// On hand after the entry.
    pub on_hand: QuantityText,
}

/// A product's last cost moved by the purchase (pesos, cents).
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct CostUpdateData {
    pub product_id: Uuid,
    pub previous_cost: i64,
    pub new_cost: i64,
}

/// What the purchase owes the supplier.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SupplierBalanceData {
    pub supplier_id: Uuid,
    pub currency: String,
    pub amount: i64,
    pub amount_ars: i64,
}

/// What recording the purchase does beside storing it.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ProjectedEffectsData {
    pub stock_entries: Vec<StockEntryData>,
    pub cost_updates: Vec<CostUpdateData>,
    pub supplier_balance: SupplierBalanceData,
}

/// Worth a second look; does not stop the purchase.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct PurchaseWarningData {
    pub path: String,
    pub code: String,
    pub message: String,
}

impl From<PurchaseWarning> for PurchaseWarningData {
    fn from(w: PurchaseWarning) -> Self {
        Self { path: w.path, code: w.code, message: w.message }
    }
}

/// The normalized purchase and the effects of an outcome.
pub fn normalized_and_effects(
    outcome: &PurchaseOutcome,
    names: &HashMap<Uuid, (String, String)>,
) -> (NormalizedPurchaseData, ProjectedEffectsData) {
    let n = &outcome.normalized;
    let normalized = NormalizedPurchaseData {
        supplier_id: n.supplier_id,
        voucher_type: n.voucher_type,
        supplier_invoice_number: n.supplier_invoice_number.clone(),
        invoice_date: n.invoice_date,
        due_date: n.due_date.into(),
        currency: n.currency.clone(),
        exchange_rate: n.exchange_rate.to_string(),
        products_received: n.products_received,
        warehouse_id: n.warehouse_id.into(),
        notes: n.notes.clone().into(),
        items: items(&n.lines, names),
        subtotal: n.amounts.subtotal,
        tax_amount: n.amounts.tax_amount,
        total: n.amounts.total,
        subtotal_ars: n.amounts.subtotal_ars,
        tax_amount_ars: n.amounts.tax_amount_ars,
        total_ars: n.amounts.total_ars,
    };
    let e = &outcome.effects;
    let effects = ProjectedEffectsData {
        stock_entries: e
            .stock_entries
            .iter()
            .map(|s| StockEntryData {
                product_id: s.variant_id,
                warehouse_id: s.warehouse_id,
                quantity: s.quantity.into(),
                on_hand: s.on_hand.into(),
            })
            .collect(),
        cost_updates: e
            .cost_updates
            .iter()
            .map(|c| CostUpdateData { product_id: c.variant_id, previous_cost: c.previous, new_cost: c.current })
            .collect(),
        supplier_balance: SupplierBalanceData {
            supplier_id: n.supplier_id,
            currency: e.supplier_balance.currency.clone(),
            amount: e.supplier_balance.amount,
            amount_ars: e.supplier_balance.amount_ars,
        },
    };
    (normalized, effects)
}

/// The product names of every line of an outcome.
pub async fn outcome_names(
    state: &AppState,
    org_id: Uuid,
    outcome: &PurchaseOutcome,
) -> Result<HashMap<Uuid, (String, String)>, ApiError> {
    let ids: Vec<Uuid> = outcome.normalized.lines.iter().map(|l| l.variant_id).collect();
    Ok(projections::products::names(&state.pool, org_id, &ids).await?)
}

/// Renders stored purchases, with names, tags and documents.
pub async fn render_purchases(
    state: &AppState,
    org_id: Uuid,
    rows: Vec<PurchaseRow>,
) -> Result<Vec<PurchaseData>, ApiError> {
    let mut recorded = Vec::with_capacity(rows.len());
    for row in rows {
        let purchase: PurchaseRecorded = decode_state(row.doc.clone(), "purchase")?;
        recorded.push((row, purchase));
    }
    let product_ids: Vec<Uuid> = recorded.iter().flat_map(|(_, p)| p.lines.iter().map(|l| l.variant_id)).collect();
    let names = projections::products::names(&state.pool, org_id, &product_ids).await?;
    let ids: Vec<Uuid> = recorded.iter().map(|(r, _)| r.id).collect();
    let mut tags = tags_of(state, org_id, Taggable::Purchase, &ids).await?;
    let mut out = Vec::with_capacity(recorded.len());
    for (row, p) in recorded {
        let mut data = PurchaseData::from_recorded(row.id, &p, row.supplier_name, &names, row.created_at);
        data.tags = tags.remove(&row.id).unwrap_or_default();
        let ready = projections::documents::store::state(
            &state.pool,
            org_id,
            projections::documents::OwnerKind::Purchase,
            row.id,
        )
        .await?
            == projections::documents::DocumentState::Ready;
        if ready {
            data.document = PurchaseDocument {
                state: PurchaseDocumentState::Ready,
                url: Some(format!("/api/v1/purchases/{}/document", row.id)),
            };
            data.pdf_path = Some(format!("documents/purchases/{}.pdf", row.id)).into();
        }
        out.push(data);
    }
    Ok(out)
}

/// A v2 commit or v1 create refused for blocking issues, worded for v1: every blocker a missing (or
/// inactive) reference is 404, a repeated supplier invoice 409, anything else 400, each naming its field.
pub fn v1_refusal(error: ApiError) -> ApiError {
    if error.body.code != "PRECONDITION_FAILED" {
        return error;
    }
    let fields = error
        .body
        .details
        .into_iter()
        .map(|d| {
            let reason =
                d.metadata.as_ref().and_then(|m| m.get("reason")).and_then(|r| r.as_str()).unwrap_or("invalid");
            let code = match reason {
                "not_found" | "inactive" => "not_found",
                "already_exists" => "already_exists",
                "required" => "required",
                _ => "invalid_value",
            };
            FieldError::new(d.field.unwrap_or_default(), code, d.message)
        })
        .collect();
    ApiError::validation(fields)
}

/// One line of a purchase body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PurchaseItemInput {
    /// An active product variant of the organization.
    pub product_id: Uuid,
    /// Positive, three decimals at most.
    pub quantity: QuantityIn<true>,
    /// Cents of the purchase's currency: net of VAT on A vouchers (1, 2, 3), VAT included otherwise.
    pub unit_cost: Cents,
    /// The product's rate when omitted.
    pub tax_rate_id: Optional<VatCode>,
}

/// `PES` (the default) or `DOL`.
#[derive(Debug, Enum)]
pub enum PurchaseCurrency {
    #[oai(rename = "PES")]
    Pes,
    #[oai(rename = "DOL")]
    Dol,
}

/// A supplier's invoice. Every field also accepts its snake_case spelling (`supplier_id`, ...).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct PurchaseInput {
    /// An active supplier of the organization.
    pub supplier_id: Uuid,
    /// The voucher type of the supplier's invoice, 1 to 95 (A vouchers carry net costs).
    pub voucher_type: Int<1, 95>,
    /// 1 to 50 characters; unique per supplier and voucher type (ignoring case).
    pub supplier_invoice_number: Text<50>,
    /// Not in the future.
    pub invoice_date: Date,
    /// Not before `invoiceDate`.
    pub due_date: Optional<Date>,
    pub currency: Optional<PurchaseCurrency>,
    /// Pesos per unit of `currency`, six decimals at most: required for DOL; 1 (or omitted) for PES.
    pub exchange_rate: Optional<ExchangeRateIn>,
    /// Whether the goods arrived with the invoice: stock rises in `warehouseId` (then required).
    pub products_received: Optional<bool>,
    /// An active warehouse of the organization.
    pub warehouse_id: Optional<Uuid>,
    pub notes: Optional<Blank<1000>>,
    /// 1 to 200 lines.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub items: Vec<PurchaseItemInput>,
}

pub use crate::http::schema::ExchangeRateIn;

/// A recorded purchase with what recording it did.
#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct PurchaseCreatedData {
    #[serde(flatten)]
    #[oai(flatten)]
    pub purchase: PurchaseData,
    pub normalized_purchase: NormalizedPurchaseData,
    pub projected_effects: ProjectedEffectsData,
    pub warnings: Vec<PurchaseWarningData>,
    /// True when this is the stored outcome of an earlier request with the same key and body.
    pub idempotent_replay: bool,
}

#[derive(Debug, Serialize, Object)]
pub struct PurchaseCreatedEnvelope {
    /// Always true.
    pub success: bool,
    pub data: PurchaseCreatedData,
}

#[derive(Debug, Serialize, Object)]
pub struct PurchaseEnvelope {
    /// Always true.
    pub success: bool,
    pub data: PurchaseData,
}

#[derive(ApiResponse)]
enum PurchaseCreated {
    /// The purchase as recorded, with what recording it did.
    #[oai(status = 201)]
    Created(RawJson<PurchaseCreatedEnvelope>),
}

#[derive(ApiResponse)]
enum PurchaseRead {
    /// The purchase.
    #[oai(status = 200)]
    Ok(RawJson<PurchaseEnvelope>),
}

#[derive(ApiResponse)]
enum DocumentRedirect {
    /// A signed link to the PDF, valid five minutes (see the description).
    #[oai(status = 302)]
    Found(#[oai(header = "Location")] String),
}

#[derive(ApiResponse)]
enum PurchaseList {
    /// A page of purchases, oldest first.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<PurchaseData>>),
}

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

impl From<OrderStatus> for OrderState {
    fn from(s: OrderStatus) -> Self {
        match s {
            OrderStatus::Draft => Self::Draft,
            OrderStatus::Confirmed => Self::Confirmed,
            OrderStatus::PartiallyReceived => Self::PartiallyReceived,
            OrderStatus::Received => Self::Received,
            OrderStatus::Closed => Self::Closed,
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
            subtotal: order.amounts.subtotal,
            tax_amount: order.amounts.tax_amount,
            total: order.amounts.total,
            total_ars: order.amounts.total_ars,
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

#[derive(ApiResponse)]
enum OrderCreated {
    /// The purchase order, a draft.
    #[oai(status = 201)]
    Created(RawJson<PurchaseOrderEnvelope>),
}

#[derive(ApiResponse)]
enum OrderRead {
    /// The purchase order.
    #[oai(status = 200)]
    Ok(RawJson<PurchaseOrderEnvelope>),
}

#[derive(ApiResponse)]
enum OrderList {
    /// A page of purchase orders, oldest first.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<PurchaseOrderData>>),
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

type Key = Header<Option<String>>;

async fn render_order(
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

fn date_filter(text: Option<String>, parameter: &str) -> Result<Option<Date>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    Date::parse(&text, &time::macros::format_description!("[year]-[month]-[day]")).map(Some).map_err(|_| {
        ApiError::invalid_request("INVALID_PARAMETERS", format!("{parameter} is not a date")).with_detail(
            Some(parameter),
            "invalid_date",
            "must be a date written YYYY-MM-DD",
        )
    })
}

/// The filters of a purchase list, every bad one named at once.
pub fn purchase_filter(
    supplier_id: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    query: Option<String>,
) -> Result<PurchaseFilter, ApiError> {
    let mut details = Vec::new();
    let mut filter =
        PurchaseFilter { query: query.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()), ..Default::default() };
    match supplier_id.as_deref().map(|s| parse_id(s, "supplier_id")).transpose() {
        Ok(id) => filter.supplier_id = id,
        Err(e) => details.extend(e.body.details),
    }
    match date_filter(date_from, "date_from") {
        Ok(d) => filter.date_from = d,
        Err(e) => details.extend(e.body.details),
    }
    match date_filter(date_to, "date_to") {
        Ok(d) => filter.date_to = d,
        Err(e) => details.extend(e.body.details),
    }
    if details.is_empty() {
        return Ok(filter);
    }
    let mut error = ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid");
    error.body.details = details;
    Err(error)
}

/// A v1 list parameter's name as the v2 surface spells it (`supplier_id` → `supplierId`).
pub fn camel_parameter(name: &str) -> String {
    commands::validate::camel_case(name)
}

/// A DOL document names its exchange rate; a PES one has none but 1; received goods name their
/// warehouse.
pub fn purchase_shapes() -> serde_json::Value {
    serde_json::json!({ "allOf": [
        { "anyOf": [
            { "required": ["currency", "exchangeRate"], "properties": { "currency": { "enum": ["DOL"] },
              "exchangeRate": { "anyOf": [{ "type": "number" }, { "type": "string" }] } } },
            { "not": { "required": ["currency"], "properties": { "currency": { "enum": ["DOL"] } } },
              "properties": { "exchangeRate": { "nullable": true, "anyOf": [{ "enum": [1, "1"] }] } } },
        ] },
        { "anyOf": [
            { "not": { "required": ["productsReceived"], "properties": { "productsReceived": { "enum": [true] } } } },
            { "required": ["warehouseId"], "properties": { "warehouseId": { "type": "string", "format": "uuid" } } },
        ] },
    ] })
}

/// A DOL order names its exchange rate; a PES one has none but 1.
fn order_shapes() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        { "required": ["currency", "exchangeRate"], "properties": { "currency": { "enum": ["DOL"] },
          "exchangeRate": { "anyOf": [{ "type": "number" }, { "type": "string" }] } } },
        { "not": { "required": ["currency"], "properties": { "currency": { "enum": ["DOL"] } } },
          "properties": { "exchangeRate": { "nullable": true, "anyOf": [{ "enum": [1, "1"] }] } } },
    ] })
}

fn uuid_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "format": "uuid" })
}

fn date_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "format": "date" })
}

pub struct PurchasesApi;

impl Operations for PurchasesApi {
    const OPERATIONS: &'static [Operation] = &[
        LIST_PURCHASES,
        CREATE_PURCHASE,
        GET_PURCHASE,
        GET_PURCHASE_DOCUMENT,
        LIST_PURCHASE_ORDERS,
        CREATE_PURCHASE_ORDER,
        GET_PURCHASE_ORDER,
        CONFIRM_PURCHASE_ORDER,
        CLOSE_PURCHASE_ORDER,
        REOPEN_PURCHASE_ORDER,
        RECEIVE_PURCHASE_ORDER,
    ];
    const INPUT_RULES: &'static [InputRule] = &[
        InputRule::Body { schema: "PurchaseInput", rule: purchase_shapes },
        InputRule::Body { schema: "PurchaseOrderInput", rule: order_shapes },
        InputRule::Query { operation: "listPurchases", parameter: "supplier_id", schema: uuid_schema },
        InputRule::Query { operation: "listPurchases", parameter: "date_from", schema: date_schema },
        InputRule::Query { operation: "listPurchases", parameter: "date_to", schema: date_schema },
        InputRule::Query { operation: "listPurchaseOrders", parameter: "supplier_id", schema: uuid_schema },
        InputRule::Query {
            operation: "listPurchaseOrders",
            parameter: "status",
            schema: || serde_json::json!({ "type": "string", "enum": OrderStatus::NAMES }),
        },
    ];
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Purchases")]
impl PurchasesApi {
    /// List purchases
    ///
    /// Scope `purchases:read`. A cursor list, oldest first. `date_from` and `date_to` (inclusive) filter
    /// on the invoice date; `query` matches the supplier invoice number or the supplier's name.
    #[oai(path = "/purchases", method = "get", operation_id = "listPurchases")]
    #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
    async fn list(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        supplier_id: Query<Option<String>>,
        date_from: Query<Option<String>>,
        date_to: Query<Option<String>>,
        query: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<Limit>>,
        /// The `next_cursor` of the previous page.
        cursor: Query<Option<String>>,
        page: PageParam,
    ) -> Result<PurchaseList, ApiError> {
        let call = Call::new(LIST_PURCHASES, &state, &auth, &request_id)?;
        let filter = purchase_filter(supplier_id.0, date_from.0, date_to.0, query.0)?;
        let bound = format!("purchases{:?}", (&filter.supplier_id, &filter.date_from, &filter.date_to, &filter.query));
        let params = PageParams { limit: limit.0.map(|l| l.0), cursor: cursor.0, page: page.0 };
        let body = call
            .cursor_list(
                params,
                ListAt { url: PURCHASES.list.url, binding: &bound },
                async |after, n| Ok(read::list(&state.pool, call.org_id(), &filter, after, n).await?),
                |row: &PurchaseRow| row.id,
                async |rows| render_purchases(&state, call.org_id(), rows).await,
            )
            .await?;
        Ok(PurchaseList::Ok(RawJson::new(body)))
    }

    /// Record a purchase
    ///
    /// Scope `purchases:write`; `Idempotency-Key` required. Records a supplier's invoice with canonical
    /// amounts (in its currency and in pesos); when `productsReceived` is true, stock rises in
    /// `warehouseId` in the same transaction. Each product's cost becomes its line's net unit cost in
    /// pesos. A supplier, product or warehouse that does not exist or is inactive answers 404; a
    /// supplier invoice number already recorded for the supplier and voucher type answers 409.
    #[oai(path = "/purchases", method = "post", operation_id = "createPurchase")]
    async fn create(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        /// Required: a retry with the same key and body returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<PurchaseInput>,
    ) -> Result<PurchaseCreated, ApiError> {
        let call = Call::new(CREATE_PURCHASE, &state, &auth, &request_id)?;
        let input = parse_purchase(&body.value, today()).map_err(ApiError::validation)?;
        let command = Command::Purchase(PurchaseCommand { id: Uuid::now_v7(), mode: Mode::Commit, input });
        let write = Write::json(key.0, &version, &[], &body);
        let body = call
            .write_then_read(&PURCHASES, write, command, async |accepted| {
                // The stock and the costs it moved are readable at once too.
                state
                    .await_read(ProjectionId::Inventory, call.principal, accepted.key_for(ProjectionId::Inventory))
                    .await?;
                state
                    .await_read(ProjectionId::Products, call.principal, accepted.key_for(ProjectionId::Products))
                    .await?;
                let outcome: PurchaseOutcome = decode_state(accepted.state, "purchase")?;
                let id = outcome.id.ok_or_else(ApiError::internal)?;
                let row =
                    read::get(&state.pool, call.org_id(), id).await?.ok_or_else(|| ApiError::not_found("purchase"))?;
                let purchase = render_purchases(&state, call.org_id(), vec![row]).await?.remove(0);
                let names = outcome_names(&state, call.org_id(), &outcome).await?;
                let (normalized, effects) = normalized_and_effects(&outcome, &names);
                let data = PurchaseCreatedData {
                    purchase,
                    normalized_purchase: normalized,
                    projected_effects: effects,
                    warnings: outcome.warnings.into_iter().map(Into::into).collect(),
                    idempotent_replay: accepted.replayed,
                };
                Ok(Style::b(&PurchaseCreatedEnvelope { success: true, data }))
            })
            .await
            .map_err(v1_refusal)?;
        Ok(PurchaseCreated::Created(RawJson::new(body)))
    }

    /// Get a purchase
    ///
    /// Scope `purchases:read`. `document` tells whether its PDF can be downloaded; `pdfPath` is
    /// deprecated and never a download route.
    #[oai(path = "/purchases/:purchase_id", method = "get", operation_id = "getPurchase")]
    async fn get(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        purchase_id: Path<String>,
    ) -> Result<PurchaseRead, ApiError> {
        let call = Call::new(GET_PURCHASE, &state, &auth, &request_id)?;
        let body = call
            .get(&PURCHASES, &purchase_id.0, async |id| {
                let Some(row) = read::get(&state.pool, call.org_id(), id).await? else { return Ok(None) };
                let data = render_purchases(&state, call.org_id(), vec![row]).await?.remove(0);
                Ok(Some(Style::b(&PurchaseEnvelope { success: true, data })))
            })
            .await?;
        Ok(PurchaseRead::Ok(RawJson::new(body)))
    }

    /// Download a purchase's PDF
    ///
    /// Scope `purchases:read`. The stable, authenticated path to the purchase's PDF: 302 to a signed link,
    /// `/documents/{token}`, valid five minutes and served without a credential (do not store it; an
    /// expired or altered link answers 403); 404 while the document is missing.
    #[oai(path = "/purchases/:purchase_id/document", method = "get", operation_id = "getPurchaseDocument")]
    async fn document(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        purchase_id: Path<String>,
    ) -> Result<DocumentRedirect, ApiError> {
        let call = Call::new(GET_PURCHASE_DOCUMENT, &state, &auth, &request_id)?;
        let id = call.id(&PURCHASES, &purchase_id.0)?;
        if read::get(&state.pool, call.org_id(), id).await?.is_none() {
            return Err(ApiError::not_found("purchase"));
        }
        let location =
            crate::http::documents::link(&state, call.org_id(), projections::documents::OwnerKind::Purchase, id)
                .await?;
        Ok(DocumentRedirect::Found(location))
    }

    /// List purchase orders
    ///
    /// Scope `purchases:read`. A cursor list, oldest first; filters `supplier_id` and `status`.
    #[oai(path = "/purchase-orders", method = "get", operation_id = "listPurchaseOrders")]
    #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
    async fn list_orders(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        supplier_id: Query<Option<String>>,
        status: Query<Option<String>>,
        /// 1 to 100, default 50.
        limit: Query<Option<Limit>>,
        /// The `next_cursor` of the previous page.
        cursor: Query<Option<String>>,
        page: PageParam,
    ) -> Result<OrderList, ApiError> {
        let call = Call::new(LIST_PURCHASE_ORDERS, &state, &auth, &request_id)?;
        let supplier = supplier_id.0.as_deref().map(|s| parse_id(s, "supplier_id")).transpose()?;
        if let Some(status) = &status.0
            && !OrderStatus::NAMES.contains(&status.as_str())
        {
            return Err(ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid")
                .with_detail(
                    Some("status"),
                    "invalid_value",
                    format!("must be one of {}", OrderStatus::NAMES.join(", ")),
                ));
        }
        let bound = format!("purchase_orders{:?}", (&supplier, &status.0));
        let params = PageParams { limit: limit.0.map(|l| l.0), cursor: cursor.0, page: page.0 };
        let body = call
            .cursor_list(
                params,
                ListAt { url: ORDERS.list.url, binding: &bound },
                async |after, n| {
                    Ok(read::orders(&state.pool, call.org_id(), supplier, status.0.as_deref(), after, n).await?)
                },
                |row: &read::OrderRow| row.state.id,
                async |rows| {
                    let mut out = Vec::with_capacity(rows.len());
                    for row in rows {
                        out.push(render_order(&state, call.org_id(), &row.state, row.supplier_name).await?);
                    }
                    Ok(out)
                },
            )
            .await?;
        Ok(OrderList::Ok(RawJson::new(body)))
    }

    /// Create a purchase order
    ///
    /// Scope `purchases:write`; `Idempotency-Key` required. A draft, numbered gap-free per organization
    /// (a refused request takes no number). Then: `confirm`, receipts, `close`, `reopen`.
    #[oai(path = "/purchase-orders", method = "post", operation_id = "createPurchaseOrder")]
    async fn create_order(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        /// Required: a retry with the same key and body returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<PurchaseOrderInput>,
    ) -> Result<OrderCreated, ApiError> {
        let call = Call::new(CREATE_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let input = parse_order(&body.value).map_err(ApiError::validation)?;
        let command = Command::PurchaseOrder(OrderCommand::Create { id: Uuid::now_v7(), input });
        let write = Write::json(key.0, &version, &[], &body);
        let body = order_write(&call, &state, write, command).await?;
        Ok(OrderCreated::Created(RawJson::new(body)))
    }

    /// Get a purchase order
    ///
    /// Scope `purchases:read`. With ordered, received and pending quantities per product, and every
    /// receipt.
    #[oai(path = "/purchase-orders/:purchase_order_id", method = "get", operation_id = "getPurchaseOrder")]
    async fn get_order(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        purchase_order_id: Path<String>,
    ) -> Result<OrderRead, ApiError> {
        let call = Call::new(GET_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let body = call
            .get(&ORDERS, &purchase_order_id.0, async |id| {
                let Some(row) = read::order(&state.pool, call.org_id(), id).await? else { return Ok(None) };
                let data = render_order(&state, call.org_id(), &row.state, row.supplier_name).await?;
                Ok(Some(Style::b(&PurchaseOrderEnvelope { success: true, data })))
            })
            .await?;
        Ok(OrderRead::Ok(RawJson::new(body)))
    }

    /// Confirm a purchase order
    ///
    /// Scope `purchases:write`. A draft becomes `confirmed` and can receive goods; any other state is 409
    /// `STATE_CONFLICT` naming it.
    #[oai(path = "/purchase-orders/:purchase_order_id/confirm", method = "post", operation_id = "confirmPurchaseOrder")]
    async fn confirm(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        purchase_order_id: Path<String>,
        /// Optional: a retry with the same key returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
    ) -> Result<OrderRead, ApiError> {
        let call = Call::new(CONFIRM_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let id = call.id(&ORDERS, &purchase_order_id.0)?;
        let path = [purchase_order_id.0.as_str()];
        let body = order_write(
            &call,
            &state,
            Write::bare(key.0, &version, &path),
            Command::PurchaseOrder(OrderCommand::Confirm { id }),
        )
        .await?;
        Ok(OrderRead::Ok(RawJson::new(body)))
    }

    /// Close a purchase order
    ///
    /// Scope `purchases:write`. A draft, confirmed or partially received order becomes `closed`: nothing
    /// more arrives. A received or closed order is 409 `STATE_CONFLICT`.
    #[oai(path = "/purchase-orders/:purchase_order_id/close", method = "post", operation_id = "closePurchaseOrder")]
    async fn close(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        purchase_order_id: Path<String>,
        /// Optional: a retry with the same key returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
    ) -> Result<OrderRead, ApiError> {
        let call = Call::new(CLOSE_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let id = call.id(&ORDERS, &purchase_order_id.0)?;
        let path = [purchase_order_id.0.as_str()];
        let command = Command::PurchaseOrder(OrderCommand::Close { id, reason: None });
        let body = order_write(&call, &state, Write::bare(key.0, &version, &path), command).await?;
        Ok(OrderRead::Ok(RawJson::new(body)))
    }

    /// Reopen a purchase order
    ///
    /// Scope `purchases:write`. A closed order returns to the state it was closed from; any other state
    /// is 409 `STATE_CONFLICT`.
    #[oai(path = "/purchase-orders/:purchase_order_id/reopen", method = "post", operation_id = "reopenPurchaseOrder")]
    async fn reopen(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        purchase_order_id: Path<String>,
        /// Optional: a retry with the same key returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
    ) -> Result<OrderRead, ApiError> {
        let call = Call::new(REOPEN_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let id = call.id(&ORDERS, &purchase_order_id.0)?;
        let path = [purchase_order_id.0.as_str()];
        let body = order_write(
            &call,
            &state,
            Write::bare(key.0, &version, &path),
            Command::PurchaseOrder(OrderCommand::Reopen { id }),
        )
        .await?;
        Ok(OrderRead::Ok(RawJson::new(body)))
    }

    /// Receive goods of a purchase order
    ///
    /// Scope `purchases:write`; `Idempotency-Key` required. Records what arrived of a confirmed or
    /// partially received order and raises the stock (in the order's warehouse unless the receipt names
    /// another); the order becomes `received` once nothing is pending. A line beyond what is pending is
    /// 422 `RECEIPT_EXCEEDS_PENDING` unless `allowOverReceipt` is true; another state is 409.
    #[oai(
        path = "/purchase-orders/:purchase_order_id/receipts",
        method = "post",
        operation_id = "receivePurchaseOrder"
    )]
    #[allow(clippy::too_many_arguments, reason = "the handler's extracted parts")]
    async fn receive(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        purchase_order_id: Path<String>,
        /// Required: a retry with the same key and body returns the first outcome.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<ReceiptInput>,
    ) -> Result<OrderCreated, ApiError> {
        let call = Call::new(RECEIVE_PURCHASE_ORDER, &state, &auth, &request_id)?;
        let id = call.id(&ORDERS, &purchase_order_id.0)?;
        let input = parse_receipt(&body.value, today()).map_err(ApiError::validation)?;
        let command = Command::PurchaseOrder(OrderCommand::Receive { id, receipt_id: Uuid::now_v7(), input });
        let path = [purchase_order_id.0.as_str()];
        let body = order_write(&call, &state, Write::json(key.0, &version, &path, &body), command).await?;
        Ok(OrderCreated::Created(RawJson::new(body)))
    }
}

/// Sends an order command and answers the order after it (also the stock it moved, once readable).
async fn order_write(
    call: &Call<'_>,
    state: &AppState,
    write: Write<'_>,
    command: Command,
) -> Result<bytes::Bytes, ApiError> {
    let accepted = call.dispatch(write, command).await.map_err(v1_refusal)?;
    let order: PurchaseOrder = decode_state(accepted.state.clone(), "purchase order")?;
    state.await_read(ProjectionId::Purchases, call.principal, accepted.key_for(ProjectionId::Purchases)).await?;
    state.await_read(ProjectionId::Inventory, call.principal, accepted.key_for(ProjectionId::Inventory)).await?;
    let supplier = projections::customers::get(
        &state.pool,
        projections::customers::SUPPLIERS_TABLE,
        call.org_id(),
        order.supplier_id,
    )
    .await?
    .map(|s| s.name);
    let data = render_order(state, call.org_id(), &order, supplier).await?;
    Ok(Style::b(&PurchaseOrderEnvelope { success: true, data }))
}
