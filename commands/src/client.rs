//! The gateway's side of the command protocol: sends each command to the `commands` queue group over
//! NATS request/reply and returns the worker's reply.
//!
//! Commands that batch well (see `Command::batches_well`) go through one sender per process that keeps
//! at most [`MAX_IN_FLIGHT`] request outstanding (unless it has been out for [`STALL`]). While it is out,
//! newly arriving commands queue; the next request carries everything queued (up to [`MAX_BATCH`]) on the
//! batch subject, and one reply lists every outcome. Unloaded, a command leaves at once, alone, as a plain request; under load, the
//! NATS round trip (two messages through the server, two wake-ups of each side) is paid once per batch
//! instead of once per command. Other commands always travel alone, so a long one never holds back the
//! replies of short ones.

use crate::protocol::{CommandBatchReply, CommandReply, CommandRequest};
use async_nats::RequestErrorKind;
use events::bus::Bus;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How long a request may take end to end in the worker.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// Batched requests outstanding at once, per process, while their replies come back promptly.
pub const MAX_IN_FLIGHT: usize = 1;
/// A batch outstanding this long no longer holds the next one back: a worker that died or stalls with a
/// batch delays the commands queued behind it by this much, not by the request timeout.
pub const STALL: Duration = Duration::from_millis(10);
/// Most commands one batch carries.
pub const MAX_BATCH: usize = 32;
/// Most bytes of commands one batch carries, well under the bus's message limit; a larger command
/// leaves alone.
pub const MAX_BATCH_BYTES: usize = 256 * 1024;

/// Why a command got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("no command worker replied in time")]
    TimedOut,
    #[error("no command worker is reachable")]
    Unavailable,
    #[error("the command worker's reply could not be read")]
    MalformedReply,
}

/// A command waiting for the sender, already serialized by its caller.
struct Queued {
    payload: Vec<u8>,
    done: oneshot::Sender<Result<CommandReply, SendError>>,
}

#[derive(Clone)]
pub struct CommandClient {
    bus: Bus,
    queue: mpsc::UnboundedSender<Queued>,
}

impl CommandClient {
    /// Starts the batching sender on the current runtime.
    pub fn start(bus: Bus) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(send_batches(bus.clone(), pending));
        Self { bus, queue }
    }

    /// Sends `request` to the command workers and waits for their reply.
    pub async fn send(&self, request: &CommandRequest) -> Result<CommandReply, SendError> {
        let payload = serde_json::to_vec(request).map_err(|_| SendError::MalformedReply)?;
        if !request.command.batches_well() {
            return send_one(&self.bus, payload).await;
        }
        let (done, reply) = oneshot::channel();
        if self.queue.send(Queued { payload, done }).is_err() {
            return Err(SendError::Unavailable);
        }
        reply.await.unwrap_or(Err(SendError::Unavailable))
    }
}

/// Takes queued commands as request slots free up: everything queued meanwhile leaves in one batch.
///
/// The requests in flight are futures of this very task rather than tasks of their own: the reply that
/// frees a slot wakes this task, which hands out the outcomes and sends the next batch in the same turn
/// (spawned senders cost two more trips through the runtime's queue on every batch's way out).
async fn send_batches(bus: Bus, mut pending: mpsc::UnboundedReceiver<Queued>) {
    // Each request in flight yields, when answered, whether it held a slot.
    let mut in_flight = FuturesUnordered::new();
    let mut slots_used = 0;
    // The first command of the next batch, and when it started waiting for a slot.
    let mut waiting: Option<(Queued, Instant)> = None;
    // A command that would have made the last batch too large starts the next one.
    let mut carried: Option<Queued> = None;
    let mut closed = false;
    loop {
        if waiting.is_none()
            && let Some(queued) = carried.take()
        {
            waiting = Some((queued, Instant::now()));
        }
        // Without a slot after `STALL`, the batch leaves anyway (and frees nothing when it is answered).
        let stalled = waiting.as_ref().is_some_and(|(_, since)| since.elapsed() >= STALL);
        if let Some((first, _)) = waiting.take_if(|_| slots_used < MAX_IN_FLIGHT || stalled) {
            let holds_slot = slots_used < MAX_IN_FLIGHT;
            slots_used += usize::from(holds_slot);
            let batch = fill_batch(first, &mut pending, &mut carried);
            let bus = bus.clone();
            in_flight.push(async move {
                send_queued(&bus, batch).await;
                holds_slot
            });
            continue;
        }
        if closed && waiting.is_none() && in_flight.is_empty() {
            return;
        }
        let stall_at = waiting.as_ref().map(|(_, since)| *since + STALL);
        tokio::select! {
            Some(held) = in_flight.next(), if !in_flight.is_empty() => slots_used -= usize::from(held),
            received = pending.recv(), if waiting.is_none() && !closed => match received {
                Some(queued) => waiting = Some((queued, Instant::now())),
                None => closed = true,
            },
            () = tokio::time::sleep_until(stall_at.unwrap_or_else(Instant::now)), if stall_at.is_some() => {}
        }
    }
}

