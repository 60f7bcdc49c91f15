//! `/api/v1/webhook-endpoints` and `/api/v1/webhook-event-types` (Style A). The signing secret appears
//! only in the creation and rotation responses (and their idempotent replays).

use crate::http::Key;
use crate::http::schema::IdText;
use crate::http::auth::{Auth, Principal};
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::InputRule;
use crate::http::operations::{Idempotency, Operation};
use crate::http::presence::Nullable;
use crate::http::resource::{Call, Kind, ListAt, PageParams, Write, decode_state};
use crate::http::routes_group::api_group;
use crate::http::schema::rules;
use crate::http::schema::{HttpsUrl, SubscribableEvent, Text, WebhookApiVersion};
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::protocol::{Command, CommandKind};
use commands::webhooks::{EndpointChanges, WebhookCommand, WebhookEndpoint, parse_changes, parse_create, scopes_for};
use events::catalogue::PUBLIC_EVENT_TYPES;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Path;
use projections::ProjectionId;
use projections::webhooks::{self as read, AttemptRow, DeliveryRow, EndpointRow};
use serde::Serialize;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The operations this module serves (see `operations.rs`; the lifecycle routes' are their rows in
/// `webhooks_api!`).
pub const CREATE_WEBHOOK_ENDPOINT: Operation = endpoint_write("createWebhookEndpoint");
pub const UPDATE_WEBHOOK_ENDPOINT: Operation = endpoint_write("updateWebhookEndpoint");
pub const LIST_WEBHOOK_ENDPOINTS: Operation = Operation::read("listWebhookEndpoints", Some(Scope::WebhooksRead));
pub const GET_WEBHOOK_ENDPOINT: Operation = Operation::read("getWebhookEndpoint", Some(Scope::WebhooksRead));
pub const LIST_WEBHOOK_DELIVERIES: Operation = Operation::read("listWebhookDeliveries", Some(Scope::WebhooksRead));
pub const LIST_WEBHOOK_EVENT_TYPES: Operation = Operation::read("listWebhookEventTypes", Some(Scope::WebhooksRead));

/// A write of webhook endpoints: every one needs `webhooks:write` and a key.
const fn endpoint_write(id: &'static str) -> Operation {
    Operation::write(id, Scope::WebhooksWrite, Idempotency::Required, CommandKind::Webhook)
}

/// Webhook endpoints, as the shared handler sequence sees them (their deliveries are a sub-list).
const ENDPOINTS: Kind = Kind {
    label: "webhook endpoint",
    projection: ProjectionId::Webhooks,
    cache: None,
    list: ListAt { url: "/api/v1/webhook-endpoints", binding: "/api/v1/webhook-endpoints" },
};

/// A webhook endpoint.
#[serde_with::skip_serializing_none]
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
    /// 1 to 100 characters.
    pub label: Text<100>,
    /// An https:// address.
    pub url: HttpsUrl,
    /// Event types from `/api/v1/webhook-event-types`; each family needs its read scope.
    #[oai(validator(min_items = 1))]
    pub enabled_events: Vec<SubscribableEvent>,
    pub api_version: WebhookApiVersion,
}

/// Update body: any of the fields; `status` is read-only.
#[derive(Debug, Object)]
pub struct WebhookEndpointPatch {
    pub label: Option<Text<100>>,
    pub url: Option<HttpsUrl>,
    #[oai(validator(min_items = 1))]
    pub enabled_events: Option<Vec<SubscribableEvent>>,
    pub api_version: Option<WebhookApiVersion>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, Object)]
