//! The tax authority's VAT rates, each known by its code: the one table the catalogue, the pricing
//! rules, the fiscal adapter and the reference endpoint read.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::cents::Cents;
use super::error::DomainError;
use super::percentage::Percentage;

/// The table: code, rate (from hundredths of a percent, checked when the crate compiles), description.
const RATES: [(i32, Percentage, &str); 6] = [
    (3, Percentage::of_hundredths(0), "IVA 0%"),
    (4, Percentage::of_hundredths(1050), "IVA 10,5%"),
    (5, Percentage::of_hundredths(2100), "IVA 21%"),
    (6, Percentage::of_hundredths(2700), "IVA 27%"),
    (8, Percentage::of_hundredths(500), "IVA 5%"),
    (9, Percentage::of_hundredths(250), "IVA 2,5%"),
];

/// A VAT rate of the tax authority's table (code `5` is 21%). Built only from a code the table holds,
/// so its rate is always at hand: no lookup can fail after parsing, and no unknown code reaches a
/// computation as a silent zero.
///
/// JSON and column form: the code as an integer (`5`), the form events, commands and the `tax_rate_id`
/// fields have always had; reading an unknown code is an error.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct VatRate(u8);

impl VatRate {
    /// The general rate, 21% (code 5).
    pub const GENERAL: VatRate = VatRate::known(5);
    /// The zero rate (code 3).
    pub const ZERO: VatRate = VatRate::known(3);

    /// The rate of a code the table holds, for the constants above: a code it does not hold fails the
    /// build.
    const fn known(code: i32) -> Self {
        let mut index = 0;
        while index < RATES.len() {
            if RATES[index].0 == code {
                return VatRate(index as u8);
            }
            index += 1;
        }
        panic!("not a code of the VAT table")
    }

    /// The rate of a code, refusing a code the table does not hold.
    pub fn from_code(code: i64) -> Result<Self, DomainError> {
        RATES
            .iter()
            .position(|(known, _, _)| i64::from(*known) == code)
            .map(|index| VatRate(index as u8))
            .ok_or(DomainError::UnknownVatCode(code))
    }

    /// Every code of the table, as messages list them: `3, 4, 5, 6, 8 or 9`.
    pub fn codes_text() -> String {
        let codes: Vec<String> = RATES.iter().map(|(code, _, _)| code.to_string()).collect();
        match codes.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// Every rate, in the table's order.
    pub fn all() -> impl Iterator<Item = VatRate> {
        (0..RATES.len()).map(|index| VatRate(index as u8))
    }

    fn entry(self) -> (i32, Percentage, &'static str) {
        RATES[usize::from(self.0)]
    }

    /// The tax authority's code (`5`).
    pub fn code(self) -> i32 {
        self.entry().0
    }

    /// The rate in hundredths of a percent (`2100`).
    pub fn hundredths(self) -> i64 {
        i64::from(self.entry().1.hundredths())
    }

    /// The rate as a [`Percentage`] (`21`).
    pub fn percentage(self) -> Percentage {
        self.entry().1
    }

    /// The rate as the number the interface shows (`21.0`, `10.5`).
    pub fn percent(self) -> f64 {
        f64::from(self.entry().1.hundredths()) / 100.0
    }

    /// The table's description (`IVA 21%`).
    pub fn description(self) -> &'static str {
        self.entry().2
    }

    /// The net of an amount that includes VAT at this rate, rounded half away from zero: `1210` at 21%
    /// is `1000`. Never further from zero than `gross`, so always in range.
    pub fn net_of(self, gross: Cents) -> Cents {
        let net = super::div_round_half_away(i128::from(gross.get()) * 10_000, 10_000 + i128::from(self.hundredths()));
        Cents::from_i128(net).expect("a net is no further from zero than its gross, which is in range")
    }

    /// A net amount with VAT at this rate added, rounded half away from zero (`1000` at 21% is `1210`);
    /// `None` beyond the range of [`Cents`].
    pub fn gross_of(self, net: Cents) -> Option<Cents> {
        let gross =
            super::div_round_half_away(i128::from(net.get()) * (10_000 + i128::from(self.hundredths())), 10_000);
        Cents::from_i128(gross)
    }
}

