//! Field-by-field validation of JSON request bodies. Every offending field is reported, each with its
//! logical path, so a client can fix a request in one round trip.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One offending field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Logical path of the field, as the client named it (for example `taxId` or `items[0].quantity`).
    pub field: String,
    /// Stable machine-readable reason.
    pub code: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Self { field: field.into(), code: code.to_owned(), message: message.into() }
    }
}

/// Walks one JSON object, collecting every field error instead of stopping at the first.
pub struct ObjectReader<'a> {
    object: Option<&'a Map<String, Value>>,
    prefix: String,
    pub errors: Vec<FieldError>,
}

impl<'a> ObjectReader<'a> {
    /// Starts reading `value`, which must be a JSON object; `prefix` is its path ("" at the root).
    pub fn new(value: &'a Value, prefix: &str) -> Self {
        let mut errors = Vec::new();
        let object = value.as_object();
        if object.is_none() {
            let field = if prefix.is_empty() { "body" } else { prefix };
            errors.push(FieldError::new(field, "invalid_type", "must be a JSON object"));
        }
        Self { object, prefix: prefix.to_owned(), errors }
    }

    pub fn path(&self, name: &str) -> String {
        if self.prefix.is_empty() { name.to_owned() } else { format!("{}.{name}", self.prefix) }
    }

