//! What the lines of quotes and orders share on the wire: a line's discount (an amount or a
//! percentage) as sent and as answered, and a percentage in hundredths as decimal text (sales too).

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
            QuoteDiscount::Percentage(p) => Self { amount: None, percentage: Some(percent_text(p)) },
        }
    }
}

#[derive(Debug, Object)]
pub struct QuoteDiscountInput {
    pub amount: Option<Cents>,
    pub percentage: Option<Percent<0, 100>>,
}

/// Hundredths of a percent as decimal text: `1250` is `"12.5"`, `1000` is `"10"`.
pub fn percent_text(hundredths: i64) -> String {
    let (whole, fraction) = (hundredths / 100, hundredths % 100);
    if fraction == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{}", format!("{fraction:02}").trim_end_matches('0'))
    }
}
