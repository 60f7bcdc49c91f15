//! What recording a purchase does, as the v1 create and the v2 preview and commit answer it: the
//! purchase as normalized (defaults applied, canonical amounts), the stock, costs and supplier balance
//! it moves, and its warnings.

use super::data::{PurchaseItemData, items};
use crate::http::error::ApiError;
use crate::http::presence::Nullable;
use crate::http::schema::QuantityText;
use crate::state::AppState;
use commands::purchases::{PurchaseOutcome, PurchaseWarning};
use poem_openapi::Object;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::Date;
use uuid::Uuid;

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
        subtotal: n.amounts.subtotal.get(),
        tax_amount: n.amounts.tax_amount.get(),
        total: n.amounts.total.get(),
        subtotal_ars: n.amounts.subtotal_ars.get(),
        tax_amount_ars: n.amounts.tax_amount_ars.get(),
        total_ars: n.amounts.total_ars.get(),
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
            .map(|c| CostUpdateData { product_id: c.variant_id, previous_cost: c.previous.get(), new_cost: c.current.get() })
            .collect(),
        supplier_balance: SupplierBalanceData {
            supplier_id: n.supplier_id,
            currency: e.supplier_balance.currency.clone(),
            amount: e.supplier_balance.amount.get(),
            amount_ars: e.supplier_balance.amount_ars.get(),
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
