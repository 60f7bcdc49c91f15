//! Purchases proper (suppliers' invoices): the stored object and how it is rendered, the body, the
//! create's answer, and the list's filters.

use super::data::{ExchangeRateIn, PurchaseCurrency, PurchaseItemData, PurchaseItemInput, SupplierRef, items};
use super::outcome::{NormalizedPurchaseData, ProjectedEffectsData, PurchaseWarningData};
use crate::http::ar_time;
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::decode_state;
use crate::http::schema::{Blank, Int, Text};
use crate::http::shared_filters::{Filters, search};
use crate::http::shared_pages::tagged;
use crate::http::shared_responses::responses;
use crate::http::tags::TagData;
use crate::state::AppState;
use commands::tags::Taggable;
use events::catalogue::PurchaseRecorded;
use poem_openapi::{Enum, Object};
use projections::purchases::{PurchaseFilter, PurchaseRow};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

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
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct PurchaseDocument {
    pub state: PurchaseDocumentState,
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
    /// What the purchase still owes, in cents ARS: `totalArs` less the supplier payments allocated to it.
    pub amount_due: i64,
    /// `pending` (owes its whole total), `partially_paid` or `paid` (owes nothing).
    pub payment_status: String,
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
            subtotal: p.amounts.subtotal.get(),
            tax_amount: p.amounts.tax_amount.get(),
            total: p.amounts.total.get(),
            subtotal_ars: p.amounts.subtotal_ars.get(),
            tax_amount_ars: p.amounts.tax_amount_ars.get(),
            total_ars: p.amounts.total_ars.get(),
            amount_due: p.amounts.total_ars.get(),
            payment_status: projections::sales::payment_status(p.amounts.total_ars, p.amounts.total_ars).to_owned(),
            tags: Vec::new(),
            document: PurchaseDocument { state: PurchaseDocumentState::Missing, url: None },
            pdf_path: None.into(),
            created_at: ar_time(created_at),
        }
    }
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
    let documents =
        projections::documents::store::states(&state.pool, org_id, projections::documents::OwnerKind::Purchase, &ids)
            .await?;
    let recorded = tagged(state, org_id, Taggable::Purchase, recorded, |(r, _)| r.id).await?;
    let mut out = Vec::with_capacity(recorded.len());
    for ((row, p), tags) in recorded {
        let mut data = PurchaseData::from_recorded(row.id, &p, row.supplier_name, &names, row.created_at);
        data.amount_due = row.amount_due.get();
        data.payment_status = projections::sales::payment_status(p.amounts.total_ars, row.amount_due).to_owned();
        data.tags = tags;
        if documents.get(&row.id) == Some(&projections::documents::DocumentState::Ready) {
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

responses! {
    pub(super) PurchaseCreated: Created(RawJson<PurchaseCreatedEnvelope>) =
        201, "The purchase as recorded, with what recording it did.";
    pub(super) PurchaseRead: Ok(RawJson<PurchaseEnvelope>) = 200, "The purchase.";
    pub(super) DocumentRedirect: Found(#[oai(header = "Location")] String) =
        302, "A signed link to the PDF, valid five minutes (see the description).";
    pub(super) PurchaseList: Ok(RawJson<ListEnvelope<PurchaseData>>) = 200, "A page of purchases, oldest first.";
}

/// The filters of a purchase list, every bad one named at once.
pub fn purchase_filter(
    supplier_id: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    query: Option<String>,
) -> Result<PurchaseFilter, ApiError> {
    let mut filters = Filters::default();
    let filter = PurchaseFilter {
        supplier_id: filters.id(supplier_id, "supplier_id"),
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
        query: search(query),
    };
    filters.check()?;
    Ok(filter)
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
