//! Webhook endpoints: creation, updates and the lifecycle (pause, resume, disable, secret rotation,
//! test). `disable` is terminal. An endpoint made with a delegated grant belongs to that grant and is
//! invisible to every other credential; one made with an API key belongs to the organization.

mod handler;

use crate::aggregate::{Aggregate, Rejection};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    SealedSecret, WEBHOOK_API_VERSIONS, WebhookEndpointCreated, WebhookEndpointDisabled, WebhookEndpointEvent,
    WebhookEndpointFields, WebhookEndpointSecretRotated, WebhookEndpointTestRequested, public_event_type,
};
use events::domain::Scope;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

pub const MAX_URL_LENGTH: usize = 2048;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointStatus {
    Active,
    Paused,
    Disabled,
}

/// The state of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpoint {
    pub id: Uuid,
    pub fields: WebhookEndpointFields,
    pub status: EndpointStatus,
    pub secret: SealedSecret,
    pub owner_credential_id: Option<Uuid>,
    /// The last test requested (the outcome of the test operation).
    pub last_test_id: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A change to some of an endpoint's fields (PATCH): absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointChanges {
    pub label: Option<String>,
    pub url: Option<String>,
    pub enabled_events: Option<Vec<String>>,
    pub api_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WebhookCommand {
    CreateEndpoint { id: Uuid, fields: WebhookEndpointFields, secret: SealedSecret, owner: Option<Uuid> },
    UpdateEndpoint { id: Uuid, owner: Option<Uuid>, changes: EndpointChanges },
    PauseEndpoint { id: Uuid, owner: Option<Uuid> },
    ResumeEndpoint { id: Uuid, owner: Option<Uuid> },
    DisableEndpoint { id: Uuid, owner: Option<Uuid> },
    RotateSecret { id: Uuid, owner: Option<Uuid>, secret: SealedSecret },
    TestEndpoint { id: Uuid, owner: Option<Uuid>, test_id: Uuid },
}

impl WebhookCommand {
    pub fn id(&self) -> Uuid {
        match self {
            Self::CreateEndpoint { id, .. }
            | Self::UpdateEndpoint { id, .. }
            | Self::PauseEndpoint { id, .. }
            | Self::ResumeEndpoint { id, .. }
            | Self::DisableEndpoint { id, .. }
            | Self::RotateSecret { id, .. }
            | Self::TestEndpoint { id, .. } => *id,
        }
    }

    fn owner(&self) -> Option<Uuid> {
        match self {
            Self::CreateEndpoint { owner, .. }
            | Self::UpdateEndpoint { owner, .. }
            | Self::PauseEndpoint { owner, .. }
            | Self::ResumeEndpoint { owner, .. }
            | Self::DisableEndpoint { owner, .. }
            | Self::RotateSecret { owner, .. }
            | Self::TestEndpoint { owner, .. } => *owner,
        }
    }
}

fn disabled() -> Rejection {
    Rejection::conflict("STATE_CONFLICT", "the endpoint is disabled for good; create a new one")
}

impl Aggregate for WebhookEndpoint {
    type Command = WebhookCommand;
    type Event = WebhookEndpointEvent;