/// In the order of their codes.
impl Ord for VatRate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.code().cmp(&other.code())
    }
}

impl PartialOrd for VatRate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Shows the code and the rate: `5 (21%)`.
impl fmt::Debug for VatRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}%)", self.code(), self.percentage())
    }
}

impl Serialize for VatRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.code())
    }
}

/// Reads a code through [`VatRate::from_code`].
impl<'de> Deserialize<'de> for VatRate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        VatRate::from_code(i64::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// An `integer` column holding the code; a stored code the table does not hold is a decoding error.
impl sqlx::Type<sqlx::Postgres> for VatRate {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <i32 as sqlx::Type<sqlx::Postgres>>::type_info()
    }
}

impl sqlx::postgres::PgHasArrayType for VatRate {
    fn array_type_info() -> sqlx::postgres::PgTypeInfo {
        <i32 as sqlx::postgres::PgHasArrayType>::array_type_info()
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for VatRate {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <i32 as sqlx::Encode<sqlx::Postgres>>::encode_by_ref(&self.code(), buf)
    }
}

impl sqlx::Decode<'_, sqlx::Postgres> for VatRate {
    fn decode(value: sqlx::postgres::PgValueRef<'_>) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(VatRate::from_code(i64::from(<i32 as sqlx::Decode<sqlx::Postgres>>::decode(value)?))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_code_reads_as_its_rate_and_writes_back_as_itself() {
        let rate = VatRate::from_code(4).expect("a code");
        assert_eq!((rate.code(), rate.hundredths(), rate.percent()), (4, 1050, 10.5));
        assert_eq!(rate.percentage(), Percentage::from_hundredths(1050).expect("in range"));
        assert_eq!(serde_json::to_value(rate).expect("encodes"), json!(4));
        assert_eq!(serde_json::from_value::<VatRate>(json!(4)).expect("decodes"), rate);
        assert_eq!(VatRate::GENERAL.code(), 5);
        assert_eq!(VatRate::ZERO.hundredths(), 0);
        assert_eq!(VatRate::all().map(VatRate::code).collect::<Vec<_>>(), [3, 4, 5, 6, 8, 9]);
    }

    #[test]
    fn net_and_gross_round_half_away_from_zero() {
        let general = VatRate::GENERAL;
        assert_eq!(general.net_of(Cents::of(1210)), Cents::of(1000));
        assert_eq!(general.gross_of(Cents::of(1000)), Some(Cents::of(1210)));
        assert_eq!(general.net_of(Cents::of(1000)), Cents::of(826));
        // So a VAT-inclusive line an order keeps goes back to its stored price only when it was whole.
        assert_eq!(general.gross_of(Cents::of(826)), Some(Cents::of(999)));
        // A negative amount rounds away from zero as a positive one does: -826.446… is -826, and at
        // 10.5%, -1 cent of net is -1.105 gross, so -1 cent.
        assert_eq!(general.net_of(Cents::of(-1000)), Cents::of(-826));
        assert_eq!(VatRate::from_code(4).expect("a code").gross_of(Cents::of(-1)), Some(Cents::of(-1)));
        assert_eq!(VatRate::ZERO.net_of(Cents::of(-7)), Cents::of(-7));
        let max = Cents::new(Cents::MAX).expect("in range");
        assert_eq!(general.gross_of(max), None);
        assert_eq!(VatRate::ZERO.gross_of(max), Some(max));
    }

    #[test]
    fn an_unknown_code_is_refused_where_it_is_read() {
        for code in [0, 1, 2, 7, 10, -5, i64::from(i32::MAX) + 1] {
            assert_eq!(VatRate::from_code(code), Err(DomainError::UnknownVatCode(code)));
        }
        let error = serde_json::from_value::<VatRate>(json!(7)).expect_err("unknown");
        assert!(error.to_string().contains("must be a VAT rate code (3, 4, 5, 6, 8 or 9), not 7"), "{error}");
        assert!(serde_json::from_value::<VatRate>(json!("5")).is_err());
    }
}
