//! Documentation types for request bodies: each states, in the OpenAPI document, exactly the rule the
//! body's parser (`commands::validate` and the domain parsers) enforces, so that every value the
//! document accepts is accepted and every value it refuses is refused.
//!
//! Request bodies are parsed by hand from JSON (every offending field is reported at once), so these
//! types are never built: an input `Object` only uses them for its schema. The rules they state:
//!
//! - [`Text<N>`]: a required text, trimmed, then 1 to `N` characters (whitespace alone is empty);
//! - [`Blank<N>`]: an optional text, trimmed, then at most `N` characters; empty or whitespace alone
//!   means "not set" (used as `Optional<Blank<N>>`);
//! - [`Int<MIN, MAX>`]: a whole JSON number (no fraction, no exponent) from `MIN` to `MAX`;
//! - [`Cents`]: an amount in cents, 0 to 10^12;
//! - [`Pattern`] types for texts with a format of their own, and `Enum`s for closed sets of words.
//!
//! No text may hold U+0000 (Postgres cannot store it; the body reader refuses it): every text pattern
//! excludes it.

use poem_openapi::Enum;
use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use serde_json::Value;
use std::borrow::Cow;

/// The characters Rust's `str::trim` removes (`char::is_whitespace`), as a regex class body.
const WS: &str = r"\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// A trimmed text of `min..=max` characters (`min` 0 or 1; 0 means blank is allowed).
pub fn trimmed_text(min: usize, max: usize) -> String {
    let ws = format!("[{WS}]*");
    let edge = format!("[^{WS}\\x00]");
    let body = match max {
        0 => String::new(),
        1 => edge.clone(),
        _ => format!("{edge}(?:[^\\x00]{{0,{}}}{edge})?", max - 2),
    };
    if min == 0 || max == 0 { format!("^{ws}(?:{body})?{ws}$") } else { format!("^{ws}{body}{ws}$") }
}

/// A text holding at least one character the parser does not trim away (unanchored).
pub fn not_blank() -> String {
    format!("[^{WS}]")
}

/// `inner` (a regex without anchors) with optional surrounding whitespace, which the parser trims.
pub fn trimmed(inner: &str) -> String {
    format!("^[{WS}]*(?:{inner})[{WS}]*$")
}

/// `Type` for a type documented by an inline schema of its own.
macro_rules! inline_type {
    ($name:ident $(<$(const $param:ident: $ty:ty),+>)?, $schema:expr) => {
        impl$(<$(const $param: $ty),+>)? Type for $name$(<$($param),+>)? {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_ref() -> MetaSchemaRef {
                MetaSchemaRef::Inline(Box::new($schema))
            }

            fn as_raw_value(&self) -> Option<&Self> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
                Box::new(std::iter::once(self))
            }
        }
    };
}

/// A schema-only type: never parsed nor rendered (see the module documentation).
macro_rules! schema_only {
    ($name:ident $(<$(const $param:ident: $ty:ty),+>)?, $schema:expr) => {
        impl$(<$(const $param: $ty),+>)? std::fmt::Debug for $name$(<$($param),+>)? {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }

        $crate::http::schema::inline_type!($name $(<$(const $param: $ty),+>)?, $schema);

        // Never built: equal and hashed alike, so `unique_items` may document arrays of them.
        impl$(<$(const $param: $ty),+>)? PartialEq for $name$(<$($param),+>)? {
            fn eq(&self, _other: &Self) -> bool {
                true
            }
        }

        impl$(<$(const $param: $ty),+>)? Eq for $name$(<$($param),+>)? {}

        impl$(<$(const $param: $ty),+>)? std::hash::Hash for $name$(<$($param),+>)? {
            fn hash<H: std::hash::Hasher>(&self, _state: &mut H) {}
        }

        impl$(<$(const $param: $ty),+>)? ParseFromJSON for $name$(<$($param),+>)? {
            fn parse_from_json(_value: Option<Value>) -> ParseResult<Self> {
                Err(ParseError::custom("a documentation type is never parsed"))
            }
        }

        impl$(<$(const $param: $ty),+>)? ToJSON for $name$(<$($param),+>)? {
            fn to_json(&self) -> Option<Value> {
                None
            }
        }
    };
}

