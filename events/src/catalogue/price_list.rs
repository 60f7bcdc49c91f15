//! Price list events: a configuration record naming a price per variant, or moving the base price by a
//! percentage (created, then replaced as a whole).

use super::records::record_events;
use crate::domain::Cents;
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
    pub adjustment_hundredths: Option<i64>,
    pub tax_inclusive: bool,
    pub is_active: bool,
    #[serde(default)]
    pub prices: Vec<ListPrice>,
}

record_events!(
    /// Price lists (stream type `price_list`).
    PriceListEvent, "price_list", PriceListFields, PriceListCreated, PriceListReplaced
);

/// Percentages are kept as whole hundredths of a percent; this writes one back as plain decimal text
/// (`1050` → `"10.5"`, `-250` → `"-2.5"`, `4000` → `"40"`).
pub fn percentage_text(hundredths: i64) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let (whole, fraction) = (hundredths.abs() / 100, hundredths.abs() % 100);
    match fraction {
        0 => format!("{sign}{whole}"),
        f if f % 10 == 0 => format!("{sign}{whole}.{}", f / 10),
        f => format!("{sign}{whole}.{f:02}"),
    }
}

/// `amount` cents moved by `hundredths` of a percent, rounded half away from zero.
pub fn apply_percentage(amount: i64, hundredths: i64) -> i64 {
    let scaled = i128::from(amount) * i128::from(10_000 + hundredths);
    let rounded = if scaled >= 0 { (scaled + 5_000) / 10_000 } else { (scaled - 5_000) / 10_000 };
    i64::try_from(rounded).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod percentage_tests {
    use super::*;

    #[test]
    fn percentages_print_as_plain_decimals_and_round_half_up() {
        assert_eq!(percentage_text(1050), "10.5");
        assert_eq!(percentage_text(-250), "-2.5");
        assert_eq!(percentage_text(4000), "40");
        assert_eq!(percentage_text(1), "0.01");
        assert_eq!(apply_percentage(1000, 1050), 1105);
        assert_eq!(apply_percentage(999, 2100), 1209); // 1208.79
        assert_eq!(apply_percentage(5, 1000), 6); // 5.5 rounds up
        assert_eq!(apply_percentage(1000, -10_000), 0);
    }
}
