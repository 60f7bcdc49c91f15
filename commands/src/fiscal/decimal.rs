//! The authority's exact values on the wire: decimals with a fixed number of places (amounts with
//! two, exchange rates with six) written and read as text without ever passing through a binary
//! float, and dates as its `yyyymmdd`.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::{Date, Month};

/// A decimal with `SCALE` places, held as a whole count of `10^-SCALE` (an [`Amount`] counts cents).
///
/// On the wire it is text written with exactly `SCALE` places (`<ImpTotal>121.00</ImpTotal>`), read
/// back from that text, so `0.10` is ten cents and never `0.1000000000000000055…`; any spelling of
/// the same value (`121`, `1.21e2`) is accepted. A value with more places than `SCALE` is refused
/// rather than rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fixed<const SCALE: u32>(i64);

/// Money on the wire: cents, written with two places (`ImpTotal`, `BaseImp`, ...).
pub type Amount = Fixed<2>;

/// An exchange rate on the wire (`MonCotiz`): millionths, written with six places.
pub type Rate = Fixed<6>;

/// Why text is not a decimal of the expected scale.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("`{0}` is not a decimal number")]
    Syntax(String),
    #[error("`{0}` has more than {1} decimal places")]
    TooPrecise(String, u32),
    #[error("`{0}` is out of range")]
    TooLarge(String),
}

impl<const SCALE: u32> Fixed<SCALE> {
    pub const ZERO: Self = Fixed(0);

    /// The decimal holding `units` of `10^-SCALE`.
    pub const fn from_units(units: i64) -> Self {
        Fixed(units)
    }

    /// The whole count of `10^-SCALE`.
    pub const fn units(self) -> i64 {
        self.0
    }

    /// Parses decimal text (the JSON number grammar: an optional minus, digits, an optional fraction
    /// and exponent; leading zeros tolerated), refusing digits below `10^-SCALE`.
    pub fn parse(text: &str) -> Result<Self, DecimalError> {
        let syntax = || DecimalError::Syntax(text.to_owned());
        let (negative, unsigned) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
            Some((mantissa, exponent)) => (mantissa, Some(exponent)),
            None => (unsigned, None),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || (mantissa.contains('.') && (fraction.is_empty() || !digits(fraction)))
        {
            return Err(syntax());
        }
        let exponent: i64 = match exponent {
            None => 0,
            Some(written) => {
                let unsigned = written.strip_prefix(['+', '-']).unwrap_or(written);
                if unsigned.is_empty() || !digits(unsigned) {
                    return Err(syntax());
                }
                let significant = unsigned.trim_start_matches('0');
                // Capped: past a few dozen any nonzero value is out of range either way, zero stays zero.
                let magnitude: i64 = if significant.len() > 4 { 10_000 } else { significant.parse().unwrap_or(0) };
                if written.starts_with('-') { -magnitude } else { magnitude }
            }
        };
        let significant = format!("{whole}{fraction}");
        let significant = significant.trim_start_matches('0');
        if significant.is_empty() {
            return Ok(Fixed(0));
        }
        let trimmed = significant.trim_end_matches('0');
        let trailing_zeros = (significant.len() - trimmed.len()) as i64;
        // The value is `trimmed × 10^shift` in units of 10^-SCALE.
        let shift = exponent - fraction.len() as i64 + trailing_zeros + i64::from(SCALE);
        if shift < 0 {
            return Err(DecimalError::TooPrecise(text.to_owned(), SCALE));
        }
        let too_large = || DecimalError::TooLarge(text.to_owned());
        // i64 holds at most 19 digits.
        if trimmed.len() as i64 + shift > 19 {
            return Err(too_large());
        }
        // At most 19 digits in all, so this stays far inside i128.
        let value: i128 = trimmed.parse::<i128>().map_err(|_| syntax())? * 10i128.pow(shift as u32);
        let value = if negative { -value } else { value };
        i64::try_from(value).map(Fixed).map_err(|_| too_large())
    }
}

impl Fixed<2> {
    /// An amount of `cents`.
    pub const fn from_cents(cents: i64) -> Self {
        Fixed(cents)
    }

    /// The amount in cents.
    pub const fn cents(self) -> i64 {
        self.0
    }
}

impl Fixed<6> {
    /// The rate of pesos: exactly 1.
    pub const ONE: Self = Fixed(1_000_000);
}

impl<const SCALE: u32> fmt::Display for Fixed<SCALE> {
    /// Exactly `SCALE` places: `121.00`, `-0.05`, `1.000000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let magnitude = i128::from(self.0).unsigned_abs();
        let unit = 10u128.pow(SCALE);
        let sign = if self.0 < 0 { "-" } else { "" };
        if SCALE == 0 {
            write!(f, "{sign}{magnitude}")
        } else {
            write!(f, "{sign}{}.{:0width$}", magnitude / unit, magnitude % unit, width = SCALE as usize)
        }
    }
}

impl<const SCALE: u32> Serialize for Fixed<SCALE> {
    /// As text with exactly `SCALE` places (`121.00`): an XML element's content, a JSON string.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, const SCALE: u32> Deserialize<'de> for Fixed<SCALE> {
    /// From decimal text (an element's content, a JSON string); never from a binary float.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text<const SCALE: u32>;
        impl<const SCALE: u32> serde::de::Visitor<'_> for Text<SCALE> {
            type Value = Fixed<SCALE>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a decimal with at most {SCALE} places, as text")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Fixed::parse(text.trim()).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Text::<SCALE>)
    }
}

