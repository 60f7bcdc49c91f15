//! The gateway's command sender against stand-in workers on a real NATS server: batches form behind
//! an outstanding request, a stalled request holds nothing back for long, each caller gets its own
//! reply, and workers that take no batches still get every command, one by one.

use crate::helpers::nats_url;
use async_nats::Subscriber;
use commands::client::{CommandClient, STALL, SendError};
use commands::contacts::CustomerCommand;
use commands::protocol::{Actor, Command, CommandBatch, CommandBatchReply, CommandReply, CommandRequest};
use events::bus::Bus;
use events::catalogue::CustomerFields;
use futures::StreamExt;
use std::time::Duration;
use uuid::Uuid;

async fn bus() -> Bus {
    let bus = Bus::connect(&nats_url(), &format!("t{}", Uuid::now_v7().simple()), "test").await.expect("NATS");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !bus.is_connected() {
        assert!(tokio::time::Instant::now() < deadline, "NATS did not answer");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bus
}

/// A command that batches well, told apart by its request id.
fn request(n: usize) -> CommandRequest {
    named(n, format!("Cliente {n}"))
}

/// A command of about 100 KiB.
fn large_request(n: usize) -> CommandRequest {
    named(n, "x".repeat(100 * 1024))
}

fn named(n: usize, name: String) -> CommandRequest {
    let fields = CustomerFields { name, ..CustomerFields::default() };
    let command = Command::Customer(CustomerCommand::Create { id: Uuid::now_v7(), fields });
    assert!(command.batches_well());
    CommandRequest {
        org_id: Uuid::now_v7(),
        actor: Actor { name: "admin".into(), credential_id: None },
        request_id: format!("req_{n}"),
        idempotency: None,
        command,
    }
}

/// The stand-in worker's reply: it names the request it answers.
fn echo(request: &CommandRequest) -> CommandReply {
    CommandReply::Failed { retryable: false, message: request.request_id.clone(), cause: Default::default() }
}

fn echoed(reply: &CommandReply) -> &str {
    match reply {
        CommandReply::Failed { message, .. } => message,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// The caller's view: `n` requests sent at once (they queue in one poll, before the sender runs again on
/// this single-threaded runtime), each answered with its own id.
async fn send_all(client: &CommandClient, range: std::ops::Range<usize>) {
    send_all_of(client, range, request).await
}

async fn send_all_of(client: &CommandClient, range: std::ops::Range<usize>, make: fn(usize) -> CommandRequest) {
    let sent = futures::future::join_all(range.clone().map(|n| {
        let client = client.clone();
        async move { (n, client.send(&make(n)).await) }
    }))
    .await;
    for (n, reply) in sent {
        let reply = reply.unwrap_or_else(|error| panic!("request {n}: {error}"));
        assert_eq!(echoed(&reply), format!("req_{n}"), "request {n} got another request's reply");
    }
}

/// A stand-in worker listening on both subjects, and a client whose first request (`req_0`) reached it
/// and is never answered: everything sent next queues behind it.
async fn stalled_first()
-> (Bus, Subscriber, Subscriber, CommandClient, tokio::task::JoinHandle<Result<CommandReply, SendError>>) {
    let bus = bus().await;
    let mut singles = bus.client.queue_subscribe(bus.command_subject(), "commands".into()).await.expect("sub");
    let batches = bus.client.queue_subscribe(bus.command_batch_subject(), "commands".into()).await.expect("sub");
    bus.client.flush().await.expect("flush");
    let client = CommandClient::start(bus.clone());
    // The first command leaves alone, as a plain request.
    let stalled = tokio::spawn({
        let client = client.clone();
        async move { client.send(&request(0)).await }
    });
    let first = singles.next().await.expect("the first request");
    assert_eq!(decode(&first).request_id, "req_0");
    (bus, singles, batches, client, stalled)
}

fn decode(message: &async_nats::Message) -> CommandRequest {
    serde_json::from_slice(&message.payload).expect("a single request")
}

/// Answers a single request with its echo.
async fn answer(bus: &Bus, message: async_nats::Message, request: &CommandRequest) {
    let body = serde_json::to_vec(&echo(request)).expect("reply");
    bus.client.publish(message.reply.expect("reply subject"), body.into()).await.expect("publish");
}

/// Answers a batch with the echo of each request; returns their ids in the batch's order.
async fn answer_batch(bus: &Bus, message: async_nats::Message) -> Vec<String> {
    assert!(message.subject.ends_with(".commands.batch"));
    let batch: CommandBatch = serde_json::from_slice(&message.payload).expect("a batch");
    let replies = batch.requests.iter().map(echo).collect();
    let body = serde_json::to_vec(&CommandBatchReply { replies }).expect("reply");
    bus.client.publish(message.reply.expect("reply subject"), body.into()).await.expect("publish");
    batch.requests.into_iter().map(|r| r.request_id).collect()
}

#[tokio::test]
async fn commands_queued_behind_a_stalled_request_leave_together_and_get_their_own_replies() {
    let (bus, _singles, mut batches, client, stalled) = stalled_first().await;
    // Everything queued behind it leaves together once it has been out for `STALL`.
    let worker = tokio::spawn(async move { answer_batch(&bus, batches.next().await.expect("a batch")).await });
    let started = tokio::time::Instant::now();
    send_all(&client, 1..9).await;
    let waited = started.elapsed();
    let batched = tokio::time::timeout(Duration::from_secs(10), worker).await.expect("a batch came").expect("worker");
    assert_eq!(batched, (1..9).map(|n| format!("req_{n}")).collect::<Vec<_>>(), "one batch, in order");
    assert!(waited >= STALL, "the batch waited for the stalled request first");
    assert!(!stalled.is_finished(), "the stalled request still waits for its worker");
    stalled.abort();
}

#[tokio::test]
async fn workers_that_take_no_batches_get_every_command_one_by_one() {
    let bus = bus().await;
    // A worker of an earlier release: it listens on the single-command subject only. It holds the first
    // request until the eight queued behind it have come, one by one.
    let mut singles = bus.client.queue_subscribe(bus.command_subject(), "commands".into()).await.expect("sub");
    bus.client.flush().await.expect("flush");
    let (holding, held_first) = tokio::sync::oneshot::channel();
    let worker = {
        let bus = bus.clone();
        let mut holding = Some(holding);
        tokio::spawn(async move {
            let mut held = None;
            let mut answered = 0;
            while answered < 9 {
                let message = singles.next().await.expect("a request");
                let request = decode(&message);
                if request.request_id == "req_0" {
                    held = Some((message, request));
                    let _ = holding.take().expect("one first request").send(());
                    continue;
                }
                answer(&bus, message, &request).await;
                answered += 1;
                if answered == 8 {
                    let (message, request) = held.take().expect("the first request came first");
                    answer(&bus, message, &request).await;
                    answered += 1;
                }
            }
        })
    };
    let client = CommandClient::start(bus.clone());
    let first = tokio::spawn({
        let client = client.clone();
        async move { client.send(&request(0)).await }
    });
    // Once the worker holds the first, the others queue behind it and leave as a batch nobody takes.
    tokio::time::timeout(Duration::from_secs(10), held_first).await.expect("in time").expect("held");
    send_all(&client, 1..9).await;
    let reply = first.await.expect("task").expect("the first request's reply");
    assert_eq!(echoed(&reply), "req_0");
    tokio::time::timeout(Duration::from_secs(10), worker).await.expect("every request came").expect("worker");
}

#[tokio::test]
async fn a_batch_stays_under_its_byte_limit_and_the_rest_follows() {
    const {
        assert!(
            2 * 100 * 1024 < commands::client::MAX_BATCH_BYTES && 3 * 100 * 1024 > commands::client::MAX_BATCH_BYTES
        )
    };
    let (bus, mut singles, mut batches, client, stalled) = stalled_first().await;
    // Three commands of 100 KiB queue behind it: two fit in a batch, the third leaves after them, alone.
    let worker = tokio::spawn(async move {
        let batched = answer_batch(&bus, batches.next().await.expect("a batch")).await;
        let message = singles.next().await.expect("the third");
        let request = decode(&message);
        answer(&bus, message, &request).await;
        (batched, request.request_id)
    });
    send_all_of(&client, 1..4, large_request).await;
    let (batched, alone) =
        tokio::time::timeout(Duration::from_secs(10), worker).await.expect("both came").expect("worker");
    assert_eq!(batched, ["req_1", "req_2"]);
    assert_eq!(alone, "req_3");
    stalled.abort();
}
