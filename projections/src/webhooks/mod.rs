//! The webhook sender, one more event subscriber: its projection keeps the endpoints read model and
//! turns every event into durable delivery rows for each endpoint that should receive it (in the same
//! transaction as its checkpoint); the dispatcher sends them, signed, with retries.

pub mod dispatch;
pub mod envelope;

use crate::{CacheKey, CacheResource, EventHead, Folded, Folds, ProjectionError, Target};
use envelope::PublicEvent;
use events::catalogue::{SealedSecret, WebhookEndpointEvent};
use events::unnest::Unnest;
use events::{EventPayload, RecordedEvent};
use futures::future::BoxFuture;
use sqlx::{PgConnection, PgPool};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "webhook_endpoints_view";

/// The projection: endpoints read model plus delivery fan-out. Dispatchers wake on its progress.
#[derive(Default)]
pub struct WebhooksProjection {
    /// The organizations that have (or had) an endpoint, loaded on first use and grown as endpoint
    /// events arrive. Endpoints are never deleted, so the set only grows; events of any other
    /// organization make neither rows nor deliveries, and batches of nothing else are passed over.
    with_endpoints: std::sync::Mutex<Option<HashSet<Uuid>>>,
}

impl WebhooksProjection {
    fn known_organizations(&self) -> std::sync::MutexGuard<'_, Option<HashSet<Uuid>>> {
        self.with_endpoints.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

projection!(WebhooksProjection {
    id: Webhooks,
    tables: &[TABLE],
    // Any aggregate may produce public events; the sender sees them all.
    folds: Folds::Every,

    fn passes_over<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        events: &'a [EventHead<'a>],
    ) -> BoxFuture<'a, Result<bool, ProjectionError>> {
        Box::pin(async move {
            if self.known_organizations().is_none() {
                let sql = format!("select distinct org_id from {TABLE}");
                let orgs: Vec<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *conn).await?;
                *self.known_organizations() = Some(orgs.into_iter().collect());
            }
            let mut guard = self.known_organizations();
            let known = guard.get_or_insert_with(HashSet::new);
            let mut passes = true;
            for event in events {
                if event.stream_type == WebhookEndpointEvent::STREAM_TYPE {
                    known.insert(event.org_id);
                }
                passes &= !known.contains(&event.org_id);
            }
            Ok(passes)
        })
    }
});

/// An endpoint as the sender sees it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EndpointRow {
    pub org_id: Uuid,
    pub id: Uuid,
    pub label: String,
    pub url: String,
    pub enabled_events: Vec<String>,
    pub api_version: String,
    pub status: String,
    pub secret_nonce: String,
    pub secret_ciphertext: String,
    pub owner_credential_id: Option<Uuid>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl EndpointRow {
    pub fn secret(&self) -> SealedSecret {
        SealedSecret { nonce: self.secret_nonce.clone(), ciphertext: self.secret_ciphertext.clone() }
    }
}

const COLUMNS: &str = "org_id, id, label, url, enabled_events, api_version, status, secret_nonce, secret_ciphertext, \
                       owner_credential_id, created_at, updated_at";

/// A delivery to insert.
struct NewDelivery {
    org_id: Uuid,
    endpoint_id: Uuid,
    event: PublicEvent,
    payload: String,
}

