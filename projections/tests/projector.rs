//! Projectors against real Postgres and NATS: checkpoints make redelivery harmless, partitions split
//! organizations, and a rebuild (even under traffic) yields the same reads.

use events::bus::Bus;
use events::catalogue::{CustomerEvent, CustomerFields, SupplierEvent, TagEvent, TagFields};
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata, RecordedEvent};
use futures::StreamExt;
use futures::future::BoxFuture;
use projections::customers::CUSTOMERS;
use projections::progress::{LocalProgress, Progress};
use projections::runtime::{ConsumerFilter, consumer_filter};
use projections::{Folds, Partition, Projection, ProjectionId, StreamType};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

async fn bus() -> Bus {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let client = async_nats::connect(url).await.expect("NATS answers");
    Bus::from_client(client, &format!("t{}", Uuid::now_v7().simple()))
}

fn fields(name: &str) -> CustomerFields {
    CustomerFields { name: name.into(), ..CustomerFields::default() }
}

async fn append(pool: &PgPool, org: Uuid, id: Uuid, version: i32, event: CustomerEvent) {
    let mut conn = pool.acquire().await.expect("connection");
    let stream = StreamRef { org_id: org, stream_type: "customer", stream_id: id, expected_version: version };
    store::append(&mut conn, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("t"))
        .await
        .expect("append");
}

/// Every committed event, once the commit horizon (which other tests' transactions can hold back for a
/// moment) has passed all `count` of them.
async fn all_events(pool: &PgPool, count: usize) -> Vec<RecordedEvent> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events =
            events::follower::read_committed_after(pool, events::CommitKey::ZERO, 100_000).await.expect("read");
        if events.len() >= count {
            return events;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {} of {count} events visible", events.len());
        tokio::task::yield_now().await;
    }
}

/// A relay and the whole customers projection on `bus`, as one process running both has them.
fn start_customers(pool: &PgPool, bus: &Bus, local: LocalProgress) -> (JoinHandle<()>, JoinHandle<()>) {
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), Default::default()));
    let projector = tokio::spawn(projections::runtime::run(
        pool.clone(),
        bus.clone(),
        Arc::new(CUSTOMERS),
        Partition::WHOLE,
        local,
    ));
    (relay, projector)
}

async fn customers(pool: &PgPool) -> Vec<(Uuid, Uuid, String)> {
    sqlx::query_as("select org_id, id, name from customers_view order by org_id, id")
        .fetch_all(pool)
        .await
        .expect("rows")
}

