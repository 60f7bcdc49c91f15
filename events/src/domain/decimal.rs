//! Exact decimal text to an integer at a fixed scale: the one parser behind cents, quantities and
//! percentages, so they agree on what a number is.

use std::borrow::Cow;

use serde_json::Value;

/// Why text did not become a scaled integer; each type words it with its own bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Not a plain decimal: signs other than a leading minus, spaces, commas, `NaN`, `inf`.
    Syntax,
    /// Digits survive below the scale once trailing zeros and the exponent are accounted for.
    TooPrecise,
    /// At least 10^30 at the scale, beyond every bound here, so it is never built.
    TooLarge,
}

/// Digits in the largest scaled value built; 10^30 fits an `i128` with room for the products taken.
const MAX_DIGITS: i64 = 30;

/// An exponent of this many significant digits moves any nonzero value out of every range.
const MAX_EXPONENT_DIGITS: usize = 9;

/// `text` as an integer count of `10^-scale`. Accepts the JSON number grammar (an optional leading
/// minus, digits, an optional fraction, an optional exponent) with leading zeros tolerated, and
/// judges the value rather than the spelling: `2.5000` and `25e-1` are both 2.5.
pub(super) fn parse_scaled(text: &str, scale: u32) -> Result<i128, Refusal> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (mantissa, ""),
    };
    if !all_digits(whole) || (mantissa.contains('.') && !all_digits(fraction)) {
        return Err(Refusal::Syntax);
    }
    let significant = format!("{whole}{fraction}");
    let significant = significant.trim_start_matches('0');
    let exponent = match exponent {
        None => 0,
        Some(written) => {
            let (exponent_negative, digits) = match written.strip_prefix('-') {
                Some(digits) => (true, digits),
                None => (false, written.strip_prefix('+').unwrap_or(written)),
            };
            if !all_digits(digits) {
                return Err(Refusal::Syntax);
            }
            let digits = digits.trim_start_matches('0');
            if digits.len() > MAX_EXPONENT_DIGITS {
                return match (significant.is_empty(), exponent_negative) {
                    (true, _) => Ok(0),
                    (false, true) => Err(Refusal::TooPrecise),
                    (false, false) => Err(Refusal::TooLarge),
                };
            }
            let magnitude: i64 = if digits.is_empty() { 0 } else { digits.parse().map_err(|_| Refusal::Syntax)? };
            if exponent_negative { -magnitude } else { magnitude }
        }
    };
    if significant.is_empty() {
        return Ok(0);
    }
    let trimmed = significant.trim_end_matches('0');
    let trailing_zeros = (significant.len() - trimmed.len()) as i64;
    let shift = exponent - fraction.len() as i64 + trailing_zeros + i64::from(scale);
    if shift < 0 {
        return Err(Refusal::TooPrecise);
    }
    if trimmed.len() as i64 + shift > MAX_DIGITS {
        return Err(Refusal::TooLarge);
    }
    let digits: i128 = trimmed.parse().map_err(|_| Refusal::Syntax)?;
    // The digit count check above keeps this product below 10^30.
    let magnitude = digits * 10i128.pow(shift as u32);
    Ok(if negative { -magnitude } else { magnitude })
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The decimal text of a JSON number or string, or the name of the value's kind when it is neither.
/// Floats print in Rust's shortest form that reads back to the same `f64`, never with an exponent,
/// so `2.5` stays `2.5`; a client's digits beyond what an `f64` holds were lost when the JSON was read.
pub(super) fn json_text(value: &Value) -> Result<Cow<'_, str>, &'static str> {
    match value {
        Value::Number(number) => Ok(Cow::Owned(number_text(number))),
        Value::String(text) => Ok(Cow::Borrowed(text)),
        other => Err(super::error::json_kind(other)),
    }
}

