//! Events of the contact aggregates: customers (stream type `customer`) and suppliers (stream type
//! `supplier`), which share one body and its rules.

use super::records::record_events;
use serde::{Deserialize, Serialize};

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

record_events!(impl CustomerEvent, "customer", CustomerFields, CustomerCreated, CustomerReplaced);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupplierEvent {
    /// A supplier was registered.
    SupplierCreated(CustomerFields),
    /// A supplier's whole representation was replaced.
    SupplierReplaced(CustomerFields),
}

record_events!(impl SupplierEvent, "supplier", CustomerFields, SupplierCreated, SupplierReplaced);