async fn wait_for_count(pool: &PgPool, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let rows = customers(pool).await.len();
        if rows >= count {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {rows} of {count} customers projected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_redelivered_event_has_no_second_effect(pool: PgPool) {
    let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
    append(&pool, org, id, 0, CustomerEvent::CustomerCreated(fields("Ana"))).await;
    append(&pool, org, id, 1, CustomerEvent::CustomerReplaced(fields("Bea"))).await;
    let events = all_events(&pool, 2).await;
    let mut conn = pool.acquire().await.expect("connection").detach();
    let projection = CUSTOMERS;
    let stale = projections::runtime::apply_batch(&mut conn, &projection, &events).await.expect("apply");
    assert_eq!(stale.len(), 1);
    // The creation arrives again (a redelivery): it must not bring the old name back.
    let again = projections::runtime::apply_batch(&mut conn, &projection, &events[..1]).await.expect("apply");
    assert!(again.is_empty(), "nothing was applied the second time");
    assert_eq!(customers(&pool).await, vec![(org, id, "Bea".to_owned())]);
}

#[sqlx::test(migrations = "../schema")]
async fn partitions_share_the_organizations_and_a_rebuild_yields_the_same_reads(pool: PgPool) {
    let bus = bus().await;
    let orgs: Vec<Uuid> = (0..6).map(|_| Uuid::now_v7()).collect();
    let wake = events::relay::RelayWake::default();
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), wake));
    let projection: Arc<dyn Projection> = Arc::new(CUSTOMERS);
    let partitions: Vec<_> = (0..2)
        .map(|index| {
            tokio::spawn(projections::runtime::run(
                pool.clone(),
                bus.clone(),
                projection.clone(),
                Partition { index, count: 2 },
                LocalProgress::default(),
            ))
        })
        .collect();
    let mut expected = 0;
    for (n, org) in orgs.iter().enumerate() {
        for i in 0..5 {
            let id = Uuid::now_v7();
            append(&pool, *org, id, 0, CustomerEvent::CustomerCreated(fields(&format!("{n}-{i}")))).await;
            if i % 2 == 0 {
                append(&pool, *org, id, 1, CustomerEvent::CustomerReplaced(fields(&format!("{n}-{i}-renamed")))).await;
            }
            expected += 1;
        }
    }
    wait_for_count(&pool, expected).await;
    let checkpoints: i64 =
        sqlx::query_scalar("select count(*) from projection_checkpoints where projection = 'customers'")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(checkpoints, orgs.len() as i64, "one checkpoint per organization");

    // Wait until renames have landed too: compare with a fold of the store.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let live = loop {
        let rows = customers(&pool).await;
        if rows.iter().filter(|r| r.2.ends_with("renamed")).count() == orgs.len() * 3 {
            break rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "renames not projected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    // Rebuild while the projectors keep running and more events arrive.
    let writer = {
        let pool = pool.clone();
        let org = orgs[0];
        tokio::spawn(async move {
            for i in 0..20 {
                append(&pool, org, Uuid::now_v7(), 0, CustomerEvent::CustomerCreated(fields(&format!("late-{i}"))))
                    .await;
            }
        })
    };
    let report = projections::rebuild::rebuild(&pool, projection.as_ref(), |_| {}).await.expect("rebuild");
    assert!(report.events >= expected as u64);
    writer.await.expect("writer");
    wait_for_count(&pool, expected + 20).await;
    let rebuilt = customers(&pool).await;
    assert_eq!(rebuilt.len(), live.len() + 20);
    for row in &live {
        assert!(rebuilt.contains(row), "row lost or changed by the rebuild: {row:?}");
    }
    let floor: i64 = sqlx::query_scalar(
        "select count(*) from projection_checkpoints where projection = 'customers' and org_id = '00000000-0000-0000-0000-000000000000'",
    )
    .fetch_one(&pool)
    .await
    .expect("floor");
    assert_eq!(floor, 1, "the rebuild leaves a floor checkpoint");

    for task in partitions {
        task.abort();
    }
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// The live projector renders each batch from the checkpoints it remembers; when they moved behind its
/// back (here: as if another instance had applied further), the database's copy decides, so the older
/// event is passed over instead of folded a second time. Values travel as literals: quotes and
/// backslashes arrive intact.
#[sqlx::test(migrations = "../schema")]
async fn checkpoints_moved_behind_a_running_projector_are_honoured(pool: PgPool) {
    let bus = bus().await;
    let (relay, projector) = start_customers(&pool, &bus, LocalProgress::default());
    let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
    let tricky = r#"O'Brien \ "Ana" ''"#;
    append(&pool, org, id, 0, CustomerEvent::CustomerCreated(fields(tricky))).await;
    wait_for_count(&pool, 1).await;
    assert_eq!(customers(&pool).await, vec![(org, id, tricky.to_owned())]);

    sqlx::query(
        "update projection_checkpoints set transaction_id = '9000000000'::xid8, position = 9000000000
         where projection = 'customers' and org_id = $1",
    )
    .bind(org)
    .execute(&pool)
    .await
    .expect("checkpoint moved");
    append(&pool, org, id, 1, CustomerEvent::CustomerReplaced(fields("Bea"))).await;
    // Another organization's creation comes after the replacement on the same consumer: once it is
    // projected, the replacement has been dealt with.
    let (other_org, other) = (Uuid::now_v7(), Uuid::now_v7());
    append(&pool, other_org, other, 0, CustomerEvent::CustomerCreated(fields("Cleo"))).await;
    wait_for_count(&pool, 2).await;
    let rows = customers(&pool).await;
    assert!(rows.contains(&(org, id, tricky.to_owned())), "the replacement was folded again: {rows:?}");
    assert!(rows.contains(&(other_org, other, "Cleo".to_owned())));
    let position: i64 = sqlx::query_scalar(
        "select position from projection_checkpoints where projection = 'customers' and org_id = $1",
    )
    .bind(org)
    .fetch_one(&pool)
    .await
    .expect("checkpoint");
    assert_eq!(position, 9_000_000_000, "the moved checkpoint stays where it was put");

    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// A batch moves each checkpoint only from where its projector expected it, and only under the rebuild
/// floor it expected; anything else refuses the whole move (SQLSTATE BOCP1) and changes nothing.
#[sqlx::test(migrations = "../schema")]
async fn a_batch_moves_checkpoints_only_from_where_it_expected_them(pool: PgPool) {
    /// An organization's checkpoint, as (transaction id, position): where the batch expects it, where it moves it.
    type Move = (Uuid, (i64, i64), (i64, i64));
    async fn batch_move(pool: &PgPool, floor: (i64, i64), moves: &[Move]) -> Result<(), String> {
        let text = |values: Vec<String>| format!("{{{}}}", values.join(","));
        sqlx::query(
            "select projection_batch_move('customers', $1::text::xid8, $2, $3::text::uuid[], $4::text::xid8[],
                                          $5::text::int8[], $6::text::xid8[], $7::text::int8[])",
        )
        .bind(floor.0.to_string())
        .bind(floor.1)
        .bind(text(moves.iter().map(|m| m.0.to_string()).collect()))
        .bind(text(moves.iter().map(|m| m.1.0.to_string()).collect()))
        .bind(text(moves.iter().map(|m| m.1.1.to_string()).collect()))
        .bind(text(moves.iter().map(|m| m.2.0.to_string()).collect()))
        .bind(text(moves.iter().map(|m| m.2.1.to_string()).collect()))
        .execute(pool)
        .await
        .map(|_| ())
        .map_err(|error| match error {
            sqlx::Error::Database(db) => db.code().unwrap_or_default().into_owned(),
            other => other.to_string(),
        })
    }
    async fn checkpoint(pool: &PgPool, org: Uuid) -> Option<(i64, i64)> {
        sqlx::query_as(
            "select transaction_id::text::int8, position from projection_checkpoints
             where projection = 'customers' and org_id = $1",
        )
        .bind(org)
        .fetch_optional(pool)
        .await
        .expect("checkpoint")
    }
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    // A first checkpoint is written where none was expected, and only then.
    assert_eq!(batch_move(&pool, (0, 0), &[(a, (0, 0), (10, 1))]).await, Ok(()));
    assert_eq!(checkpoint(&pool, a).await, Some((10, 1)));
    assert_eq!(batch_move(&pool, (0, 0), &[(a, (0, 0), (11, 2))]).await, Err("BOCP1".into()));
    assert_eq!(checkpoint(&pool, a).await, Some((10, 1)), "an existing checkpoint is never overwritten");
    // A checkpoint moves on from where it was expected; one expected elsewhere refuses the whole batch.
    assert_eq!(batch_move(&pool, (0, 0), &[(a, (10, 1), (12, 3))]).await, Ok(()));
    assert_eq!(batch_move(&pool, (0, 0), &[(a, (12, 3), (13, 4)), (b, (5, 5), (13, 5))]).await, Err("BOCP1".into()));
    assert_eq!(checkpoint(&pool, a).await, Some((12, 3)), "a refused batch moves nothing");
    assert_eq!(checkpoint(&pool, b).await, None);
    // A rebuild floor other than the expected one refuses the batch too.
    sqlx::query("insert into projection_checkpoints values ('customers', $1, '20'::xid8, 20)")
        .bind(Uuid::nil())
        .execute(&pool)
        .await
        .expect("floor");
    assert_eq!(batch_move(&pool, (0, 0), &[(a, (12, 3), (21, 6))]).await, Err("BOCP1".into()));
    assert_eq!(checkpoint(&pool, a).await, Some((12, 3)));
    assert_eq!(batch_move(&pool, (20, 20), &[(a, (12, 3), (21, 6)), (b, (0, 0), (21, 7))]).await, Ok(()));
    assert_eq!(checkpoint(&pool, a).await, Some((21, 6)));
    assert_eq!(checkpoint(&pool, b).await, Some((21, 7)));
}

/// Batches commit without waiting for their WAL flush, so the projector acknowledges messages only once
/// the flush has passed them; it must still get there, and by itself, once traffic stops (otherwise a
/// restart would redeliver everything, and the consumer would stall at its pending limit).
#[sqlx::test(migrations = "../schema")]
async fn an_idle_projector_acknowledges_everything_it_applied(pool: PgPool) {
    let bus = bus().await;
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), Default::default()));
    let projection: Arc<dyn Projection> = Arc::new(CUSTOMERS);
    let projector = tokio::spawn(projections::runtime::run(
        pool.clone(),
        bus.clone(),
        projection.clone(),
        Partition::WHOLE,
        LocalProgress::default(),
    ));
    let org = Uuid::now_v7();
    for i in 0..25 {
        append(&pool, org, Uuid::now_v7(), 0, CustomerEvent::CustomerCreated(fields(&format!("c{i}")))).await;
    }
    wait_for_count(&pool, 25).await;
    let stream = bus.ensure_event_stream().await.expect("stream");
    let name = projections::runtime::consumer_name(projection.id(), Partition::WHOLE);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let last = stream.get_info().await.expect("stream info").state.last_sequence;
        let consumer = stream
            .get_consumer::<async_nats::jetstream::consumer::pull::Config>(&name)
            .await
            .expect("consumer")
            .get_info()
            .await
            .expect("consumer info")
            .clone();
        if last == 25 && consumer.ack_floor.stream_sequence == last {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "acknowledged up to {} of {last}",
            consumer.ack_floor.stream_sequence
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// A projector hands its progress to the listeners of its own process before publishing it, and the
/// published copy says it was heard there, so only that process passes it over.
#[sqlx::test(migrations = "../schema")]
async fn progress_reaches_the_same_process_directly_and_its_bus_copy_says_so(pool: PgPool) {
    let bus = bus().await;
    let mut published =
        bus.client.subscribe(bus.progress_subject(ProjectionId::Customers.as_str())).await.expect("subscribed");
    let local = LocalProgress::default();
    let (heard, mut heard_here) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    local.listen(move |progress| {
        let _ = heard.send(progress.clone());
    });
    let (relay, projector) = start_customers(&pool, &bus, local.clone());
    let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
    append(&pool, org, id, 0, CustomerEvent::CustomerCreated(fields("Ana"))).await;
    let key = all_events(&pool, 1).await[0].key();

    let within = Duration::from_secs(30);
    let direct = loop {
        let progress = tokio::time::timeout(within, heard_here.recv()).await.expect("heard in time").expect("open");
        if progress.key >= key {
            break progress;
        }
    };
    assert!(direct.changed);
    assert_eq!(direct.invalidate.len(), 1, "the customer's cached read is named: {direct:?}");
    assert_eq!(customers(&pool).await, vec![(org, id, "Ana".to_owned())], "heard only once committed");
    let copy = loop {
        let message = tokio::time::timeout(within, published.next()).await.expect("published in time").expect("open");
        let progress: Progress = serde_json::from_slice(&message.payload).expect("progress");
        if progress.key >= key {
            break progress;
        }
    };
    assert!(local.already_heard(&copy), "the bus copy names this process");
    assert!(!LocalProgress::default().already_heard(&copy), "another process still takes it");
    assert_eq!(Progress { heard_by: None, ..copy }, direct);

    // Without listeners, nothing is marked: every gateway takes the bus copy.
    let mut unheard = Progress { heard_by: None, ..direct };
    LocalProgress::default().deliver(&mut unheard);
    assert_eq!(unheard.heard_by, None);
    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// Appends `event` as the first event of a new stream of its aggregate.
async fn append_new<E: EventPayload>(pool: &PgPool, org: Uuid, event: E) {
    let mut conn = pool.acquire().await.expect("connection");
    let stream = StreamRef { org_id: org, stream_type: E::STREAM_TYPE, stream_id: Uuid::now_v7(), expected_version: 0 };
    store::append(&mut conn, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("t"))
        .await
        .expect("append");
}

/// A projection folding two aggregates that records the stream types it is handed. It borrows the tags
/// projection's id: each test has a database and a stream prefix of its own.
#[derive(Default)]
struct ContactsSeen(std::sync::Mutex<Vec<String>>);

impl Projection for ContactsSeen {
    fn id(&self) -> ProjectionId {
        ProjectionId::Tags
    }

    fn tables(&self) -> &'static [&'static str] {
        &[]
    }

    fn folds(&self) -> Folds {
        Folds::Only(const { &[StreamType::of::<CustomerEvent>(), StreamType::of::<SupplierEvent>()] })
    }

    fn apply<'a>(
        &'a self,
        _conn: &'a mut sqlx::PgConnection,
        _target: projections::Target,
        events: &'a [RecordedEvent],
    ) -> BoxFuture<'a, Result<Vec<projections::CacheKey>, projections::ProjectionError>> {
        self.0.lock().expect("not poisoned").extend(events.iter().map(|e| e.stream_type.clone()));
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A projection folding several aggregates is sent only theirs where the server can filter several
/// subjects (NATS 2.10 and later); before that it takes every event and passes over the others. Either
/// way it folds exactly its own aggregates.
#[sqlx::test(migrations = "../schema")]
async fn a_projection_of_several_aggregates_folds_exactly_those(pool: PgPool) {
    let filter = folds_exactly_its_aggregates(pool, bus().await).await;
    if let ConsumerFilter::Subject(subject) = filter {
        assert!(subject.ends_with(".events.>"), "one filter for two aggregates is every event: {subject}");
    }
}

/// On a server that filters several subjects (`NATS_FILTERS_URL`, started by `just test`), the
/// consumer asks for exactly the projection's aggregates, and JetStream holds back the rest.
#[sqlx::test(migrations = "../schema")]
async fn a_server_that_filters_several_subjects_sends_only_the_folded_aggregates(pool: PgPool) {
    let url = std::env::var("NATS_FILTERS_URL")
        .expect("NATS_FILTERS_URL names a NATS 2.10 or later (`just test` starts one: scripts/services --filters)");
    let client = async_nats::connect(url).await.expect("the filtering NATS answers");
    let version = client.server_info().version;
    let bus = Bus::from_client(client, &format!("t{}", Uuid::now_v7().simple()));
    match folds_exactly_its_aggregates(pool, bus).await {
        ConsumerFilter::Subjects(subjects) => assert_eq!(subjects.len(), 2, "{subjects:?}"),
        ConsumerFilter::Subject(subject) => panic!("server {version} was given one filter, {subject}"),
    }
}

/// Runs [`ContactsSeen`] on `bus` over a customer, a tag and a supplier; checks that it folded exactly
/// the customer and the supplier, that its consumer carries the filter chosen for this server and,
/// where that filter names subjects, that the server delivered nothing else. Returns the filter.
async fn folds_exactly_its_aggregates(pool: PgPool, bus: Bus) -> ConsumerFilter {
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), Default::default()));
    let seen = Arc::new(ContactsSeen::default());
    let projector = tokio::spawn(projections::runtime::run(
        pool.clone(),
        bus.clone(),
        seen.clone(),
        Partition::WHOLE,
        LocalProgress::default(),
    ));
    let org = Uuid::now_v7();
    append_new(&pool, org, CustomerEvent::CustomerCreated(fields("Ana"))).await;
    append_new(&pool, org, TagEvent::TagCreated(TagFields { name: "vip".into(), color: None })).await;
    append_new(&pool, org, SupplierEvent::SupplierCreated(fields("Bea"))).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    // The supplier comes last in commit order: once it is folded, the tag has been dealt with.
    while seen.0.lock().expect("not poisoned").len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "folded only {:?}", seen.0.lock().expect("not poisoned"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*seen.0.lock().expect("not poisoned"), ["customer", "supplier"]);

    let stream = bus.ensure_event_stream().await.expect("stream");
    let name = projections::runtime::consumer_name(ProjectionId::Tags, Partition::WHOLE);
    let mut consumer =
        stream.get_consumer::<async_nats::jetstream::consumer::pull::Config>(&name).await.expect("consumer");
    let config = consumer.info().await.expect("consumer info").config.clone();
    let version = bus.client.server_info().version;
    let filter = consumer_filter(seen.folds(), bus.prefix(), &version);
    match &filter {
        ConsumerFilter::Subject(subject) => {
            assert_eq!(&config.filter_subject, subject);
            assert!(config.filter_subjects.is_empty());
        }
        ConsumerFilter::Subjects(subjects) => {
            assert_eq!(&config.filter_subjects, subjects, "server {version}");
            // The tag sits between the two in the stream; a consumer filtered to contacts is handed
            // exactly two messages.
            let info = consumer.info().await.expect("consumer info");
            assert_eq!(info.delivered.consumer_sequence, 2, "delivered {:?} on server {version}", info.delivered);
        }
    }
    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
    filter
}

