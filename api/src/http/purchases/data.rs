//! What purchases and purchase orders share: the supplier and product references, a line with its
//! amounts, a line of a body and its currency, the organization's date, and the v1 wording of a refusal.
//! A leaf: every other file of `purchases/` imports it, and it imports none of them.

use crate::http::error::ApiError;
use crate::http::presence::{Nullable, Optional};
use crate::http::schema::{Cents, QuantityIn, QuantityText, VatCode};
use commands::FieldError;
use events::catalogue::{PurchaseLine, ar_date};
use poem_openapi::{Enum, Object};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub use crate::http::schema::ExchangeRateIn;

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

pub(super) fn items(lines: &[PurchaseLine], names: &HashMap<Uuid, (String, String)>) -> Vec<PurchaseItemData> {
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
                unit_cost: l.unit_cost.get(),
                tax_rate_id: l.tax_rate_id.code(),
                net: l.net.get(),
                vat: l.vat.get(),
                total: l.total.get(),
                net_ars: l.net_ars.get(),
                vat_ars: l.vat_ars.get(),
                total_ars: l.total_ars.get(),
            }
        })
        .collect()
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
