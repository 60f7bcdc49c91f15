//! The document worker: renders pending documents into the store. Any number of workers may run (one
//! per projections process): each claims due rows with `FOR UPDATE SKIP LOCKED` and holds them
//! locked while it renders, so no document is rendered twice at once, and a worker that dies simply
//! releases its rows to the next. Rendering is CPU work, so it runs on tokio's blocking threads.
//!
//! A rendering that fails is retried after each wait of [`WorkerConfig::retry_schedule`]; once they
//! are used up the document is `failed` and retried every [`WorkerConfig::failed_retry`] for as long
//! as it stays so. Rendering is deterministic, so such a failure is a renderer bug or an input it
//! cannot print: the slow retries make a release that fixes the renderer heal every failed document
//! without an operator, and a new input (a corrected owner) is rendered at once.

use super::delivery_notes::DeliveryNoteDocument;
use super::{OwnerKind, VoucherDocument, render::render_delivery_note_pdf, render_pdf};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use uuid::Uuid;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Waits before the 2nd, 3rd... attempts of a failing document; after the last, it is `failed`.
    pub retry_schedule: Vec<Duration>,
    /// How often a `failed` document is tried again.
    pub failed_retry: Duration,
    /// Longest sleep between looks for due documents when nothing wakes the worker.
    pub poll: Duration,
    /// Documents claimed (and rendered in parallel) at once.
    pub batch: usize,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            retry_schedule: [5, 30, 120, 600, 1800].map(Duration::from_secs).to_vec(),
            failed_retry: Duration::from_secs(3600),
            poll: Duration::from_secs(5),
            batch: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

impl WorkerConfig {
    /// The state and wait after failed attempt number `attempt` (1 for the first).
    fn after_failure(&self, attempt: i32) -> (&'static str, Duration) {
        match usize::try_from(attempt).ok().and_then(|n| self.retry_schedule.get(n.checked_sub(1)?)) {
            Some(wait) => ("pending", *wait),
            None => ("failed", self.failed_retry),
        }
    }
}

/// Renders due documents forever with the production schedule: as soon as a projection that requests
/// documents ([`OwnerKind::requested_by`]) reports a batch that wrote something, from any process,
/// and otherwise every [`WorkerConfig::poll`] (retries fall due without an event).
pub async fn run(pool: PgPool, bus: events::bus::Bus) -> anyhow::Result<()> {
    let wake = Arc::new(Notify::new());
    let follower = tokio::spawn(wake_on_requests(&bus, wake.clone()).await?);
    run_with(pool, wake, WorkerConfig::default()).await;
    follower.abort();
    Ok(())
}

/// The task that notifies `wake` whenever a projection that requests documents wrote a batch.
async fn wake_on_requests(
    bus: &events::bus::Bus,
    wake: Arc<Notify>,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + use<>> {
    let requesters: Vec<crate::ProjectionId> = OwnerKind::ALL.iter().map(|kind| kind.requested_by()).collect();
    crate::progress::wake_on_change(bus, &requesters, wake).await
}

/// [`run`] with another configuration.
pub async fn run_with(pool: PgPool, wake: Arc<Notify>, config: WorkerConfig) {
    loop {
        match render_due(&pool, &config).await {
            // More may be due right away.
            Ok(rendered) if rendered > 0 => continue,
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot render documents"),
        }
        let _ = tokio::time::timeout(config.poll, wake.notified()).await;
    }
}

struct Claimed {
    org: Uuid,
    kind: String,
    id: Uuid,
    input: String,
    attempts: i32,
}

impl Claimed {
    /// `set` (an `update documents set …` from `$4` on) of this document's row, its owner bound as `$1`
    /// to `$3`: the caller binds the rest.
    fn update(&self, set: &str) -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let sql = format!("{set} where org_id = $1 and owner_kind = $2 and owner_id = $3");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(self.org).bind(&self.kind).bind(self.id)
    }
}