pub(crate) use {inline_type, schema_only};

fn text_schema(pattern: String) -> MetaSchema {
    MetaSchema { pattern: Some(pattern), ..MetaSchema::new("string") }
}

/// Required text: trimmed, then 1 to `N` characters.
pub struct Text<const N: usize>;
schema_only!(Text<const N: usize>, text_schema(trimmed_text(1, N)));

/// Optional text: trimmed, then at most `N` characters; blank means not set.
pub struct Blank<const N: usize>;
schema_only!(Blank<const N: usize>, text_schema(trimmed_text(0, N)));

/// A whole number from `MIN` to `MAX`.
pub struct Int<const MIN: i64, const MAX: i64>;
schema_only!(
    Int<const MIN: i64, const MAX: i64>,
    MetaSchema {
        format: Some("int64"),
        minimum: Some(MIN as f64),
        maximum: Some(MAX as f64),
        ..MetaSchema::new("integer")
    }
);

/// Integer cents, 0 to 10^12.
pub type Cents = Int<0, 1_000_000_000_000>;

/// A text matching one pattern (after trimming, where the pattern says so).
macro_rules! pattern_type {
    ($(#[$doc:meta])* $name:ident, $pattern:expr) => {
        $(#[$doc])*
        pub struct $name;
        schema_only!($name, text_schema($pattern));
    };
}

/// An e-mail address (at most 100 characters): one `@`, no spaces, a domain of two or more labels.
pub struct Email;
schema_only!(
    Email,
    MetaSchema {
        max_length: Some(100),
        pattern: Some(format!("^[{WS}]*(?:[^@\\x00{WS}]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+)?[{WS}]*$")),
        ..MetaSchema::new("string")
    }
);

pattern_type!(
    /// A tax id: 7 to 11 digits.
    TaxId,
    trimmed("(?:[0-9]{7,11})?")
);
pattern_type!(
    /// A province code: one letter of ISO 3166-2:AR (any case; not I nor O).
    ProvinceCode,
    trimmed("[A-HJ-NP-Za-hj-np-z]?")
);
pattern_type!(
    /// A colour, `#rrggbb`; blank means none.
    Color,
    trimmed("(?:#[0-9A-Fa-f]{6})?")
);
pattern_type!(
    /// A fee percentage written as text, 0 to 100 (`"3.5"`); blank means none.
    FeePercentage,
    format!(
        "^[{WS}]*(?=[^\\x00]{{0,10}}[{WS}]*$)(?:(?:[0-9]{{1,2}}|0[0-9]{{2}})(?:\\.[0-9]+)?|100(?:\\.0+)?)?[{WS}]*$"
    )
);
pattern_type!(
    /// A metafield key: 1 to 64 of `a-z 0-9 _ . -`.
    MetafieldKey,
    trimmed("[a-z0-9_.-]{1,64}")
);
/// An `https://` address of at most 2048 characters: a host name, a port if any (1 to 65535), then a
/// path, query or fragment.
pub struct HttpsUrl;
schema_only!(HttpsUrl, MetaSchema { max_length: Some(2048), pattern: Some(https_url()), ..MetaSchema::new("string") });

/// The pattern of [`HttpsUrl`].
fn https_url() -> String {
    const PORT: &str = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})";
    format!(
        "^[{WS}]*[Hh][Tt][Tt][Pp][Ss]://(?:[A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*(?::{PORT})?(?:[/?#][^\\x00]*)?[{WS}]*$"
    )
}

pattern_type!(
    /// The webhook API version, `2026-06-29`.
    WebhookApiVersion,
    trimmed(&events::catalogue::WEBHOOK_API_VERSIONS.iter().map(|v| regex_escape(v)).collect::<Vec<_>>().join("|"))
);

/// A metafield value: 1 to 1000 characters, not only whitespace.
pub struct MetafieldValue;
schema_only!(
    MetafieldValue,
    MetaSchema {
        max_length: Some(1000),
        pattern: Some(format!("^[^\\x00]*[^{WS}\\x00][^\\x00]*$")),
        ..MetaSchema::new("string")
    }
);