async fn load_endpoints(conn: &mut PgConnection, table: &str, org: Uuid) -> Result<Vec<EndpointRow>, sqlx::Error> {
    let sql = format!("select {COLUMNS} from {table} where org_id = $1");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org).fetch_all(conn).await
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    // Deliveries are operational state: a rebuild (shadow target) only rebuilds the endpoints.
    let deliver = target == Target::Live;
    let mut endpoints: HashMap<Uuid, Vec<EndpointRow>> = HashMap::new();
    let mut deliveries: Vec<NewDelivery> = Vec::new();
    let mut cancelled: Vec<Uuid> = Vec::new();
    let mut stale = Vec::new();
    for event in events {
        if let std::collections::hash_map::Entry::Vacant(slot) = endpoints.entry(event.org_id) {
            slot.insert(load_endpoints(&mut *conn, &table, event.org_id).await?);
        }
        let org_endpoints = endpoints.get_mut(&event.org_id).expect("loaded above");
        if event.stream_type == WebhookEndpointEvent::STREAM_TYPE {
            let decoded: WebhookEndpointEvent = crate::decode(event)?;
            stale.push(CacheKey {
                resource: CacheResource::WebhookEndpoint,
                org_id: event.org_id,
                id: event.stream_id,
            });
            fold_endpoint(org_endpoints, event, &decoded);
            if deliver {
                match &decoded {
                    WebhookEndpointEvent::WebhookEndpointDisabled(_) => {
                        cancelled.push(event.stream_id);
                        if let Some(disabled) = org_endpoints.iter().find(|e| e.id == event.stream_id) {
                            let public = envelope::endpoint_disabled(event, disabled);
                            // Only endpoints of the same owner (a grant's endpoints stay invisible to
                            // others) that enabled the event, as for every other event.
                            let others = org_endpoints.iter().filter(|e| {
                                e.id != event.stream_id
                                    && e.status != "disabled"
                                    && e.owner_credential_id == disabled.owner_credential_id
                                    && e.enabled_events.contains(&public.event_type)
                            });
                            for other in others {
                                deliveries.push(new_delivery(other, public.clone()));
                            }
                        }
                    }
                    WebhookEndpointEvent::WebhookEndpointTestRequested(test) => {
                        if let Some(endpoint) = org_endpoints.iter().find(|e| e.id == event.stream_id) {
                            deliveries.push(new_delivery(endpoint, envelope::test_event(event, test.test_id)));
                        }
                    }
                    WebhookEndpointEvent::WebhookEndpointCreated(_)
                    | WebhookEndpointEvent::WebhookEndpointUpdated(_)
                    | WebhookEndpointEvent::WebhookEndpointPaused
                    | WebhookEndpointEvent::WebhookEndpointResumed
                    | WebhookEndpointEvent::WebhookEndpointSecretRotated(_) => {}
                }
            }
            continue;
        }
        if !deliver {
            continue;
        }
        for public in envelope::public_events(event)? {
            for endpoint in
                org_endpoints.iter().filter(|e| e.status != "disabled" && e.enabled_events.contains(&public.event_type))
            {
                deliveries.push(new_delivery(endpoint, public.clone()));
            }
        }
    }
    // The endpoints touched by this batch, as folded.
    let touched: Vec<&EndpointRow> =
        endpoints.values().flatten().filter(|row| stale.iter().any(|k: &CacheKey| k.id == row.id)).collect();
    for row in touched {
        upsert_endpoint(&mut *conn, &table, row).await?;
    }
    // After this batch's own deliveries are in: one made for an endpoint the batch then disabled (a
    // sibling's notice, when a grant's revocation disables several) is cancelled with the rest.
    insert_deliveries(&mut *conn, deliveries).await?;
    if !cancelled.is_empty() {
        let done = sqlx::query(
            "update webhook_deliveries set status = 'cancelled', completed_at = now(), lease_until = null
             where endpoint_id = any($1) and status = 'pending'",
        )
        .bind(&cancelled)
        .execute(&mut *conn)
        .await?;
        metrics::counter!("backoffice_webhook_deliveries_completed_total", "state" => "cancelled")
            .increment(done.rows_affected());
    }
    Ok(stale)
}

fn new_delivery(endpoint: &EndpointRow, event: PublicEvent) -> NewDelivery {
    let payload = event.envelope(endpoint.org_id, &endpoint.api_version);
    NewDelivery { org_id: endpoint.org_id, endpoint_id: endpoint.id, event, payload }
}

fn fold_endpoint(endpoints: &mut Vec<EndpointRow>, event: &RecordedEvent, decoded: &WebhookEndpointEvent) {
    use WebhookEndpointEvent as E;
    if let E::WebhookEndpointCreated(created) = decoded {
        endpoints.retain(|e| e.id != event.stream_id);
        endpoints.push(EndpointRow {
            org_id: event.org_id,
            id: event.stream_id,
            label: created.fields.label.clone(),
            url: created.fields.url.clone(),
            enabled_events: created.fields.enabled_events.clone(),
            api_version: created.fields.api_version.clone(),
            status: "active".into(),
            secret_nonce: created.secret.nonce.clone(),
            secret_ciphertext: created.secret.ciphertext.clone(),
            owner_credential_id: created.owner_credential_id,
            created_at: event.recorded_at,
            updated_at: event.recorded_at,
        });
        return;
    }
    let Some(row) = endpoints.iter_mut().find(|e| e.id == event.stream_id) else { return };
    match decoded {
        E::WebhookEndpointCreated(_) => {}
        E::WebhookEndpointUpdated(fields) => {
            row.label = fields.label.clone();
            row.url = fields.url.clone();
            row.enabled_events = fields.enabled_events.clone();
            row.api_version = fields.api_version.clone();
        }
        E::WebhookEndpointPaused => row.status = "paused".into(),
        E::WebhookEndpointResumed => row.status = "active".into(),
        E::WebhookEndpointDisabled(_) => row.status = "disabled".into(),
        E::WebhookEndpointSecretRotated(rotated) => {
            row.secret_nonce = rotated.secret.nonce.clone();
            row.secret_ciphertext = rotated.secret.ciphertext.clone();
        }
        // A test changes nothing visible on the endpoint.
        E::WebhookEndpointTestRequested(_) => return,
    }
    row.updated_at = event.recorded_at;
}

