//! Signed percentages that move an amount: a product's markup over its cost, a price list's change
//! of the base price, a bulk adjustment of many costs or prices.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::cents::Cents;
use super::decimal::{Refusal, number_text, parse_scaled};
use super::error::{DomainError, shown};

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

/// A change of an amount by a percentage from -100 to 1000 to 18 decimal places, as a bulk adjustment
/// takes it from a client: kept as the exact decimal the client wrote, in units of 10^-18 of a percent
/// (digits beyond, which move no amount by a cent's billionth, rounded half away from zero), so `15` on
/// 50 cents is exactly 57.5 and rounds to 58, where binary floating point makes it 57.49999… and
/// rounds a cent short. An [`Adjustment`] keeps two decimals because events
/// store its hundredths; this one is never stored, only applied.
///
/// JSON form: a number, the `f64` nearest the exact decimal (`10.0`, `33.333`), which prints as that
/// decimal again: every value built from a client's JSON number came from such an `f64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FineAdjustment(i128);

impl FineAdjustment {
    /// Decimal places kept.
    pub const DECIMALS: u32 = 18;
    /// Units in one percent.
    const PERCENT: i128 = 10i128.pow(Self::DECIMALS);
    /// The bounds in whole percent, those of an [`Adjustment`].
    const MIN_PERCENT: i64 = Adjustment::MIN_HUNDREDTHS / 100;
    const MAX_PERCENT: i64 = Adjustment::MAX_HUNDREDTHS / 100;

    /// A fine adjustment from a JSON number (`10`, `-2.5`, `33.333`), refusing other shapes and
    /// values outside -100 to 1000.
    pub fn parse(value: &Value) -> Result<Self, DomainError> {
        match value {
            Value::Number(number) => Self::parse_text(&number_text(number)),
            other => Err(DomainError::WrongType { expected: "a number", found: super::error::json_kind(other) }),
        }
    }

    /// `text` is a plain decimal (a JSON number printed by [`number_text`]: no exponent).
    fn parse_text(text: &str) -> Result<Self, DomainError> {
        let kept = Self::DECIMALS as usize;
        let (text_kept, away) = match text.split_once('.') {
            Some((whole, fraction)) if fraction.len() > kept && fraction.is_char_boundary(kept) => {
                (format!("{whole}.{}", &fraction[..kept]), fraction.as_bytes()[kept] >= b'5')
            }
            _ => (text.to_owned(), false),
        };
        let units = match parse_scaled(&text_kept, Self::DECIMALS) {
            Ok(units) if away && text.starts_with('-') => units - 1,
            Ok(units) if away => units + 1,
            Ok(units) => units,
            Err(Refusal::Syntax) => return Err(DomainError::NotADecimal(shown(text))),
            Err(Refusal::TooPrecise) => {
                return Err(DomainError::TooManyDecimals { max: Self::DECIMALS, value: shown(text) });
            }
            Err(Refusal::TooLarge) => return Err(Self::out_of_range(text)),
        };
        let (min, max) = (i128::from(Self::MIN_PERCENT) * Self::PERCENT, i128::from(Self::MAX_PERCENT) * Self::PERCENT);
        if (min..=max).contains(&units) { Ok(FineAdjustment(units)) } else { Err(Self::out_of_range(text)) }
    }

    fn out_of_range(text: &str) -> DomainError {
        DomainError::OutOfRange {
            min: Self::MIN_PERCENT.to_string(),
            max: Self::MAX_PERCENT.to_string(),
            value: shown(text),
        }
    }

    /// `amount` moved by this adjustment (`amount × (1 + p/100)`), rounded half away from zero to the
    /// cent, or `None` beyond [`Cents::MAX`]. Computed in `i128`: the largest product, 10^12 cents by
    /// 1.1 × 10^21, is far inside it.
    pub fn apply_to(self, amount: Cents) -> Option<Cents> {
        let whole = 100 * Self::PERCENT;
        let exact = i128::from(amount.get()) * (whole + self.0);
        Cents::from_i128(super::div_round_half_away(exact, whole))
    }
}