/// An event type endpoints may subscribe to (see `/api/v1/webhook-event-types`).
pub struct SubscribableEvent;
schema_only!(
    SubscribableEvent,
    MetaSchema {
        enum_items: events::catalogue::PUBLIC_EVENT_TYPES
            .iter()
            .filter(|t| t.subscribable)
            .map(|t| Value::from(t.name))
            .collect(),
        ..MetaSchema::new("string")
    }
);

fn regex_escape(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_string() } else { format!("\\{c}") }).collect()
}

/// A query parameter read as text by its handler (which reports every bad parameter at once, in its
/// own words), documented with the schema of what it accepts.
macro_rules! text_parameter {
    ($(#[$doc:meta])* $name:ident, $schema:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name(pub String);

        inline_type!($name, $schema);

        impl poem_openapi::types::ParseFromParameter for $name {
            fn parse_from_parameter(value: &str) -> ParseResult<Self> {
                Ok(Self(value.to_owned()))
            }
        }
    };
}

fn integer_range(min: i64, max: i64) -> MetaSchema {
    MetaSchema {
        format: Some("int64"),
        minimum: Some(min as f64),
        maximum: Some(max as f64),
        ..MetaSchema::new("integer")
    }
}

text_parameter!(
    /// `limit`: 1 to 100.
    Limit,
    integer_range(1, 100)
);
text_parameter!(
    /// `page` of a page list: 1 to 1000000.
    PageNumber,
    integer_range(1, 1_000_000)
);

/// A percentage with at most two decimals, as a JSON number or as decimal text: `MIN` to `MAX`.
pub struct Percent<const MIN: i64, const MAX: i64>;
schema_only!(
    Percent<const MIN: i64, const MAX: i64>,
    MetaSchema {
        one_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema {
                minimum: Some(MIN as f64),
                maximum: Some(MAX as f64),
                multiple_of: Some(0.01),
                ..MetaSchema::new("number")
            })),
            MetaSchemaRef::Inline(Box::new(text_schema(percent_text(MIN, MAX)))),
        ],
        ..MetaSchema::ANY
    }
);

/// Decimal text of `min..=max` with at most two decimals (leading zeros allowed, nine digits at most).
/// Only the ranges the parsers use are written out: up to 100 or up to 1000.
fn percent_text(min: i64, max: i64) -> String {
    let positive = match max {
        100 => "(?:0{0,8}[0-9]|0{0,7}[0-9]{2})(?:\\.[0-9]{1,2})?|0{0,6}100(?:\\.0{1,2})?",
        1000 => "(?:0{0,8}[0-9]|0{0,7}[0-9]{2}|0{0,6}[0-9]{3})(?:\\.[0-9]{1,2})?|0{0,5}1000(?:\\.0{1,2})?",
        other => unreachable!("no parser takes a percentage up to {other}"),
    };
    let negative = match min {
        0 => "-0{1,9}(?:\\.0{1,2})?".to_owned(),
        -99 => "-(?:0{0,8}[0-9]|0{0,7}[0-8][0-9]|0{0,7}9[0-8])(?:\\.[0-9]{1,2})?|-0{0,7}99(?:\\.0{1,2})?".to_owned(),
        other => unreachable!("no parser takes a percentage from {other}"),
    };
    trimmed(&format!("{positive}|{negative}"))
}

/// A quantity with at most three decimals, as a JSON number or as decimal text (`2`, `1.5`, `"0.125"`):
/// positive (0.001 and up) when `POSITIVE`, else zero and up; at most 10^12 units. Text is plain
/// decimal (no exponent, no sign).
pub struct QuantityIn<const POSITIVE: bool>;
schema_only!(
    QuantityIn<const POSITIVE: bool>,
    MetaSchema {
        one_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema {
                minimum: Some(if POSITIVE { 0.001 } else { 0.0 }),
                maximum: Some(1e12),
                multiple_of: Some(0.001),
                ..MetaSchema::new("number")
            })),
            MetaSchemaRef::Inline(Box::new(text_schema(quantity_text(POSITIVE)))),
        ],
        ..MetaSchema::ANY
    }
);