/// `yyyymmdd`, the authority's date format.
pub fn format_date(date: Date) -> String {
    format!("{:04}{:02}{:02}", date.year(), u8::from(date.month()), date.day())
}

/// Parses `yyyymmdd`.
pub fn parse_date(text: &str) -> Option<Date> {
    if text.len() != 8 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let year: i32 = text[..4].parse().ok()?;
    let month = Month::try_from(text[4..6].parse::<u8>().ok()?).ok()?;
    let day: u8 = text[6..].parse().ok()?;
    Date::from_calendar_date(year, month, day).ok()
}

/// Serde for a `yyyymmdd` date field.
pub mod yyyymmdd {
    use super::*;

    pub fn serialize<S: Serializer>(date: &Date, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_date(*date))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Date, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_date(&text).ok_or_else(|| D::Error::custom(format!("`{text}` is not a yyyymmdd date")))
    }
}

/// Serde for an optional `yyyymmdd` date field; absent, `null` and `""` (how the authority leaves a
/// date out) are all `None`.
pub mod yyyymmdd_opt {
    use super::*;

    pub fn serialize<S: Serializer>(date: &Option<Date>, serializer: S) -> Result<S::Ok, S::Error> {
        match date {
            Some(date) => serializer.serialize_str(&format_date(*date)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Date>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(None),
            Some(text) if text.trim().is_empty() => Ok(None),
            Some(text) => {
                parse_date(&text).map(Some).ok_or_else(|| D::Error::custom(format!("`{text}` is not a yyyymmdd date")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn element(amount: Amount) -> String {
        quick_xml::se::to_string_with_root("ImpTotal", &amount).expect("serializes")
    }

    fn read(xml: &str) -> Result<Amount, quick_xml::DeError> {
        quick_xml::de::from_str(xml)
    }

    #[test]
    fn amounts_are_written_with_two_places_exactly() {
        let cases = [
            (12100, "121.00"),
            (0, "0.00"),
            (5, "0.05"),
            (-5, "-0.05"),
            (-12345, "-123.45"),
            (10, "0.10"),
            (i64::MAX, "92233720368547758.07"),
            (i64::MIN, "-92233720368547758.08"),
        ];
        for (cents, text) in cases {
            assert_eq!(Amount::from_cents(cents).to_string(), text);
            assert_eq!(element(Amount::from_cents(cents)), format!("<ImpTotal>{text}</ImpTotal>"));
            assert_eq!(read(&format!("<ImpTotal>{text}</ImpTotal>")).expect("parses").cents(), cents, "{text}");
        }
        assert_eq!(Rate::ONE.to_string(), "1.000000");
    }

    #[test]
    fn every_cent_survives_the_round_trip() {
        // Values whose nearest binary float is not the decimal: a float path would drift here.
        for cents in (0..100_000).chain([1_000_000_000_000 - 1, 999_999_999_999_999, 4_503_599_627_370_497]) {
            let text = element(Amount::from_cents(cents));
            assert_eq!(read(&text).expect("parses").cents(), cents, "{text}");
            let json = serde_json::to_string(&Amount::from_cents(cents)).expect("serializes");
            assert_eq!(serde_json::from_str::<Amount>(&json).expect("parses").cents(), cents, "{json}");
        }
    }

    #[test]
    fn any_spelling_of_the_value_parses_and_sub_cent_digits_are_refused() {
        let ok = [
            ("121", 12100),
            ("121.5", 12150),
            ("1.21e2", 12100),
            ("1.2150E+2", 12150),
            ("12150e-2", 12150),
            (" 121.00\n", 12100),
            ("0.0", 0),
            ("-0", 0),
            ("00.10", 10),
            ("1.000", 100),
        ];
        for (text, cents) in ok {
            assert_eq!(read(&format!("<ImpTotal>{text}</ImpTotal>")).expect(text).cents(), cents, "{text}");
        }
        assert_eq!(serde_json::from_str::<Amount>("\"121.5\"").expect("a JSON string").cents(), 12150);
        assert!(serde_json::from_str::<Amount>("121.5").is_err(), "a JSON number is never read as a float");
        assert!(matches!(Amount::parse("0.001"), Err(DecimalError::TooPrecise(..))));
        assert!(matches!(Amount::parse("1e-3"), Err(DecimalError::TooPrecise(..))));
        assert!(matches!(Amount::parse("1e30"), Err(DecimalError::TooLarge(_))));
        assert!(matches!(Amount::parse("92233720368547758.08"), Err(DecimalError::TooLarge(_))));
        assert!(matches!(Amount::parse("0e999999999999"), Ok(Fixed(0))));
        for bad in ["", "-", ".5", "5.", "1,5", "+1", "1e", "NaN", " 1", "0x10", "1.2.3"] {
            assert!(matches!(Amount::parse(bad), Err(DecimalError::Syntax(_))), "{bad:?}");
        }
        assert!(serde_json::from_str::<Amount>("true").is_err());
        assert!(read("<ImpTotal>uno</ImpTotal>").is_err());
        assert_eq!(Rate::parse("1").expect("one"), Rate::ONE);
        assert_eq!(Rate::parse("1234.567891").expect("rate").units(), 1_234_567_891);
    }

    #[test]
    fn dates_are_yyyymmdd() {
        assert_eq!(format_date(date!(2025 - 03 - 07)), "20250307");
        assert_eq!(parse_date("20250307"), Some(date!(2025 - 03 - 07)));
        for bad in ["2025037", "20250230", "2025-03-07", "2025030a", ""] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
