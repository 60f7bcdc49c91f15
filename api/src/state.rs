//! The gateway's shared state, and its two duties on the write path: forwarding a command to the
//! command workers over NATS, and waiting until the projections serving the resource reflect it.

use crate::cache::ReadCache;
use crate::http::auth::{Credentials, Principal};
use crate::http::cursor::CursorCodec;
use crate::http::error::ApiError;
use async_nats::RequestErrorKind;
use commands::protocol::{Command, CommandReply, CommandRequest};
use events::CommitKey;
use events::bus::Bus;
use futures::StreamExt;
use projections::progress::{Progress, ProgressTracker};
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long a command may take end to end in the worker.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

pub struct AppState {
    pub pool: PgPool,
    pub bus: Bus,
    pub progress: Arc<ProgressTracker>,
    pub reads: ReadCache,
    pub credentials: Credentials,
    pub cursors: CursorCodec,
    /// Longest wait for the read side after a write.
    pub read_wait: Duration,
    pub ready: AtomicBool,
}

/// An accepted command, as the gateway sees it.
pub struct Accepted {
    pub state: serde_json::Value,
    pub commit: Option<CommitKey>,
    pub created: bool,
}

impl AppState {
    pub async fn new(pool: PgPool, bus: Bus, read_wait: Duration) -> Result<Arc<Self>, sqlx::Error> {
        let cursor_key: Vec<u8> =
            sqlx::query_scalar("select value from service_settings where name = 'cursor_signing_key'")
                .fetch_one(&pool)
                .await?;
        Ok(Arc::new(Self {
            pool,
            bus,
            progress: Arc::new(ProgressTracker::default()),
            reads: ReadCache::default(),
            credentials: Credentials::default(),
            cursors: CursorCodec::new(cursor_key),
            read_wait,
            ready: AtomicBool::new(false),
        }))
    }

    /// Follows projector progress (and the invalidations it carries), and forgets the whole cache after
    /// any NATS disconnection, since invalidations may have been missed meanwhile.
    pub async fn follow_progress(self: &Arc<Self>) -> Result<(), async_nats::SubscribeError> {
        let mut updates = self.bus.client.subscribe(self.bus.progress_wildcard()).await?;
        let state = self.clone();
        tokio::spawn(async move {
            while let Some(message) = updates.next().await {
                if let Ok(progress) = serde_json::from_slice::<Progress>(&message.payload) {
                    state.reads.invalidate(&progress.invalidate);
                    state.progress.record(&progress);
                }
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
        idempotency_key: Option<String>,
        command: Command,
    ) -> Result<Accepted, ApiError> {
        if !self.bus.is_connected() {
            return Err(ApiError::unavailable("COMMANDS_UNAVAILABLE", "the service cannot take writes right now"));
        }
        let request = CommandRequest {
            org_id: principal.org_id,
            actor: principal.actor(),
            request_id: request_id.to_owned(),
            idempotency_key,
            command,
        };
        let payload = serde_json::to_vec(&request).map_err(|_| ApiError::internal())?;
        let message = self
            .bus
            .client
            .send_request(
                self.bus.command_subject(),
                async_nats::Request::new().payload(payload.into()).timeout(Some(COMMAND_TIMEOUT)),
            )
            .await
            .map_err(|error| {
                tracing::warn!(%error, "command request failed");
                match error.kind() {
                    RequestErrorKind::TimedOut => ApiError::unavailable(
                        "COMMAND_TIMEOUT",
                        "the write did not complete in time; read the resource before retrying",
                    ),
                    _ => ApiError::unavailable("COMMANDS_UNAVAILABLE", "the service cannot take writes right now"),
                }
            })?;
        let reply: CommandReply = serde_json::from_slice(&message.payload).map_err(|error| {
            tracing::error!(%error, "malformed command reply");
            ApiError::internal()
        })?;
        match reply {
            CommandReply::Accepted { commit, created, state } => Ok(Accepted { state, commit, created }),
            CommandReply::Rejected { rejection } => Err(ApiError::from_rejection(rejection)),
            CommandReply::Failed { retryable, message } => {
                tracing::warn!(%message, "command failed in the worker");
                let error = ApiError::internal();
                Err(if retryable { error } else { error.not_retryable() })
            }
        }
    }

    /// Waits until `projection` has applied the write at `commit` for `principal`'s organization.
    pub async fn await_read(
        &self,
        projection: &str,
        principal: &Principal,
        commit: Option<CommitKey>,
    ) -> Result<(), ApiError> {
        let Some(key) = commit else { return Ok(()) };
        if self.progress.wait_for(projection, principal.org_id, key, self.read_wait).await {
            Ok(())
        } else {
            tracing::warn!(projection, %key, "read side did not catch up in time");
            Err(ApiError::unavailable(
                "READ_MODEL_PENDING",
                "the change was recorded but is not readable yet; read the resource before retrying",
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
