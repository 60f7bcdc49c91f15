//! Event store against a real Postgres: appends, concurrency, the append-only guard, gap-free
//! commit-order reads and the hash chain.

use events::catalogue::{CustomerEvent, CustomerFields};
use events::chain::{self, Verification};
use events::follower;
use events::store::{self, AppendError, AppendRequest, StreamRef};
use events::{CommitKey, EventPayload, Metadata};
use sqlx::PgPool;
use uuid::Uuid;

fn created(name: &str) -> events::NewEvent {
    CustomerEvent::CustomerCreated(CustomerFields { name: name.into(), ..CustomerFields::default() })
        .to_new_event()
        .expect("encodes")
}

/// Seals until `count` events are chained. Followers only read below the cluster-wide commit horizon,
/// which transactions of other tests running at the same time can hold back for a moment.
async fn seal_all(pool: &PgPool, count: usize) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut sealed = 0;
    while sealed < count {
        sealed += chain::seal_pending(pool, 2).await.expect("seal");
        assert!(tokio::time::Instant::now() < deadline, "only {sealed} of {count} events sealed");
        tokio::task::yield_now().await;
    }
}

fn stream(org: Uuid, id: Uuid, expected_version: i32) -> StreamRef {
    StreamRef { org_id: org, stream_type: CustomerEvent::STREAM_TYPE, stream_id: id, expected_version }
}

