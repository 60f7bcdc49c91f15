//! The event catalogue: one versioned enum per aggregate. A stream or event name, once written, is
//! stored forever and is never renamed; older payload versions are upcast here, on read.

mod customer;
mod organization;
mod product;
mod records;
mod tag;
mod vat;
mod webhook;

pub use customer::{CustomerEvent, CustomerFields, SupplierEvent};
pub use organization::{
    ApiKeyIssued, CredentialRevoked, DEFAULT_RATE_LIMIT_PER_HOUR, DEFAULT_RATE_LIMIT_PER_MINUTE, DelegatedTokenIssued,
    OrganizationCreated, OrganizationEvent, RateLimitsChanged,
};
pub use product::{
    Metafield, OpeningStock, OptionValue, PUBLIC_PRODUCT_FIELDS, ProductCreated, ProductEvent, ProductGroup,
    ProductUpdated, SharedFields, Variant, VariantChange, changed_fields, public_product,
};
pub use records::{
    CategoryEvent, CategoryFields, ListPrice, MetafieldDefinitionEvent, MetafieldDefinitionFields, PaymentMethodEvent,
    PaymentMethodFields, PointOfSaleEvent, PointOfSaleFields, PriceListEvent, PriceListFields, RecordEvent,
    WarehouseEvent, WarehouseFields, apply_percentage, percentage_text,
};
pub use tag::{TagEvent, TagFields, TagTargets};
pub use vat::{VAT_RATES, vat_hundredths, vat_percentage};
pub use webhook::{
    PUBLIC_EVENT_TYPES, PublicEventType, SealedSecret, WEBHOOK_API_VERSIONS, WebhookEndpointCreated,
    WebhookEndpointDisabled, WebhookEndpointEvent, WebhookEndpointFields, WebhookEndpointSecretRotated,
    WebhookEndpointTestRequested, public_event_type,
};

use crate::envelope::{NewEvent, RecordedEvent};
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

/// The catalogue's registry: one line per aggregate, its [`DomainEvent`] variant and payload enum. It
/// writes [`DomainEvent`], its decoding by stream type, [`DomainEvent::stream_type`] and
/// [`STREAM_TYPES`], so an aggregate registered here is known to all four and one left out to none.
macro_rules! registry {
    ($($variant:ident($payload:ident),)+) => {
        /// Every event the system knows, for subscribers that fold more than one aggregate.
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant, reason = "decoded events are short-lived values, boxing buys nothing")]
        pub enum DomainEvent {
            $($variant($payload),)+
        }

        /// Every stream type of the catalogue, once each, in registry order.
        pub const STREAM_TYPES: &[&str] = &[$($payload::STREAM_TYPE,)+];

        impl DomainEvent {
            /// Decodes a stored event with the payload enum of its stream type.
            pub fn decode(event: &RecordedEvent) -> Result<Self, DecodeError> {
                let data = event.data.clone();
                match event.stream_type.as_str() {
                    $($payload::STREAM_TYPE => {
                        $payload::decode(&event.event_type, event.schema_version, data).map(Self::$variant)
                    })+
                    // Stream types are open text in the store, so this arm refuses what no line names.
                    other => Err(DecodeError::UnknownType {
                        stream_type: other.to_owned(),
                        event_type: event.event_type.clone(),
                    }),
                }
            }

            /// The stream type of the aggregate the event belongs to.
            pub fn stream_type(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $payload::STREAM_TYPE,)+
                }
            }
        }
    };
}

registry! {
    Organization(OrganizationEvent),
    Customer(CustomerEvent),
    Supplier(SupplierEvent),
    Product(ProductEvent),
    MetafieldDefinition(MetafieldDefinitionEvent),
    Tag(TagEvent),
    PaymentMethod(PaymentMethodEvent),
    Warehouse(WarehouseEvent),
    Category(CategoryEvent),
    PointOfSale(PointOfSaleEvent),
    PriceList(PriceListEvent),
    WebhookEndpoint(WebhookEndpointEvent),
}

/// Deserializes a payload whose version is known to be current.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(event_type: &str, data: Value) -> Result<T, DecodeError> {
    serde_json::from_value(data).map_err(|source| DecodeError::Malformed { event_type: event_type.to_owned(), source })
}

