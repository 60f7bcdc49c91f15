//! Money as a whole number of cents (minor units), never a float.

use std::fmt;
use std::ops::Neg;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::decimal::{Refusal, number_text, parse_scaled};
use super::error::{DomainError, json_kind, shown};

/// An amount of money in cents, between `-Cents::MAX` and `Cents::MAX`. Negative amounts exist
/// (refunds, discounts, balance movements); constructors named `non_negative` refuse them for prices.
/// The bound is far above any real price yet leaves every product with a quantity or a percentage
/// well inside `i128`, so arithmetic never has to wrap or saturate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Cents(i64);

impl Cents {
    /// The largest amount, ten thousand million in major units (`commands::products::MAX_CENTS`, a
    /// product's largest cost or price, is this bound).
    pub const MAX: i64 = 1_000_000_000_000;

    pub const ZERO: Cents = Cents(0);

    /// Cents from an integer, refusing magnitudes beyond [`Cents::MAX`].
    pub fn new(cents: i64) -> Result<Self, DomainError> {
        if (-Self::MAX..=Self::MAX).contains(&cents) {
            Ok(Cents(cents))
        } else {
            Err(out_of_range(-Self::MAX, &cents.to_string()))
        }
    }

    /// Cents from an integer from zero to [`Cents::MAX`], for prices and costs.
    pub fn new_non_negative(cents: i64) -> Result<Self, DomainError> {
        if (0..=Self::MAX).contains(&cents) { Ok(Cents(cents)) } else { Err(out_of_range(0, &cents.to_string())) }
    }

    /// Cents from a JSON value: an integer, or a float with no fraction (`100.0`, `1e3`). Strings,
    /// fractions of a cent and values out of range are refused with the reason.
    pub fn parse(value: &Value) -> Result<Self, DomainError> {
        Self::parse_from(value, -Self::MAX)
    }

    /// As [`Cents::parse`], refusing negative amounts.
    pub fn parse_non_negative(value: &Value) -> Result<Self, DomainError> {
        Self::parse_from(value, 0)
    }

    fn parse_from(value: &Value, min: i64) -> Result<Self, DomainError> {
        let Value::Number(number) = value else {
            return Err(DomainError::WrongType { expected: EXPECTED, found: json_kind(value) });
        };
        // An integer, as every stored amount is, needs no text.
        if let Some(cents) = number.as_i64() {
            return if (min..=Self::MAX).contains(&cents) {
                Ok(Cents(cents))
            } else {
                Err(out_of_range(min, &cents.to_string()))
            };
        }
        let text = number_text(number);
        match parse_scaled(&text, 0) {
            Ok(cents) if (i128::from(min)..=i128::from(Self::MAX)).contains(&cents) => {
                // The range check above keeps this inside `i64`.
                Ok(Cents(cents as i64))
            }
            Ok(_) | Err(Refusal::TooLarge) => Err(out_of_range(min, &text)),
            Err(Refusal::TooPrecise) => Err(DomainError::FractionalCents(shown(&text))),
            Err(Refusal::Syntax) => Err(DomainError::NotADecimal(shown(&text))),
        }
    }

    /// The result of wide arithmetic elsewhere in this module, or `None` beyond [`Cents::MAX`].
    pub(super) fn from_i128(cents: i128) -> Option<Self> {
        (-i128::from(Self::MAX)..=i128::from(Self::MAX)).contains(&cents).then_some(Cents(cents as i64))
    }

    /// A fixed amount known in range (a constant, a test's figure): panics outside the range, at compile
    /// time where used in a constant. Amounts from outside go through [`Cents::new`] or a parser.
    pub const fn of(cents: i64) -> Cents {
        assert!(cents >= -Self::MAX && cents <= Self::MAX, "cents out of range");
        Cents(cents)
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The sum, or `None` beyond [`Cents::MAX`]. Two amounts in range cannot overflow `i64`.
    pub fn checked_add(self, other: Cents) -> Option<Cents> {
        Self::new(self.0 + other.0).ok()
    }

    /// The difference, or `None` beyond [`Cents::MAX`].
    pub fn checked_sub(self, other: Cents) -> Option<Cents> {
        Self::new(self.0 - other.0).ok()
    }

    /// The total of several amounts, or `None` as soon as a running total leaves the range: a sum
    /// that overflows partway is refused even if later negative amounts would bring it back.
    pub fn checked_sum(amounts: impl IntoIterator<Item = Cents>) -> Option<Cents> {
        amounts.into_iter().try_fold(Cents::ZERO, Cents::checked_add)
    }

    /// This amount's share `part / whole` (the peso value of some of a holding's dollars), rounded half
    /// away from zero, or `None` when `whole` is not positive or the share leaves the range.
    pub fn share(self, part: Cents, whole: Cents) -> Option<Cents> {
        if whole.0 <= 0 {
            return None;
        }
        let exact = i128::from(self.0) * i128::from(part.0);
        let share = super::div_round_half_away(exact, i128::from(whole.0));
        i64::try_from(share).ok().and_then(|s| Self::new(s).ok())
    }
}

const EXPECTED: &str = "an integer number of cents";

fn out_of_range(min: i64, value: &str) -> DomainError {
    DomainError::OutOfRange { min: min.to_string(), max: Cents::MAX.to_string(), value: shown(value) }
}

/// The range is symmetric, so negation cannot leave it.
impl Neg for Cents {
    type Output = Cents;