    fn decide(state: Option<&Self>, command: &WebhookCommand) -> Result<Vec<WebhookEndpointEvent>, Rejection> {
        use WebhookEndpointEvent as E;
        // Another grant's endpoint (or an organization endpoint seen by a grant) does not exist for the caller.
        let state = match (state, command) {
            (None, WebhookCommand::CreateEndpoint { fields, secret, owner, .. }) => {
                return Ok(vec![E::WebhookEndpointCreated(WebhookEndpointCreated {
                    fields: fields.clone(),
                    secret: secret.clone(),
                    owner_credential_id: *owner,
                })]);
            }
            (Some(_), WebhookCommand::CreateEndpoint { .. }) => {
                return Err(Rejection::conflict("ALREADY_EXISTS", "the endpoint already exists"));
            }
            (Some(state), _) if state.owner_credential_id == command.owner() => state,
            _ => return Err(Rejection::not_found("webhook endpoint")),
        };
        let is_disabled = state.status == EndpointStatus::Disabled;
        match command {
            WebhookCommand::CreateEndpoint { .. } => unreachable!("handled above"),
            WebhookCommand::UpdateEndpoint { changes, .. } => {
                if is_disabled {
                    return Err(disabled());
                }
                let current = &state.fields;
                let next = WebhookEndpointFields {
                    label: changes.label.clone().unwrap_or_else(|| current.label.clone()),
                    url: changes.url.clone().unwrap_or_else(|| current.url.clone()),
                    enabled_events: changes.enabled_events.clone().unwrap_or_else(|| current.enabled_events.clone()),
                    api_version: changes.api_version.clone().unwrap_or_else(|| current.api_version.clone()),
                };
                Ok(if next == *current { vec![] } else { vec![E::WebhookEndpointUpdated(next)] })
            }
            WebhookCommand::PauseEndpoint { .. } => match state.status {
                EndpointStatus::Disabled => Err(disabled()),
                EndpointStatus::Paused => Ok(vec![]),
                EndpointStatus::Active => Ok(vec![E::WebhookEndpointPaused]),
            },
            WebhookCommand::ResumeEndpoint { .. } => match state.status {
                EndpointStatus::Disabled => Err(disabled()),
                EndpointStatus::Active => Ok(vec![]),
                EndpointStatus::Paused => Ok(vec![E::WebhookEndpointResumed]),
            },
            WebhookCommand::DisableEndpoint { .. } => {
                if is_disabled {
                    return Err(disabled());
                }
                Ok(vec![E::WebhookEndpointDisabled(WebhookEndpointDisabled { reason: "requested".into() })])
            }
            WebhookCommand::RotateSecret { secret, .. } => {
                if is_disabled {
                    return Err(disabled());
                }
                Ok(vec![E::WebhookEndpointSecretRotated(WebhookEndpointSecretRotated { secret: secret.clone() })])
            }
            WebhookCommand::TestEndpoint { test_id, .. } => {
                if is_disabled {
                    return Err(disabled());
                }
                Ok(vec![E::WebhookEndpointTestRequested(WebhookEndpointTestRequested { test_id: *test_id })])
            }
        }
    }

    fn evolve(state: Option<Self>, event: &WebhookEndpointEvent, at: OffsetDateTime) -> Option<Self> {
        use WebhookEndpointEvent as E;
        match (state, event) {
            (_, E::WebhookEndpointCreated(created)) => Some(WebhookEndpoint {
                id: Uuid::nil(),
                fields: created.fields.clone(),
                status: EndpointStatus::Active,
                secret: created.secret.clone(),
                owner_credential_id: created.owner_credential_id,
                last_test_id: None,
                created_at: at,
                updated_at: at,
            }),
            (None, _) => None,
            (Some(s), E::WebhookEndpointUpdated(fields)) => {
                Some(WebhookEndpoint { fields: fields.clone(), updated_at: at, ..s })
            }
            (Some(s), E::WebhookEndpointPaused) => {
                Some(WebhookEndpoint { status: EndpointStatus::Paused, updated_at: at, ..s })
            }
            (Some(s), E::WebhookEndpointResumed) => {
                Some(WebhookEndpoint { status: EndpointStatus::Active, updated_at: at, ..s })
            }
            (Some(s), E::WebhookEndpointDisabled(_)) => {
                Some(WebhookEndpoint { status: EndpointStatus::Disabled, updated_at: at, ..s })
            }
            (Some(s), E::WebhookEndpointSecretRotated(rotated)) => {
                Some(WebhookEndpoint { secret: rotated.secret.clone(), updated_at: at, ..s })
            }
            (Some(s), E::WebhookEndpointTestRequested(test)) => {
                Some(WebhookEndpoint { last_test_id: Some(test.test_id), ..s })
            }
        }
    }
}

