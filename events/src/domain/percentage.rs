//! Exact percentages from 0 to 100 with two decimal places, as quote and sale line discounts use.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::cents::Cents;
use super::decimal::{Refusal, json_text, parse_scaled};
use super::error::{DomainError, shown};

/// A percentage from 0 to 100 kept exactly as hundredths of a percent (basis points), so 12.5% is
/// 1250 and 15% of 50 cents is exactly 7.5 cents before rounding.
///
/// JSON form: a number, `15` when whole and `12.5` otherwise; read from a number or a string. The
/// fraction goes out as the `f64` nearest the exact decimal, which prints as that decimal again (two
/// decimal places are far inside the fifteen digits an `f64` keeps), so it reads back unchanged.
///
/// There is deliberately no constructor above 100: with the bound, [`Percentage::apply_to`] cannot
/// leave the range of [`Cents`] and needs no error. Markups and bulk adjustments, which go above 100
/// or below 0, want their own type whose application is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Percentage(u16);

impl Percentage {
    /// Decimal places kept.
    pub const DECIMALS: u32 = 2;
    /// Hundredths in one percent.
    const SCALE: u16 = 100;
    const MAX_HUNDREDTHS: u16 = 100 * Self::SCALE;

    pub const ZERO: Percentage = Percentage(0);
    pub const HUNDRED: Percentage = Percentage(Self::MAX_HUNDREDTHS);

    /// A percentage from hundredths of a percent, 0 to 10 000.
    pub fn from_hundredths(hundredths: i64) -> Result<Self, DomainError> {
        Self::from_i128(i128::from(hundredths)).ok_or_else(|| out_of_range(&super::hundredths_text(hundredths)))
    }

    /// A percentage from hundredths known to be in range, in a constant (the VAT table's rates), where
    /// the bound is checked when the crate compiles.
    pub(super) const fn of_hundredths(hundredths: u16) -> Self {
        assert!(hundredths <= Self::MAX_HUNDREDTHS);
        Percentage(hundredths)
    }

    /// A percentage from a JSON number or a string holding a decimal (`15`, `12.5`, `"0.25"`),
    /// refusing more than two decimal places, other shapes and values outside 0 to 100. Text is
    /// trimmed first, as every text field of a request is.
    pub fn parse(value: &Value) -> Result<Self, DomainError> {
        let text = json_text(value)
            .map_err(|found| DomainError::WrongType { expected: "a decimal number or a string holding one", found })?;
        Self::parse_text(text.trim())
    }

    /// A percentage from decimal text with up to ten decimals, rounded half away from zero to
    /// hundredths (`"2.755"` is 2.76%): for a rate stored as the client wrote it, such as a payment
    /// method's fee, which the interface takes as free text.
    pub fn parse_rounded(text: &str) -> Result<Self, DomainError> {
        Self::parse_with_extra(text.trim(), 8)
    }

    fn parse_text(text: &str) -> Result<Self, DomainError> {
        Self::parse_with_extra(text, 0)
    }

    /// `text` read with `extra` decimals beyond the two kept, rounded half away from zero to those two.
    fn parse_with_extra(text: &str, extra: u32) -> Result<Self, DomainError> {
        match parse_scaled(text, Self::DECIMALS + extra) {
            Ok(scaled) => {
                Self::from_i128(super::div_round_half_away(scaled, 10i128.pow(extra))).ok_or_else(|| out_of_range(text))
            }
            Err(Refusal::Syntax) => Err(DomainError::NotADecimal(shown(text))),
            Err(Refusal::TooPrecise) => {
                Err(DomainError::TooManyDecimals { max: Self::DECIMALS + extra, value: shown(text) })
            }
            Err(Refusal::TooLarge) => Err(out_of_range(text)),
        }
    }

    fn from_i128(hundredths: i128) -> Option<Self> {
        u16::try_from(hundredths).ok().filter(|h| *h <= Self::MAX_HUNDREDTHS).map(Percentage)
    }

    /// Hundredths of a percent (basis points): 1250 for 12.5%.
    pub const fn hundredths(self) -> u16 {
        self.0
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// This percentage of `amount`, rounded half away from zero to the cent: 15% of 50 cents is 8,
    /// 15% of -50 cents is -8. The result is never larger in size than `amount`, so it is always in range.
    pub fn apply_to(self, amount: Cents) -> Cents {
        let exact = i128::from(amount.get()) * i128::from(self.0);
        let portion = super::div_round_half_away(exact, i128::from(Self::MAX_HUNDREDTHS));
        Cents::from_i128(portion).expect("at most 100% of an amount in range is in range")
    }
}

fn out_of_range(value: &str) -> DomainError {
    DomainError::OutOfRange { min: "0".into(), max: "100".into(), value: shown(value) }
}

/// Reads the decimal text form: `"15"`, `"12.5"`, `"0.25"`.
impl FromStr for Percentage {
    type Err = DomainError;

