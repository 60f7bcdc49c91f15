//! Public webhook events: which ones a stored event produces, and the envelope they travel in
//! (`id`, `type`, `api_version`, `created`, `organization_id`, `data.object`, and `test` for tests).

use super::EndpointRow;
use crate::ProjectionError;
use events::catalogue::{ProductEvent, public_product};
use events::{EventPayload, RecordedEvent};
use serde_json::{Value, json};
use uuid::Uuid;

/// One public event, before it is addressed to an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicEvent {
    /// Stable: the same on every attempt and for every endpoint.
    pub id: Uuid,
    pub event_type: String,
    pub created: i64,
    pub object: Value,
    pub test: bool,
}

impl PublicEvent {
    /// The JSON body sent to an endpoint of `org` using `api_version`.
    pub fn envelope(&self, org: Uuid, api_version: &str) -> String {
        let mut body = json!({
            "id": self.id,
            "type": self.event_type,
            "api_version": api_version,
            "created": self.created,
            "organization_id": org,
            "data": { "object": self.object },
        });
        if self.test {
            body["test"] = Value::Bool(true);
        }
        body.to_string()
    }
}

fn created_at(event: &RecordedEvent) -> i64 {
    event.recorded_at.unix_timestamp()
}

/// The public object of an endpoint (never its secret).
pub fn endpoint_object(endpoint: &EndpointRow) -> Value {
    json!({
        "object": "webhook_endpoint",
        "id": endpoint.id,
        "label": endpoint.label,
        "url": endpoint.url,
        "enabled_events": endpoint.enabled_events,
        "api_version": endpoint.api_version,
        "status": endpoint.status,
    })
}

pub fn endpoint_disabled(event: &RecordedEvent, endpoint: &EndpointRow) -> PublicEvent {
    PublicEvent {
        id: event.event_id,
        event_type: "webhook_endpoint.disabled".into(),
        created: created_at(event),
        object: endpoint_object(endpoint),
        test: false,
    }
}

pub fn test_event(event: &RecordedEvent, test_id: Uuid) -> PublicEvent {
    PublicEvent {
        id: test_id,
        event_type: "webhook.test".into(),
        created: created_at(event),
        object: json!({ "object": "webhook_endpoint", "id": event.stream_id }),
        test: true,
    }
}

/// The public events a stored event produces (none for most).
/// The id of the public event a stored event makes for one variant: stable across redeliveries and
/// rebuilds, distinct per variant.
fn per_variant_id(event_id: Uuid, variant_id: Uuid) -> Uuid {
    Uuid::new_v5(&event_id, variant_id.as_bytes())
}

/// The public events a stored event produces: `product.created` per created variant, and
/// `product.updated` per variant whose public object changed (with `changed_fields`). Other stored
/// events have none.
pub fn public_events(event: &RecordedEvent) -> Result<Vec<PublicEvent>, ProjectionError> {
    if event.stream_type == events::catalogue::SaleEvent::STREAM_TYPE {
        return sale_events(event);
    }
    if event.stream_type == events::catalogue::OrderEvent::STREAM_TYPE {
        return order_events(event);
    }
    if event.stream_type == events::catalogue::DeliveryNoteEvent::STREAM_TYPE {
        return fulfillment_events(event);
    }
    if event.stream_type != ProductEvent::STREAM_TYPE {
        return Ok(Vec::new());
    }
    let decoded: ProductEvent = crate::decode(event)?;
    let group_id = event.stream_id;
    Ok(match &decoded {
        ProductEvent::ProductCreated(created) => created
            .group
            .variants
            .iter()
            .map(|variant| PublicEvent {
                id: per_variant_id(event.event_id, variant.id),
                event_type: "product.created".into(),
                created: created_at(event),
                object: public_product(group_id, &created.group, variant),
                test: false,
            })
            .collect(),
        ProductEvent::ProductUpdated(updated) | ProductEvent::ProductVariantsUpdated(updated) => updated
            .changes
            .iter()
            .filter_map(|change| {
                let variant = updated.group.variants.iter().find(|v| v.id == change.variant_id)?;
                let mut object = public_product(group_id, &updated.group, variant);
                object["changed_fields"] = json!(change.changed_fields);
                Some(PublicEvent {
                    id: per_variant_id(event.event_id, variant.id),
                    event_type: "product.updated".into(),
                    created: created_at(event),
                    object,
                    test: false,
                })
            })
            .collect(),
    })
}

/// `order.*` for an order's event (see `OrderEvent::public_name`), each with the order's public object.
fn order_events(event: &RecordedEvent) -> Result<Vec<PublicEvent>, ProjectionError> {
    use events::catalogue::{OrderEvent, public_order};
    let decoded: OrderEvent = crate::decode(event)?;
    Ok(decoded
        .public_name()
        .map(|name| PublicEvent {
            id: event.event_id,
            event_type: name.into(),
            created: created_at(event),
            object: public_order(event.stream_id, decoded.state()),
            test: false,
        })
        .into_iter()
        .collect())
}

/// `fulfillment.created` for a delivery note of an order, with the note's public object.
fn fulfillment_events(event: &RecordedEvent) -> Result<Vec<PublicEvent>, ProjectionError> {
    use events::catalogue::{DeliveryNoteEvent, DeliveryOrigin, public_delivery_note};
    let decoded: DeliveryNoteEvent = crate::decode(event)?;
    Ok(match &decoded {
        DeliveryNoteEvent::DeliveryNoteCreated(note) if matches!(note.origin, DeliveryOrigin::Order { .. }) => {
            vec![PublicEvent {
                id: event.event_id,
                event_type: "fulfillment.created".into(),
                created: created_at(event),
                object: public_delivery_note(event.stream_id, note),
                test: false,
            }]
        }
        DeliveryNoteEvent::DeliveryNoteCreated(_) | DeliveryNoteEvent::DeliveryNoteDeleted(_) => Vec::new(),
    })
}

/// `sale.created` for a recorded sale (credit notes included, `document_kind` `credit_note`) and
/// `sale.updated` when its fiscal state changes, each with the sale's whole public object.
fn sale_events(event: &RecordedEvent) -> Result<Vec<PublicEvent>, ProjectionError> {
    use events::catalogue::SaleEvent;
    let decoded: SaleEvent = crate::decode(event)?;
    let (event_type, sale) = match &decoded {
        SaleEvent::SaleRecorded(sale) => ("sale.created", sale),
        SaleEvent::SaleFiscalChanged(sale) => ("sale.updated", sale),
    };
    Ok(vec![PublicEvent {
        id: event.event_id,
        event_type: event_type.into(),
        created: created_at(event),
        object: events::catalogue::public_sale(event.stream_id, sale),
        test: false,
    }])
}