#[sqlx::test(migrations = "../schema")]
async fn appends_version_streams_and_refuse_stale_versions(pool: PgPool) {
    let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
    let mut conn = pool.acquire().await.expect("connection");
    let first = store::append(&mut conn, stream(org, id, 0), &[created("Ana")], &Metadata::system("test"))
        .await
        .expect("first append");
    assert_eq!(first.version, 1);
    let second =
        store::append(&mut conn, stream(org, id, 1), &[created("Bea"), created("Cía")], &Metadata::system("t"))
            .await
            .expect("second append");
    assert_eq!(second.version, 3);
    assert!(second.key > first.key);
    let stale = store::append(&mut conn, stream(org, id, 1), &[created("Dan")], &Metadata::system("test")).await;
    assert!(matches!(stale, Err(AppendError::Conflict { .. })), "{stale:?}");
    let stored = store::load_stream(&mut conn, org, id).await.expect("load");
    assert_eq!(stored.iter().map(|e| e.version).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(
        store::load_stream(&mut conn, Uuid::now_v7(), id).await.expect("load").is_empty(),
        "other orgs see nothing"
    );
}

#[sqlx::test(migrations = "../schema")]
async fn a_group_append_is_all_or_nothing(pool: PgPool) {
    let org = Uuid::now_v7();
    let taken = Uuid::now_v7();
    let mut conn = pool.acquire().await.expect("connection");
    store::append(&mut conn, stream(org, taken, 0), &[created("Ana")], &Metadata::system("t")).await.expect("append");
    let fresh = Uuid::now_v7();
    let group = vec![
        AppendRequest { stream: stream(org, fresh, 0), events: vec![created("Bea")], metadata: Metadata::system("t") },
        AppendRequest { stream: stream(org, taken, 0), events: vec![created("Cía")], metadata: Metadata::system("t") },
    ];
    assert!(store::append_many(&mut conn, &group).await.is_err());
    assert!(store::load_stream(&mut conn, org, fresh).await.expect("load").is_empty(), "nothing of the group was kept");
}

#[sqlx::test(migrations = "../schema")]
async fn the_database_refuses_to_rewrite_history(pool: PgPool) {
    let org = Uuid::now_v7();
    let mut conn = pool.acquire().await.expect("connection");
    store::append(&mut conn, stream(org, Uuid::now_v7(), 0), &[created("Ana")], &Metadata::system("t"))
        .await
        .expect("append");
    for sql in ["update events set event_type = 'X'", "delete from events", "truncate events cascade"] {
        let refused = sqlx::raw_sql(sql).execute(&pool).await;
        assert!(refused.is_err(), "{sql} must be refused");
    }
    let count: i64 = sqlx::query_scalar("select count(*) from events").fetch_one(&pool).await.expect("count");
    assert_eq!(count, 1);
}

/// Two transactions append; the later one commits first. A reader following commit order must not
/// pass the earlier one while it is still open, and must see both once it commits.
#[sqlx::test(migrations = "../schema")]
async fn out_of_order_commits_are_never_skipped(pool: PgPool) {
    let org = Uuid::now_v7();
    let mut early = pool.begin().await.expect("tx");
    store::append(&mut early, stream(org, Uuid::now_v7(), 0), &[created("early")], &Metadata::system("t"))
        .await
        .expect("early append");
    let mut late = pool.begin().await.expect("tx");
    store::append(&mut late, stream(org, Uuid::now_v7(), 0), &[created("late")], &Metadata::system("t"))
        .await
        .expect("late append");
    late.commit().await.expect("late commits first");

    let mut checkpoint = CommitKey::ZERO;
    let mut seen = Vec::new();
    let visible = follower::read_committed_after(&pool, checkpoint, 100).await.expect("read");
    assert!(visible.is_empty(), "nothing may be read past a transaction still open: {visible:?}");
    // A follower keeps going from its checkpoint; the early transaction now commits.
    early.commit().await.expect("early commits");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "saw only {seen:?}");
        let batch = follower::read_committed_after(&pool, checkpoint, 1).await.expect("read");
        let Some(event) = batch.first() else {
            // Other tests' transactions may hold the horizon back for a moment.
            tokio::task::yield_now().await;
            continue;
        };
        checkpoint = event.key();
        seen.push(event.data["name"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(seen, vec!["early", "late"], "both events, in commit-order key order");
}

/// Positions are not taken in commit order: a transaction can hold a lower position than one that has
/// already committed. An export waits for it rather than pass its position over, and names a position
/// for the next export that leaves nothing behind and repeats nothing.
#[sqlx::test(migrations = "../schema")]
async fn an_export_waits_for_a_lower_position_still_being_written(pool: PgPool) {
    let org = Uuid::now_v7();
    // The later position's transaction takes its id first: once it commits it is below the commit
    // horizon although the earlier position's transaction is still open.
    let mut late = pool.begin().await.expect("tx");
    sqlx::query("select pg_current_xact_id()").execute(&mut *late).await.expect("a transaction id");
    let mut early = pool.begin().await.expect("tx");
    let early_position =
        store::append(&mut early, stream(org, Uuid::now_v7(), 0), &[created("early")], &Metadata::system("t"))
            .await
            .expect("early append")
            .key
            .position;
    let late_position =
        store::append(&mut late, stream(org, Uuid::now_v7(), 0), &[created("late")], &Metadata::system("t"))
            .await
            .expect("late append")
            .key
            .position;
    assert!(early_position < late_position);
    late.commit().await.expect("late commits first");

    let (waiting, waited) = tokio::sync::oneshot::channel();
    let mut names = Vec::new();
    let (exported, ()) = tokio::join!(
        store::export(
            &pool,
            org,
            0,
            |writers| {
                let _ = waiting.send(writers);
            },
            |event| {
                names.push(event.data["name"].as_str().unwrap_or_default().to_owned());
                Ok(())
            }
        ),
        async {
            let writers = waited.await.expect("the export waits for the open transaction");
            assert!(writers >= 1, "{writers}");
            early.commit().await.expect("early commits");
        }
    );
    let exported = exported.expect("export");
    assert_eq!(names, ["late", "early"], "both, in commit order");
    assert_eq!(exported, store::Exported { events: 2, next_position: late_position + 1 });

    let mut conn = pool.acquire().await.expect("connection");
    let after = store::append(&mut conn, stream(org, Uuid::now_v7(), 0), &[created("after")], &Metadata::system("t"))
        .await
        .expect("append")
        .key
        .position;
    let mut tail = Vec::new();
    let next = store::export(
        &pool,
        org,
        exported.next_position,
        |_| {},
        |event| {
            tail.push(event.position);
            Ok(())
        },
    )
    .await
    .expect("export");
    assert_eq!(tail, [after], "what came after, only");
    assert_eq!(next, store::Exported { events: 1, next_position: after + 1 });
}

#[sqlx::test(migrations = "../schema")]
async fn many_concurrent_writers_leave_no_gap_for_a_follower(pool: PgPool) {
    let org = Uuid::now_v7();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let mut tx = pool.begin().await.expect("tx");
                    store::append(
                        &mut tx,
                        stream(org, Uuid::now_v7(), 0),
                        &[created(&format!("{w}-{i}"))],
                        &Metadata::system("t"),
                    )
                    .await
                    .expect("append");
                    if i % 3 == 0 {
                        tokio::task::yield_now().await;
                    }
                    tx.commit().await.expect("commit");
                }
            })
        })
        .collect();
    let follower = {
        let pool = pool.clone();
        tokio::spawn(async move {
            let mut checkpoint = CommitKey::ZERO;
            let mut positions = Vec::new();
            while positions.len() < 200 {
                let batch = follower::read_committed_after(&pool, checkpoint, 7).await.expect("read");
                for event in &batch {
                    assert!(event.key() > checkpoint, "keys only grow");
                    checkpoint = event.key();
                    positions.push(event.position);
                }
                if batch.is_empty() {
                    tokio::task::yield_now().await;
                }
            }
            positions
        })
    };
    for writer in writers {
        writer.await.expect("writer");
    }
    let mut positions = tokio::time::timeout(std::time::Duration::from_secs(30), follower)
        .await
        .expect("the follower saw every event")
        .expect("follower");
    positions.sort_unstable();
    positions.dedup();
    assert_eq!(positions.len(), 200, "every event exactly once");
}

