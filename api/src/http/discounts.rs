//! What the lines of quotes and orders share on the wire: a line's discount (an amount or a
//! percentage) as sent and as answered.

use crate::http::schema::{Cents, Percent};
use events::catalogue::QuoteDiscount;
use poem_openapi::Object;
use serde::{Deserialize, Serialize};

/// A line's discount: `amount` (cents) or `percentage`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct QuoteDiscountData {
    pub amount: Option<i64>,
    /// Decimal text (`"12.5"`).
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