/// A release (or a NATS upgrade) can change a consumer's filter: the projector then re-creates it from
/// the old consumer's ack floor, a position in the whole stream, so delivery resumes right after it.
#[sqlx::test(migrations = "../schema")]
async fn a_consumer_recreated_with_another_filter_resumes_after_the_ack_floor(pool: PgPool) {
    use async_nats::jetstream::consumer;
    let bus = bus().await;
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), Default::default()));
    let org = Uuid::now_v7();
    for name in ["Ana", "Bea", "Cleo"] {
        append_new(&pool, org, CustomerEvent::CustomerCreated(fields(name))).await;
    }
    let stream = bus.ensure_event_stream().await.expect("stream");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while stream.clone().info().await.expect("stream info").state.last_sequence < 3 {
        assert!(tokio::time::Instant::now() < deadline, "the relay published the events");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // As an older release left it: every event, the first two acknowledged.
    let name = projections::runtime::consumer_name(ProjectionId::Customers, Partition::WHOLE);
    let old = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some(name.clone()),
            ack_policy: consumer::AckPolicy::All,
            filter_subject: bus.events_wildcard(),
            ..Default::default()
        })
        .await
        .expect("old consumer");
    let taken: Vec<_> = old.fetch().max_messages(2).messages().await.expect("fetch").collect().await;
    let second = taken.into_iter().last().expect("two messages").expect("message");
    second.double_ack().await.expect("acknowledged");

    let projector = tokio::spawn(projections::runtime::run(
        pool.clone(),
        bus.clone(),
        Arc::new(CUSTOMERS),
        Partition::WHOLE,
        LocalProgress::default(),
    ));
    wait_for_count(&pool, 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let names: Vec<String> = customers(&pool).await.into_iter().map(|(_, _, name)| name).collect();
    assert_eq!(names, ["Cleo"], "delivery resumed after the floor, under the new filter");
    let mut recreated = stream.get_consumer::<consumer::pull::Config>(&name).await.expect("consumer");
    let info = recreated.info().await.expect("consumer info");
    assert_eq!(info.config.filter_subject, format!("{}.events.*.customer.>", bus.prefix()));
    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// A projection of customers that lingers and records how many events each batch held. It borrows the
/// tags projection's id, as [`ContactsSeen`] does.
#[derive(Default)]
struct Lingering(std::sync::Mutex<Vec<usize>>);

impl Projection for Lingering {
    fn id(&self) -> ProjectionId {
        ProjectionId::Tags
    }

    fn tables(&self) -> &'static [&'static str] {
        &[]
    }

    fn folds(&self) -> Folds {
        Folds::Only(const { &[StreamType::of::<CustomerEvent>()] })
    }

    fn apply<'a>(
        &'a self,
        _conn: &'a mut sqlx::PgConnection,
        _target: projections::Target,
        events: &'a [RecordedEvent],
    ) -> BoxFuture<'a, Result<Vec<projections::CacheKey>, projections::ProjectionError>> {
        self.0.lock().expect("not poisoned").push(events.len());
        Box::pin(async { Ok(Vec::new()) })
    }

    fn linger(&self) -> Duration {
        Duration::from_secs(2)
    }
}

