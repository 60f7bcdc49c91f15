//! Events of payments: money a customer paid (stream type `customer_payment`) or the business paid a
//! supplier (`supplier_payment`). A payment carries its lines (each a payment method, an amount and the
//! location it lands in or leaves from), its allocations to the contact's documents, and the balanced
//! journal entry it posted (the locations against the contact's receivable or payable account, and the
//! payment methods' fees). A void posts the entry that reverses it and gives its allocations back;
//! nothing is ever deleted.

use super::stock::iso_date;
use super::treasury::{AppliedRate, JournalEntry, LocationRef};
use crate::domain::Cents;
use serde::{Deserialize, Serialize};
use time::Date;
use uuid::Uuid;

named_enum! {
    /// Who paid whom: a customer the business, or the business a supplier.
    pub enum PaymentSide { Customer = "customer", Supplier = "supplier" }
}

impl PaymentSide {
    /// The kind of document a payment of this side settles (`sale` or `purchase`).
    pub fn document_kind(self) -> &'static str {
        match self {
            Self::Customer => "sale",
            Self::Supplier => "purchase",
        }
    }

    pub fn stream_type(self) -> &'static str {
        match self {
            Self::Customer => "customer_payment",
            Self::Supplier => "supplier_payment",
        }
    }
}

/// One line of a payment: a payment method, the amount in the location's currency, the location, and
/// the fee the method charged (pesos).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentLine {
    pub method_id: Uuid,
    pub amount: Cents,
    pub location: LocationRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// A dollar line's rate (none in pesos).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<AppliedRate>,
    /// The line's amount in pesos.
    pub pesos: Cents,
    /// The payment method's fee on this line, in pesos.
    pub fee: Cents,
}

/// A share of a payment settling one document (a sale for a customer, a purchase for a supplier).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    pub document_id: Uuid,
    /// Pesos.
    pub amount: Cents,
}

/// A payment as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRecorded {
    pub contact_id: Uuid,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub lines: Vec<PaymentLine>,
    /// The sum of the lines in pesos: what the contact's account moves by.
    pub total: Cents,
    pub allocations: Vec<Allocation>,
    /// The delegated user who recorded it (none for an API key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub entry: JournalEntry,
    /// The sale whose `paymentMethods` recorded it, in the sale's transaction: its allocation to that
    /// sale is already in the sale's `balance`, so it settles nothing more when recorded (a void still
    /// gives it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sale_id: Option<Uuid>,
}

/// The id of the customer payment a sale's `paymentMethods` record (derived from the sale's, so a retry
/// names it again and readers find it from the sale).
pub fn sale_payment_id(sale_id: Uuid) -> Uuid {
    Uuid::new_v5(&sale_id, b"payment")
}

/// A voided payment: the entry undoing it (its allocations are given back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentVoided {
    pub reversal: JournalEntry,
    /// The allocations given back.
    pub allocations: Vec<Allocation>,
}

/// What was on account allocated later to documents of the contact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentAllocated {
    pub allocations: Vec<Allocation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerPaymentEvent {
    CustomerPaymentRecorded(Box<PaymentRecorded>),
    CustomerPaymentVoided(Box<PaymentVoided>),
    CustomerPaymentAllocated(Box<PaymentAllocated>),
}

payloads!(
    CustomerPaymentEvent,
    "customer_payment",
    CustomerPaymentRecorded(Box),
    CustomerPaymentVoided(Box),
    CustomerPaymentAllocated(Box)
);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupplierPaymentEvent {
    SupplierPaymentRecorded(Box<PaymentRecorded>),
    SupplierPaymentVoided(Box<PaymentVoided>),
    SupplierPaymentAllocated(Box<PaymentAllocated>),
}

payloads!(
    SupplierPaymentEvent,
    "supplier_payment",
    SupplierPaymentRecorded(Box),
    SupplierPaymentVoided(Box),
    SupplierPaymentAllocated(Box)
);

/// What a payment event says, whichever side it is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentFact {
    Recorded(Box<PaymentRecorded>),
    Voided(Box<PaymentVoided>),
    Allocated(Box<PaymentAllocated>),
}

impl From<CustomerPaymentEvent> for PaymentFact {
    fn from(event: CustomerPaymentEvent) -> Self {
        match event {
            CustomerPaymentEvent::CustomerPaymentRecorded(p) => Self::Recorded(p),
            CustomerPaymentEvent::CustomerPaymentVoided(v) => Self::Voided(v),
            CustomerPaymentEvent::CustomerPaymentAllocated(a) => Self::Allocated(a),
        }
    }
}

impl From<SupplierPaymentEvent> for PaymentFact {
    fn from(event: SupplierPaymentEvent) -> Self {
        match event {
            SupplierPaymentEvent::SupplierPaymentRecorded(p) => Self::Recorded(p),
            SupplierPaymentEvent::SupplierPaymentVoided(v) => Self::Voided(v),
            SupplierPaymentEvent::SupplierPaymentAllocated(a) => Self::Allocated(a),
        }
    }
}

impl PaymentFact {
    /// The side's event of this fact.
    pub fn stored(self, side: PaymentSide) -> StoredPayment {
        use CustomerPaymentEvent as C;
        use SupplierPaymentEvent as S;
        match (side, self) {
            (PaymentSide::Customer, Self::Recorded(p)) => StoredPayment::Customer(C::CustomerPaymentRecorded(p)),
            (PaymentSide::Customer, Self::Voided(v)) => StoredPayment::Customer(C::CustomerPaymentVoided(v)),
            (PaymentSide::Customer, Self::Allocated(a)) => StoredPayment::Customer(C::CustomerPaymentAllocated(a)),
            (PaymentSide::Supplier, Self::Recorded(p)) => StoredPayment::Supplier(S::SupplierPaymentRecorded(p)),
            (PaymentSide::Supplier, Self::Voided(v)) => StoredPayment::Supplier(S::SupplierPaymentVoided(v)),
            (PaymentSide::Supplier, Self::Allocated(a)) => StoredPayment::Supplier(S::SupplierPaymentAllocated(a)),
        }
    }

    /// The documents this fact settles (`-1`) or gives back (`1`), with the sign of the change to what
    /// each owes.
    pub fn settlements(&self) -> (&[Allocation], i64) {
        match self {
            Self::Recorded(payment) if payment.sale_id.is_some() => (&[], -1),
            Self::Recorded(payment) => (&payment.allocations, -1),
            Self::Allocated(allocated) => (&allocated.allocations, -1),
            Self::Voided(void) => (&void.allocations, 1),
        }
    }
}

/// A payment event of either side, as appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredPayment {
    Customer(CustomerPaymentEvent),
    Supplier(SupplierPaymentEvent),
}

impl StoredPayment {
    pub fn to_new_event(&self) -> Result<crate::envelope::NewEvent, serde_json::Error> {
        use super::EventPayload;
        match self {
            Self::Customer(event) => event.to_new_event(),
            Self::Supplier(event) => event.to_new_event(),
        }
    }
}
