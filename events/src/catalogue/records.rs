//! Events of the simple configuration aggregates (payment methods, warehouses, categories, points of
//! sale): each is created, then replaced as a whole. One macro writes the enum for each, so their
//! stored names follow one pattern.

use super::EventPayload;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An aggregate whose events are "created with these fields" and "replaced by these fields".
pub trait RecordEvent: EventPayload + Clone + Send + Sync + 'static {
    type Fields: Clone
        + PartialEq
        + Serialize
        + serde::de::DeserializeOwned
        + OrganizationDefault
        + Send
        + Sync
        + 'static;
    fn created(fields: Self::Fields) -> Self;
    fn replaced(fields: Self::Fields) -> Self;
    fn fields(&self) -> &Self::Fields;
    fn is_creation(&self) -> bool;

}

macro_rules! record_events {
    (impl $name:ident, $stream:literal, $fields:ty, $created:ident, $replaced:ident) => {
        payloads!($name, $stream, $created(_), $replaced(_));

        impl $crate::catalogue::RecordEvent for $name {
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
    ($(#[$doc:meta])* $name:ident, $stream:literal, $fields:ty, $created:ident, $replaced:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $created($fields),
            $replaced($fields),
        }

        record_events!(impl $name, $stream, $fields, $created, $replaced);
    };
}
pub(crate) use record_events;

/// The organization's-default flag of a record kind (`is_default`: at most one payment method and one
/// warehouse is the default). Every kind's fields say whether they have one, through the table below:
/// no kind gets an answer by omission.
pub trait OrganizationDefault: Sized {
    /// The flag, for kinds that have one.
    fn default_flag(&self) -> Option<bool>;
    /// The same fields with the flag set to `flag` (unchanged for kinds without one).
    fn with_default_flag(self, flag: bool) -> Self;
}

macro_rules! organization_default {
    (flagged: $($flagged:ty),+; unflagged: $($plain:ty),+ $(,)?) => {
        $(impl OrganizationDefault for $flagged {
            fn default_flag(&self) -> Option<bool> {
                Some(self.is_default)
            }

            fn with_default_flag(self, flag: bool) -> Self {
                Self { is_default: flag, ..self }
            }
        })+
        $(impl OrganizationDefault for $plain {
            fn default_flag(&self) -> Option<bool> {
                None
            }

            fn with_default_flag(self, _flag: bool) -> Self {
                self
            }
        })+
    };
}

organization_default! {
    flagged: PaymentMethodFields, WarehouseFields;
    unflagged: super::CustomerFields, super::MetafieldDefinitionFields, super::PriceListFields, CategoryFields,
        PointOfSaleFields,
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
    /// `electronic` (the tax authority numbers and authorizes its vouchers; points of sale created
    /// before kinds existed read as such) or `manual` (the service numbers them).
    #[serde(default = "electronic")]
    pub kind: String,
}

fn electronic() -> String {
    "electronic".to_owned()
}

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