async fn upsert_endpoint(conn: &mut PgConnection, table: &str, row: &EndpointRow) -> Result<(), sqlx::Error> {
    let sql = format!(
        "insert into {table} ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         on conflict (org_id, id) do update set label = excluded.label, url = excluded.url,
             enabled_events = excluded.enabled_events, api_version = excluded.api_version, status = excluded.status,
             secret_nonce = excluded.secret_nonce, secret_ciphertext = excluded.secret_ciphertext,
             updated_at = excluded.updated_at"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(row.org_id)
        .bind(row.id)
        .bind(&row.label)
        .bind(&row.url)
        .bind(&row.enabled_events)
        .bind(&row.api_version)
        .bind(&row.status)
        .bind(&row.secret_nonce)
        .bind(&row.secret_ciphertext)
        .bind(row.owner_credential_id)
        .bind(row.created_at)
        .bind(row.updated_at)
        .execute(conn)
        .await?;
    Ok(())
}

async fn insert_deliveries(conn: &mut PgConnection, deliveries: Vec<NewDelivery>) -> Result<(), sqlx::Error> {
    Unnest::new(&deliveries)
        .column("id", |_| Uuid::now_v7())
        .column("org_id", |d| d.org_id)
        .column("endpoint_id", |d| d.endpoint_id)
        .column("event_id", |d| d.event.id)
        .column("event_type", |d| d.event.event_type.as_str())
        .column("payload", |d| d.payload.as_str())
        .column("is_test", |d| d.event.test)
        .execute(conn, "insert into webhook_deliveries", "on conflict (endpoint_id, event_id) do nothing")
        .await?;
    Ok(())
}

/// Reads for the API.
pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<EndpointRow>, sqlx::Error> {
    crate::row_by_id(pool, TABLE, COLUMNS, org_id, id).await
}

/// The endpoints visible to a credential (`owner`: the delegated grant, or none for API keys), in
/// creation order, after `after`.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    owner: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<EndpointRow>, sqlx::Error> {
    let sql = format!(
        "select {COLUMNS} from {TABLE} where org_id = $1 and owner_credential_id is not distinct from $2
           and ($3::uuid is null or id > $3) order by id limit $4"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(owner).bind(after).bind(limit).fetch_all(pool).await
}

/// One delivery with its attempts, for the endpoint's delivery history.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: String,
    pub attempts: i32,
    pub next_attempt_at: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub completed_at: Option<OffsetDateTime>,
    pub is_test: bool,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub delivery_id: Uuid,
    pub attempt: i32,
    pub started_at: OffsetDateTime,
    pub duration_ms: i32,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

/// An endpoint's deliveries, newest first, before `before` (a delivery id), with their attempts.
pub async fn deliveries(
    pool: &PgPool,
    endpoint_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> Result<(Vec<DeliveryRow>, Vec<AttemptRow>), sqlx::Error> {
    let rows: Vec<DeliveryRow> = sqlx::query_as(
        "select id, event_id, event_type, status, attempts, next_attempt_at, created_at, completed_at, is_test
         from webhook_deliveries where endpoint_id = $1 and ($2::uuid is null or id < $2)
         order by id desc limit $3",
    )
    .bind(endpoint_id)
    .bind(before)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let attempts: Vec<AttemptRow> = sqlx::query_as(
        "select delivery_id, attempt, started_at, duration_ms, status_code, error from webhook_attempts
         where delivery_id = any($1) order by delivery_id, attempt",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    Ok((rows, attempts))
}
