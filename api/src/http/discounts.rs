//! What the lines of quotes and orders share on the wire: a line's discount (an amount or a
//! percentage) as sent and as answered.

use crate::http::schema::{Cents, Percent};
use events::catalogue::QuoteDiscount;
use poem_openapi::Object;
use serde::{Deserialize, Serialize};

/// A line's discount: `amount` (cents) or `percentage`.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct QuoteDiscountData {
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<i64>,
    /// Decimal text (`"12.5"`).
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage: Option<String>,
}

impl From<QuoteDiscount> for QuoteDiscountData {
    fn from(d: QuoteDiscount) -> Self {
        match d {
            QuoteDiscount::Amount(a) => Self { amount: Some(a.get()), percentage: None },
            QuoteDiscount::Percentage(p) => Self { amount: None, percentage: Some(p.to_string()) },
        }
    }
}

#[derive(Debug, Object)]
pub struct QuoteDiscountInput {
    pub amount: Option<Cents>,
    pub percentage: Option<Percent<0, 100>>,
}