/// The batch `first` starts: everything queued behind it, up to [`MAX_BATCH`] commands and
/// [`MAX_BATCH_BYTES`]; the command that would pass the byte limit is carried to the next batch.
fn fill_batch(
    first: Queued,
    pending: &mut mpsc::UnboundedReceiver<Queued>,
    carried: &mut Option<Queued>,
) -> Vec<Queued> {
    let mut bytes = first.payload.len();
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match pending.try_recv() {
            Ok(queued) if bytes + queued.payload.len() > MAX_BATCH_BYTES => {
                *carried = Some(queued);
                break;
            }
            Ok(queued) => {
                bytes += queued.payload.len();
                batch.push(queued);
            }
            Err(_) => break,
        }
    }
    batch
}

/// Sends a batch: a single command as a plain request, several as one batch request.
async fn send_queued(bus: &Bus, mut batch: Vec<Queued>) {
    if batch.len() == 1 {
        let Queued { payload, done } = batch.pop().expect("one command");
        let _ = done.send(send_one(bus, payload).await);
    } else {
        send_batch(bus, batch).await;
    }
}

/// Sends one command as a plain request.
async fn send_one(bus: &Bus, payload: Vec<u8>) -> Result<CommandReply, SendError> {
    let message = request(bus, bus.command_subject(), payload).await.map_err(send_error)?;
    serde_json::from_slice(&message.payload).map_err(|error| {
        tracing::error!(%error, "malformed command reply");
        SendError::MalformedReply
    })
}

/// Sends several commands as one request on the batch subject and hands each its outcome.
async fn send_batch(bus: &Bus, batch: Vec<Queued>) {
    // The payloads are complete JSON documents: the batch is spliced from them, not serialized again.
    let mut body = Vec::with_capacity(batch.iter().map(|q| q.payload.len() + 1).sum::<usize>() + 16);
    body.extend_from_slice(b"{\"requests\":[");
    for (i, queued) in batch.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&queued.payload);
    }
    body.extend_from_slice(b"]}");
    let outcome = match request(bus, bus.command_batch_subject(), body).await {
        Ok(message) => serde_json::from_slice::<CommandBatchReply>(&message.payload)
            .ok()
            .filter(|reply| reply.replies.len() == batch.len())
            .map(|reply| reply.replies)
            .ok_or_else(|| {
                tracing::error!(commands = batch.len(), "malformed command batch reply");
                SendError::MalformedReply
            }),
        // Workers that predate batches do not listen on the batch subject: each command goes alone.
        Err(RequestErrorKind::NoResponders) => {
            let sent = futures::future::join_all(batch.into_iter().map(|Queued { payload, done }| async move {
                let _ = done.send(send_one(bus, payload).await);
            }));
            sent.await;
            return;
        }
        Err(error) => Err(send_error(error)),
    };
    match outcome {
        Ok(replies) => {
            for (queued, reply) in batch.into_iter().zip(replies) {
                let _ = queued.done.send(Ok(reply));
            }
        }
        Err(error) => {
            for queued in batch {
                let _ = queued.done.send(Err(error));
            }
        }
    }
}

async fn request(bus: &Bus, subject: String, payload: Vec<u8>) -> Result<async_nats::Message, RequestErrorKind> {
    bus.client
        .send_request(subject, async_nats::Request::new().payload(payload.into()).timeout(Some(COMMAND_TIMEOUT)))
        .await
        .map_err(|error| {
            tracing::warn!(%error, "command request failed");
            error.kind()
        })
}

fn send_error(kind: RequestErrorKind) -> SendError {
    match kind {
        RequestErrorKind::TimedOut => SendError::TimedOut,
        _ => SendError::Unavailable,
    }
}