pub struct DeliveryAttempt {
    pub attempt: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub attempted_at: OffsetDateTime,
    pub duration_ms: i32,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Nullable<i32>,
    /// Why the attempt failed without an answer (timeout, connection, refused address...).
    pub error: Nullable<String>,
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
    #[serde(with = "crate::http::presence::rfc3339_nullable")]
    pub next_attempt_at: Nullable<OffsetDateTime>,
    #[serde(with = "crate::http::presence::rfc3339_nullable")]
    pub completed_at: Nullable<OffsetDateTime>,
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

responses! {
    Created: Created(RawJson<WebhookEndpointEnvelope>) = 201, "Created; `signing_secret` is shown this once.";
    Endpoint: Ok(RawJson<WebhookEndpointEnvelope>) = 200, "The endpoint.";
    Tested: Ok(RawJson<WebhookTestEnvelope>) = 200, "A `webhook.test` delivery was queued (it goes out even while the endpoint is paused).";
    Endpoints: Ok(RawJson<ListEnvelope<WebhookEndpointData>>) = 200, "Endpoints visible to the credential, oldest first.";
    Deliveries: Ok(RawJson<ListEnvelope<DeliveryData>>) = 200, "Deliveries, newest first.";
    EventTypes: Ok(RawJson<ListEnvelope<WebhookEventTypeData>>) = 200, "The catalogue of v1 events.";
}

/// Endpoints made with a delegated grant belong to it; those made with an API key to the organization.
fn owner(principal: &Principal) -> Option<Uuid> {
    principal.delegation.as_ref().map(|_| principal.credential_id)
}

/// Enabling an event needs its family's read scope, on top of the operation's own.
fn require_event_scopes(call: &Call<'_>, events: &[String]) -> Result<(), ApiError> {
    for scope in scopes_for(events) {
        call.also_require(scope)?;
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

fn from_state(state: &AppState, endpoint: WebhookEndpoint, with_secret: bool) -> Result<WebhookEndpointData, ApiError> {
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

fn envelope(request_id: &str, data: WebhookEndpointData) -> Result<Bytes, ApiError> {
    Style::a(&WebhookEndpointEnvelope { request_id: request_id.to_owned(), data })
}

/// The endpoint a write left, as answered: the signing secret only after creation and rotation.
fn answer(call: &Call<'_>, endpoint: WebhookEndpoint, with_secret: bool) -> Result<Bytes, ApiError> {
    envelope(call.request_id, from_state(call.state, endpoint, with_secret)?)
}

/// The answer to a test: the delivery it queued.
fn test_answer(call: &Call<'_>, endpoint: WebhookEndpoint) -> Result<Bytes, ApiError> {
    let data = WebhookTestData {
        object: "webhook_test".into(),
        id: endpoint.last_test_id.ok_or_else(ApiError::internal)?,
        endpoint_id: endpoint.id,
        event_type: "webhook.test".into(),
    };
    Style::a(&WebhookTestEnvelope { request_id: call.request_id.to_owned(), data })
}

/// The endpoint named in the path as the credential may see it: another owner's is not found.
async fn visible(call: &Call<'_>, id: &str) -> Result<EndpointRow, ApiError> {
    let owner = owner(call.principal);
    call.find(&ENDPOINTS, id, async |id| {
        Ok(read::get(&call.state.pool, call.org_id(), id).await?.filter(|row| row.owner_credential_id == owner))
    })
    .await
}

/// Runs a command on one endpoint (every write of the resource: creation, update and the lifecycle
/// routes) and answers with `render` of the endpoint it left, once readable.
async fn lifecycle<T>(
    call: &Call<'_>,
    write: Write<'_>,
    command: WebhookCommand,
    render: impl FnOnce(WebhookEndpoint) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    call.write(&ENDPOINTS, write, Command::Webhook(command), |accepted| {
        render(decode_state(accepted.state, "webhook endpoint")?)
    })
    .await
}

fn delivery_data((row, attempts): (DeliveryRow, Vec<AttemptRow>)) -> DeliveryData {
    DeliveryData {
        object: "webhook_delivery".into(),
        id: row.id,
        event_id: row.event_id,
        event_type: row.event_type,
        attempts: attempts
            .into_iter()
            .map(|a| DeliveryAttempt {
                attempt: a.attempt,
                attempted_at: ar_time(a.started_at),
                duration_ms: a.duration_ms,
                status_code: a.status_code.into(),
                error: a.error.into(),
            })
            .collect(),
        next_attempt_at: (row.status == "pending").then(|| ar_time(row.next_attempt_at)).into(),
        completed_at: row.completed_at.map(ar_time).into(),
        created_at: ar_time(row.created_at),
        status: row.status,
    }
}

pub struct WebhooksApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "WebhookEndpointInput", rule: || rules::refused(&["status", "signing_secret"]) },
    InputRule::Body { schema: "WebhookEndpointPatch", rule: || rules::refused(&["status", "signing_secret", "id"]) },
];

/// The webhooks API: the routes written out (`operations` and `routes`), the writes and the cursor
/// lists (rows of `writes` and `cursor_lists`, as `routes!` reads them), and the lifecycle routes that
/// run one command on the endpoint in the path, each a row of `lifecycle`: its doc (summary, blank
/// line, description), method name, path, `operationId`, response, the block making its command from
/// the call and the endpoint's id as given, and the closure answering with the endpoint it left. Writes
/// the `Operations` and the `#[OpenApi]` impl.
macro_rules! webhooks_api {
    (
        operations: [$($operation:ident),* $(,)?];
        routes: { $($route:tt)* }
        writes: { $($writes:tt)* }
        cursor_lists: { $($lists:tt)* }
        lifecycle: {
            $(
                $(#[doc = $doc:tt])*
                $method:ident($path:tt, $id:tt) -> $response:ident
                |$call:ident, $endpoint:ident| $command:block,
                answer: $answer:expr;
            )*
        }
    ) => {
        api_group! {
            WebhooksApi,
            operations: [$($operation,)* $(endpoint_write($id),)*],
            input_rules: INPUT_RULES,
            #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Webhooks")]
            routes: {
                $($route)*

                $(
                    $(#[doc = $doc])*
                    #[oai(path = $path, method = "post", operation_id = $id)]
                    async fn $method(
                        &self,
                        auth: Auth,
                        state: Data<&Arc<AppState>>,
                        request_id: &RequestId,
                        version: ServiceVersion,
                        id: Path<IdText>,
                        #[oai(name = "Idempotency-Key")] key: Key,
                    ) -> Result<$response, ApiError> {
                        let $call = Call::new(endpoint_write($id), &state, &auth, &request_id)?;
                        let $endpoint = id.0.as_str();
                        let command = $command;
                        let path = [$endpoint];
                        let write = Write::bare(key.0, &version, &path);
                        let body = lifecycle(&$call, write, command, $answer).await?;
                        Ok($response::Ok(RawJson::new(body)))
                    }
                )*
            }
            writes: { $($writes)* }
            cursor_lists: { $($lists)* }
        }
    };
}

/// A page of the endpoints visible to the credential, oldest first.
async fn endpoints(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    let owner = owner(call.principal);
    call.cursor_list(
        params,
        ENDPOINTS.list,
        async |after, n| Ok(read::list(&call.state.pool, call.org_id(), owner, after, n).await?),
        |row: &EndpointRow| row.id,
        async |rows| Ok(rows.into_iter().map(from_row).collect()),
    )
    .await
}

/// A page of a visible endpoint's deliveries, newest first.
async fn deliveries(call: &Call<'_>, params: PageParams, id: IdText) -> Result<Bytes, ApiError> {
    let endpoint = visible(call, &id).await?;
    let url = format!("/api/v1/webhook-endpoints/{}/deliveries", endpoint.id);
    call.cursor_list(
        params,
        ListAt { url: &url, binding: &url },
        // Newest first: the cursor's id is where the next, older, page ends. Each delivery travels
        // with its attempts, so cutting the page keeps them together.
        async |before, n| {
            let (rows, attempts) = read::deliveries(&call.state.pool, endpoint.id, before, n).await?;
            Ok(rows
                .into_iter()
                .map(|row| {
                    let own = attempts.iter().filter(|a| a.delivery_id == row.id).cloned().collect();
                    (row, own)
                })
                .collect())
        },
        |(row, _): &(DeliveryRow, Vec<AttemptRow>)| row.id,
        async |rows| Ok(rows.into_iter().map(delivery_data).collect()),
    )
    .await
}

webhooks_api! {
    operations: [
        CREATE_WEBHOOK_ENDPOINT,
        UPDATE_WEBHOOK_ENDPOINT,
        LIST_WEBHOOK_ENDPOINTS,
        GET_WEBHOOK_ENDPOINT,
        LIST_WEBHOOK_DELIVERIES,
        LIST_WEBHOOK_EVENT_TYPES,
    ];
    routes: {
        /// Get a webhook endpoint
        ///
        /// Never includes the signing secret.
        #[oai(path = "/webhook-endpoints/:id", method = "get", operation_id = "getWebhookEndpoint")]
        async fn get(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            id: Path<IdText>,
        ) -> Result<Endpoint, ApiError> {
            let call = Call::new(GET_WEBHOOK_ENDPOINT, &state, &auth, request_id)?;
            let row = visible(&call, &id.0).await?;
            Ok(Endpoint::Ok(RawJson::new(envelope(call.request_id, from_row(row))?)))
        }

        /// Webhook event types
        ///
        /// The authoritative catalogue of v1 events, with versions and required scopes.
        #[oai(path = "/webhook-event-types", method = "get", operation_id = "listWebhookEventTypes")]
        async fn event_types(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
        ) -> Result<EventTypes, ApiError> {
            let call = Call::new(LIST_WEBHOOK_EVENT_TYPES, &state, &auth, request_id)?;
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
            // The catalogue is one short, fixed page.
            let body = ListEnvelope::new(call.request_id.to_owned(), "/api/v1/webhook-event-types", data, false, None);
            Ok(EventTypes::Ok(RawJson::new(Style::a(&body)?)))
        }
    }
    writes: {
        /// Create a webhook endpoint
        ///
        /// Needs `webhooks:write` and the read scope of every enabled event family. The response is the only
        /// time `signing_secret` is shown (an idempotent replay shows the same one).
        create("/webhook-endpoints", "createWebhookEndpoint", "post")
            ("Required: a retry with the same key and body returns the same endpoint and secret.")
            -> Created::Created = CREATE_WEBHOOK_ENDPOINT, |call, write, body: WebhookEndpointInput| {
                let fields = parse_create(&body.value).map_err(ApiError::validation)?;
                require_event_scopes(&call, &fields.enabled_events)?;
                let secret = call.state.secrets.seal(&events::secrets::new_signing_secret());
                let owner = owner(call.principal);
                let command = WebhookCommand::CreateEndpoint { id: Uuid::now_v7(), fields, secret, owner };
                lifecycle(&call, write, command, |endpoint| answer(&call, endpoint, true)).await?
            }

        /// Update a webhook endpoint
        ///
        /// Any of `label`, `url`, `enabled_events`, `api_version`; `status` is read-only. A disabled endpoint
        /// answers 409. The read scopes of the events the endpoint will have enabled (those sent, or its
        /// current ones) are checked again (403).
        update("/webhook-endpoints/:id", "updateWebhookEndpoint", "patch")
            (id, "")
            -> Endpoint::Ok = UPDATE_WEBHOOK_ENDPOINT, |call, write, body: WebhookEndpointPatch| {
                let changes: EndpointChanges = parse_changes(&body.value).map_err(ApiError::validation)?;
                match &changes.enabled_events {
                    Some(events) => require_event_scopes(&call, events)?,
                    None => require_event_scopes(&call, &visible(&call, &id.0).await?.enabled_events)?,
                }
                let endpoint = call.id(&ENDPOINTS, &id.0)?;
                let command = WebhookCommand::UpdateEndpoint { id: endpoint, owner: owner(call.principal), changes };
                lifecycle(&call, write, command, |endpoint| answer(&call, endpoint, false)).await?
            }
    }
    cursor_lists: {
        /// List webhook endpoints
        ///
        /// The endpoints visible to the credential (a delegated grant sees only its own).
        list("/webhook-endpoints", "listWebhookEndpoints") -> Endpoints = LIST_WEBHOOK_ENDPOINTS, endpoints {};

        /// List an endpoint's deliveries
        ///
        /// The delivery history, newest first: each event's id and type, every attempt (time, status code
        /// or failure), and the final state.
        deliveries("/webhook-endpoints/:id/deliveries", "listWebhookDeliveries")
            -> Deliveries = LIST_WEBHOOK_DELIVERIES, deliveries { id: Path<IdText> };
    }
    lifecycle: {
        /// Pause a webhook endpoint
        ///
        /// Normal events stop and queue; test events still go out.
        pause("/webhook-endpoints/:id/pause", "pauseWebhookEndpoint") -> Endpoint |call, id| {
            WebhookCommand::PauseEndpoint { id: call.id(&ENDPOINTS, id)?, owner: owner(call.principal) }
        }, answer: |endpoint| answer(&call, endpoint, false);

        /// Resume a webhook endpoint
        ///
        /// The read scopes of its enabled events are checked again; what queued while paused is delivered.
        resume("/webhook-endpoints/:id/resume", "resumeWebhookEndpoint") -> Endpoint |call, id| {
            let current = visible(&call, id).await?;
            require_event_scopes(&call, &current.enabled_events)?;
            WebhookCommand::ResumeEndpoint { id: current.id, owner: owner(call.principal) }
        }, answer: |endpoint| answer(&call, endpoint, false);

        /// Disable a webhook endpoint
        ///
        /// Terminal: unsent deliveries are cancelled; later updates and resumes answer 409. The
        /// organization's other endpoints receive `webhook_endpoint.disabled`.
        disable("/webhook-endpoints/:id/disable", "disableWebhookEndpoint") -> Endpoint |call, id| {
            WebhookCommand::DisableEndpoint { id: call.id(&ENDPOINTS, id)?, owner: owner(call.principal) }
        }, answer: |endpoint| answer(&call, endpoint, false);

        /// Rotate a webhook endpoint's signing secret
        ///
        /// The previous secret stops being used at once; the new one is shown this once.
        rotate("/webhook-endpoints/:id/rotate-secret", "rotateWebhookEndpointSecret") -> Endpoint |call, id| {
            let secret = call.state.secrets.seal(&events::secrets::new_signing_secret());
            WebhookCommand::RotateSecret { id: call.id(&ENDPOINTS, id)?, owner: owner(call.principal), secret }
        }, answer: |endpoint| answer(&call, endpoint, true);

        /// Send a test event
        ///
        /// Queues a durable `webhook.test` delivery (`test: true`), even while the endpoint is paused.
        test("/webhook-endpoints/:id/test", "testWebhookEndpoint") -> Tested |call, id| {
            let test_id = Uuid::now_v7();
            WebhookCommand::TestEndpoint { id: call.id(&ENDPOINTS, id)?, owner: owner(call.principal), test_id }
        }, answer: |endpoint| test_answer(&call, endpoint);
    }
}