    fn neg(self) -> Cents {
        Cents(-self.0)
    }
}

impl TryFrom<i64> for Cents {
    type Error = DomainError;

    fn try_from(cents: i64) -> Result<Self, DomainError> {
        Cents::new(cents)
    }
}

impl From<Cents> for i64 {
    fn from(cents: Cents) -> i64 {
        cents.0
    }
}

/// The integer number of cents, with no currency or decimal point: formatting money for people is
/// the reader's business.
impl fmt::Display for Cents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for Cents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

/// Reads through [`Cents::parse`], so stored events and request bodies obey the same rules.
impl<'de> Deserialize<'de> for Cents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Cents::parse(&value).map_err(serde::de::Error::custom)
    }
}

// A `bigint` column of cents: read models store and read [`Cents`] as they are, and a stored value
// out of range is a decoding error, never a silent substitute.
super::bigint_column!(Cents, Cents::get, Cents::new);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_share_of_a_holding_rounds_half_away_from_zero() {
        // 100,000.00 pesos carried by 100.00 dollars: 33.33 of them carry 33,330.00, 0.01 carries 10.00.
        let carried = Cents::of(10_000_000);
        assert_eq!(carried.share(Cents::of(3_333), Cents::of(10_000)), Some(Cents::of(3_333_000)));
        assert_eq!(Cents::of(100).share(Cents::of(1), Cents::of(3)), Some(Cents::of(33)));
        assert_eq!(Cents::of(200).share(Cents::of(1), Cents::of(3)), Some(Cents::of(67)));
        assert_eq!(Cents::of(-200).share(Cents::of(1), Cents::of(3)), Some(Cents::of(-67)));
        assert_eq!(carried.share(Cents::of(1), Cents::ZERO), None, "nothing held, no share");
    }

    fn cents(value: i64) -> Cents {
        Cents::new(value).expect("in range")
    }

    #[test]
    fn the_bound_is_ten_thousand_million_pesos() {
        assert_eq!(Cents::MAX, 1_000_000_000_000);
    }

    #[test]
    fn integers_within_the_bound_are_accepted_on_both_sides() {
        assert_eq!(Cents::new(0).map(Cents::get), Ok(0));
        assert_eq!(Cents::new(Cents::MAX).map(Cents::get), Ok(Cents::MAX));
        assert_eq!(Cents::new(-Cents::MAX).map(Cents::get), Ok(-Cents::MAX));
        assert_eq!(Cents::new_non_negative(Cents::MAX).map(Cents::get), Ok(Cents::MAX));
        assert_eq!(Cents::try_from(42).map(i64::from), Ok(42));
    }

    #[test]
    fn integers_beyond_the_bound_are_refused_with_it() {
        assert_eq!(
            Cents::new(Cents::MAX + 1),
            Err(DomainError::OutOfRange {
                min: "-1000000000000".into(),
                max: "1000000000000".into(),
                value: "1000000000001".into()
            })
        );
        assert!(Cents::new(-Cents::MAX - 1).is_err());
        assert!(Cents::new(i64::MIN).is_err());
        assert!(Cents::new(i64::MAX).is_err());
        assert_eq!(
            Cents::new_non_negative(-1).map_err(|e| e.to_string()),
            Err("must be between 0 and 1000000000000, not -1".into())
        );
    }

    #[test]
    fn json_integers_and_whole_floats_parse() {
        assert_eq!(Cents::parse(&json!(1234)), Ok(cents(1234)));
        assert_eq!(Cents::parse(&json!(-50)), Ok(cents(-50)));
        assert_eq!(Cents::parse(&json!(100.0)), Ok(cents(100)));
        let from_exponent: Value = serde_json::from_str("1e3").expect("json");
        assert_eq!(Cents::parse(&from_exponent), Ok(cents(1000)));
        assert_eq!(Cents::parse(&json!(-0.0)), Ok(Cents::ZERO));
        assert_eq!(Cents::parse_non_negative(&json!(0)), Ok(Cents::ZERO));
    }

    #[test]
    fn fractions_of_a_cent_are_refused() {
        assert_eq!(Cents::parse(&json!(12.5)), Err(DomainError::FractionalCents("12.5".into())));
        assert_eq!(Cents::parse(&json!(-0.01)), Err(DomainError::FractionalCents("-0.01".into())));
        assert_eq!(
            Cents::parse(&json!(0.1)).map_err(|e| e.to_string()),
            Err("must be a whole number of cents, not 0.1".into())
        );
    }

    #[test]
    fn strings_and_other_shapes_are_refused_by_kind() {
        for (value, found) in [
            (json!("100"), "a string"),
            (json!(null), "null"),
            (json!(true), "a boolean"),
            (json!([100]), "an array"),
            (json!({"cents": 100}), "an object"),
        ] {
            assert_eq!(Cents::parse(&value), Err(DomainError::WrongType { expected: EXPECTED, found }), "{value}");
        }
    }

    #[test]
    fn json_numbers_beyond_the_bound_or_i64_are_out_of_range() {
        let too_big = |value: Value| matches!(Cents::parse(&value), Err(DomainError::OutOfRange { .. }));
        assert!(too_big(json!(Cents::MAX + 1)));
        assert!(too_big(json!(i64::MAX)));
        assert!(too_big(json!(i64::MIN)));
        assert!(too_big(json!(u64::MAX)));
        assert!(too_big(json!(1e300)));
        let beyond_u64: Value = serde_json::from_str("123456789012345678901234567890").expect("json");
        assert!(too_big(beyond_u64));
        assert!(matches!(Cents::parse_non_negative(&json!(-1)), Err(DomainError::OutOfRange { .. })));
        assert!(matches!(
            Cents::parse(&json!(1e300)),
            Err(DomainError::OutOfRange { value, .. }) if value.chars().count() == 41
        ));
    }

    #[test]
    fn arithmetic_is_checked_against_the_bound() {
        assert_eq!(cents(10).checked_add(cents(-25)), Some(cents(-15)));
        assert_eq!(cents(Cents::MAX).checked_add(cents(1)), None);
        assert_eq!(cents(-Cents::MAX).checked_add(cents(-1)), None);
        assert_eq!(cents(-Cents::MAX).checked_sub(cents(1)), None);
        assert_eq!(cents(Cents::MAX).checked_sub(cents(-Cents::MAX)), None);
        assert_eq!(cents(Cents::MAX).checked_sub(cents(Cents::MAX)), Some(Cents::ZERO));
        assert_eq!(-cents(-Cents::MAX), cents(Cents::MAX));
        assert!(cents(-1).is_negative());
        assert!(!Cents::ZERO.is_negative());
    }

    #[test]
    fn sums_stop_at_the_first_overflow() {
        assert_eq!(Cents::checked_sum([cents(1), cents(2), cents(-4)]), Some(cents(-1)));
        assert_eq!(Cents::checked_sum([]), Some(Cents::ZERO));
        assert_eq!(Cents::checked_sum([cents(Cents::MAX), cents(1), cents(-1)]), None);
    }

    #[test]
    fn json_is_a_plain_integer_both_ways() {
        assert_eq!(serde_json::to_string(&cents(-1234)).expect("json"), "-1234");
        assert_eq!(serde_json::from_str::<Cents>("-1234").expect("json"), cents(-1234));
        for value in [0, 1, -1, Cents::MAX, -Cents::MAX] {
            let text = serde_json::to_string(&cents(value)).expect("json");
            assert_eq!(serde_json::from_str::<Cents>(&text).expect("json"), cents(value));
        }
        let error = serde_json::from_str::<Cents>(r#""12""#).expect_err("a string");
        assert!(error.to_string().contains("must be an integer number of cents, not a string"), "{error}");
        let error = serde_json::from_str::<Cents>("1000000000001").expect_err("too big");
        assert!(error.to_string().contains("must be between"), "{error}");
        assert!(serde_json::from_str::<Cents>("1.5").is_err());
    }

    #[test]
    fn display_is_the_bare_integer() {
        assert_eq!(cents(-1234).to_string(), "-1234");
        assert_eq!(format!("{:>6}", cents(12)), "    12");
    }
}