/// The exact decimal text of a JSON number.
pub(super) fn number_text(number: &serde_json::Number) -> String {
    if let Some(integer) = number.as_i64() {
        integer.to_string()
    } else if let Some(integer) = number.as_u64() {
        integer.to_string()
    } else {
        // Without `arbitrary_precision` every other number is a finite `f64`.
        number.as_f64().map(|float| format!("{float}")).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_decimals_scale_exactly() {
        assert_eq!(parse_scaled("2", 3), Ok(2_000));
        assert_eq!(parse_scaled("2.5", 3), Ok(2_500));
        assert_eq!(parse_scaled("0.125", 3), Ok(125));
        assert_eq!(parse_scaled("-0.125", 3), Ok(-125));
        assert_eq!(parse_scaled("007.10", 2), Ok(710));
        assert_eq!(parse_scaled("0", 0), Ok(0));
        assert_eq!(parse_scaled("-0", 3), Ok(0));
        assert_eq!(parse_scaled("0.000000", 0), Ok(0));
    }

    #[test]
    fn the_value_counts_not_the_spelling() {
        assert_eq!(parse_scaled("2.5000000", 3), Ok(2_500));
        assert_eq!(parse_scaled("25e-1", 3), Ok(2_500));
        assert_eq!(parse_scaled("2500E-3", 3), Ok(2_500));
        assert_eq!(parse_scaled("1.25e2", 0), Ok(125));
        assert_eq!(parse_scaled("1.25e+2", 0), Ok(125));
        assert_eq!(parse_scaled("1e0", 2), Ok(100));
        assert_eq!(parse_scaled("1e-000", 2), Ok(100));
        assert_eq!(parse_scaled("0e999999999999999999", 3), Ok(0));
        assert_eq!(parse_scaled("0.0e-999999999999999999", 3), Ok(0));
    }

    #[test]
    fn digits_below_the_scale_are_refused() {
        assert_eq!(parse_scaled("0.1255", 3), Err(Refusal::TooPrecise));
        assert_eq!(parse_scaled("1.5e-4", 3), Err(Refusal::TooPrecise));
        assert_eq!(parse_scaled("2.5", 0), Err(Refusal::TooPrecise));
        assert_eq!(parse_scaled("1e-999999999999", 3), Err(Refusal::TooPrecise));
        assert_eq!(parse_scaled("0.0000000000000000000000000000000000000001", 3), Err(Refusal::TooPrecise));
    }

    #[test]
    fn huge_values_are_refused_before_they_are_built() {
        assert_eq!(parse_scaled("1e27", 3), Err(Refusal::TooLarge));
        assert_eq!(parse_scaled("1e26", 3), Ok(10i128.pow(29)));
        assert_eq!(parse_scaled("1e999999999", 0), Err(Refusal::TooLarge));
        assert_eq!(parse_scaled("1e9999999999999", 0), Err(Refusal::TooLarge));
        assert_eq!(parse_scaled(&"9".repeat(400), 0), Err(Refusal::TooLarge));
        assert_eq!(parse_scaled(&format!("-{}", "9".repeat(31)), 0), Err(Refusal::TooLarge));
    }

    #[test]
    fn anything_but_the_json_number_grammar_is_refused() {
        for text in [
            "", "-", "+1", " 1", "1 ", "1,5", ".5", "5.", "1..2", "1.2.3", "--1", "1e", "1e+", "1e-", "e5", "1e5e3",
            "NaN", "nan", "inf", "-inf", "Infinity", "0x10", "1_000", "١", "½", "1.5-",
        ] {
            assert_eq!(parse_scaled(text, 3), Err(Refusal::Syntax), "{text:?}");
        }
    }

    #[test]
    fn json_numbers_print_their_exact_decimal() {
        assert_eq!(json_text(&json!(2)).as_deref(), Ok("2"));
        assert_eq!(json_text(&json!(-7)).as_deref(), Ok("-7"));
        assert_eq!(json_text(&json!(u64::MAX)).as_deref(), Ok("18446744073709551615"));
        assert_eq!(json_text(&json!(2.5)).as_deref(), Ok("2.5"));
        assert_eq!(json_text(&json!(0.1)).as_deref(), Ok("0.1"));
        assert_eq!(json_text(&json!(1e21)).as_deref(), Ok("1000000000000000000000"));
        assert_eq!(json_text(&json!(1.5e-7)).as_deref(), Ok("0.00000015"));
        assert_eq!(json_text(&json!(100.0)).as_deref(), Ok("100"));
        assert_eq!(json_text(&json!("0.125")).as_deref(), Ok("0.125"));
        assert_eq!(json_text(&json!(true)), Err("a boolean"));
        assert_eq!(json_text(&json!(null)), Err("null"));
    }

    #[test]
    fn json_text_read_from_source_keeps_its_digits() {
        let value: Value = serde_json::from_str("12.34").expect("json");
        assert_eq!(json_text(&value).as_deref(), Ok("12.34"));
        let value: Value = serde_json::from_str("1E3").expect("json");
        assert_eq!(json_text(&value).as_deref(), Ok("1000"));
    }
}
