//! Events of webhook endpoints (stream type `webhook_endpoint`).

use crate::domain::Scope;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What an integrator configures on an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointFields {
    pub label: String,
    pub url: String,
    pub enabled_events: Vec<String>,
    pub api_version: String,
}

/// A signing secret encrypted at rest (see [`crate::secrets`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    pub nonce: String,
    pub ciphertext: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointCreated {
    #[serde(flatten)]
    pub fields: WebhookEndpointFields,
    pub secret: SealedSecret,
    /// The delegated grant that owns the endpoint; none for endpoints of the organization.
    pub owner_credential_id: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointDisabled {
    /// `requested` or `grant_revoked`.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointSecretRotated {
    pub secret: SealedSecret,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointTestRequested {
    /// The id of the test event the endpoint receives.
    pub test_id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookEndpointEvent {
    WebhookEndpointCreated(WebhookEndpointCreated),
    WebhookEndpointUpdated(WebhookEndpointFields),
    WebhookEndpointPaused,
    WebhookEndpointResumed,
    WebhookEndpointDisabled(WebhookEndpointDisabled),
    WebhookEndpointSecretRotated(WebhookEndpointSecretRotated),
    WebhookEndpointTestRequested(WebhookEndpointTestRequested),
}

payloads!(
    WebhookEndpointEvent,
    "webhook_endpoint",
    WebhookEndpointCreated(_),
    WebhookEndpointUpdated(_),
    WebhookEndpointPaused,
    WebhookEndpointResumed,
    WebhookEndpointDisabled(_),
    WebhookEndpointSecretRotated(_),
    WebhookEndpointTestRequested(_),
);

/// The webhook API version endpoints are created with and events are rendered in.
pub const WEBHOOK_API_VERSIONS: &[&str] = &["2026-06-29"];

/// One public event type integrators can subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicEventType {
    pub name: &'static str,
    pub version: &'static str,
    /// The read scope needed to enable it.
    pub scope: Scope,
    pub description: &'static str,
    /// Whether endpoints may list it in `enabled_events` (test events go to every endpoint asked to).
    pub subscribable: bool,
}

const fn event(name: &'static str, scope: Scope, description: &'static str) -> PublicEventType {
    PublicEventType { name, version: "2026-06-29", scope, description, subscribable: true }
}

/// The authoritative catalogue of v1 webhook events.
pub const PUBLIC_EVENT_TYPES: &[PublicEventType] = &[
    event("sale.created", Scope::SalesRead, "A sale or a credit note was created."),
    event("sale.updated", Scope::SalesRead, "A sale was edited."),
    event("order.created", Scope::OrdersRead, "A commerce order was created."),
    event("order.updated", Scope::OrdersRead, "An order changed."),
    event("order.completed", Scope::OrdersRead, "An order became completed."),
    event("order.cancelled", Scope::OrdersRead, "An order became cancelled."),
    event("order.partially_fulfilled", Scope::OrdersRead, "An order became partially fulfilled."),
    event("order.fulfilled", Scope::OrdersRead, "An order became fully fulfilled."),
    event("fulfillment.created", Scope::OrdersRead, "An order fulfillment was recorded."),
    event(
        "webhook_endpoint.disabled",
        Scope::WebhooksRead,
        "Another endpoint of the organization was disabled for good.",
    ),
    event("product.created", Scope::ProductsRead, "A product variant was created; carries its stored state."),
    event("product.updated", Scope::ProductsRead, "A product variant changed; carries its state and changed_fields."),
    PublicEventType {
        name: "webhook.test",
        version: "2026-06-29",
        scope: Scope::WebhooksRead,
        description: "Synthetic event sent by the endpoint test operation.",
        subscribable: false,
    },
];

pub fn public_event_type(name: &str) -> Option<&'static PublicEventType> {
    PUBLIC_EVENT_TYPES.iter().find(|t| t.name == name)
}
