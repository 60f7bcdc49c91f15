//! Domain newtypes the commercial core computes with: money, quantities, percentages and API scopes.
//!
//! Each type keeps its value private and is built only through a parsing constructor, so a value in
//! hand is always in range and exact. Arithmetic is integer arithmetic on fixed scales (cents,
//! thousandths of a unit, hundredths of a percent), widened to `i128` where a product could overflow,
//! and results that leave the range come back as `None` rather than wrapping or saturating. Everything
//! here is pure: no IO, no clock, no floating point in any computation.
//!
//! Wire forms, chosen so that JSON written today reads back to the same value:
//! - [`Cents`] is a plain JSON integer.
//! - [`Quantity`] is written as a JSON string holding its shortest exact decimal (`"2.5"`, `"3"`,
//!   `"0.125"`) and read from either a number or such a string.
//! - [`Percentage`] is written as a JSON number (`15`, `12.5`) and read from a number or a string.
//! - [`WholeUnits`] (a stock minimum) is a JSON integer.
//! - [`Adjustment`] is written as its integer hundredths of a percent (`1050` for +10.5%).
//! - [`FineAdjustment`] is written as a JSON number (`10.0`, `33.333`) and read from one.
//! - [`Scope`] is its `resource:access` string.
//! - [`VatRate`] is the tax authority's integer code (`5` for 21%).

mod adjustment;
mod cents;
mod decimal;
mod error;
mod percentage;
mod quantity;
mod rate;
mod scope;
mod vat;

pub use adjustment::{Adjustment, FineAdjustment};
pub use cents::Cents;
pub use error::DomainError;
pub use percentage::{Percentage, hundredths, hundredths_option};
pub use quantity::{Quantity, WholeUnits};
pub use rate::ExchangeRate;
pub use scope::Scope;
pub use vat::VatRate;

/// `sqlx` reads and writes a newtype kept as an `i64` (`$get` gives it, `$new` checks it back) as a
/// `bigint` column, and arrays of it: a stored value the type refuses is a decoding error.
macro_rules! bigint_column {
    ($type:ty, $get:path, $new:path) => {
        impl sqlx::Type<sqlx::Postgres> for $type {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <i64 as sqlx::Type<sqlx::Postgres>>::type_info()
            }
        }

        impl sqlx::postgres::PgHasArrayType for $type {
            fn array_type_info() -> sqlx::postgres::PgTypeInfo {
                <i64 as sqlx::postgres::PgHasArrayType>::array_type_info()
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $type {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <i64 as sqlx::Encode<sqlx::Postgres>>::encode_by_ref(&$get(*self), buf)
            }
        }

        impl sqlx::Decode<'_, sqlx::Postgres> for $type {
            fn decode(value: sqlx::postgres::PgValueRef<'_>) -> Result<Self, sqlx::error::BoxDynError> {
                Ok($new(<i64 as sqlx::Decode<sqlx::Postgres>>::decode(value)?)?)
            }
        }
    };
}
use bigint_column;

/// Hundredths of a percent as the shortest exact decimal without a percent sign: `1050` is `10.5`,
/// `-250` is `-2.5`, `4000` is `40`, `1` is `0.01` ([`Percentage`] and [`Adjustment`] print so).
fn hundredths_text(hundredths: i64) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let magnitude = hundredths.unsigned_abs();
    match (magnitude / 100, magnitude % 100) {
        (whole, 0) => format!("{sign}{whole}"),
        (whole, fraction) if fraction % 10 == 0 => format!("{sign}{whole}.{}", fraction / 10),
        (whole, fraction) => format!("{sign}{whole}.{fraction:02}"),
    }
}

/// `numerator / denominator` rounded half away from zero, the rounding every amount here uses.
/// `denominator` must be positive; callers pass fixed scales.
fn div_round_half_away(numerator: i128, denominator: i128) -> i128 {
    debug_assert!(denominator > 0);
    let half = denominator / 2;
    if numerator >= 0 { (numerator + half) / denominator } else { (numerator - half) / denominator }
}

#[cfg(test)]
mod tests {
    use super::div_round_half_away;

    #[test]
    fn rounding_goes_half_away_from_zero_on_both_sides() {
        assert_eq!(div_round_half_away(15, 10), 2);
        assert_eq!(div_round_half_away(14, 10), 1);
        assert_eq!(div_round_half_away(-15, 10), -2);
        assert_eq!(div_round_half_away(-14, 10), -1);
        assert_eq!(div_round_half_away(0, 10), 0);
        assert_eq!(div_round_half_away(4_999, 10_000), 0);
        assert_eq!(div_round_half_away(5_000, 10_000), 1);
        assert_eq!(div_round_half_away(-5_000, 10_000), -1);
    }
}