/// Plain decimal text of a quantity: at most twelve whole digits (leading zeros aside) and three
/// decimals; positive excludes every spelling of zero.
fn quantity_text(positive: bool) -> String {
    if positive {
        "^(?:0*[1-9][0-9]{0,11}(?:\\.[0-9]{1,3})?|0+\\.(?:[1-9][0-9]{0,2}|0[1-9][0-9]?|00[1-9]))$".to_owned()
    } else {
        "^0*[0-9]{1,12}(?:\\.[0-9]{1,3})?$".to_owned()
    }
}

/// A schema-only integer type whose values are the listed codes.
macro_rules! documented_enum {
    ($name:ident, [$($code:expr),+ $(,)?]) => {
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }

        impl poem_openapi::types::Type for $name {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
                poem_openapi::registry::MetaSchemaRef::Inline(Box::new(poem_openapi::registry::MetaSchema {
                    format: Some("int32"),
                    enum_items: vec![$(serde_json::Value::from($code)),+],
                    ..poem_openapi::registry::MetaSchema::new("integer")
                }))
            }

            fn as_raw_value(&self) -> Option<&Self> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
                Box::new(std::iter::once(self))
            }
        }

        impl poem_openapi::types::ParseFromJSON for $name {
            fn parse_from_json(_value: Option<serde_json::Value>) -> poem_openapi::types::ParseResult<Self> {
                Err(poem_openapi::types::ParseError::custom("a documentation type is never parsed"))
            }
        }

        impl poem_openapi::types::ToJSON for $name {
            fn to_json(&self) -> Option<serde_json::Value> {
                None
            }
        }
    };
}
pub(crate) use documented_enum;

/// A number of 0 or more (a decimal percentage or whole cents, as a sibling field says).
pub struct NonNegative;
schema_only!(NonNegative, MetaSchema { minimum: Some(0.0), ..MetaSchema::new("number") });

/// An exchange rate to pesos, six decimals at most, as a JSON number or decimal text: above 0, at most
/// 1,000,000.
pub struct ExchangeRateIn;
schema_only!(
    ExchangeRateIn,
    MetaSchema {
        one_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema {
                minimum: Some(0.000001),
                maximum: Some(1_000_000.0),
                multiple_of: Some(0.000001),
                ..MetaSchema::new("number")
            })),
            MetaSchemaRef::Inline(Box::new(text_schema(
                "^(?:0*[1-9][0-9]{0,5}(?:\\.[0-9]{1,6})?|0*1000000(?:\\.0{1,6})?|0+\\.[0-9]{0,5}[1-9])$".to_owned()
            ))),
        ],
        ..MetaSchema::ANY
    }
);

/// An exact quantity in a response: the shortest decimal text of its value (`"2.5"`, `"3"`, `"-0.125"`),
/// never a JSON number, so no reader loads it as a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct QuantityText(pub events::domain::Quantity);
inline_type!(
    QuantityText,
    MetaSchema {
        pattern: Some("^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]{0,2}[1-9])?$".to_owned()),
        ..MetaSchema::new("string")
    }
);

impl ParseFromJSON for QuantityText {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        let value = value.unwrap_or_default();
        events::domain::Quantity::parse(&value).map(Self).map_err(ParseError::custom)
    }
}

impl ToJSON for QuantityText {
    fn to_json(&self) -> Option<Value> {
        Some(Value::String(self.0.to_string()))
    }
}

impl From<events::domain::Quantity> for QuantityText {
    fn from(quantity: events::domain::Quantity) -> Self {
        Self(quantity)
    }
}

text_parameter!(
    /// A resource's id in a path (`Path<IdText>`): documented as a UUID, which every id the service
    /// issues is, and read as the text it is, so that text which is no UUID names no resource and answers
    /// 404 like an unknown id (the handlers parse it), never a 400 of its own.
    IdText,
    MetaSchema { format: Some("uuid"), ..MetaSchema::new("string") }
);

