//! The event catalogue: one versioned enum per aggregate. A stream or event name, once written, is
//! stored forever and is never renamed; older payload versions are upcast here, on read.

mod customer;
mod metafield;
mod organization;
mod price_list;
mod product;
mod purchase;
mod quote;
mod records;
mod sale;
mod stock;
mod tag;
mod vat;
mod webhook;

pub use customer::{CustomerEvent, CustomerFields, SupplierEvent};
pub use metafield::{MetafieldDefinitionEvent, MetafieldDefinitionFields};
pub use organization::{
    ApiKeyIssued, CredentialRevoked, DEFAULT_RATE_LIMIT_PER_HOUR, DEFAULT_RATE_LIMIT_PER_MINUTE, DelegatedTokenIssued,
    OrganizationCreated, OrganizationEvent, OrganizationSettings, RateLimitsChanged,
};
pub use price_list::{ListPrice, PriceListEvent, PriceListFields, apply_percentage, percentage_text};
pub use product::{
    ComboComponent, Metafield, OpeningStock, OptionValue, PUBLIC_PRODUCT_FIELDS, ProductCreated, ProductEvent,
    ProductGroup, ProductUpdated, SharedFields, Variant, VariantChange, changed_fields, public_product,
};
pub use purchase::{
    CostUpdate, OrderStatus, PurchaseAmounts, PurchaseEvent, PurchaseLine, PurchaseOrderClosed, PurchaseOrderCreated,
    PurchaseOrderEvent, PurchaseOrderReceived, PurchaseOrderState, PurchaseRecorded, Receipt,
};
pub use quote::{
    QuoteDiscount, QuoteEvent, QuoteExpired, QuoteLine, QuoteReservation, QuoteState, QuoteStatus, fold_quote,
};
pub use records::{
    CategoryEvent, CategoryFields, PaymentMethodEvent, PaymentMethodFields, PointOfSaleEvent, PointOfSaleFields,
    RecordEvent, WarehouseEvent, WarehouseFields,
};
pub use sale::{
    FiscalStatus, SaleAuthorization, SaleCustomer, SaleEvent, SaleFiscal, SaleLine, SalePayment, SaleRecorded, SaleVat,
    fold_sale, public_sale,
};
pub use stock::{
    AR_OFFSET, MovesStock, Reservation, ReservationOwner, ReservedLine, STOCK_CAUSES, STOCK_STREAM_TYPES, StockChange,
    StockEffect, StockLine, StockMovementEvent, StockMovementRecorded, StockReservationEvent, StockTransferEvent,
    StockTransferred, ar_date, cause, iso_date, iso_date_option, stock_effect,
};
pub use tag::{TagEvent, TagFields, TagTargets};
pub use vat::{VAT_RATES, vat_hundredths, vat_percentage};
pub use webhook::{
    PUBLIC_EVENT_TYPES, PublicEventType, SealedSecret, WEBHOOK_API_VERSIONS, WebhookEndpointCreated,
    WebhookEndpointDisabled, WebhookEndpointEvent, WebhookEndpointFields, WebhookEndpointSecretRotated,
    WebhookEndpointTestRequested, public_event_type,
};

use crate::envelope::NewEvent;
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown event type {stream_type}/{event_type}")]
    UnknownType { stream_type: String, event_type: String },
    #[error("unsupported schema version {schema_version} of {event_type}")]
    UnknownVersion { event_type: String, schema_version: i32 },
    #[error("malformed {event_type} payload: {source}")]
    Malformed {
        event_type: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A payload enum of one aggregate.
pub trait EventPayload: Sized {
    /// The stream type of the aggregate (stored in `events.stream_type` and used in bus subjects).
    const STREAM_TYPE: &'static str;

    fn event_type(&self) -> &'static str;

    /// The current schema version of this event type, written on append.
    fn schema_version(&self) -> i32 {
        1
    }

    fn to_data(&self) -> Value;

    /// Decodes a stored payload of any known version into the current shape.
    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError>;

    fn to_new_event(&self) -> NewEvent {
        NewEvent {
            event_id: Uuid::now_v7(),
            event_type: self.event_type(),
            schema_version: self.schema_version(),
            data: self.to_data(),
        }
    }
}

/// Deserializes a payload whose version is known to be current.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(event_type: &str, data: Value) -> Result<T, DecodeError> {
    serde_json::from_value(data).map_err(|source| DecodeError::Malformed { event_type: event_type.to_owned(), source })
}

pub(crate) fn to_value<T: serde::Serialize>(payload: &T) -> Value {
    // Serializing plain data structs into a Value cannot fail (no maps with non-string keys).
    serde_json::to_value(payload).unwrap_or(Value::Null)
}