    fn raw(&self, name: &str) -> Option<&'a Value> {
        self.object.and_then(|o| o.get(name)).filter(|v| !v.is_null())
    }

    fn fail(&mut self, name: &str, code: &str, message: impl Into<String>) {
        let field = self.path(name);
        self.errors.push(FieldError::new(field, code, message));
    }

    /// A string that must be present, trimmed, with a length (in characters) within `min..=max`.
    pub fn required_str(&mut self, name: &str, min: usize, max: usize) -> String {
        if self.object.is_none() {
            // The body itself is already reported.
            return String::new();
        }
        match self.raw(name) {
            None => {
                self.fail(name, "required", "is required");
                String::new()
            }
            Some(value) => self.check_str(name, value, min, max).unwrap_or_default(),
        }
    }

    /// An optional string: absent, null or blank reads as `None`; otherwise trimmed and at most `max`
    /// characters long.
    pub fn optional_str(&mut self, name: &str, max: usize) -> Option<String> {
        let value = self.raw(name)?;
        self.check_str(name, value, 0, max).filter(|s| !s.is_empty())
    }

    fn check_str(&mut self, name: &str, value: &Value, min: usize, max: usize) -> Option<String> {
        let Some(text) = value.as_str() else {
            self.fail(name, "invalid_type", "must be a string");
            return None;
        };
        let text = text.trim();
        let len = text.chars().count();
        if len < min {
            let message =
                if min == 1 { "must not be empty".to_owned() } else { format!("must be at least {min} characters") };
            self.fail(name, "too_short", message);
            return None;
        }
        if len > max {
            self.fail(name, "too_long", format!("must be at most {max} characters"));
            return None;
        }
        Some(text.to_owned())
    }

    /// An optional string that must be one of `allowed` (exact spelling).
    pub fn optional_enum(&mut self, name: &str, allowed: &[&str]) -> Option<String> {
        let value = self.raw(name)?;
        let Some(text) = value.as_str() else {
            self.fail(name, "invalid_type", "must be a string");
            return None;
        };
        if allowed.contains(&text) {
            Some(text.to_owned())
        } else {
            self.fail(name, "invalid_value", format!("must be one of: {}", allowed.join(", ")));
            None
        }
    }

    /// An optional name of a [`named_enum!`](events::named_enum) set, refused as
    /// [`ObjectReader::optional_enum`] refuses.
    pub fn optional_named<T: events::Named>(&mut self, name: &str) -> Option<T> {
        self.optional_enum(name, T::NAMES).and_then(|text| T::parse(&text))
    }

    /// An optional boolean (absent or null reads as `None`).
    pub fn optional_bool(&mut self, name: &str) -> Option<bool> {
        let value = self.raw(name)?;
        match value.as_bool() {
            Some(b) => Some(b),
            None => {
                self.fail(name, "invalid_type", "must be true or false");
                None
            }
        }
    }

    /// An optional JSON number.
    pub fn optional_number(&mut self, name: &str) -> Option<serde_json::Number> {
        let value = self.raw(name)?;
        match value {
            Value::Number(n) => Some(n.clone()),
            _ => {
                self.fail(name, "invalid_type", "must be a number");
                None
            }
        }
    }

    /// A whole number of cents from 0 to [`Cents::MAX`](events::domain::Cents::MAX), refused as
    /// [`ObjectReader::optional_count`] refuses.
    pub fn optional_cents_count(&mut self, name: &str) -> Option<events::domain::Cents> {
        self.optional_count(name, events::domain::Cents::MAX).and_then(|n| events::domain::Cents::new(n).ok())
    }

    /// A whole number of units from 0 to [`WholeUnits::MAX`](events::domain::WholeUnits::MAX), refused
    /// as [`ObjectReader::optional_count`] refuses.
    pub fn optional_whole_units(&mut self, name: &str) -> Option<events::domain::WholeUnits> {
        let units = self.optional_count(name, events::domain::WholeUnits::MAX)?;
        match events::domain::WholeUnits::new(units) {
            Ok(units) => Some(units),
            Err(error) => {
                self.fail(name, "out_of_range", error.to_string());
                None
            }
        }
    }

    /// An optional non-negative integer no greater than `max` (amounts in cents, quantities).
    pub fn optional_count(&mut self, name: &str, max: i64) -> Option<i64> {
        self.optional_int(name, 0, max)
    }

    /// An optional percentage with at most two decimals, as a JSON number or decimal text (`10.5`,
    /// `"-2.25"`), between `min` and `max` percent; returned in hundredths of a percent.
    pub fn optional_percentage(&mut self, name: &str, min: i64, max: i64) -> Option<i64> {
        let value = self.raw(name)?;
        let text = match value {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_owned(),
            _ => {
                self.fail(name, "invalid_type", "must be a number (or decimal text)");
                return None;
            }
        };
        match parse_hundredths(&text) {
            Some(h) if (min * 100..=max * 100).contains(&h) => Some(h),
            Some(_) => {
                self.fail(name, "out_of_range", format!("must be between {min} and {max}"));
                None
            }
            None => {
                self.fail(name, "invalid_format", "must be a decimal number with at most two decimals, like 10.5");
                None
            }
        }
    }

    /// [`Self::optional_percentage`] as the adjustment it moves an amount by (`min` and `max` within -100
    /// and 1000).
    pub fn optional_adjustment(&mut self, name: &str, min: i64, max: i64) -> Option<events::domain::Adjustment> {
        let hundredths = self.optional_percentage(name, min, max)?;
        match events::domain::Adjustment::from_hundredths(hundredths) {
            Ok(adjustment) => Some(adjustment),
            Err(error) => {
                self.fail(name, "out_of_range", error.to_string());
                None
            }
        }
    }

    /// The raw value of a field, for rules that read nested structures (absent or null: `None`).
    pub fn value(&self, name: &str) -> Option<&'a Value> {
        self.raw(name)
    }

    /// An optional id (a UUID written as a string).
    pub fn optional_uuid(&mut self, name: &str) -> Option<uuid::Uuid> {
        let value = self.raw(name)?;
        match value.as_str().map(uuid::Uuid::parse_str) {
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => {
                self.fail(name, "invalid_format", "must be an id (UUID)");
                None
            }
            None => {
                self.fail(name, "invalid_type", "must be a string holding an id");
                None
            }
        }
    }

    /// A required id (a UUID written as a string).
    pub fn required_uuid(&mut self, name: &str) -> Option<uuid::Uuid> {
        if self.object.is_some() && self.raw(name).is_none() {
            self.fail(name, "required", "is required");
            return None;
        }
        self.optional_uuid(name)
    }

    /// A required exact quantity (a number or a string holding a decimal, at most three decimal places);
    /// `positive` refuses zero and negative quantities.
    pub fn required_quantity(&mut self, name: &str, positive: bool) -> Option<events::domain::Quantity> {
        use events::domain::{DomainError, Quantity};
        let value = match self.raw(name) {
            Some(value) => value,
            None => {
                if self.object.is_some() {
                    self.fail(name, "required", "is required");
                }
                return None;
            }
        };
        // Text is a plain decimal (`2`, `2.5`, `0.125`): no exponent, no bare point, as documented.
        if let Some(text) = value.as_str()
            && !is_plain_decimal(text)
        {
            self.fail(name, "invalid_format", "must be a decimal number such as 2.5");
            return None;
        }
        let parsed = if positive { Quantity::parse_positive(value) } else { Quantity::parse(value) };
        match parsed {
            Ok(quantity) => Some(quantity),
            Err(error) => {
                let code = match error {
                    DomainError::WrongType { .. } => "invalid_type",
                    DomainError::TooManyDecimals { .. } => "too_many_decimals",
                    DomainError::NotPositive(_) => "not_positive",
                    DomainError::OutOfRange { .. } => "out_of_range",
                    _ => "invalid_format",
                };
                self.fail(name, code, error.to_string());
                None
            }
        }
    }

    /// A required array of `min..=max` items (an error otherwise: an empty slice comes back).
    pub fn required_array(&mut self, name: &str, min: usize, max: usize) -> &'a [Value] {
        match self.raw(name) {
            Some(Value::Array(items)) if (min..=max).contains(&items.len()) => items.as_slice(),
            Some(Value::Array(_)) => {
                self.fail(name, "invalid_count", format!("must list {min} to {max} items"));
                &[]
            }
            Some(_) => {
                self.fail(name, "invalid_type", "must be an array");
                &[]
            }
            None => {
                if self.object.is_some() {
                    self.fail(name, "required", "is required");
                }
                &[]
            }
        }
    }

    /// An optional date written `YYYY-MM-DD`.
    pub fn optional_date(&mut self, name: &str) -> Option<time::Date> {
        let value = self.raw(name)?;
        let parsed = value.as_str().and_then(events::catalogue::parse_date);
        if parsed.is_none() {
            self.fail(name, "invalid_format", "must be a date written YYYY-MM-DD");
        }
        parsed
    }

    /// A required date written `YYYY-MM-DD`.
    pub fn required_date(&mut self, name: &str) -> Option<time::Date> {
        if self.object.is_some() && self.raw(name).is_none() {
            self.fail(name, "required", "is required");
            return None;
        }
        self.optional_date(name)
    }

    /// A required amount in cents, 0 to [`events::domain::Cents::MAX`].
    pub fn required_cents(&mut self, name: &str) -> Option<events::domain::Cents> {
        let Some(value) = self.raw(name) else {
            if self.object.is_some() {
                self.fail(name, "required", "is required");
            }
            return None;
        };
        match events::domain::Cents::parse_non_negative(value) {
            Ok(cents) => Some(cents),
            Err(error) => {
                let code = match error {
                    events::domain::DomainError::WrongType { .. } => "invalid_type",
                    events::domain::DomainError::OutOfRange { .. } => "out_of_range",
                    _ => "invalid_format",
                };
                self.fail(name, code, error.to_string());
                None
            }
        }
    }

    /// An optional whole number, of any size an `i64` holds; anything else is `invalid_type`.
    fn optional_whole(&mut self, name: &str) -> Option<i64> {
        let value = self.raw(name)?;
        let whole = value.as_i64();
        if whole.is_none() {
            let message = if value.is_number() { "must be a whole number" } else { "must be a number" };
            self.fail(name, "invalid_type", message);
        }
        whole
    }

    /// An optional whole number within `min..=max`.
    pub fn optional_int(&mut self, name: &str, min: i64, max: i64) -> Option<i64> {
        let n = self.optional_whole(name)?;
        if !(min..=max).contains(&n) {
            self.fail(name, "out_of_range", format!("must be between {min} and {max}"));
            return None;
        }
        Some(n)
    }

    /// An optional VAT rate, given by its code: a whole number the tax authority's table holds.
    pub fn optional_vat_rate(&mut self, name: &str) -> Option<events::domain::VatRate> {
        let code = self.optional_whole(name)?;
        match events::domain::VatRate::from_code(code) {
            Ok(rate) => Some(rate),
            Err(error) => {
                self.fail(name, "invalid_value", format!("{error} (see /api/v1/tax-rates)"));
                None
            }
        }
    }

    /// A required whole number within `min..=max`.
    pub fn required_int(&mut self, name: &str, min: i64, max: i64) -> Option<i64> {
        if self.object.is_some() && self.raw(name).is_none() {
            self.fail(name, "required", "is required");
            return None;
        }
        self.optional_int(name, min, max)
    }

    /// Whether the field is present at all (even as null).
    pub fn has(&self, name: &str) -> bool {
        self.object.is_some_and(|o| o.contains_key(name))
    }

    /// Records an error found by a rule that looks at more than the field's own shape.
    pub fn reject(&mut self, name: &str, code: &str, message: impl Into<String>) {
        self.fail(name, code, message);
    }

    /// Names every key of `value` (this reader's object or a nested one) that `known` does not list.
    pub fn refuse_unknown(&mut self, value: &Value, known: &[&str], what: &str) {
        if let Some(object) = value.as_object() {
            for key in object.keys().filter(|k| !known.contains(&k.as_str())) {
                self.reject(key, "unknown_field", format!("is not a field of {what}"));
            }
        }
    }

    /// A required amount of cents of at least 1.
    pub fn required_positive_cents(&mut self, name: &str) -> Option<events::domain::Cents> {
        let cents = self.required_cents(name);
        if cents == Some(events::domain::Cents::ZERO) {
            self.reject(name, "out_of_range", "must be at least 1");
            return None;
        }
        cents
    }

    pub fn finish<T>(self, value: T) -> Result<T, Vec<FieldError>> {
        if self.errors.is_empty() { Ok(value) } else { Err(self.errors) }
    }
}