/// A projection that lingers folds the events arriving within its linger as one batch, where one that
/// does not folds each as it comes: five customers committed one by one, 50 ms apart, are one batch.
#[sqlx::test(migrations = "../schema")]
async fn a_lingering_projection_folds_what_arrives_meanwhile_in_one_batch(pool: PgPool) {
    let bus = bus().await;
    let relay = tokio::spawn(events::relay::run_relay(pool.clone(), bus.clone(), Default::default()));
    let seen = Arc::new(Lingering::default());
    let projector = tokio::spawn(projections::runtime::run(
        pool.clone(),
        bus.clone(),
        seen.clone(),
        Partition::WHOLE,
        LocalProgress::default(),
    ));
    let org = Uuid::now_v7();
    for name in ["Ana", "Bea", "Cid", "Dan", "Eva"] {
        append_new(&pool, org, CustomerEvent::CustomerCreated(fields(name))).await;
        // The relay publishes each commit on its own: the projector sees them arrive one by one.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while seen.0.lock().expect("not poisoned").iter().sum::<usize>() < 5 {
        assert!(tokio::time::Instant::now() < deadline, "folded only {:?}", seen.0.lock().expect("not poisoned"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*seen.0.lock().expect("not poisoned"), [5], "the five customers in one batch");
    projector.abort();
    relay.abort();
    let _ = bus.js.delete_stream(bus.stream_name()).await;
}

/// A read row is read as its newtype: a stored level within a quantity's range reads exactly, and one
/// beyond it (a broken row) is a decoding error, never zero stock.
#[sqlx::test(migrations = "../schema")]
async fn a_stored_level_beyond_a_quantity_is_a_decoding_error_not_zero_stock(pool: PgPool) {
    use events::domain::Quantity;
    use projections::inventory::{LevelFilter, levels};
    let (org, variant, warehouse) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    sqlx::query(
        "insert into inventory_levels (org_id, variant_id, warehouse_id, on_hand, updated_at) values ($1, $2, $3, $4, now())",
    )
    .bind(org)
    .bind(variant)
    .bind(warehouse)
    .bind(-7_250_i64)
    .execute(&pool)
    .await
    .expect("a level");
    let today = time::OffsetDateTime::now_utc().date();
    let rows = levels(&pool, org, &LevelFilter::default(), today, None, 10).await.expect("in range");
    assert_eq!(
        (rows[0].on_hand, rows[0].available()),
        (Quantity::from_thousandths(-7_250).expect("q"), rows[0].on_hand)
    );

    let beyond = Quantity::MAX_UNITS * 1_000 + 1;
    sqlx::query("update inventory_levels set on_hand = $1 where org_id = $2")
        .bind(beyond)
        .bind(org)
        .execute(&pool)
        .await
        .expect("set");
    let error = levels(&pool, org, &LevelFilter::default(), today, None, 10).await.expect_err("out of range");
    assert!(matches!(error, sqlx::Error::ColumnDecode { .. }), "{error}");
}

/// Followers deliver in transaction order, which is not always the order a level was locked in: a
/// command that wrote before it waited for a level (lower transaction id) reads the level after the
/// command it waited for, and commits after it. Its change then comes first yet carries the later
/// on-hand. The read level is the sum of the changes, whatever their order.
#[sqlx::test(migrations = "../schema")]
async fn a_level_is_the_sum_of_its_changes_in_whatever_order_they_come(pool: PgPool) {
    use events::catalogue::{StockChange, StockLine, StockMovementEvent, StockMovementRecorded};
    use events::domain::Quantity;
    let (org, variant, warehouse) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let q = |text: &str| text.parse::<Quantity>().expect("quantity");
    let came_in = |taken: &str, left: &str| {
        StockMovementEvent::StockMovementRecorded(StockMovementRecorded {
            movement_type: "in".into(),
            warehouse_id: warehouse,
            reason: None,
            occurred_on: time::macros::date!(2026 - 12 - 07),
            lines: vec![StockLine { variant_id: variant, quantity: q(taken) }],
            changes: vec![StockChange {
                variant_id: variant,
                warehouse_id: warehouse,
                quantity: q(taken),
                on_hand: q(left),
            }],
        })
    };
    // 10 came in second under the lock (on hand 10 → 10), 5 first (0 → 5), delivered in the other order.
    let mut tx = pool.begin().await.expect("begin");
    for event in [came_in("10", "15"), came_in("5", "5")] {
        let stream =
            StreamRef { org_id: org, stream_type: "stock_movement", stream_id: Uuid::now_v7(), expected_version: 0 };
        store::append(&mut tx, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("t"))
            .await
            .expect("append");
    }
    tx.commit().await.expect("commit");
    all_events(&pool, 2).await;
    let inventory = projections::projection(ProjectionId::Inventory);
    projections::rebuild::rebuild(&pool, &*inventory, |_| {}).await.expect("the rebuild");
    let on_hand: i64 = sqlx::query_scalar("select on_hand from inventory_levels where org_id = $1")
        .bind(org)
        .fetch_one(&pool)
        .await
        .expect("the level");
    assert_eq!(on_hand, 15_000, "5 + 10, not the on-hand of the change delivered last");
}
