//! The journal's running figures follow the order entries were recorded in, whatever order they
//! committed in: an entry recorded before one already folded (two transactions that began in one
//! order and committed in the other) takes the balance before it and moves the ones after it.

use events::EventPayload;
use events::catalogue::{
    Currency, FundsTransfer, FundsTransferEvent, JournalEntry, JournalLine, LocationKind, LocationLine, LocationRef,
    LocationStatus, MovementType, TreasuryLocation, TreasuryLocationEvent,
};
use events::domain::Cents;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

async fn store<E: EventPayload>(pool: &PgPool, org: Uuid, stream: Uuid, event: &E, at: OffsetDateTime) {
    sqlx::query(
        "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data,
                             metadata, recorded_at)
         values ($1, $2, $3, 1, $4, $5, $6, $7, '{\"actor\":\"test\"}', $8)",
    )
    .bind(org)
    .bind(E::STREAM_TYPE)
    .bind(stream)
    .bind(Uuid::now_v7())
    .bind(event.event_type())
    .bind(event.schema_version())
    .bind(event.to_data().expect("encodes"))
    .bind(at)
    .execute(pool)
    .await
    .expect("stored");
}

fn place(kind: LocationKind) -> TreasuryLocationEvent {
    TreasuryLocationEvent::LocationOpened(Box::new(TreasuryLocation {
        kind,
        name: "Lugar".into(),
        currency: Currency::Pes,
        bank: None,
        account_number: None,
        alias: None,
        uses_checkbook: false,
        ledger_account_id: Uuid::now_v7(),
        status: LocationStatus::Active,
    }))
}

fn transfer(id: Uuid, from: LocationRef, to: LocationRef, amount: i64) -> FundsTransferEvent {
    let on = time::Date::from_calendar_date(2026, time::Month::March, 2).expect("date");
    let side = |location, movement_type, n: u128| LocationLine {
        location,
        movement_id: Uuid::from_u128(id.as_u128() ^ n),
        movement_type,
        line_id: None,
    };
    let line = |location: LocationRef, cents: i64, movement_type, n| JournalLine {
        account_id: Uuid::nil(),
        functional: Cents::of(cents),
        native: None,
        location: Some(side(location, movement_type, n)),
    };
    FundsTransferEvent::FundsTransferred(Box::new(FundsTransfer {
        source: from,
        destination: to,
        amount: Cents::of(amount),
        occurred_on: on,
        created_by: None,
        entry: JournalEntry {
            id,
            occurred_on: on,
            lines: vec![
                line(from, -amount, MovementType::TransferOut, 1),
                line(to, amount, MovementType::TransferIn, 2),
            ],
        },
    }))
}

/// A cash register and a safe of `org`, opened at `t0`.
async fn open_register_and_safe(pool: &PgPool, org: Uuid, t0: OffsetDateTime) -> (LocationRef, LocationRef) {
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    let safe = LocationRef { kind: LocationKind::Safe, id: Uuid::now_v7() };
    store(pool, org, register.id, &place(LocationKind::CashRegister), t0).await;
    store(pool, org, safe.id, &place(LocationKind::Safe), t0).await;
    (register, safe)
}

/// Rebuilds the treasury projection once the `stored` events are below the commit horizon, which
/// other tests' open transactions can hold back for a moment.
async fn rebuild_treasury(pool: &PgPool, stored: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while events::follower::read_committed_after(pool, events::CommitKey::ZERO, 100).await.expect("reads").len()
        < stored
    {
        assert!(std::time::Instant::now() < deadline, "the events stay above the horizon");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let projection =
        projections::all().into_iter().find(|p| p.id() == projections::ProjectionId::Treasury).expect("treasury");
    projections::rebuild::rebuild(pool, &*projection, |_| {}).await.expect("rebuilt");
}

#[sqlx::test(migrations = "../schema")]
async fn an_entry_recorded_earlier_but_committed_later_keeps_every_running_figure_exact(pool: PgPool) {
    let org = Uuid::now_v7();
    let t0 = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (register, safe) = open_register_and_safe(&pool, org, t0).await;
    // Committed in this order, recorded in the other: 300 at t0+2s, then 100 at t0+1s, then 50 at t0+3s.
    for (amount, seconds) in [(300, 2), (100, 1), (50, 3)] {
        let id = Uuid::now_v7();
        store(&pool, org, id, &transfer(id, register, safe, amount), t0 + time::Duration::seconds(seconds)).await;
    }
    rebuild_treasury(&pool, 5).await;
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "select functional, running_functional, running_native from journal_lines
         where location_kind = 'safe' and location_id = $1 order by recorded_at, position, line_no",
    )
    .bind(safe.id)
    .fetch_all(&pool)
    .await
    .expect("lines");
    assert_eq!(rows, [(100, 100, 100), (300, 400, 400), (50, 450, 450)], "running figures in recorded order");
    let at = |seconds: i64| t0 + time::Duration::seconds(seconds);
    for (instant, expected) in [(at(1), 100), (at(2), 400), (at(3), 450)] {
        let balance: i64 = sqlx::query_scalar(
            "select running_functional from journal_lines where location_kind = 'safe' and location_id = $1
               and recorded_at <= $2 order by recorded_at desc, position desc, line_no desc limit 1",
        )
        .bind(safe.id)
        .bind(instant)
        .fetch_one(&pool)
        .await
        .expect("balance");
        assert_eq!(balance, expected);
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_balance_beyond_the_range_of_one_amount_reads_as_the_sum_it_is(pool: PgPool) {
    let org = Uuid::now_v7();
    let t0 = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (register, safe) = open_register_and_safe(&pool, org, t0).await;
    // Two transfers of the most one amount holds: the safe's running figure is twice that.
    for seconds in [1, 2] {
        let id = Uuid::now_v7();
        let moved = transfer(id, register, safe, Cents::MAX);
        store(&pool, org, id, &moved, t0 + time::Duration::seconds(seconds)).await;
    }
    rebuild_treasury(&pool, 4).await;
    let everyone = projections::treasury::Visibility { locations: None, own: None };
    let filter = projections::treasury::LocationFilter::default();
    let rows = projections::treasury::balances(&pool, org, &filter, &everyone, None, None, 10).await.expect("balances");
    let figures: Vec<(LocationKind, i64, Option<i64>)> =
        rows.iter().map(|r| (r.at.kind, r.functional, r.native)).collect();
    let twice = 2 * Cents::MAX;
    assert_eq!(figures, [(LocationKind::CashRegister, -twice, Some(-twice)), (LocationKind::Safe, twice, Some(twice))]);
}
