//! Why a value was refused, worded to follow a field name ("quantity must be …").

/// A value that cannot become one of the domain types. Messages start with "must" so a caller can
/// prefix the field's path and hand the result to a client as a field error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// The JSON value has the wrong shape, such as a string where cents are expected.
    #[error("must be {expected}, not {found}")]
    WrongType { expected: &'static str, found: &'static str },
    /// Money arrived with a fraction of a cent.
    #[error("must be a whole number of cents, not {0}")]
    FractionalCents(String),
    /// Text that is not a plain decimal number (`NaN`, `1,5`, `abc`, `Infinity`).
    #[error("must be a decimal number such as 2.5, not {0:?}")]
    NotADecimal(String),
    /// More decimal places than the type keeps exactly, after any exponent is applied.
    #[error("must have at most {max} decimal places, not {value}")]
    TooManyDecimals { max: u32, value: String },
    /// Outside the type's bounds; the bounds are written as the client would write them.
    #[error("must be between {min} and {max}, not {value}")]
    OutOfRange { min: String, max: String, value: String },
    /// Zero or negative where the caller needs a positive value.
    #[error("must be greater than zero, not {0}")]
    NotPositive(String),
    /// A scope string that names no scope the service knows.
    #[error("must be a known scope, not {0:?}")]
    UnknownScope(String),
    /// A VAT rate code the tax authority's table does not hold.
    #[error("must be a VAT rate code ({codes}), not {0}", codes = super::VatRate::codes_text())]
    UnknownVatCode(i64),
}

/// The client's own text, cut short so that a huge input does not come back in full in the answer.
pub(super) fn shown(text: &str) -> String {
    const LIMIT: usize = 40;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// How a JSON value of the wrong shape is named in a message.
pub(super) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_as_the_rest_of_a_field_sentence() {
        let error = DomainError::OutOfRange { min: "0".into(), max: "100".into(), value: "150".into() };
        assert_eq!(error.to_string(), "must be between 0 and 100, not 150");
        let error = DomainError::WrongType { expected: "an integer number of cents", found: "a string" };
        assert_eq!(error.to_string(), "must be an integer number of cents, not a string");
        assert_eq!(
            DomainError::NotADecimal("NaN".into()).to_string(),
            r#"must be a decimal number such as 2.5, not "NaN""#
        );
        assert_eq!(
            DomainError::UnknownScope("foo:read".into()).to_string(),
            r#"must be a known scope, not "foo:read""#
        );
    }

    #[test]
    fn long_input_is_cut_on_a_character_boundary() {
        assert_eq!(shown("1.5"), "1.5");
        let long = "9".repeat(100);
        assert_eq!(shown(&long), format!("{}…", "9".repeat(40)));
        let accented = "é".repeat(50);
        assert_eq!(shown(&accented), format!("{}…", "é".repeat(40)));
        assert_eq!(shown(&"x".repeat(40)), "x".repeat(40));
    }

    #[test]
    fn json_kinds_are_named_with_their_article() {
        assert_eq!(json_kind(&json!(null)), "null");
        assert_eq!(json_kind(&json!(true)), "a boolean");
        assert_eq!(json_kind(&json!("1")), "a string");
        assert_eq!(json_kind(&json!([1])), "an array");
        assert_eq!(json_kind(&json!({"a": 1})), "an object");
        assert_eq!(json_kind(&json!(1)), "a number");
    }
}