/// Claims up to `config.batch` due documents, renders them and records each outcome, all in one
/// transaction that holds their rows. Returns how many were claimed.
pub async fn render_due(pool: &PgPool, config: &WorkerConfig) -> Result<usize, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let claimed: Vec<(Uuid, String, Uuid, String, i32)> = sqlx::query_as(
        "select org_id, owner_kind, owner_id, input::text, attempts from documents
          where state <> 'ready' and next_attempt_at <= now()
          order by next_attempt_at
          limit $1
          for update skip locked",
    )
    .bind(i64::try_from(config.batch.max(1)).unwrap_or(1))
    .fetch_all(&mut *tx)
    .await?;
    if claimed.is_empty() {
        tx.commit().await?;
        return Ok(0);
    }
    let claimed: Vec<Claimed> = claimed
        .into_iter()
        .map(|(org, kind, id, input, attempts)| Claimed { org, kind, id, input, attempts })
        .collect();
    let renderings = claimed.iter().map(|document| {
        let (kind, input) = (document.kind.clone(), document.input.clone());
        tokio::task::spawn_blocking(move || render_stored(&kind, &input))
    });
    let outcomes = futures::future::join_all(renderings).await;
    let count = claimed.len();
    for (document, outcome) in claimed.into_iter().zip(outcomes) {
        let outcome = outcome.unwrap_or_else(|error| Err(format!("the renderer stopped: {error}")));
        let attempt = document.attempts.saturating_add(1);
        match outcome {
            Ok(pdf) => {
                document
                    .update(
                        "update documents set state = 'ready', content = $4, attempts = $5, last_error = null,
                                rendered_at = now(), updated_at = now()",
                    )
                    .bind(pdf)
                    .bind(attempt)
                    .execute(&mut *tx)
                    .await?;
            }
            Err(error) => {
                let (state, wait) = config.after_failure(attempt);
                tracing::warn!(
                    org.id = %document.org,
                    document.kind = %document.kind,
                    document.owner = %document.id,
                    attempt,
                    %error,
                    "document rendering failed"
                );
                document
                    .update(
                        "update documents set state = $4, attempts = $5, last_error = $6, updated_at = now(),
                                next_attempt_at = now() + make_interval(secs => $7::float8 / 1000)",
                    )
                    .bind(state)
                    .bind(attempt)
                    .bind(&error)
                    .bind(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX))
                    .execute(&mut *tx)
                    .await?;
            }
        }
    }
    tx.commit().await?;
    Ok(count)
}

