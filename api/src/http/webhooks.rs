//! `/api/v1/webhook-endpoints` and `/api/v1/webhook-event-types` (Style A). The signing secret appears
//! only in the creation and rotation responses (and their idempotent replays).

use crate::http::auth::{Auth, Principal};
use crate::http::body::{JsonBody, RawJson};
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::list::{ListEnvelope, ListParams, parse_id};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use commands::protocol::Command;
use commands::webhooks::{EndpointChanges, WebhookCommand, WebhookEndpoint, parse_changes, parse_create, scopes_for};
use events::catalogue::PUBLIC_EVENT_TYPES;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::{ApiResponse, Object, OpenApi};
use projections::ProjectionId;
use projections::webhooks::{self as read, EndpointRow};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

const PROJECTION: ProjectionId = ProjectionId::Webhooks;

/// A webhook endpoint.
#[derive(Debug, Serialize, Object)]
pub struct WebhookEndpointData {
    /// Always `webhook_endpoint`.
    pub object: String,
    pub id: Uuid,
    pub label: String,
    pub url: String,
    pub enabled_events: Vec<String>,
    pub api_version: String,
    /// `active`, `paused` or `disabled` (read-only).
    pub status: String,
    /// Only in the creation and rotation responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[oai(skip_serializing_if_is_none)]
    pub signing_secret: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Serialize, Object)]
pub struct WebhookEndpointEnvelope {
    pub request_id: String,
    pub data: WebhookEndpointData,
}

/// The synthetic delivery a test operation created.
#[derive(Debug, Serialize, Object)]
pub struct WebhookTestData {
    /// Always `webhook_test`.
    pub object: String,
    /// The id of the `webhook.test` event (its `Service-Event-Id`).
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// Always `webhook.test`.
    pub event_type: String,
}

#[derive(Debug, Serialize, Object)]
pub struct WebhookTestEnvelope {
    pub request_id: String,
    pub data: WebhookTestData,
}

/// Create body.
#[derive(Debug, Object)]
pub struct WebhookEndpointInput {
    #[oai(validator(min_length = 1, max_length = 100))]
    pub label: String,
    /// An https:// address.
    #[oai(validator(max_length = 2048))]
    pub url: String,
    /// Event types from `/api/v1/webhook-event-types`; each family needs its read scope.
    pub enabled_events: Vec<String>,
    /// `2026-06-29`.
    pub api_version: String,
}

/// Update body: any of the fields; `status` is read-only.
#[derive(Debug, Object)]
pub struct WebhookEndpointPatch {
    pub label: Option<String>,
    pub url: Option<String>,
    pub enabled_events: Option<Vec<String>>,
    pub api_version: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, Object)]
pub struct DeliveryAttempt {
    pub attempt: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub attempted_at: OffsetDateTime,
    pub duration_ms: i32,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<i32>,
    /// Why the attempt failed without an answer (timeout, connection, refused address...).
    pub error: Option<String>,
}

