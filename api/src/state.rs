//! The gateway's shared state, and its two duties on the write path: forwarding a command to the
//! command workers over NATS, and waiting until the projections serving the resource reflect it.

use crate::cache::ReadCache;
use crate::http::auth::{Credentials, Principal};
use crate::http::cursor::CursorCodec;
use crate::http::error::{ApiError, ErrorType};
use crate::http::links::DocumentKey;
use crate::ratelimit::RateLimiter;
use commands::client::{CommandClient, SendError};
use commands::protocol::{Command, CommandReply, CommandRequest, FailureCause, Idempotency};
use events::CommitKey;
use events::bus::Bus;
use futures::StreamExt;
use poem::http::StatusCode;
use projections::ProjectionId;
use projections::progress::{LocalProgress, Progress, ProgressTracker};
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub struct AppState {
    pub pool: PgPool,
    pub bus: Bus,
    /// Sends commands to the workers (batching them under load).
    pub commands: CommandClient,
    pub progress: Arc<ProgressTracker>,
    pub reads: ReadCache,
    pub credentials: Credentials,
    pub limiter: Arc<RateLimiter>,
    pub cursors: CursorCodec,
    /// Signs the public document links.
    pub documents: DocumentKey,
    /// Opens and seals webhook signing secrets.
    pub secrets: events::secrets::SecretBox,
    /// Longest wait for the read side after a write.
    pub read_wait: Duration,
    pub ready: AtomicBool,
}

/// An accepted command, as the gateway sees it.
pub struct Accepted {
    pub state: serde_json::Value,
    pub commit: Option<CommitKey>,
    pub created: bool,
    /// The stored outcome of an earlier request with the same idempotency key.
    pub replayed: bool,
    /// The last event of each stream type, for a write of several types (see [`Accepted::key_for`]).
    pub keys: Vec<commands::protocol::StreamKey>,
}

impl Accepted {
    /// What projection `id` must have passed for this write to be readable through it: the last event
    /// of the types it folds (none when it folds none of them), or `commit` for a write of one type.
    pub fn key_for(&self, id: ProjectionId) -> Option<CommitKey> {
        if self.keys.is_empty() {
            return self.commit;
        }
        let folds = projections::projection(id).folds();
        self.keys.iter().filter(|k| folds.includes(&k.stream_type)).map(|k| k.key).max()
    }
}

impl AppState {
    pub async fn new(pool: PgPool, bus: Bus, read_wait: Duration) -> Result<Arc<Self>, sqlx::Error> {
        let cursor_key: Vec<u8> =
            sqlx::query_scalar("select value from service_settings where name = 'cursor_signing_key'")
                .fetch_one(&pool)
                .await?;
        let documents = DocumentKey::load(&pool).await?;
        let secrets = events::secrets::SecretBox::load(&pool).await.map_err(|e| match e {
            events::secrets::LoadError::Database(e) => e,
            other => sqlx::Error::Configuration(Box::new(other)),
        })?;
        Ok(Arc::new(Self {
            secrets,
            pool,
            commands: CommandClient::start(bus.clone()),
            bus,
            progress: Arc::new(ProgressTracker::default()),
            reads: ReadCache::default(),
            credentials: Credentials::default(),
            limiter: Arc::new(RateLimiter::default()),
            cursors: CursorCodec::new(cursor_key),
            documents,
            read_wait,
            ready: AtomicBool::new(false),
        }))
    }

    /// Drops the cached reads `progress` made stale, then releases the writes it reaches.
    fn heard(&self, progress: &Progress) {
        self.reads.invalidate(&progress.invalidate);
        self.progress.record(progress);
    }