/// The shortest exact decimal without a percent sign: `10`, `-2.5`, `33.333`, `0.000001`.
impl fmt::Display for FineAdjustment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let (whole, fraction) =
            (self.0.unsigned_abs() / Self::PERCENT as u128, self.0.unsigned_abs() % Self::PERCENT as u128);
        if fraction == 0 {
            return f.pad(&format!("{sign}{whole}"));
        }
        let digits = format!("{fraction:0width$}", width = Self::DECIMALS as usize);
        f.pad(&format!("{sign}{whole}.{}", digits.trim_end_matches('0')))
    }
}

impl Serialize for FineAdjustment {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let nearest: f64 = self.to_string().parse().map_err(serde::ser::Error::custom)?;
        serializer.serialize_f64(nearest)
    }
}

/// Reads a number as [`FineAdjustment::parse`] does.
impl<'de> Deserialize<'de> for FineAdjustment {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        FineAdjustment::parse(&value).map_err(serde::de::Error::custom)
    }
}

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

    fn fine(percent: Value) -> FineAdjustment {
        FineAdjustment::parse(&percent).expect("in range")
    }

    #[test]
    fn a_fine_adjustment_moves_an_amount_by_the_exact_decimal_sent() {
        let moved = |percent: Value, cents: i64| fine(percent).apply_to(Cents::of(cents)).map(Cents::get);
        assert_eq!(moved(json!(10), 1005), Some(1106));
        // Exact halves that binary floating point puts just below .5.
        assert_eq!(moved(json!(15), 50), Some(58));
        assert_eq!(moved(json!(2.5), 60), Some(62));
        assert_eq!(moved(json!(0.1), 500), Some(501));
        assert_eq!(moved(json!(-12.5), 4), Some(4));
        assert_eq!(moved(json!(-0.5), 100), Some(100));
        assert_eq!(moved(json!(33.333), 300_000), Some(399_999));
        assert_eq!(moved(json!(-50), 3), Some(2));
        assert_eq!(moved(json!(-50), -3), Some(-2));
        assert_eq!(moved(json!(-100), 999), Some(0));
        assert_eq!(moved(json!(0.000_000_000_000_000_001), 1_000_000), Some(1_000_000));
        assert_eq!(moved(json!(1000), Cents::MAX / 11), Some(Cents::MAX / 11 * 11));
        assert_eq!(moved(json!(1000), Cents::MAX), None);
        assert_eq!(moved(json!(0.012_345_678_901_234_567), Cents::MAX), None);
        assert_eq!(moved(json!(0), Cents::MAX), Some(Cents::MAX));
    }

    #[test]
    fn a_fine_adjustment_is_a_number_from_minus_100_to_1000_kept_to_18_decimals() {
        assert_eq!(fine(json!(-100)).to_string(), "-100");
        assert_eq!(fine(json!(1000)).to_string(), "1000");
        assert_eq!(fine(json!(33.333)).to_string(), "33.333");
        assert_eq!(fine(json!(-0.000_001)).to_string(), "-0.000001");
        // Past the 18th decimal, half away from zero.
        assert_eq!(fine(json!(1e-19)).to_string(), "0");
        assert_eq!(fine(json!(5e-19)).to_string(), "0.000000000000000001");
        assert_eq!(fine(json!(-5e-19)).to_string(), "-0.000000000000000001");
        assert_eq!(fine(json!(f64::MIN_POSITIVE)).to_string(), "0");
        let refused = |percent: Value| FineAdjustment::parse(&percent).expect_err("refused").to_string();
        assert_eq!(refused(json!(1000.5)), "must be between -100 and 1000, not 1000.5");
        assert_eq!(refused(json!(-100.01)), "must be between -100 and 1000, not -100.01");
        assert_eq!(refused(json!("10")), "must be a number, not a string");
        assert_eq!(refused(json!(null)), "must be a number, not null");
    }

    #[test]
    fn a_fine_adjustment_travels_as_the_number_the_client_sent() {
        for sent in
            [json!(10.0), json!(-2.5), json!(33.333), json!(0.1), json!(1e-18), json!(0.012_345_678_901_234_567)]
        {
            let adjustment: FineAdjustment = serde_json::from_value(sent.clone()).expect("read");
            assert_eq!(serde_json::to_value(adjustment).expect("serialize"), sent);
        }
        // A whole number read as an integer goes out as the float the bulk adjustment always answered.
        assert_eq!(serde_json::to_string(&fine(json!(10))).expect("serialize"), "10.0");
    }
}