/// One event's delivery to the endpoint.
#[derive(Debug, Serialize, Object)]
pub struct DeliveryData {
    /// Always `webhook_delivery`.
    pub object: String,
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    /// `pending`, `succeeded`, `failed` (no attempt left) or `cancelled` (endpoint disabled).
    pub status: String,
    pub attempts: Vec<DeliveryAttempt>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the next attempt is due, while pending.
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

/// A public event type.
#[derive(Debug, Clone, Serialize, Object)]
pub struct WebhookEventTypeData {
    /// Always `webhook_event_type`.
    pub object: String,
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: String,
    /// The read scope needed to enable it.
    pub required_scope: String,
    /// Whether it can be listed in `enabled_events` (test events reach an endpoint on request).
    pub subscribable: bool,
    pub description: String,
}

#[derive(ApiResponse)]
enum Created {
    /// Created; `signing_secret` is shown this once.
    #[oai(status = 201)]
    Created(RawJson<WebhookEndpointEnvelope>),
}

#[derive(ApiResponse)]
enum Endpoint {
    /// The endpoint.
    #[oai(status = 200)]
    Ok(RawJson<WebhookEndpointEnvelope>),
}

#[derive(ApiResponse)]
enum Tested {
    /// A `webhook.test` delivery was queued (it goes out even while the endpoint is paused).
    #[oai(status = 200)]
    Ok(RawJson<WebhookTestEnvelope>),
}

#[derive(ApiResponse)]
enum Endpoints {
    /// Endpoints visible to the credential, oldest first.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<WebhookEndpointData>>),
}

#[derive(ApiResponse)]
enum Deliveries {
    /// Deliveries, newest first.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<DeliveryData>>),
}

#[derive(ApiResponse)]
enum EventTypes {
    /// The catalogue of v1 events.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<WebhookEventTypeData>>),
}

/// Endpoints made with a delegated grant belong to it; those made with an API key to the organization.
fn owner(principal: &Principal) -> Option<Uuid> {
    principal.delegation.as_ref().map(|_| principal.credential_id)
}

fn require_event_scopes(principal: &Principal, events: &[String]) -> Result<(), ApiError> {
    for scope in scopes_for(events) {
        principal.require(scope)?;
    }
    Ok(())
}

fn from_row(row: EndpointRow) -> WebhookEndpointData {
    WebhookEndpointData {
        object: "webhook_endpoint".into(),
        id: row.id,
        label: row.label,
        url: row.url,
        enabled_events: row.enabled_events,
        api_version: row.api_version,
        status: row.status,
        signing_secret: None,
        created_at: ar_time(row.created_at),
        updated_at: ar_time(row.updated_at),
    }
}

fn from_state(state: &AppState, value: Value, with_secret: bool) -> Result<WebhookEndpointData, ApiError> {
    let endpoint: WebhookEndpoint = serde_json::from_value(value).map_err(|error| {
        tracing::error!(%error, "unexpected endpoint from the command worker");
        ApiError::internal()
    })?;
    let signing_secret = if with_secret {
        Some(state.secrets.open(&endpoint.secret).map_err(|error| {
            tracing::error!(%error, "a signing secret could not be opened");
            ApiError::internal()
        })?)
    } else {
        None
    };
    let status =
        serde_json::to_value(endpoint.status).ok().and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
    Ok(WebhookEndpointData {
        object: "webhook_endpoint".into(),
        id: endpoint.id,
        label: endpoint.fields.label,
        url: endpoint.fields.url,
        enabled_events: endpoint.fields.enabled_events,
        api_version: endpoint.fields.api_version,
        status,
        signing_secret,
        created_at: ar_time(endpoint.created_at),
        updated_at: ar_time(endpoint.updated_at),
    })
}

fn envelope(request_id: String, data: WebhookEndpointData) -> RawJson<WebhookEndpointEnvelope> {
    RawJson::new(Style::a(&WebhookEndpointEnvelope { request_id, data }))
}

/// The endpoint as the credential may see it, or 404.
async fn visible(state: &AppState, principal: &Principal, id: &str) -> Result<EndpointRow, ApiError> {
    let id = parse_id(id, "webhook endpoint")?;
    read::get(&state.pool, principal.org_id, id)
        .await?
        .filter(|row| row.owner_credential_id == owner(principal))
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))
}

/// Runs a lifecycle command carrying the request's idempotency key, and waits until it is readable.
async fn lifecycle(
    state: &AppState,
    principal: &Principal,
    request_id: &str,
    key: Option<String>,
    version: &ServiceVersion,
    operation: &str,
    id: &str,
    body: Option<&Value>,
    command: WebhookCommand,
) -> Result<Value, ApiError> {
    let claim = idempotency::claim(key, true, operation, &[id], version.0.as_deref(), body)?;
    let accepted = state.dispatch(principal, request_id, claim, Command::Webhook(command)).await?;
    state.await_read(PROJECTION, principal, accepted.commit).await?;
    Ok(accepted.state)
}

