//! Signed percentages that move an amount: a product's markup over its cost, a price list's change
//! of the base price.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::cents::Cents;
use super::error::DomainError;

/// A change of an amount by a percentage from -100 to 1000 with two decimal places, kept exactly as
/// hundredths of a percent: 1050 is +10.5%, -250 is -2.5%. [`Percentage`](super::Percentage) stays
/// within 0 to 100 so that its share of an amount is always in range; an adjustment goes beyond, so
/// what it gives is checked.
///
/// JSON form: the integer number of hundredths (`1050`), as the `*_hundredths` fields of events and
/// read rows have always stored it. [`fmt::Display`] writes the percentage (`10.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Adjustment(i32);

impl Adjustment {
    /// The lowest: -100%, which takes an amount to zero.
    pub const MIN_HUNDREDTHS: i64 = -10_000;
    /// The highest: +1000%.
    pub const MAX_HUNDREDTHS: i64 = 100_000;

    /// An adjustment from hundredths of a percent, [`Self::MIN_HUNDREDTHS`] to [`Self::MAX_HUNDREDTHS`].
    pub fn from_hundredths(hundredths: i64) -> Result<Self, DomainError> {
        match i32::try_from(hundredths) {
            Ok(h) if (Self::MIN_HUNDREDTHS..=Self::MAX_HUNDREDTHS).contains(&hundredths) => Ok(Adjustment(h)),
            _ => Err(DomainError::OutOfRange {
                min: Self::MIN_HUNDREDTHS.to_string(),
                max: Self::MAX_HUNDREDTHS.to_string(),
                value: hundredths.to_string(),
            }),
        }
    }

    /// Hundredths of a percent: 1050 for +10.5%.
    pub const fn hundredths(self) -> i64 {
        self.0 as i64
    }

    /// `amount` moved by this adjustment (`amount × (1 + p/100)`), rounded half away from zero to the
    /// cent, or `None` beyond [`Cents::MAX`]. -100% gives zero.
    pub fn apply_to(self, amount: Cents) -> Option<Cents> {
        let exact = i128::from(amount.get()) * (10_000 + i128::from(self.0));
        Cents::from_i128(super::div_round_half_away(exact, 10_000))
    }
}

/// The shortest exact decimal without a percent sign: `10.5`, `-2.5`, `40`, `0.01`.
impl fmt::Display for Adjustment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&super::hundredths_text(self.hundredths()))
    }
}

impl Serialize for Adjustment {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.hundredths())
    }
}

/// Reads the integer hundredths, refusing values out of range.
impl<'de> Deserialize<'de> for Adjustment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let hundredths = i64::deserialize(deserializer)?;
        Adjustment::from_hundredths(hundredths).map_err(serde::de::Error::custom)
    }
}

// A `bigint` column of hundredths, as the `*_hundredths` columns of read models hold it.
super::bigint_column!(Adjustment, Adjustment::hundredths, Adjustment::from_hundredths);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn adjustment(hundredths: i64) -> Adjustment {
        Adjustment::from_hundredths(hundredths).expect("in range")
    }

    #[test]
    fn prints_as_plain_decimals() {
        assert_eq!(adjustment(1050).to_string(), "10.5");
        assert_eq!(adjustment(-250).to_string(), "-2.5");
        assert_eq!(adjustment(4000).to_string(), "40");
        assert_eq!(adjustment(1).to_string(), "0.01");
        assert_eq!(adjustment(-10_000).to_string(), "-100");
    }

    #[test]
    fn moves_an_amount_rounding_half_away_from_zero() {
        assert_eq!(adjustment(1050).apply_to(Cents::of(1000)), Some(Cents::of(1105)));
        assert_eq!(adjustment(2100).apply_to(Cents::of(999)), Some(Cents::of(1209))); // 1208.79
        assert_eq!(adjustment(1000).apply_to(Cents::of(5)), Some(Cents::of(6))); // 5.5
        assert_eq!(adjustment(1000).apply_to(Cents::of(-5)), Some(Cents::of(-6)));
        assert_eq!(adjustment(-10_000).apply_to(Cents::of(1000)), Some(Cents::ZERO));
    }

    #[test]
    fn a_result_beyond_the_range_of_cents_is_none() {
        let max = Cents::of(Cents::MAX);
        assert_eq!(adjustment(0).apply_to(max), Some(max));
        assert_eq!(adjustment(1).apply_to(max), None);
        assert_eq!(adjustment(100_000).apply_to(max), None);
    }

    #[test]
    fn the_bounds_are_minus_one_hundred_and_one_thousand_percent() {
        assert!(Adjustment::from_hundredths(-10_000).is_ok());
        assert!(Adjustment::from_hundredths(100_000).is_ok());
        let error = Adjustment::from_hundredths(100_001).expect_err("above");
        assert_eq!(error.to_string(), "must be between -10000 and 100000, not 100001");
        assert!(Adjustment::from_hundredths(-10_001).is_err());
        assert!(Adjustment::from_hundredths(i64::MAX).is_err());
    }

    #[test]
    fn the_wire_form_is_the_integer_hundredths() {
        assert_eq!(serde_json::to_value(adjustment(-250)).expect("serialize"), json!(-250));
        assert_eq!(serde_json::from_value::<Adjustment>(json!(4000)).expect("read"), adjustment(4000));
        assert!(serde_json::from_value::<Adjustment>(json!(200_000)).is_err());
        assert!(serde_json::from_value::<Adjustment>(json!("10")).is_err());
    }
}