    fn from_str(text: &str) -> Result<Self, DomainError> {
        Self::parse_text(text)
    }
}

/// The shortest exact decimal without a percent sign: `15`, `12.5`, `0.25`.
impl fmt::Display for Percentage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&super::hundredths_text(i64::from(self.0)))
    }
}

impl Serialize for Percentage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (whole, fraction) = (self.0 / Self::SCALE, self.0 % Self::SCALE);
        if fraction == 0 {
            serializer.serialize_u16(whole)
        } else {
            // Division is correctly rounded, so this is the same `f64` as parsing the exact decimal.
            serializer.serialize_f64(f64::from(self.0) / f64::from(Self::SCALE))
        }
    }
}

/// Reads a number or a string through [`Percentage::parse`].
impl<'de> Deserialize<'de> for Percentage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Percentage::parse(&value).map_err(serde::de::Error::custom)
    }
}

/// `#[serde(with = "hundredths")]`: a [`Percentage`] written as its integer hundredths of a percent
/// (`1250` for 12.5%), the form of the `*_hundredths` fields of events and commands.
pub mod hundredths {
    use super::Percentage;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(percentage: &Percentage, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u16(percentage.hundredths())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Percentage, D::Error> {
        Percentage::from_hundredths(i64::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// [`hundredths`] for an optional percentage (`null` when absent).
pub mod hundredths_option {
    use super::Percentage;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(percentage: &Option<Percentage>, serializer: S) -> Result<S::Ok, S::Error> {
        match percentage {
            Some(percentage) => serializer.serialize_some(&percentage.hundredths()),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Percentage>, D::Error> {
        Option::<i64>::deserialize(deserializer)?
            .map(Percentage::from_hundredths)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn percent(text: &str) -> Percentage {
        text.parse().expect("a percentage")
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Stored {
        #[serde(with = "super::hundredths")]
        rate: Percentage,
        #[serde(default, with = "super::hundredths_option")]
        discount: Option<Percentage>,
    }

    #[test]
    fn free_text_rates_round_to_hundredths() {
        assert_eq!(Percentage::parse_rounded("2.755"), Ok(percent("2.76")));
        assert_eq!(Percentage::parse_rounded("12.3449"), Ok(percent("12.34")));
        assert_eq!(Percentage::parse_rounded(" 12.0000000 "), Ok(percent("12")));
        assert_eq!(Percentage::parse_rounded("100"), Ok(Percentage::HUNDRED));
        assert!(Percentage::parse_rounded("100.005").is_err(), "rounds above 100");
        assert!(Percentage::parse_rounded("abc").is_err());
        assert!(Percentage::parse_rounded("1.00000000001").is_err(), "eleven decimals");
    }

    #[test]
    fn stored_fields_keep_the_integer_hundredths() {
        let stored = Stored { rate: percent("12.5"), discount: Some(percent("100")) };
        let json = serde_json::to_value(&stored).expect("serialize");
        assert_eq!(json, json!({"rate": 1250, "discount": 10000}));
        assert_eq!(serde_json::from_value::<Stored>(json).expect("read"), stored);
        let none = Stored { rate: Percentage::ZERO, discount: None };
        assert_eq!(serde_json::to_value(&none).expect("serialize"), json!({"rate": 0, "discount": null}));
        assert_eq!(serde_json::from_value::<Stored>(json!({"rate": 5})).expect("read").discount, None);
        assert!(serde_json::from_value::<Stored>(json!({"rate": 10001})).is_err(), "above 100%");
    }

    fn cents(value: i64) -> Cents {
        Cents::new(value).expect("in range")
    }

    #[test]
    fn numbers_and_strings_parse_to_hundredths() {
        assert_eq!(Percentage::parse(&json!(15)).map(Percentage::hundredths), Ok(1_500));
        assert_eq!(Percentage::parse(&json!(12.5)).map(Percentage::hundredths), Ok(1_250));
        assert_eq!(Percentage::parse(&json!(0.01)).map(Percentage::hundredths), Ok(1));
        assert_eq!(Percentage::parse(&json!("0.25")).map(Percentage::hundredths), Ok(25));
        assert_eq!(Percentage::parse(&json!("100.00")), Ok(Percentage::HUNDRED));
        assert_eq!(Percentage::parse(&json!("\u{2005}000000100\u{2003}")), Ok(Percentage::HUNDRED), "text is trimmed");
        assert_eq!(Percentage::parse(&json!(0)), Ok(Percentage::ZERO));
        assert_eq!(Percentage::parse(&json!(-0.0)), Ok(Percentage::ZERO));
        assert_eq!(Percentage::parse(&json!("1e2")), Ok(Percentage::HUNDRED));
        let source: Value = serde_json::from_str("33.33").expect("json");
        assert_eq!(Percentage::parse(&source).map(Percentage::hundredths), Ok(3_333));
    }

    #[test]
    fn a_third_decimal_place_is_refused() {
        assert_eq!(
            Percentage::parse(&json!(12.345)),
            Err(DomainError::TooManyDecimals { max: 2, value: "12.345".into() })
        );
        assert!(matches!(Percentage::parse(&json!("0.001")), Err(DomainError::TooManyDecimals { .. })));
        assert!(matches!(Percentage::parse(&json!("1e-3")), Err(DomainError::TooManyDecimals { .. })));
        assert_eq!(Percentage::parse(&json!("12.3400")).map(Percentage::hundredths), Ok(1_234));
    }

    #[test]
    fn values_outside_zero_to_a_hundred_are_refused() {
        assert_eq!(
            Percentage::parse(&json!(100.01)).map_err(|e| e.to_string()),
            Err("must be between 0 and 100, not 100.01".into())
        );
        assert!(matches!(Percentage::parse(&json!(-0.01)), Err(DomainError::OutOfRange { .. })));
        assert!(matches!(Percentage::parse(&json!(-5)), Err(DomainError::OutOfRange { .. })));
        assert!(matches!(Percentage::parse(&json!(u64::MAX)), Err(DomainError::OutOfRange { .. })));
        assert!(matches!(Percentage::parse(&json!(1e300)), Err(DomainError::OutOfRange { .. })));
        assert!(matches!(Percentage::parse(&json!(65_536)), Err(DomainError::OutOfRange { .. })));
        assert_eq!(Percentage::from_hundredths(10_000), Ok(Percentage::HUNDRED));
        assert_eq!(
            Percentage::from_hundredths(10_001).map_err(|e| e.to_string()),
            Err("must be between 0 and 100, not 100.01".into())
        );
        assert_eq!(
            Percentage::from_hundredths(-250).map_err(|e| e.to_string()),
            Err("must be between 0 and 100, not -2.5".into())
        );
        assert!(Percentage::from_hundredths(i64::MIN).is_err());
    }

    #[test]
    fn other_shapes_and_non_decimals_are_refused() {
        assert!(matches!(Percentage::parse(&json!(null)), Err(DomainError::WrongType { found: "null", .. })));
        assert!(matches!(
            Percentage::parse(&json!({"value": 1})),
            Err(DomainError::WrongType { found: "an object", .. })
        ));
        for text in ["15%", "NaN", "inf", "12,5", ""] {
            assert_eq!(Percentage::parse(&json!(text)), Err(DomainError::NotADecimal(text.into())), "{text:?}");
        }
    }

    #[test]
    fn applying_rounds_half_away_from_zero_on_the_exact_value() {
        // 15% of 50 is 7.5: binary floating point makes it 7.4999… and rounds a cent short.
        assert_eq!(percent("15").apply_to(cents(50)), cents(8));
        assert_eq!(percent("15").apply_to(cents(-50)), cents(-8));
        assert_eq!(percent("12.5").apply_to(cents(1_000)), cents(125));
        assert_eq!(percent("33.33").apply_to(cents(100)), cents(33));
        assert_eq!(percent("0.01").apply_to(cents(4_999)), cents(0));
        assert_eq!(percent("0.01").apply_to(cents(5_000)), cents(1));
        assert_eq!(percent("21").apply_to(cents(999)), cents(210));
        assert_eq!(Percentage::ZERO.apply_to(cents(Cents::MAX)), Cents::ZERO);
        assert_eq!(Percentage::HUNDRED.apply_to(cents(Cents::MAX)), cents(Cents::MAX));
        assert_eq!(Percentage::HUNDRED.apply_to(cents(-Cents::MAX)), cents(-Cents::MAX));
        assert_eq!(percent("99.99").apply_to(cents(Cents::MAX)), cents(999_900_000_000));
    }

    #[test]
    fn text_is_the_shortest_decimal_and_reads_back() {
        for (hundredths, text) in [(0, "0"), (1, "0.01"), (10, "0.1"), (1_250, "12.5"), (1_500, "15"), (3_333, "33.33")]
        {
            let p = Percentage::from_hundredths(hundredths).expect("in range");
            assert_eq!(p.to_string(), text);
            assert_eq!(text.parse::<Percentage>(), Ok(p));
        }
    }

    #[test]
    fn json_is_a_number_that_reads_back_exactly_for_every_value() {
        assert_eq!(serde_json::to_string(&percent("15")).expect("json"), "15");
        assert_eq!(serde_json::to_string(&percent("12.5")).expect("json"), "12.5");
        assert_eq!(serde_json::to_string(&percent("0.07")).expect("json"), "0.07");
        assert_eq!(serde_json::from_str::<Percentage>(r#""12.5""#).expect("json"), percent("12.5"));
        for hundredths in 0..=10_000 {
            let p = Percentage::from_hundredths(hundredths).expect("in range");
            let text = serde_json::to_string(&p).expect("json");
            assert_eq!(text, p.to_string(), "the JSON number spells the exact decimal");
            assert_eq!(serde_json::from_str::<Percentage>(&text).expect("json"), p);
        }
        assert!(serde_json::from_str::<Percentage>("101").is_err());
    }

    #[test]
    fn ordering_follows_the_value() {
        assert!(percent("9.99") < percent("10"));
        assert!(Percentage::ZERO.is_zero() && !percent("0.01").is_zero());
    }
}