impl IdText {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for IdText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// `taxIdType`.
#[derive(Debug, Enum)]
pub enum TaxIdType {
    #[oai(rename = "CUIL/CUIT")]
    CuilCuit,
    #[oai(rename = "DNI")]
    Dni,
}

/// `taxCategory`.
#[derive(Debug, Enum)]
pub enum TaxCategory {
    #[oai(rename = "Responsable Inscripto")]
    ResponsableInscripto,
    #[oai(rename = "Consumidor Final")]
    ConsumidorFinal,
    #[oai(rename = "Monotributista")]
    Monotributista,
    #[oai(rename = "Exento")]
    Exento,
    #[oai(rename = "IVA no alcanzado")]
    IvaNoAlcanzado,
}

/// `personType`.
#[derive(Debug, Enum)]
pub enum PersonType {
    #[oai(rename = "FISICA")]
    Fisica,
    #[oai(rename = "JURIDICA")]
    Juridica,
}

/// The currencies a catalogue amount may be in.
#[derive(Debug, Enum)]
pub enum Currency {
    #[oai(rename = "PES")]
    Pes,
}

/// `productType`.
#[derive(Debug, Enum)]
#[oai(rename_all = "lowercase")]
pub enum ProductType {
    Product,
    Service,
    /// Moves as its `components`; holds no stock of its own.
    Combo,
}

/// The VAT rate codes of the tax authority a product may carry (see `/api/v1/tax-rates`).
pub struct VatCode;
schema_only!(
    VatCode,
    MetaSchema {
        format: Some("int32"),
        enum_items: events::domain::VatRate::all().map(|rate| Value::from(rate.code())).collect(),
        ..MetaSchema::new("integer")
    }
);

/// What a bulk adjustment changes.
#[derive(Debug, Enum)]
#[oai(rename_all = "lowercase")]
pub enum AdjustmentTarget {
    Cost,
    Price,
}

/// How an automatic price list prices.
#[derive(Debug, Enum)]
#[oai(rename_all = "snake_case")]
pub enum AutomaticPricingMode {
    BasePriceAdjustment,
}

/// A metafield definition's value type.
#[derive(Debug, Enum)]
#[oai(rename_all = "lowercase")]
pub enum MetafieldValueType {
    Text,
    Integer,
    Decimal,
    Boolean,
    Date,
    Choice,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        // The document's patterns are ECMA-262; these use only syntax the `regex` crate shares,
        // except lookahead, which the tests below avoid.
        regex::Regex::new(pattern).expect("a valid pattern").is_match(text)
    }

    #[test]
    fn an_https_url_may_name_its_port() {
        let pattern = https_url();
        for accepted in [
            "https://hooks.example.com/in",
            "https://hooks.example.com:8443/in",
            "HTTPS://a.io:1",
            "https://a.io:65535?x",
        ] {
            assert!(matches(&pattern, accepted), "{accepted}");
            let parsed = url::Url::parse(accepted.trim()).expect("the server parses what the pattern accepts");
            assert_eq!(parsed.scheme(), "https");
        }
        for refused in
            ["https://a.io:0/", "https://a.io:65536/", "https://a.io:08443/", "https://a.io:/", "http://a.io:80/"]
        {
            assert!(!matches(&pattern, refused), "{refused}");
        }
    }

    #[test]
    fn trimmed_text_counts_characters_after_trimming() {
        let required = trimmed_text(1, 3);
        assert!(matches(&required, "abc"));
        assert!(matches(&required, "  a c\t"));
        assert!(!matches(&required, "abcd"));
        assert!(!matches(&required, "   "));
        assert!(!matches(&required, "a\u{0}b"));
        let optional = trimmed_text(0, 3);
        assert!(matches(&optional, ""));
        assert!(matches(&optional, "   "));
        assert!(!matches(&optional, "abcd"));
    }
}

/// JSON fragments the input rules (`operations::InputRule`) are written with.
pub mod rules {
    use serde_json::{Value, json};

    /// A property that, when present, is `null`.
    pub fn null_only() -> Value {
        json!({ "nullable": true, "enum": [null] })
    }

    /// A property that, when present, is not `null` (any JSON type otherwise).
    pub fn not_null() -> Value {
        json!({ "anyOf": [{ "type": "string" }, { "type": "number" }, { "type": "boolean" }, { "type": "object" }, { "type": "array" }] })
    }

    /// None of `keys` may be present, not even as `null`.
    pub fn refused(keys: &[&str]) -> Value {
        json!({ "not": { "anyOf": keys.iter().map(|k| json!({ "required": [k] })).collect::<Vec<_>>() } })
    }
}