type Key = Header<Option<String>>;

pub struct WebhooksApi;

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Webhooks")]
impl WebhooksApi {
    /// Create a webhook endpoint
    ///
    /// Needs `webhooks:write` and the read scope of every enabled event family. The response is the only
    /// time `signing_secret` is shown (an idempotent replay shows the same one).
    #[oai(path = "/webhook-endpoints", method = "post", operation_id = "createWebhookEndpoint")]
    async fn create(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        /// Required: a retry with the same key and body returns the same endpoint and secret.
        #[oai(name = "Idempotency-Key")]
        key: Key,
        body: JsonBody<WebhookEndpointInput>,
    ) -> Result<Created, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let fields = parse_create(&body.value).map_err(ApiError::validation)?;
        require_event_scopes(&auth.0, &fields.enabled_events)?;
        let claim =
            idempotency::claim(key.0, true, "createWebhookEndpoint", &[], version.0.as_deref(), Some(&body.value))?;
        let secret = state.secrets.seal(&events::secrets::new_signing_secret());
        let command = WebhookCommand::CreateEndpoint { id: Uuid::now_v7(), fields, secret, owner: owner(&auth.0) };
        let accepted = state.dispatch(&auth.0, &request_id.0, claim, Command::Webhook(command)).await?;
        state.await_read(PROJECTION, &auth.0, accepted.commit).await?;
        Ok(Created::Created(envelope(request_id.0, from_state(&state, accepted.state, true)?)))
    }

    /// Update a webhook endpoint
    ///
    /// Any of `label`, `url`, `enabled_events`, `api_version`; `status` is read-only. A disabled endpoint
    /// answers 409.
    #[oai(path = "/webhook-endpoints/:id", method = "patch", operation_id = "updateWebhookEndpoint")]
    async fn update(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
        body: JsonBody<WebhookEndpointPatch>,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let changes: EndpointChanges = parse_changes(&body.value).map_err(ApiError::validation)?;
        if let Some(events) = &changes.enabled_events {
            require_event_scopes(&auth.0, events)?;
        }
        let endpoint = parse_id(&id.0, "webhook endpoint")?;
        let command = WebhookCommand::UpdateEndpoint { id: endpoint, owner: owner(&auth.0), changes };
        let value = lifecycle(
            &state,
            &auth.0,
            &request_id.0,
            key.0,
            &version,
            "updateWebhookEndpoint",
            &id.0,
            Some(&body.value),
            command,
        )
        .await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_state(&state, value, false)?)))
    }

    /// Pause a webhook endpoint
    ///
    /// Normal events stop and queue; test events still go out.
    #[oai(path = "/webhook-endpoints/:id/pause", method = "post", operation_id = "pauseWebhookEndpoint")]
    async fn pause(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let endpoint = parse_id(&id.0, "webhook endpoint")?;
        let command = WebhookCommand::PauseEndpoint { id: endpoint, owner: owner(&auth.0) };
        let value =
            lifecycle(&state, &auth.0, &request_id.0, key.0, &version, "pauseWebhookEndpoint", &id.0, None, command)
                .await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_state(&state, value, false)?)))
    }

    /// Resume a webhook endpoint
    ///
    /// The read scopes of its enabled events are checked again; what queued while paused is delivered.
    #[oai(path = "/webhook-endpoints/:id/resume", method = "post", operation_id = "resumeWebhookEndpoint")]
    async fn resume(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let current = visible(&state, &auth.0, &id.0).await?;
        require_event_scopes(&auth.0, &current.enabled_events)?;
        let command = WebhookCommand::ResumeEndpoint { id: current.id, owner: owner(&auth.0) };
        let value =
            lifecycle(&state, &auth.0, &request_id.0, key.0, &version, "resumeWebhookEndpoint", &id.0, None, command)
                .await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_state(&state, value, false)?)))
    }

    /// Disable a webhook endpoint
    ///
    /// Terminal: unsent deliveries are cancelled; later updates and resumes answer 409. The
    /// organization's other endpoints receive `webhook_endpoint.disabled`.
    #[oai(path = "/webhook-endpoints/:id/disable", method = "post", operation_id = "disableWebhookEndpoint")]
    async fn disable(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let endpoint = parse_id(&id.0, "webhook endpoint")?;
        let command = WebhookCommand::DisableEndpoint { id: endpoint, owner: owner(&auth.0) };
        let value =
            lifecycle(&state, &auth.0, &request_id.0, key.0, &version, "disableWebhookEndpoint", &id.0, None, command)
                .await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_state(&state, value, false)?)))
    }

    /// Rotate a webhook endpoint's signing secret
    ///
    /// The previous secret stops being used at once; the new one is shown this once.
    #[oai(path = "/webhook-endpoints/:id/rotate-secret", method = "post", operation_id = "rotateWebhookEndpointSecret")]
    async fn rotate(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let endpoint = parse_id(&id.0, "webhook endpoint")?;
        let secret = state.secrets.seal(&events::secrets::new_signing_secret());
        let command = WebhookCommand::RotateSecret { id: endpoint, owner: owner(&auth.0), secret };
        let value = lifecycle(
            &state,
            &auth.0,
            &request_id.0,
            key.0,
            &version,
            "rotateWebhookEndpointSecret",
            &id.0,
            None,
            command,
        )
        .await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_state(&state, value, true)?)))
    }

    /// Send a test event
    ///
    /// Queues a durable `webhook.test` delivery (`test: true`), even while the endpoint is paused.
    #[oai(path = "/webhook-endpoints/:id/test", method = "post", operation_id = "testWebhookEndpoint")]
    async fn test(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        version: ServiceVersion,
        id: Path<String>,
        #[oai(name = "Idempotency-Key")] key: Key,
    ) -> Result<Tested, ApiError> {
        auth.0.require(Scope::WebhooksWrite)?;
        let endpoint = parse_id(&id.0, "webhook endpoint")?;
        let command = WebhookCommand::TestEndpoint { id: endpoint, owner: owner(&auth.0), test_id: Uuid::now_v7() };
        let value =
            lifecycle(&state, &auth.0, &request_id.0, key.0, &version, "testWebhookEndpoint", &id.0, None, command)
                .await?;
        let endpoint: WebhookEndpoint = serde_json::from_value(value).map_err(|_| ApiError::internal())?;
        let data = WebhookTestData {
            object: "webhook_test".into(),
            id: endpoint.last_test_id.ok_or_else(ApiError::internal)?,
            endpoint_id: endpoint.id,
            event_type: "webhook.test".into(),
        };
        Ok(Tested::Ok(RawJson::new(Style::a(&WebhookTestEnvelope { request_id: request_id.0, data }))))
    }

    /// List webhook endpoints
    ///
    /// The endpoints visible to the credential (a delegated grant sees only its own).
    #[oai(path = "/webhook-endpoints", method = "get", operation_id = "listWebhookEndpoints")]
    async fn list(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        /// 1 to 100, default 50.
        limit: Query<Option<String>>,
        /// The `next_cursor` of the previous page.
        cursor: Query<Option<String>>,
        /// Not supported: use `cursor`.
        page: Query<Option<String>>,
    ) -> Result<Endpoints, ApiError> {
        auth.0.require(Scope::WebhooksRead)?;
        let url = "/api/v1/webhook-endpoints";
        let params = ListParams::parse(limit.0, cursor.0, page.0, &state.cursors, url)?;
        let after = params.after.as_deref().map(|a| parse_id(a, "cursor")).transpose()?;
        let mut rows = read::list(&state.pool, auth.0.org_id, owner(&auth.0), after, params.limit + 1).await?;
        let next = params.finish_page(&mut rows, &state.cursors, url, |r| r.id.to_string());
        let has_more = next.is_some();
        let data = rows.into_iter().map(from_row).collect();
        Ok(Endpoints::Ok(RawJson::new(Style::a(&ListEnvelope::new(request_id.0, url, data, has_more, next)))))
    }

    /// Get a webhook endpoint
    ///
    /// Never includes the signing secret.
    #[oai(path = "/webhook-endpoints/:id", method = "get", operation_id = "getWebhookEndpoint")]
    async fn get(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        id: Path<String>,
    ) -> Result<Endpoint, ApiError> {
        auth.0.require(Scope::WebhooksRead)?;
        let row = visible(&state, &auth.0, &id.0).await?;
        Ok(Endpoint::Ok(envelope(request_id.0, from_row(row))))
    }

    /// List an endpoint's deliveries
    ///
    /// The delivery history, newest first: each event's id and type, every attempt (time, status code
    /// or failure), and the final state.
    #[oai(path = "/webhook-endpoints/:id/deliveries", method = "get", operation_id = "listWebhookDeliveries")]
    async fn deliveries(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: RequestId,
        id: Path<String>,
        /// 1 to 100, default 50.
        limit: Query<Option<String>>,
        /// The `next_cursor` of the previous page.
        cursor: Query<Option<String>>,
        /// Not supported: use `cursor`.
        page: Query<Option<String>>,
    ) -> Result<Deliveries, ApiError> {
        auth.0.require(Scope::WebhooksRead)?;
        let endpoint = visible(&state, &auth.0, &id.0).await?;
        let url = format!("/api/v1/webhook-endpoints/{}/deliveries", endpoint.id);
        let params = ListParams::parse(limit.0, cursor.0, page.0, &state.cursors, &url)?;
        let before = params.after.as_deref().map(|a| parse_id(a, "cursor")).transpose()?;
        let (mut rows, attempts) = read::deliveries(&state.pool, endpoint.id, before, params.limit + 1).await?;
        let next = params.finish_page(&mut rows, &state.cursors, &url, |r| r.id.to_string());
        let has_more = next.is_some();
        let data = rows
            .into_iter()
            .map(|row| DeliveryData {
                object: "webhook_delivery".into(),
                id: row.id,
                event_id: row.event_id,
                event_type: row.event_type,
                attempts: attempts
                    .iter()
                    .filter(|a| a.delivery_id == row.id)
                    .map(|a| DeliveryAttempt {
                        attempt: a.attempt,
                        attempted_at: ar_time(a.started_at),
                        duration_ms: a.duration_ms,
                        status_code: a.status_code,
                        error: a.error.clone(),
                    })
                    .collect(),
                next_attempt_at: (row.status == "pending").then(|| ar_time(row.next_attempt_at)),
                completed_at: row.completed_at.map(ar_time),
                created_at: ar_time(row.created_at),
                status: row.status,
            })
            .collect();
        Ok(Deliveries::Ok(RawJson::new(Style::a(&ListEnvelope::new(request_id.0, &url, data, has_more, next)))))
    }

    /// Webhook event types
    ///
    /// The authoritative catalogue of v1 events, with versions and required scopes.
    #[oai(path = "/webhook-event-types", method = "get", operation_id = "listWebhookEventTypes")]
    async fn event_types(&self, auth: Auth, request_id: RequestId) -> Result<EventTypes, ApiError> {
        auth.0.require(Scope::WebhooksRead)?;
        let data: Vec<WebhookEventTypeData> = PUBLIC_EVENT_TYPES
            .iter()
            .map(|t| WebhookEventTypeData {
                object: "webhook_event_type".into(),
                event_type: t.name.into(),
                version: t.version.into(),
                required_scope: t.scope.as_str().into(),
                subscribable: t.subscribable,
                description: t.description.into(),
            })
            .collect();
        let body = ListEnvelope::new(request_id.0, "/api/v1/webhook-event-types", data, false, None);
        Ok(EventTypes::Ok(RawJson::new(Style::a(&body))))
    }
}