fn check_url(r: &mut ObjectReader<'_>, url: &str) {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.scheme() == "https" && parsed.host_str().is_some_and(|h| !h.is_empty()) => {
            if parsed.username() != "" || parsed.password().is_some() {
                r.reject("url", "invalid_format", "must not carry credentials");
            }
        }
        Ok(_) => r.reject("url", "invalid_format", "must be an https:// address with a host"),
        Err(_) => r.reject("url", "invalid_format", "must be an https:// address"),
    }
}

fn check_events(r: &mut ObjectReader<'_>, body: &Value) -> Option<Vec<String>> {
    let raw = body.get("enabled_events").filter(|v| !v.is_null())?;
    let Some(items) = raw.as_array() else {
        r.reject("enabled_events", "invalid_type", "must be an array of event types");
        return None;
    };
    if items.is_empty() {
        r.reject("enabled_events", "too_short", "enable at least one event type");
        return None;
    }
    let mut events: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("enabled_events[{i}]");
        match item.as_str().map(public_event_type) {
            Some(Some(known)) if known.subscribable => {
                if !events.iter().any(|e| e == known.name) {
                    events.push(known.name.to_owned());
                }
            }
            Some(_) => {
                r.reject(&field, "invalid_value", "is not a subscribable event type (see /api/v1/webhook-event-types)")
            }
            None => r.reject(&field, "invalid_type", "must be a string"),
        }
    }
    Some(events)
}

fn check_version(r: &mut ObjectReader<'_>, version: &str) {
    if !WEBHOOK_API_VERSIONS.contains(&version) {
        r.reject("api_version", "unsupported_version", format!("supported: {}", WEBHOOK_API_VERSIONS.join(", ")));
    }
}

/// The `url` as sent, trimmed: at most [`MAX_URL_LENGTH`] characters as sent (the document's
/// `maxLength` counts the whitespace a trim would drop) and after the trim.
fn read_url(r: &mut ObjectReader, body: &Value) -> String {
    if body.get("url").and_then(Value::as_str).is_some_and(|u| u.chars().count() > MAX_URL_LENGTH) {
        r.reject("url", "too_long", format!("must be at most {MAX_URL_LENGTH} characters"));
        return String::new();
    }
    r.required_str("url", 1, MAX_URL_LENGTH)
}

/// Parses a create body: `label` (1–100), `url` (https), `enabled_events` (known types), `api_version`.
pub fn parse_create(body: &Value) -> Result<WebhookEndpointFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let label = r.required_str("label", 1, 100);
    let url = read_url(&mut r, body);
    if !url.is_empty() {
        check_url(&mut r, &url);
    }
    let enabled_events = check_events(&mut r, body);
    if r.value("enabled_events").is_none() {
        r.reject("enabled_events", "required", "is required");
    }
    let api_version = r.required_str("api_version", 1, 20);
    if !api_version.is_empty() {
        check_version(&mut r, &api_version);
    }
    if r.has("status") || r.has("signing_secret") {
        let field = if r.has("status") { "status" } else { "signing_secret" };
        r.reject(field, "read_only", "is set by the service");
    }
    r.finish(WebhookEndpointFields { label, url, enabled_events: enabled_events.unwrap_or_default(), api_version })
}

/// Parses a PATCH body: any of `label`, `url`, `enabled_events`, `api_version`; `status` is read-only.
pub fn parse_changes(body: &Value) -> Result<EndpointChanges, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let label = if r.has("label") { Some(r.required_str("label", 1, 100)) } else { None };
    let url = if r.has("url") { Some(read_url(&mut r, body)) } else { None };
    if let Some(url) = url.as_deref().filter(|u| !u.is_empty()) {
        check_url(&mut r, url);
    }
    let enabled_events = if r.has("enabled_events") {
        let events = check_events(&mut r, body);
        if events.is_none() && body.get("enabled_events").is_some_and(Value::is_null) {
            r.reject("enabled_events", "invalid_type", "must be an array of event types");
        }
        events
    } else {
        None
    };
    let api_version = if r.has("api_version") { Some(r.required_str("api_version", 1, 20)) } else { None };
    if let Some(version) = api_version.as_deref().filter(|v| !v.is_empty()) {
        check_version(&mut r, version);
    }
    for read_only in ["status", "signing_secret", "id"] {
        if r.has(read_only) {
            r.reject(read_only, "read_only", "cannot be changed");
        }
    }
    r.finish(EndpointChanges { label, url, enabled_events, api_version })
}

