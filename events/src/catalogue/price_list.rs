//! Price list events: a configuration record naming a price per variant, or moving the base price by a
//! percentage (created, then replaced as a whole).

use super::records::record_events;
use crate::domain::{Adjustment, Cents};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One explicit price of a price list: a variant and its unit price in cents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPrice {
    pub product_id: Uuid,
    pub unit_price: Cents,
}

/// A price list. An automatic list (`is_automatic`, mode `base_price_adjustment`) prices every variant
/// from its base price moved by `adjustment_hundredths` (hundredths of a percent, 1050 = +10.5%);
/// `prices` are explicit prices, which take precedence. `tax_inclusive` lists prices with VAT added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceListFields {
    pub name: String,
    pub description: Option<String>,
    pub is_automatic: bool,
    pub automatic_pricing_mode: Option<String>,
    pub adjustment_hundredths: Option<Adjustment>,
    pub tax_inclusive: bool,
    pub is_active: bool,
    #[serde(default)]
    pub prices: Vec<ListPrice>,
}

record_events!(
    /// Price lists (stream type `price_list`).
    PriceListEvent, "price_list", PriceListFields, PriceListCreated, PriceListReplaced
);
