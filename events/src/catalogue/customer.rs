//! Events of the contact aggregates: customers (stream type `customer`) and suppliers (stream type
//! `supplier`), which share one body and its rules.

use super::{DecodeError, EventPayload, parse, to_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The stored fields of a customer, already validated by the command side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomerFields {
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub tax_id: Option<String>,
    pub tax_id_type: Option<String>,
    pub tax_category: Option<String>,
    pub person_type: Option<String>,
    pub country: Option<String>,
    /// ISO 3166-2:AR province letter.
    pub province: Option<String>,
    pub city: Option<String>,
    pub address: Option<String>,
    pub apartment: Option<String>,
    pub postal_code: Option<String>,
    /// The ledger account this customer's movements default to.
    #[serde(default)]
    pub default_account_id: Option<uuid::Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerEvent {
    /// A customer was registered.
    CustomerCreated(CustomerFields),
    /// A customer's whole representation was replaced.
    CustomerReplaced(CustomerFields),
}

impl EventPayload for CustomerEvent {
    const STREAM_TYPE: &'static str = "customer";

    fn event_type(&self) -> &'static str {
        match self {
            Self::CustomerCreated(_) => "CustomerCreated",
            Self::CustomerReplaced(_) => "CustomerReplaced",
        }
    }

    fn to_data(&self) -> Value {
        match self {
            Self::CustomerCreated(fields) | Self::CustomerReplaced(fields) => to_value(fields),
        }
    }

    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
        if schema_version != 1 {
            return Err(DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version });
        }
        match event_type {
            "CustomerCreated" => parse(event_type, data).map(Self::CustomerCreated),
            "CustomerReplaced" => parse(event_type, data).map(Self::CustomerReplaced),
            other => Err(DecodeError::UnknownType {
                stream_type: Self::STREAM_TYPE.to_owned(),
                event_type: other.to_owned(),
            }),
        }
    }
}

impl super::RecordEvent for CustomerEvent {
    type Fields = CustomerFields;

    fn created(fields: CustomerFields) -> Self {
        Self::CustomerCreated(fields)
    }

    fn replaced(fields: CustomerFields) -> Self {
        Self::CustomerReplaced(fields)
    }

    fn fields(&self) -> &CustomerFields {
        match self {
            Self::CustomerCreated(fields) | Self::CustomerReplaced(fields) => fields,
        }
    }

    fn is_creation(&self) -> bool {
        matches!(self, Self::CustomerCreated(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupplierEvent {
    /// A supplier was registered.
    SupplierCreated(CustomerFields),
    /// A supplier's whole representation was replaced.
    SupplierReplaced(CustomerFields),
}

impl EventPayload for SupplierEvent {
    const STREAM_TYPE: &'static str = "supplier";

    fn event_type(&self) -> &'static str {
        match self {
            Self::SupplierCreated(_) => "SupplierCreated",
            Self::SupplierReplaced(_) => "SupplierReplaced",
        }
    }

    fn to_data(&self) -> Value {
        match self {
            Self::SupplierCreated(fields) | Self::SupplierReplaced(fields) => to_value(fields),
        }
    }

    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
        if schema_version != 1 {
            return Err(DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version });
        }
        match event_type {
            "SupplierCreated" => parse(event_type, data).map(Self::SupplierCreated),
            "SupplierReplaced" => parse(event_type, data).map(Self::SupplierReplaced),
            other => Err(DecodeError::UnknownType {
                stream_type: Self::STREAM_TYPE.to_owned(),
                event_type: other.to_owned(),
            }),
        }
    }
}

impl super::RecordEvent for SupplierEvent {
    type Fields = CustomerFields;

    fn created(fields: CustomerFields) -> Self {
        Self::SupplierCreated(fields)
    }

    fn replaced(fields: CustomerFields) -> Self {
        Self::SupplierReplaced(fields)
    }

    fn fields(&self) -> &CustomerFields {
        match self {
            Self::SupplierCreated(fields) | Self::SupplierReplaced(fields) => fields,
        }
    }

    fn is_creation(&self) -> bool {
        matches!(self, Self::SupplierCreated(_))
    }
}