pub(crate) fn to_value<T: serde::Serialize>(payload: &T) -> Value {
    // Serializing plain data structs into a Value cannot fail (no maps with non-string keys).
    serde_json::to_value(payload).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use time::OffsetDateTime;

    /// A created event of one aggregate: the stored form its payload enum writes, and the
    /// [`DomainEvent`] that form must decode to.
    struct Sample {
        stored: RecordedEvent,
        expected: DomainEvent,
    }

    fn sample<E: EventPayload>(payload: E, variant: fn(E) -> DomainEvent) -> Sample {
        let new = payload.to_new_event();
        let stored = RecordedEvent {
            position: 1,
            transaction_id: 1,
            org_id: Uuid::now_v7(),
            stream_type: E::STREAM_TYPE.to_owned(),
            stream_id: Uuid::now_v7(),
            version: 1,
            event_id: new.event_id,
            event_type: new.event_type.to_owned(),
            schema_version: new.schema_version,
            data: new.data,
            metadata: Value::Null,
            recorded_at: OffsetDateTime::UNIX_EPOCH,
        };
        Sample { stored, expected: variant(payload) }
    }

    /// One created event of every aggregate, built with its payload enum's own constructors.
    fn samples() -> Vec<Sample> {
        let contact = CustomerFields { name: "Ana".into(), ..CustomerFields::default() };
        let product = ProductGroup {
            shared: SharedFields {
                name: "Remera".into(),
                currency: "PES".into(),
                tax_rate_id: 5,
                product_type: "product".into(),
                ..SharedFields::default()
            },
            ..ProductGroup::default()
        };
        let endpoint = WebhookEndpointFields {
            label: "Tienda".into(),
            url: "https://example.com/hooks".into(),
            enabled_events: vec!["product.created".into()],
            api_version: "2026-06-29".into(),
        };
        vec![
            sample(
                OrganizationEvent::OrganizationCreated(OrganizationCreated {
                    name: "Almacén".into(),
                    slug: "almacen".into(),
                    country: "Argentina".into(),
                    rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE,
                    rate_limit_per_hour: DEFAULT_RATE_LIMIT_PER_HOUR,
                }),
                DomainEvent::Organization,
            ),
            sample(CustomerEvent::CustomerCreated(contact.clone()), DomainEvent::Customer),
            sample(SupplierEvent::SupplierCreated(contact), DomainEvent::Supplier),
            sample(
                ProductEvent::ProductCreated(ProductCreated { group: product, opening_stock: vec![] }),
                DomainEvent::Product,
            ),
            sample(
                MetafieldDefinitionEvent::created(MetafieldDefinitionFields {
                    key: "nota".into(),
                    name: "Nota".into(),
                    value_type: "text".into(),
                    choices: vec![],
                    max_length: Some(40),
                }),
                DomainEvent::MetafieldDefinition,
            ),
            sample(TagEvent::TagCreated(TagFields { name: "Mayorista".into(), color: None }), DomainEvent::Tag),
            sample(
                PaymentMethodEvent::created(PaymentMethodFields {
                    name: "Efectivo".into(),
                    icon: None,
                    fee_percentage: Some("3.5".into()),
                    fee_fixed: Some(150.into()),
                    requires_reference: false,
                    is_active: true,
                    is_default: true,
                }),
                DomainEvent::PaymentMethod,
            ),
            sample(
                WarehouseEvent::created(WarehouseFields {
                    name: "Depósito principal".into(),
                    address: None,
                    is_default: true,
                    is_active: true,
                }),
                DomainEvent::Warehouse,
            ),
            sample(
                CategoryEvent::created(CategoryFields { name: "Bebidas".into(), parent_id: Some(Uuid::now_v7()) }),
                DomainEvent::Category,
            ),
            sample(
                PointOfSaleEvent::created(PointOfSaleFields { number: 1, name: "Mostrador".into(), is_active: true }),
                DomainEvent::PointOfSale,
            ),
            sample(
                PriceListEvent::created(PriceListFields {
                    name: "Mayorista".into(),
                    description: None,
                    is_automatic: true,
                    automatic_pricing_mode: Some("base_price_adjustment".into()),
                    adjustment_hundredths: Some(-1050),
                    tax_inclusive: false,
                    is_active: true,
                    prices: vec![ListPrice { product_id: Uuid::now_v7(), unit_price: 2500 }],
                }),
                DomainEvent::PriceList,
            ),
            sample(
                WebhookEndpointEvent::WebhookEndpointCreated(WebhookEndpointCreated {
                    fields: endpoint,
                    secret: SealedSecret { nonce: "bm9uY2U".into(), ciphertext: "c2VjcmV0".into() },
                    owner_credential_id: None,
                }),
                DomainEvent::WebhookEndpoint,
            ),
        ]
    }

    #[test]
    fn stream_types_are_listed_once_each() {
        let unique: BTreeSet<&str> = STREAM_TYPES.iter().copied().collect();
        assert_eq!(unique.len(), STREAM_TYPES.len(), "{STREAM_TYPES:?}");
    }

    #[test]
    fn every_stream_type_decodes_a_created_event_of_its_aggregate() {
        let samples = samples();
        let sampled: Vec<&str> = samples.iter().map(|s| s.stored.stream_type.as_str()).collect();
        assert_eq!(sampled, STREAM_TYPES, "one sample per stream type, in registry order");
        for Sample { stored, expected } in samples {
            let decoded = DomainEvent::decode(&stored).unwrap_or_else(|e| panic!("{}: {e}", stored.stream_type));
            assert_eq!(decoded, expected, "{}", stored.stream_type);
            assert_eq!(decoded.stream_type(), stored.stream_type);
        }
    }

    #[test]
    fn an_unknown_stream_type_is_refused_naming_it() {
        for Sample { mut stored, .. } in samples() {
            let event_type = stored.event_type.clone();
            stored.stream_type = format!("{}_archive", stored.stream_type);
            match DomainEvent::decode(&stored) {
                Err(DecodeError::UnknownType { stream_type, event_type: named }) => {
                    assert_eq!((stream_type, named), (stored.stream_type.clone(), event_type));
                }
                other => panic!("{}: {other:?}", stored.stream_type),
            }
        }
    }
}
