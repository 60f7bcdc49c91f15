//! Events of the simple configuration aggregates (payment methods, warehouses, categories, points of
//! sale): each is created, then replaced as a whole. One macro writes the enum for each, so their
//! stored names follow one pattern.

use super::{DecodeError, EventPayload, parse, to_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// An aggregate whose events are "created with these fields" and "replaced by these fields".
pub trait RecordEvent: EventPayload + Clone + Send + Sync + 'static {
    type Fields: Clone + PartialEq + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static;
    fn created(fields: Self::Fields) -> Self;
    fn replaced(fields: Self::Fields) -> Self;
    fn fields(&self) -> &Self::Fields;
    fn is_creation(&self) -> bool;

    /// The `is_default` flag of these fields, for kinds that have one.
    fn default_flag(fields: &Self::Fields) -> Option<bool> {
        serde_json::to_value(fields).ok()?.get("is_default")?.as_bool()
    }

    /// The same fields with the `is_default` flag set to `flag` (unchanged for kinds without one).
    fn with_default_flag(fields: &Self::Fields, flag: bool) -> Self::Fields {
        let mut value = serde_json::to_value(fields).unwrap_or(Value::Null);
        if let Some(object) = value.as_object_mut().filter(|o| o.contains_key("is_default")) {
            object.insert("is_default".into(), Value::Bool(flag));
        }
        serde_json::from_value(value).unwrap_or_else(|_| fields.clone())
    }
}

macro_rules! record_events {
    ($(#[$doc:meta])* $name:ident, $stream:literal, $fields:ty, $created:ident, $replaced:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $created($fields),
            $replaced($fields),
        }

        impl EventPayload for $name {
            const STREAM_TYPE: &'static str = $stream;

            fn event_type(&self) -> &'static str {
                match self {
                    Self::$created(_) => stringify!($created),
                    Self::$replaced(_) => stringify!($replaced),
                }
            }

            fn to_data(&self) -> Value {
                match self {
                    Self::$created(fields) | Self::$replaced(fields) => to_value(fields),
                }
            }

            fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
                if schema_version != 1 {
                    return Err(DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version });
                }
                match event_type {
                    stringify!($created) => parse(event_type, data).map(Self::$created),
                    stringify!($replaced) => parse(event_type, data).map(Self::$replaced),
                    other => Err(DecodeError::UnknownType {
                        stream_type: Self::STREAM_TYPE.to_owned(),
                        event_type: other.to_owned(),
                    }),
                }
            }
        }

        impl RecordEvent for $name {
            type Fields = $fields;

            fn created(fields: $fields) -> Self {
                Self::$created(fields)
            }

            fn replaced(fields: $fields) -> Self {
                Self::$replaced(fields)
            }

            fn fields(&self) -> &$fields {
                match self {
                    Self::$created(fields) | Self::$replaced(fields) => fields,
                }
            }

            fn is_creation(&self) -> bool {
                matches!(self, Self::$created(_))
            }
        }
    };
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentMethodFields {
    pub name: String,
    pub icon: Option<String>,
    pub fee_percentage: Option<String>,
    pub fee_fixed: Option<serde_json::Number>,
    pub requires_reference: bool,
    pub is_active: bool,
    pub is_default: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarehouseFields {
    pub name: String,
    pub address: Option<String>,
    pub is_default: bool,
    pub is_active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CategoryFields {
    pub name: String,
    pub parent_id: Option<Uuid>,
}

/// A point of sale: the fiscal numbering series of an organization (number 1 to 99999).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointOfSaleFields {
    pub number: i32,
    pub name: String,
    pub is_active: bool,
}

/// A product custom field definition: values stored under `key` must satisfy `value_type` (`text`,
/// `integer`, `decimal`, `boolean`, `date` or `choice`), `choices` and `max_length`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetafieldDefinitionFields {
    pub key: String,
    /// A human label.
    pub name: String,
    pub value_type: String,
    #[serde(default)]
    pub choices: Vec<String>,
    pub max_length: Option<i64>,
}

record_events!(
    /// Product custom field definitions (stream type `metafield_definition`).
    MetafieldDefinitionEvent, "metafield_definition", MetafieldDefinitionFields, MetafieldDefinitionCreated,
    MetafieldDefinitionReplaced
);
record_events!(
    /// Payment methods (stream type `payment_method`).
    PaymentMethodEvent, "payment_method", PaymentMethodFields, PaymentMethodCreated, PaymentMethodReplaced
);
record_events!(
    /// Warehouses (stream type `warehouse`).
    WarehouseEvent, "warehouse", WarehouseFields, WarehouseCreated, WarehouseReplaced
);
record_events!(
    /// Product categories (stream type `category`).
    CategoryEvent, "category", CategoryFields, CategoryCreated, CategoryReplaced
);
record_events!(
    /// Points of sale (stream type `point_of_sale`).
    PointOfSaleEvent, "point_of_sale", PointOfSaleFields, PointOfSaleCreated, PointOfSaleReplaced
);

/// One explicit price of a price list: a variant and its unit price in cents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPrice {
    pub product_id: Uuid,
    pub unit_price: i64,
}

/// A price list. An automatic list (`is_automatic`, mode `base_price_adjustment`) prices every variant
/// from its base price moved by `adjustment_hundredths` (hundredths of a percent, 1050 = +10.5%);
/// `prices` are explicit prices, which take precedence. `tax_inclusive` lists prices with VAT added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceListFields {
    pub name: String,
    pub description: Option<String>,
    pub is_automatic: bool,
    pub automatic_pricing_mode: Option<String>,
    pub adjustment_hundredths: Option<i64>,
    pub tax_inclusive: bool,
    pub is_active: bool,
    #[serde(default)]
    pub prices: Vec<ListPrice>,
}

record_events!(
    /// Price lists (stream type `price_list`).
    PriceListEvent, "price_list", PriceListFields, PriceListCreated, PriceListReplaced
);

/// Percentages are kept as whole hundredths of a percent; this writes one back as plain decimal text
/// (`1050` → `"10.5"`, `-250` → `"-2.5"`, `4000` → `"40"`).
pub fn percentage_text(hundredths: i64) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let (whole, fraction) = (hundredths.abs() / 100, hundredths.abs() % 100);
    match fraction {
        0 => format!("{sign}{whole}"),
        f if f % 10 == 0 => format!("{sign}{whole}.{}", f / 10),
        f => format!("{sign}{whole}.{f:02}"),
    }
}

/// `amount` cents moved by `hundredths` of a percent, rounded half away from zero.
pub fn apply_percentage(amount: i64, hundredths: i64) -> i64 {
    let scaled = i128::from(amount) * i128::from(10_000 + hundredths);
    let rounded = if scaled >= 0 { (scaled + 5_000) / 10_000 } else { (scaled - 5_000) / 10_000 };
    i64::try_from(rounded).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod percentage_tests {
    use super::*;

    #[test]
    fn percentages_print_as_plain_decimals_and_round_half_up() {
        assert_eq!(percentage_text(1050), "10.5");
        assert_eq!(percentage_text(-250), "-2.5");
        assert_eq!(percentage_text(4000), "40");
        assert_eq!(percentage_text(1), "0.01");
        assert_eq!(apply_percentage(1000, 1050), 1105);
        assert_eq!(apply_percentage(999, 2100), 1209); // 1208.79
        assert_eq!(apply_percentage(5, 1000), 6); // 5.5 rounds up
        assert_eq!(apply_percentage(1000, -10_000), 0);
    }
}