/// The read scopes needed to enable these event types (one per family).
pub fn scopes_for(events: &[String]) -> Vec<Scope> {
    let mut scopes: Vec<Scope> = events.iter().filter_map(|e| public_event_type(e)).map(|t| t.scope).collect();
    scopes.sort_unstable_by_key(|scope| scope.as_str());
    scopes.dedup();
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealed() -> SealedSecret {
        SealedSecret { nonce: "00".into(), ciphertext: "11".into() }
    }

    fn created(owner: Option<Uuid>) -> WebhookEndpoint {
        let fields = parse_create(&json!({
            "label": "ERP", "url": "https://erp.example.com/hooks", "enabled_events": ["product.created"],
            "api_version": "2026-06-29"
        }))
        .expect("valid");
        let command = WebhookCommand::CreateEndpoint { id: Uuid::now_v7(), fields, secret: sealed(), owner };
        let events = WebhookEndpoint::decide(None, &command).expect("created");
        WebhookEndpoint::fold(events.iter().map(|e| (e, OffsetDateTime::UNIX_EPOCH))).expect("state")
    }

    #[test]
    fn the_lifecycle_ends_at_disable() {
        let state = created(None);
        let id = state.id;
        let pause = WebhookCommand::PauseEndpoint { id, owner: None };
        let paused = WebhookEndpoint::decide(Some(&state), &pause).expect("paused");
        assert_eq!(paused, vec![WebhookEndpointEvent::WebhookEndpointPaused]);
        let state = WebhookEndpoint::evolve(Some(state), &paused[0], OffsetDateTime::UNIX_EPOCH).expect("state");
        assert_eq!(WebhookEndpoint::decide(Some(&state), &pause), Ok(vec![]), "pausing twice changes nothing");
        let disable = WebhookCommand::DisableEndpoint { id, owner: None };
        let events = WebhookEndpoint::decide(Some(&state), &disable).expect("disabled");
        let state = WebhookEndpoint::evolve(Some(state), &events[0], OffsetDateTime::UNIX_EPOCH).expect("state");
        for later in [
            WebhookCommand::ResumeEndpoint { id, owner: None },
            WebhookCommand::DisableEndpoint { id, owner: None },
            WebhookCommand::UpdateEndpoint { id, owner: None, changes: EndpointChanges::default() },
            WebhookCommand::TestEndpoint { id, owner: None, test_id: Uuid::now_v7() },
        ] {
            assert!(matches!(WebhookEndpoint::decide(Some(&state), &later), Err(Rejection::Conflict { .. })));
        }
    }

    #[test]
    fn a_grant_endpoint_is_invisible_to_other_credentials() {
        let grant = Uuid::now_v7();
        let state = created(Some(grant));
        let as_org = WebhookCommand::PauseEndpoint { id: state.id, owner: None };
        assert_eq!(WebhookEndpoint::decide(Some(&state), &as_org), Err(Rejection::not_found("webhook endpoint")));
        let as_grant = WebhookCommand::PauseEndpoint { id: state.id, owner: Some(grant) };
        assert!(WebhookEndpoint::decide(Some(&state), &as_grant).is_ok());
    }

    #[test]
    fn bodies_are_checked() {
        let errors = parse_create(&json!({
            "label": "", "url": "http://example.com", "enabled_events": ["product.created", "nope", 3],
            "api_version": "1999-01-01", "status": "active"
        }))
        .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["label", "url", "enabled_events[1]", "enabled_events[2]", "api_version", "status"]);
        assert_eq!(
            scopes_for(&["order.created".into(), "order.fulfilled".into(), "product.updated".into()]),
            vec![Scope::OrdersRead, Scope::ProductsRead]
        );
        let changes = parse_changes(&json!({"label": "Nuevo"})).expect("valid");
        assert_eq!(changes.label.as_deref(), Some("Nuevo"));
        assert!(parse_changes(&json!({"status": "disabled"})).is_err());
    }
}
