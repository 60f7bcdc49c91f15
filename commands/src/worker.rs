//! The command worker: takes commands from the NATS queue group, runs each in one Postgres transaction
//! (load state, pure decide, append with optimistic concurrency, write-model rows, commit) and replies.

use crate::aggregate::{Aggregate, Rejection};
use crate::customer::{Customer, CustomerCommand};
use crate::protocol::{Command, CommandReply, CommandRequest, QUEUE_GROUP};
use events::bus::Bus;
use events::store::{self, AppendError, StreamRef};
use events::{CommitKey, EventPayload, Metadata};
use futures::StreamExt;
use serde::Serialize;
use sqlx::PgPool;
use std::sync::Arc;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// How many times a command is re-decided after losing an optimistic-concurrency race.
const CONFLICT_RETRIES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error("the outcome could not be stored: {0}")]
    Storage(#[from] sqlx::Error),
    #[error("stored events of stream {0} could not be decoded: {1}")]
    Corrupt(Uuid, String),
    #[error("gave up after repeated concurrent updates of stream {0}")]
    Contended(Uuid),
}

/// The result of a command that was accepted.
#[derive(Debug, Clone)]
pub struct Executed<A> {
    pub state: A,
    pub commit: Option<CommitKey>,
    pub created: bool,
}

/// Runs a command against one aggregate instance: load, decide, and append atomically with optimistic
/// concurrency (one statement, so nothing is half-written).
///
/// `is_creation` skips loading the stream for commands that start a new one with a fresh id.
pub async fn execute<A>(
    pool: &PgPool,
    org_id: Uuid,
    stream_id: Uuid,
    command: &A::Command,
    is_creation: bool,
    metadata: &Metadata,
) -> Result<Executed<A>, ExecuteError>
where
    A: Aggregate + WithId,
{
    for _ in 0..CONFLICT_RETRIES {
        // No transaction is held while deciding: the append below is one statement that only succeeds
        // if the stream is still at the version the decision was based on.
        let (state, version) = if is_creation {
            (None, 0)
        } else {
            let mut conn = pool.acquire().await?;
            let stored = store::load_stream(&mut conn, org_id, stream_id).await?;
            drop(conn);
            let version = stored.last().map(|e| e.version).unwrap_or(0);
            let mut state: Option<A> = None;
            for event in &stored {
                let decoded = A::Event::decode(&event.event_type, event.schema_version, event.data.clone())
                    .map_err(|e| ExecuteError::Corrupt(stream_id, e.to_string()))?;
                state = A::evolve(state, &decoded, event.recorded_at);
            }
            (state.map(|s| s.with_id(stream_id)), version)
        };
        let decided = A::decide(state.as_ref(), command)?;
        if decided.is_empty() {
            let state = state.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?;
            return Ok(Executed { state, commit: None, created: false });
        }
        let new_events: Vec<_> = decided.iter().map(EventPayload::to_new_event).collect();
        let stream = StreamRef { org_id, stream_type: A::Event::STREAM_TYPE, stream_id, expected_version: version };
        let mut conn = pool.acquire().await?;
        match store::append(&mut conn, stream, &new_events, metadata).await {
            Ok(appended) => {
                let created = state.is_none();
                let mut next = state;
                for event in &decided {
                    next = A::evolve(next, event, appended.recorded_at);
                }
                let state = next.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?.with_id(stream_id);
                return Ok(Executed { state, commit: Some(appended.key), created });
            }
            Err(AppendError::Conflict { .. }) if is_creation => {
                return Err(Rejection::conflict("ALREADY_EXISTS", "a resource with this id already exists").into());
            }
            Err(AppendError::Conflict { .. }) => continue,
            Err(AppendError::Database(e)) => return Err(e.into()),
        }
    }
    Err(ExecuteError::Contended(stream_id))
}

/// Aggregates learn their id from the stream they live in.
pub trait WithId {
    fn with_id(self, id: Uuid) -> Self;
}

impl WithId for Customer {
    fn with_id(self, id: Uuid) -> Self {
        Customer { id, ..self }
    }
}

/// Executes one request and turns the outcome into a reply.
pub async fn handle(pool: &PgPool, request: CommandRequest) -> CommandReply {
    let metadata = Metadata {
        actor: request.actor.name.clone(),
        credential_id: request.actor.credential_id,
        request_id: Some(request.request_id.clone()),
        idempotency_key: request.idempotency_key.clone(),
        ..Metadata::default()
    };
    let result = match &request.command {
        Command::Customer(command) => {
            let is_creation = matches!(command, CustomerCommand::CreateCustomer { .. });
            execute::<Customer>(pool, request.org_id, command.customer_id(), command, is_creation, &metadata)
                .await
                .map(accepted)
        }
    };
    match result {
        Ok(reply) => reply,
        Err(ExecuteError::Rejected(rejection)) => CommandReply::Rejected { rejection },
        Err(error) => {
            tracing::error!(org.id = %request.org_id, request.id = %request.request_id, %error, "command failed");
            let retryable = matches!(error, ExecuteError::Storage(_) | ExecuteError::Contended(_));
            CommandReply::Failed { retryable, message: "the command could not be completed".into() }
        }
    }
}

fn accepted<A: Serialize>(executed: Executed<A>) -> CommandReply {
    CommandReply::Accepted {
        commit: executed.commit,
        created: executed.created,
        state: serde_json::to_value(&executed.state).unwrap_or(serde_json::Value::Null),
    }
}

/// Serves the `commands` queue group until the subscription ends. Each request runs on its own task,
/// at most `concurrency` at once; after a commit the relay is woken.
pub async fn run(pool: PgPool, bus: Bus, concurrency: usize) -> Result<(), async_nats::SubscribeError> {
    let mut subscription = bus.client.queue_subscribe(bus.command_subject(), QUEUE_GROUP.to_owned()).await?;
    let permits = Arc::new(Semaphore::new(concurrency));
    while let Some(message) = subscription.next().await {
        let Ok(permit) = permits.clone().acquire_owned().await else { break };
        let pool = pool.clone();
        let bus = bus.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let reply = match serde_json::from_slice::<CommandRequest>(&message.payload) {
                Ok(request) => handle(&pool, request).await,
                Err(error) => CommandReply::Failed { retryable: false, message: format!("malformed command: {error}") },
            };
            if matches!(reply, CommandReply::Accepted { commit: Some(_), .. }) {
                bus.wake_relay().await;
            }
            if let Some(reply_to) = message.reply {
                let body = serde_json::to_vec(&reply).unwrap_or_default();
                if let Err(error) = bus.client.publish(reply_to, body.into()).await {
                    tracing::warn!(%error, "could not send a command reply");
                }
            }
        });
    }
    Ok(())
}