/// `body` with every snake_case key (`supplier_id`) renamed to its camelCase spelling (`supplierId`), at
/// every depth, for bodies whose prose names are snake_case and wire names camelCase: both spellings are
/// accepted, and sending both for one field is an error naming it.
pub fn camel_case_keys(body: &Value, prefix: &str) -> (Value, Vec<FieldError>) {
    let mut errors = Vec::new();
    let value = camel_case_value(body, prefix, &mut errors);
    (value, errors)
}

fn camel_case_value(value: &Value, path: &str, errors: &mut Vec<FieldError>) -> Value {
    let at = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match value {
        Value::Object(object) => {
            let mut out = Map::new();
            for (key, item) in object {
                let camel = camel_case(key);
                if camel != *key && object.contains_key(&camel) {
                    errors.push(FieldError::new(
                        at(&camel),
                        "duplicate",
                        format!("send either {camel} or {key}, not both"),
                    ));
                    continue;
                }
                let child = camel_case_value(item, &at(&camel), errors);
                out.insert(camel, child);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items.iter().enumerate().map(|(i, item)| camel_case_value(item, &format!("{path}[{i}]"), errors)).collect(),
        ),
        other => other.clone(),
    }
}

/// `supplier_invoice_number` as `supplierInvoiceNumber`; keys without an underscore are unchanged.
pub fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `-?digits(.digits)?`: the decimal text quantities are sent as.
fn is_plain_decimal(text: &str) -> bool {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && digits(fraction)
}

/// `12`, `12.5`, `-0.25` as hundredths (1200, 1250, -25); anything else (exponents, three decimals,
/// a bare point) is `None`.
fn parse_hundredths(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || whole.len() > 9 || !all_digits(whole) || !all_digits(fraction) || fraction.len() > 2 {
        return None;
    }
    if digits.contains('.') && fraction.is_empty() {
        return None;
    }
    let scaled = whole.parse::<i64>().ok()? * 100 + format!("{fraction:0<2}").parse::<i64>().ok()?;
    Some(if negative { -scaled } else { scaled })
}

/// Whether an 11-digit CUIT/CUIL has a valid prefix and check digit.
pub fn is_valid_cuit(digits: &str) -> bool {
    const WEIGHTS: [u32; 10] = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2];
    const PREFIXES: [&str; 7] = ["20", "23", "24", "27", "30", "33", "34"];
    if digits.len() != 11 || !digits.bytes().all(|b| b.is_ascii_digit()) || !PREFIXES.contains(&&digits[..2]) {
        return false;
    }
    let d: Vec<u32> = digits.bytes().map(|b| u32::from(b - b'0')).collect();
    let sum: u32 = WEIGHTS.iter().zip(&d).map(|(w, x)| w * x).sum();
    let check = match 11 - sum % 11 {
        11 => 0,
        10 => return false,
        n => n,
    };
    check == d[10]
}