/// Renders a stored input of an owner of `kind`; the error is what `last_error` keeps.
fn render_stored(kind: &str, input: &str) -> Result<Vec<u8>, String> {
    let unreadable = |error: serde_json::Error| format!("the stored input cannot be read: {error}");
    let rendered = if kind == OwnerKind::DeliveryNote.as_str() {
        render_delivery_note_pdf(&serde_json::from_str::<DeliveryNoteDocument>(input).map_err(unreadable)?)
    } else {
        render_pdf(&serde_json::from_str::<VoucherDocument>(input).map_err(unreadable)?)
    };
    rendered.map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::OwnerKind;
    use crate::documents::render::tests::text_of;
    use crate::documents::store::{self, DocumentState};
    use crate::documents::tests::sample;

    async fn wait_for(pool: &PgPool, org: Uuid, id: Uuid, wanted: DocumentState) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let state = store::state(pool, org, OwnerKind::Sale, id).await.expect("state");
            if state == wanted {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "the document stayed {state:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[sqlx::test(migrations = "../schema")]
    async fn a_pending_document_becomes_a_ready_pdf_with_the_cae_total_and_customer(pool: PgPool) {
        let wake = Arc::new(Notify::new());
        // A poll longer than the test: only the wake-up can make it render in time.
        let config = WorkerConfig { poll: Duration::from_secs(3600), ..WorkerConfig::default() };
        let worker = tokio::spawn(run_with(pool.clone(), wake.clone(), config));
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mut conn = pool.acquire().await.expect("connection");
        store::request(&mut conn, org, OwnerKind::Sale, id, &sample()).await.expect("request");
        wake.notify_one();
        wait_for(&pool, org, id, DocumentState::Ready).await;
        worker.abort();

        let pdf = store::content(&pool, org, OwnerKind::Sale, id).await.expect("content").expect("ready");
        assert!(pdf.starts_with(b"%PDF-"), "a PDF");
        let text = text_of(&pdf);
        assert!(text.contains("CAE Nº: 74123456789012"), "{text}");
        assert!(text.contains("$ 12.345,67"), "{text}");
        assert!(text.contains("José Peñalver Muñoz"), "{text}");
        let (attempts, error): (i32, Option<String>) =
            sqlx::query_as("select attempts, last_error from documents where owner_id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .expect("row");
        assert_eq!((attempts, error), (1, None));
    }

    #[sqlx::test(migrations = "../schema")]
    async fn the_progress_of_a_projection_that_requests_documents_wakes_the_worker(pool: PgPool) {
        let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
        let client = async_nats::connect(url).await.expect("NATS answers");
        let bus = events::bus::Bus::from_client(client, &format!("t{}", Uuid::now_v7().simple()));
        let wake = Arc::new(Notify::new());
        let follower = tokio::spawn(wake_on_requests(&bus, wake.clone()).await.expect("follows"));
        // A poll longer than the test: only the progress can make it render in time.
        let config = WorkerConfig { poll: Duration::from_secs(3600), ..WorkerConfig::default() };
        let worker = tokio::spawn(run_with(pool.clone(), wake, config));
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mut conn = pool.acquire().await.expect("connection");
        store::request(&mut conn, org, OwnerKind::Purchase, id, &sample()).await.expect("request");
        let progress = crate::progress::Progress {
            projection: OwnerKind::Purchase.requested_by(),
            partition: crate::Partition::WHOLE,
            key: events::CommitKey::ZERO,
            invalidate: Vec::new(),
            changed: true,
            heard_by: None,
        };
        let subject = bus.progress_subject(progress.projection.as_str());
        bus.client.publish(subject, serde_json::to_vec(&progress).expect("json").into()).await.expect("published");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while store::state(&pool, org, OwnerKind::Purchase, id).await.expect("state") != DocumentState::Ready {
            assert!(tokio::time::Instant::now() < deadline, "the progress did not wake the worker");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        worker.abort();
        follower.abort();
    }

    #[sqlx::test(migrations = "../schema")]
    async fn failures_back_off_then_fail_and_are_still_retried(pool: PgPool) {
        let config = WorkerConfig {
            retry_schedule: vec![Duration::ZERO],
            failed_retry: Duration::from_secs(3600),
            poll: Duration::from_secs(1),
            batch: 4,
        };
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mut bad = sample();
        bad.number = 1_000_000_000;
        let mut conn = pool.acquire().await.expect("connection");
        store::request(&mut conn, org, OwnerKind::Sale, id, &bad).await.expect("request");
        let row = |pool: PgPool| async move {
            let row: (String, i32, Option<String>, bool) = sqlx::query_as(
                "select state, attempts, last_error, next_attempt_at > now() + interval '50 minutes'
                   from documents where owner_id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("row");
            row
        };

        assert_eq!(render_due(&pool, &config).await.expect("first attempt"), 1);
        let (state, attempts, error, _) = row(pool.clone()).await;
        assert_eq!((state.as_str(), attempts), ("pending", 1));
        assert!(error.is_some_and(|e| e.contains("8 digits")));

        assert_eq!(render_due(&pool, &config).await.expect("second attempt"), 1);
        let (state, attempts, _, later) = row(pool.clone()).await;
        assert_eq!((state.as_str(), attempts, later), ("failed", 2, true));
        assert_eq!(store::state(&pool, org, OwnerKind::Sale, id).await.expect("state"), DocumentState::Failed);
        // Not due again before the slow schedule comes round.
        assert_eq!(render_due(&pool, &config).await.expect("nothing due"), 0);

        // Once due, a failed document is tried again, and a renderer that now succeeds heals it.
        sqlx::query("update documents set next_attempt_at = now(), input = $2 where owner_id = $1")
            .bind(id)
            .bind(sqlx::types::Json(sample()))
            .execute(&pool)
            .await
            .expect("due");
        assert_eq!(render_due(&pool, &config).await.expect("slow retry"), 1);
        let (state, attempts, error, _) = row(pool.clone()).await;
        assert_eq!((state.as_str(), attempts, error), ("ready", 3, None));
    }

    #[sqlx::test(migrations = "../schema")]
    async fn concurrent_workers_never_claim_the_same_document(pool: PgPool) {
        let config = WorkerConfig { batch: 1, ..WorkerConfig::default() };
        let org = Uuid::now_v7();
        let mut conn = pool.acquire().await.expect("connection");
        for _ in 0..6 {
            store::request(&mut conn, org, OwnerKind::Sale, Uuid::now_v7(), &sample()).await.expect("request");
        }
        let workers = (0..3).map(|_| {
            let (pool, config) = (pool.clone(), config.clone());
            tokio::spawn(async move {
                let mut rendered = 0;
                loop {
                    match render_due(&pool, &config).await.expect("renders") {
                        0 => return rendered,
                        n => rendered += n,
                    }
                }
            })
        });
        let rendered: usize = futures::future::join_all(workers).await.into_iter().map(|r| r.expect("worker")).sum();
        assert_eq!(rendered, 6, "each document rendered exactly once");
        let attempts: Vec<i32> = sqlx::query_scalar("select attempts from documents where state = 'ready'")
            .fetch_all(&pool)
            .await
            .expect("rows");
        assert_eq!(attempts, vec![1; 6]);
    }
}