    /// Follows projector progress (and the invalidations it carries): this process's own projectors
    /// through `local`, every other one over the bus. Forgets the whole cache after any NATS
    /// disconnection, since invalidations may have been missed meanwhile.
    pub async fn follow_progress(self: &Arc<Self>, local: &LocalProgress) -> Result<(), async_nats::SubscribeError> {
        // Organization events (credentials issued or revoked, limits changed) drop what is cached about
        // the organization. Operator commands also announce such changes directly, so gateways react
        // even before the relay publishes the event.
        let organization_events = format!("{}.events.*.organization.>", self.bus.prefix());
        let mut changes = self.bus.client.subscribe(organization_events).await?;
        let mut announced = self.bus.client.subscribe(self.bus.credentials_changed_subject()).await?;
        let state = self.clone();
        tokio::spawn(async move {
            loop {
                let org = tokio::select! {
                    Some(message) = changes.next() => message.subject.split('.').nth_back(2).and_then(|o| o.parse().ok()),
                    Some(message) = announced.next() => std::str::from_utf8(&message.payload).ok().and_then(|o| o.parse().ok()),
                    else => break,
                };
                if let Some(org) = org {
                    state.credentials.forget(org).await;
                }
            }
        });
        self.limiter.share(&self.bus).await?;
        let mut updates = self.bus.client.subscribe(self.bus.progress_wildcard()).await?;
        let (state, heard) = (self.clone(), local.clone());
        tokio::spawn(async move {
            let mut warned = false;
            while let Some(message) = updates.next().await {
                match serde_json::from_slice::<Progress>(&message.payload) {
                    Ok(progress) if heard.already_heard(&progress) => {}
                    Ok(progress) => state.heard(&progress),
                    // A newer release's projector may name a projection or resource this build does
                    // not know; the invalidations it carried cannot be read, so forget everything.
                    // (Warned about once: during a rolling upgrade every batch would repeat it.)
                    Err(error) => {
                        if !std::mem::replace(&mut warned, true) {
                            tracing::warn!(subject = %message.subject, %error, "unreadable progress; cache cleared");
                        }
                        state.reads.invalidate_all();
                    }
                }
            }
        });
        let state = Arc::downgrade(self);
        local.listen(move |progress| {
            if let Some(state) = state.upgrade() {
                state.heard(progress);
            }
        });
        let state = self.clone();
        tokio::spawn(async move {
            let mut was_connected = true;
            loop {
                let connected = state.bus.is_connected();
                if !connected {
                    // Keep bumping the epoch so nothing read meanwhile is cached.
                    state.reads.invalidate_all();
                } else if !was_connected {
                    state.reads.invalidate_all();
                }
                was_connected = connected;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Ok(())
    }

    /// Sends a command to the command workers and returns their verdict.
    pub async fn dispatch(
        &self,
        principal: &Principal,
        request_id: &str,
        idempotency: Option<Idempotency>,
        command: Command,
    ) -> Result<Accepted, ApiError> {
        if !self.bus.is_connected() {
            return Err(ApiError::unavailable("COMMANDS_UNAVAILABLE", "the service cannot take writes right now"));
        }
        let request = CommandRequest {
            org_id: principal.org_id,
            actor: principal.actor(),
            request_id: request_id.to_owned(),
            idempotency,
            command,
        };
        let reply = self.commands.send(&request).await.map_err(|error| match error {
            SendError::TimedOut => ApiError::unavailable(
                "COMMAND_TIMEOUT",
                "the write did not complete in time; read the resource before retrying",
            ),
            SendError::Unavailable => {
                ApiError::unavailable("COMMANDS_UNAVAILABLE", "the service cannot take writes right now")
            }
            SendError::MalformedReply => ApiError::internal(),
        })?;
        match reply {
            CommandReply::Accepted { commit, created, state, replayed, keys } => {
                Ok(Accepted { state, commit, created, replayed, keys })
            }
            CommandReply::Rejected { rejection } => Err(ApiError::from_rejection(rejection)),
            CommandReply::Failed { cause, retryable, message } => Err(failure(cause, retryable, &message)),
        }
    }

    /// Waits until `projection` has applied the write at `commit` for `principal`'s organization.
    pub async fn await_read(
        &self,
        projection: ProjectionId,
        principal: &Principal,
        commit: Option<CommitKey>,
    ) -> Result<(), ApiError> {
        let Some(key) = commit else { return Ok(()) };
        let started = std::time::Instant::now();
        let caught_up = self.progress.wait_for(projection, principal.org_id, key, self.read_wait).await;
        metrics::histogram!("backoffice_read_wait_seconds", "projection" => projection.as_str())
            .record(started.elapsed().as_secs_f64());
        if caught_up {
            Ok(())
        } else {
            metrics::counter!("backoffice_read_wait_timeouts_total", "projection" => projection.as_str()).increment(1);
            tracing::warn!(projection = projection.as_str(), %key, "read side did not catch up in time");
            Err(ApiError::unavailable(
                "READ_MODEL_PENDING",
                "the change was recorded but is not readable yet: send it again with the same Idempotency-Key for \
                 its recorded answer, or read the resource before sending it again without one",
            )
            .not_retryable())
        }
    }
}

impl ApiError {
    pub fn not_retryable(mut self) -> Self {
        self.body.retryable = false;
        self
    }
}

/// The answer to a command that failed in the worker, by why it failed.
fn failure(cause: FailureCause, retryable: bool, message: &str) -> ApiError {
    match cause {
        FailureCause::StorageUnavailable => {
            tracing::warn!(%message, "the worker could not reach the event store");
            ApiError::unavailable(
                "STORAGE_UNAVAILABLE",
                "the write could not be recorded right now and nothing was written; retry later",
            )
        }
        FailureCause::Contended => {
            tracing::warn!(%message, "other writes to the same resource kept committing first");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorType::ApiError,
                "WRITE_CONTENDED",
                "other writes to this resource kept getting there first and nothing was written; retry",
            )
            .retryable()
        }
        FailureCause::Internal => {
            tracing::warn!(%message, "command failed in the worker");
            let error = ApiError::internal();
            if retryable { error } else { error.not_retryable() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_answer_by_their_cause() {
        let contended = failure(FailureCause::Contended, true, "retries ran out");
        assert_eq!(contended.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(contended.body.code, "WRITE_CONTENDED");
        assert!(contended.body.retryable);
        let unavailable = failure(FailureCause::StorageUnavailable, true, "connection refused");
        assert_eq!(unavailable.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(unavailable.body.code, "STORAGE_UNAVAILABLE");
        let internal = failure(FailureCause::Internal, false, "bug");
        assert_eq!(internal.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!internal.body.retryable);
    }

    #[test]
    fn a_cause_this_release_does_not_know_reads_as_internal() {
        let reply: CommandReply =
            serde_json::from_str(r#"{"outcome":"failed","retryable":true,"message":"m","cause":"something_new"}"#)
                .expect("reply");
        assert!(matches!(reply, CommandReply::Failed { cause: FailureCause::Internal, .. }));
    }
}