#[sqlx::test(migrations = "../schema")]
async fn the_hash_chain_detects_an_edited_event(pool: PgPool) {
    let org = Uuid::now_v7();
    let other = Uuid::now_v7();
    let mut conn = pool.acquire().await.expect("connection");
    for name in ["Ana", "Bea", "Cía"] {
        store::append(&mut conn, stream(org, Uuid::now_v7(), 0), &[created(name)], &Metadata::system("t"))
            .await
            .expect("append");
        store::append(&mut conn, stream(other, Uuid::now_v7(), 0), &[created(name)], &Metadata::system("t"))
            .await
            .expect("append");
    }
    seal_all(&pool, 6).await;
    assert_eq!(chain::verify(&pool, org).await.expect("verify"), Verification::Intact { events: 3, unsealed: 0 });

    let target: i64 = sqlx::query_scalar("select position from events where org_id = $1 and data->>'name' = 'Bea'")
        .bind(org)
        .fetch_one(&pool)
        .await
        .expect("position");
    // Tamper with history the way only someone bypassing the service could.
    sqlx::raw_sql("alter table events disable trigger events_append_only").execute(&pool).await.expect("disable");
    sqlx::query("update events set data = '{\"name\": \"Eve\"}' where position = $1")
        .bind(target)
        .execute(&pool)
        .await
        .expect("tamper");
    sqlx::raw_sql("alter table events enable trigger events_append_only").execute(&pool).await.expect("enable");

    match chain::verify(&pool, org).await.expect("verify") {
        Verification::Broken { position, .. } => assert_eq!(position, target),
        intact => panic!("tampering went unnoticed: {intact:?}"),
    }
    assert!(matches!(chain::verify(&pool, other).await.expect("verify"), Verification::Intact { events: 3, .. }));
}

#[sqlx::test(migrations = "../schema")]
async fn the_hash_chain_detects_a_deleted_event(pool: PgPool) {
    let org = Uuid::now_v7();
    let mut conn = pool.acquire().await.expect("connection");
    for name in ["Ana", "Bea", "Cía"] {
        store::append(&mut conn, stream(org, Uuid::now_v7(), 0), &[created(name)], &Metadata::system("t"))
            .await
            .expect("append");
    }
    seal_all(&pool, 3).await;
    let first: i64 = sqlx::query_scalar("select min(position) from events").fetch_one(&pool).await.expect("min");
    sqlx::raw_sql("alter table events disable trigger events_append_only").execute(&pool).await.expect("disable");
    sqlx::query("delete from events where position = $1").bind(first).execute(&pool).await.expect("delete");
    assert!(matches!(chain::verify(&pool, org).await.expect("verify"), Verification::Broken { .. }));
}
