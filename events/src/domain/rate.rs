//! Exchange rates as exact decimals: pesos per unit of a foreign currency, six decimal places at most.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::cents::Cents;
use super::decimal::{Refusal, json_text, parse_scaled};
use super::error::{DomainError, shown};

/// Pesos per unit of another currency (`1050.25` pesos per dollar), kept as a whole number of
/// millionths, positive and at most [`ExchangeRate::MAX_UNITS`]. The rate of pesos to pesos is
/// [`ExchangeRate::ONE`].
///
/// JSON and text form: the shortest exact decimal as a string (`"1050.25"`), read from a number or a
/// string, like [`super::Quantity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeRate(i64);

impl ExchangeRate {
    pub const DECIMALS: u32 = 6;
    const SCALE: i64 = 1_000_000;
    /// No currency is worth more than a million pesos; the bound keeps every conversion inside `i128`.
    pub const MAX_UNITS: i64 = 1_000_000;
    pub const ONE: ExchangeRate = ExchangeRate(Self::SCALE);

    /// A rate from a JSON number or a string holding a decimal, refusing zero, negatives, more than six
    /// decimal places and values beyond [`ExchangeRate::MAX_UNITS`].
    pub fn parse(value: &Value) -> Result<Self, DomainError> {
        let text = json_text(value)
            .map_err(|found| DomainError::WrongType { expected: "a decimal number or a string holding one", found })?;
        Self::parse_text(&text)
    }

    fn parse_text(text: &str) -> Result<Self, DomainError> {
        let millionths = match parse_scaled(text, Self::DECIMALS) {
            Ok(millionths) => millionths,
            Err(Refusal::Syntax) => return Err(DomainError::NotADecimal(shown(text))),
            Err(Refusal::TooPrecise) => {
                return Err(DomainError::TooManyDecimals { max: Self::DECIMALS, value: shown(text) });
            }
            Err(Refusal::TooLarge) => return Err(out_of_range(text)),
        };
        if millionths <= 0 {
            return Err(DomainError::NotPositive(shown(text)));
        }
        if millionths > i128::from(Self::MAX_UNITS * Self::SCALE) {
            return Err(out_of_range(text));
        }
        // The range check keeps the narrowing exact.
        Ok(ExchangeRate(millionths as i64))
    }

    pub const fn millionths(self) -> i64 {
        self.0
    }

    pub fn is_one(self) -> bool {
        self == Self::ONE
    }

    /// `amount` (in the foreign currency's cents) in peso cents, rounded half away from zero, or `None`
    /// beyond [`Cents::MAX`].
    pub fn to_pesos(self, amount: Cents) -> Option<Cents> {
        let exact = i128::from(amount.get()) * i128::from(self.0);
        let pesos = super::div_round_half_away(exact, i128::from(Self::SCALE));
        i64::try_from(pesos).ok().and_then(|p| Cents::new(p).ok())
    }
}

fn out_of_range(value: &str) -> DomainError {
    DomainError::OutOfRange { min: "0.000001".into(), max: ExchangeRate::MAX_UNITS.to_string(), value: shown(value) }
}

impl FromStr for ExchangeRate {
    type Err = DomainError;

    fn from_str(text: &str) -> Result<Self, DomainError> {
        Self::parse_text(text)
    }
}

/// The shortest exact decimal: `1050.25`, `1`.
impl fmt::Display for ExchangeRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (units, fraction) = (self.0 / Self::SCALE, self.0 % Self::SCALE);
        if fraction == 0 {
            f.pad(&units.to_string())
        } else {
            let digits = format!("{fraction:06}");
            f.pad(&format!("{units}.{}", digits.trim_end_matches('0')))
        }
    }
}

impl Serialize for ExchangeRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ExchangeRate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::parse(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rates_are_exact_and_convert_with_half_away_rounding() {
        let rate: ExchangeRate = "1050.25".parse().expect("rate");
        assert_eq!(rate.to_string(), "1050.25");
        assert_eq!(ExchangeRate::parse(&json!(1050.25)), Ok(rate));
        // 12.34 dollars at 1050.25 = 12,960.085 pesos: 1,296,008.5 cents rounds to 1,296,009.
        assert_eq!(rate.to_pesos(Cents::new(1234).expect("cents")), Cents::new(1_296_009).ok());
        assert_eq!(ExchangeRate::ONE.to_pesos(Cents::new(99).expect("cents")), Cents::new(99).ok());
        assert_eq!(serde_json::to_value(rate).expect("json"), json!("1050.25"));
        assert!(ExchangeRate::parse(&json!("0.0000001")).is_err());
        assert!(ExchangeRate::parse(&json!(0)).is_err());
        assert!(ExchangeRate::parse(&json!(-3)).is_err());
        assert!(ExchangeRate::parse(&json!("1e9")).is_err());
        assert!(ExchangeRate::parse(&json!(true)).is_err());
    }
}