/// What an edit does to an optional field: keeps it (omitted), clears it (`0`, `""` or null) or sets
/// it. (An `Option<Option<T>>` would not survive the wire: serde reads `Some(None)` back as `None`.)
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldEdit<T> {
    Keep,
    Clear,
    Set(T),
}

impl<T: Clone> FieldEdit<T> {
    pub fn of(sent: Option<Option<T>>) -> Self {
        match sent {
            None => Self::Keep,
            Some(None) => Self::Clear,
            Some(Some(value)) => Self::Set(value),
        }
    }

    /// The field's value after the edit.
    pub fn apply(&self, current: &Option<T>) -> Option<T> {
        match self {
            Self::Keep => current.clone(),
            Self::Clear => None,
            Self::Set(value) => Some(value.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentages_are_read_in_hundredths() {
        use super::parse_hundredths;
        assert_eq!(parse_hundredths("12"), Some(1200));
        assert_eq!(parse_hundredths("12.5"), Some(1250));
        assert_eq!(parse_hundredths("-0.25"), Some(-25));
        for bad in ["1e2", "1.234", "5.", ".5", "", "-", "abc", "1.2.3"] {
            assert_eq!(parse_hundredths(bad), None, "{bad}");
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn collects_every_error_with_its_path() {
        let body = json!({"name": "", "email": 5, "kind": "x"});
        let mut r = ObjectReader::new(&body, "");
        r.required_str("name", 1, 10);
        r.optional_str("email", 10);
        r.optional_enum("kind", &["a", "b"]);
        r.required_str("missing", 1, 10);
        let errors = r.finish(()).expect_err("invalid");
        let fields: Vec<_> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
        assert_eq!(
            fields,
            vec![("name", "too_short"), ("email", "invalid_type"), ("kind", "invalid_value"), ("missing", "required")]
        );
    }

    #[test]
    fn a_non_object_body_is_one_error() {
        let body = json!([1, 2]);
        let r = ObjectReader::new(&body, "");
        assert_eq!(r.finish(()).expect_err("invalid")[0].field, "body");
    }

    #[test]
    fn lengths_count_characters_not_bytes() {
        let body = json!({"name": "ñandú"});
        let mut r = ObjectReader::new(&body, "");
        assert_eq!(r.required_str("name", 1, 5), "ñandú");
        assert!(r.errors.is_empty());
    }
}
