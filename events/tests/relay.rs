//! The relay against real Postgres and NATS: every committed event is published once, in commit order,
//! with its id as `Nats-Msg-Id`, across relay restarts.

use async_nats::jetstream::consumer;
use events::bus::{Bus, header_commit_key};
use events::catalogue::{CustomerEvent, CustomerFields};
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata};
use futures::StreamExt;
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

async fn bus() -> Bus {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let client = async_nats::connect(url).await.expect("NATS answers");
    Bus::from_client(client, &format!("t{}", Uuid::now_v7().simple()))
}

async fn append_customers(pool: &PgPool, org: Uuid, count: usize) {
    let mut conn = pool.acquire().await.expect("connection");
    for i in 0..count {
        let event =
            CustomerEvent::CustomerCreated(CustomerFields { name: format!("c{i}"), ..CustomerFields::default() });
        let stream = StreamRef { org_id: org, stream_type: "customer", stream_id: Uuid::now_v7(), expected_version: 0 };
        store::append(&mut conn, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("t"))
            .await
            .expect("append");
    }
}

/// Appends one customer creation and returns the id of the transaction that committed it.
async fn append_one(pool: &PgPool, org: Uuid, name: &str) -> i64 {
    let mut conn = pool.acquire().await.expect("connection");
    let event = CustomerEvent::CustomerCreated(CustomerFields { name: name.into(), ..CustomerFields::default() });
    let stream = StreamRef { org_id: org, stream_type: "customer", stream_id: Uuid::now_v7(), expected_version: 0 };
    let appended = store::append(&mut conn, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("t"))
        .await
        .expect("append");
    appended.key.transaction_id
}

async fn wait_for_messages(bus: &Bus, count: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let stream = bus.ensure_event_stream().await.expect("stream");
        let info = stream.get_info().await.expect("info");
        if info.state.messages >= count {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {} of {count} messages arrived", info.state.messages);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[sqlx::test(migrations = "../schema")]
async fn every_committed_event_is_published_once_in_commit_order(pool: PgPool) {
    let bus = bus().await;
    let org = Uuid::now_v7();
    append_customers(&pool, org, 30).await;
    let wake = events::relay::RelayWake::default();
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), wake.clone()));
    wait_for_messages(&bus, 30).await;

    // A restarted relay resumes where the stream ends, without republishing.
    relay.abort();
    let _ = relay.await;
    append_customers(&pool, org, 10).await;
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), wake));
    wait_for_messages(&bus, 40).await;

    let stream = bus.ensure_event_stream().await.expect("stream");
    let consumer = stream
        .create_consumer(consumer::pull::Config {
            deliver_policy: consumer::DeliverPolicy::All,
            ack_policy: consumer::AckPolicy::None,
            ..Default::default()
        })
        .await
        .expect("consumer");
    let mut messages = consumer.fetch().max_messages(100).messages().await.expect("fetch");
    let mut ids = Vec::new();
    let mut keys = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.expect("message");
        let headers = message.headers.as_ref().expect("headers");
        ids.push(headers.get(async_nats::header::NATS_MESSAGE_ID).expect("msg id").as_str().to_owned());
        keys.push(header_commit_key(Some(headers)).expect("commit key"));
        let event: events::RecordedEvent = serde_json::from_slice(&message.payload).expect("envelope");
        assert_eq!(event.event_id.to_string(), *ids.last().expect("id"));
        assert!(message.subject.starts_with(&format!("{}.events.{org}.customer.CustomerCreated", bus.prefix())));
    }
    let stored: Vec<(Uuid,)> = sqlx::query_as("select event_id from events order by transaction_id, position")
        .fetch_all(&pool)
        .await
        .expect("ids");
    let stored: Vec<String> = stored.into_iter().map(|(id,)| id.to_string()).collect();
    assert_eq!(ids, stored, "each event once, in commit order");
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// An event committed while an older transaction is still open is behind the read horizon when the
/// relay is woken for it. Nobody wakes the relay when the older transaction ends, and the writer may be
/// waiting for exactly that event: the relay must look again by itself, long before its idle poll.
#[sqlx::test(migrations = "../schema")]
async fn a_commit_held_behind_an_open_transaction_is_published_once_that_transaction_ends(pool: PgPool) {
    held_back_commit_is_published(pool, Waker::SameProcess).await;
}

/// The same when the commit happened in another process, whose wake-up comes over NATS.
#[sqlx::test(migrations = "../schema")]
async fn a_held_back_commit_announced_over_nats_is_published_once_the_older_transaction_ends(pool: PgPool) {
    held_back_commit_is_published(pool, Waker::OverNats).await;
}

enum Waker {
    SameProcess,
    OverNats,
}

async fn held_back_commit_is_published(pool: PgPool, waker: Waker) {
    let bus = bus().await;
    let org = Uuid::now_v7();
    let wake = events::relay::RelayWake::default();
    wake.listen(&bus).await.expect("listen");
    let relay = tokio::spawn(events::relay::run_relay_polling(
        pool.clone(),
        bus.clone(),
        wake.clone(),
        Duration::from_secs(3600),
    ));
    // Transaction ids and the read horizon are shared by every database of the server: another test's
    // open transaction can hold this first event back too, so it is announced the way workers do.
    let first = append_one(&pool, org, "first").await;
    wake.committed(first);
    wake.wake_local();
    wait_for_messages(&bus, 1).await;

    // An older transaction with an id holds the horizon back...
    let mut older = pool.begin().await.expect("begin");
    sqlx::query("select pg_current_xact_id()").execute(&mut *older).await.expect("xid");
    // ...while a newer one commits an event and wakes the relay, as the command worker does.
    let held = append_one(&pool, org, "held").await;
    let mut conn = pool.acquire().await.expect("connection");
    let woken_at: time::OffsetDateTime =
        sqlx::query_scalar("select clock_timestamp()").fetch_one(&mut *conn).await.expect("clock");
    match waker {
        Waker::SameProcess => {
            wake.committed(held);
            wake.wake_local();
        }
        Waker::OverNats => {
            bus.wake_relay(Some(held)).await;
            bus.client.flush().await.expect("flush");
        }
    }
    // The relay reads after the wake-up and finds nothing it may publish yet.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let read: bool = sqlx::query_scalar(
            "select exists(select 1 from pg_stat_activity
                           where datname = current_database() and query like '%e.data::text as data%'
                             and query_start > $1)",
        )
        .bind(woken_at)
        .fetch_one(&mut *conn)
        .await
        .expect("activity");
        if read {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the relay never read after the wake-up");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stream = bus.ensure_event_stream().await.expect("stream");
    assert_eq!(stream.get_info().await.expect("info").state.messages, 1, "held back while the older one is open");

    // The older transaction ends without waking anybody; the event still goes out.
    older.commit().await.expect("commit");
    wait_for_messages(&bus, 2).await;
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}
