//! Metafield definitions: the custom fields an organization defines for its products, a configuration
//! record. Its field rules and the check of a value against a definition here; the handler in
//! `handler.rs`.

mod handler;

pub(crate) use handler::definitions;

use crate::records::Record;
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{MetafieldDefinitionEvent, MetafieldDefinitionFields};
use serde_json::Value;

pub type MetafieldDefinition = Record<MetafieldDefinitionEvent>;

pub const METAFIELD_VALUE_TYPES: &[&str] = &["text", "integer", "decimal", "boolean", "date", "choice"];

/// Parses a metafield definition body: `key`, `name`, `valueType`, `choices` (for `choice`),
/// `maxLength` (for `text`).
pub fn parse_metafield_definition(body: &Value) -> Result<MetafieldDefinitionFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let key = r.required_str("key", 1, 64);
    if !key.is_empty() && !valid_metafield_key(&key) {
        r.reject("key", "invalid_format", "use lowercase letters, digits, '_', '-' and '.'");
    }
    let name = r.optional_str("name", 100).unwrap_or_else(|| key.clone());
    let value_type = r.optional_enum("valueType", METAFIELD_VALUE_TYPES).unwrap_or_else(|| "text".to_owned());
    let mut choices = Vec::new();
    match r.value("choices").map(Value::as_array) {
        None => {}
        Some(Some(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str().map(str::trim) {
                    Some(text)
                        if !text.is_empty() && text.chars().count() <= 100 && !choices.iter().any(|c| c == text) =>
                    {
                        choices.push(text.to_owned())
                    }
                    _ => r.reject(
                        &format!("choices[{i}]"),
                        "invalid_value",
                        "must be a distinct text of 1 to 100 characters",
                    ),
                }
            }
        }
        Some(None) => r.reject("choices", "invalid_type", "must be an array of texts"),
    }
    if value_type == "choice" && r.value("choices").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        r.reject("choices", "required", "a choice field needs its choices");
    }
    if value_type != "choice" && !choices.is_empty() {
        r.reject("choices", "not_allowed", "only choice fields have choices");
    }
    let max_length = r.optional_count("maxLength", 1000).filter(|n| *n > 0);
    if max_length.is_some() && value_type != "text" {
        r.reject("maxLength", "not_allowed", "only text fields have a maximum length");
    }
    r.finish(MetafieldDefinitionFields { key, name, value_type, choices, max_length })
}

/// Why `value` does not satisfy `definition`, if it does not.
pub fn metafield_violation(definition: &MetafieldDefinitionFields, value: &str) -> Option<String> {
    match definition.value_type.as_str() {
        "integer" => value.parse::<i64>().is_err().then(|| "must be a whole number".to_owned()),
        "decimal" => {
            let ok = value.parse::<f64>().is_ok_and(f64::is_finite)
                && value.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-');
            (!ok).then(|| "must be a decimal number such as 12.5".to_owned())
        }
        "boolean" => (!matches!(value, "true" | "false")).then(|| "must be true or false".to_owned()),
        "date" => {
            events::catalogue::parse_date(value).is_none().then(|| "must be a date written YYYY-MM-DD".to_owned())
        }
        "choice" => (!definition.choices.iter().any(|c| c == value))
            .then(|| format!("must be one of: {}", definition.choices.join(", "))),
        _ => definition
            .max_length
            .filter(|max| value.chars().count() as i64 > *max)
            .map(|max| format!("must be at most {max} characters")),
    }
}

/// Custom field keys: lowercase letters, digits, `_`, `-` and `.`, 1 to 64 characters.
pub fn valid_metafield_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
}

