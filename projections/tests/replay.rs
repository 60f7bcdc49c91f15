//! A fixture event log, recorded from a real run of the service, replays into exactly the read tables
//! recorded with it, and every one of its events decodes and encodes back to the bytes stored. What a
//! change to the event catalogue's types (or to a projection) must keep: stored events are forever.
//!
//! The fixture (`fixtures/event_log.jsonl`, one stored event per line in commit order, `data` and
//! `metadata` as their exact stored text) is the event stores the API tests of the domains left, every
//! aggregate of the catalogue among them, recorded with
//! `RECORD_EVENT_LOGS=DIR cargo nextest run -p api --test api sales:: purchases:: quotes:: inventory::
//! products:: price_lists:: tags:: webhooks:: metafield` and `cat DIR/*.jsonl`; later aggregates were
//! appended the same way from a few of their own tests (orders, delivery notes, treasury, tenancy). `fixtures/read_tables.json`
//! holds every read table after the replay; `UPDATE_REPLAY_FIXTURE=1` rewrites it, for a change that
//! means to alter what a projection keeps (never to hide a change of what stored events say).
//! One of its events, stored again under a chosen id, pins an order the accounts' statement must keep.

use events::EventPayload;
use events::catalogue::{
    CategoryEvent, CostCenterEvent, CustomerEvent, CustomerPaymentEvent, DeliveryNoteEvent, FundsTransferEvent,
    LedgerAccountEvent, MetafieldDefinitionEvent, OrderEvent, OrganizationEvent, PaymentMethodEvent, PointOfSaleEvent,
    PriceListEvent, ProductEvent, PurchaseEvent, PurchaseOrderEvent, QuoteEvent, SaleEvent, StockMovementEvent,
    StockReservationEvent, StockTransferEvent, SupplierEvent, SupplierPaymentEvent, TagEvent, TreasuryLocationEvent,
    TreasuryMovementEvent, WarehouseEvent, WebhookEndpointEvent,
};
use serde::Deserialize;
use serde_json::Value;
use sqlx::PgPool;
use std::collections::BTreeMap;
use uuid::Uuid;

const LOG: &str = include_str!("fixtures/event_log.jsonl");
const TABLES: &str = "tests/fixtures/read_tables.json";

/// One stored event as the fixture holds it.
#[derive(Deserialize)]
struct Stored {
    org_id: Uuid,
    stream_type: String,
    stream_id: Uuid,
    version: i32,
    event_id: Uuid,
    event_type: String,
    schema_version: i32,
    /// The payload's stored text, byte for byte.
    data: String,
    metadata: String,
    recorded_at: String,
}

fn log() -> Vec<Stored> {
    LOG.lines().map(|line| serde_json::from_str(line).expect("a fixture line")).collect()
}

/// Decodes `event` as its payload enum and encodes it again: the current schema version and the same
/// JSON, for every event of the log.
fn round_trip<E: EventPayload>(event: &Stored) -> (i32, Value) {
    let data: Value = serde_json::from_str(&event.data).expect("stored JSON");
    let decoded = E::decode(&event.event_type, event.schema_version, data)
        .unwrap_or_else(|error| panic!("{} {}: {error}", event.stream_type, event.event_type));
    assert_eq!(decoded.event_type(), event.event_type, "the event type survives");
    (decoded.schema_version(), decoded.to_data().expect("encodes"))
}

#[test]
fn every_stored_event_decodes_and_encodes_back_to_what_was_stored() {
    let mut per_type: BTreeMap<&str, usize> = BTreeMap::new();
    let log = log();
    for event in &log {
        // Every aggregate the catalogue has: a stream type missing here fails below, never silently.
        let (version, encoded) = match event.stream_type.as_str() {
            CustomerEvent::STREAM_TYPE => round_trip::<CustomerEvent>(event),
            SupplierEvent::STREAM_TYPE => round_trip::<SupplierEvent>(event),
            OrganizationEvent::STREAM_TYPE => round_trip::<OrganizationEvent>(event),
            ProductEvent::STREAM_TYPE => round_trip::<ProductEvent>(event),
            MetafieldDefinitionEvent::STREAM_TYPE => round_trip::<MetafieldDefinitionEvent>(event),
            PriceListEvent::STREAM_TYPE => round_trip::<PriceListEvent>(event),
            PaymentMethodEvent::STREAM_TYPE => round_trip::<PaymentMethodEvent>(event),
            WarehouseEvent::STREAM_TYPE => round_trip::<WarehouseEvent>(event),
            CategoryEvent::STREAM_TYPE => round_trip::<CategoryEvent>(event),
            PointOfSaleEvent::STREAM_TYPE => round_trip::<PointOfSaleEvent>(event),
            TagEvent::STREAM_TYPE => round_trip::<TagEvent>(event),
            WebhookEndpointEvent::STREAM_TYPE => round_trip::<WebhookEndpointEvent>(event),
            StockMovementEvent::STREAM_TYPE => round_trip::<StockMovementEvent>(event),
            StockTransferEvent::STREAM_TYPE => round_trip::<StockTransferEvent>(event),
            StockReservationEvent::STREAM_TYPE => round_trip::<StockReservationEvent>(event),
            PurchaseEvent::STREAM_TYPE => round_trip::<PurchaseEvent>(event),
            PurchaseOrderEvent::STREAM_TYPE => round_trip::<PurchaseOrderEvent>(event),
            SaleEvent::STREAM_TYPE => round_trip::<SaleEvent>(event),
            QuoteEvent::STREAM_TYPE => round_trip::<QuoteEvent>(event),
            OrderEvent::STREAM_TYPE => round_trip::<OrderEvent>(event),
            DeliveryNoteEvent::STREAM_TYPE => round_trip::<DeliveryNoteEvent>(event),
            TreasuryLocationEvent::STREAM_TYPE => round_trip::<TreasuryLocationEvent>(event),
            LedgerAccountEvent::STREAM_TYPE => round_trip::<LedgerAccountEvent>(event),
            CostCenterEvent::STREAM_TYPE => round_trip::<CostCenterEvent>(event),
            FundsTransferEvent::STREAM_TYPE => round_trip::<FundsTransferEvent>(event),
            TreasuryMovementEvent::STREAM_TYPE => round_trip::<TreasuryMovementEvent>(event),
            CustomerPaymentEvent::STREAM_TYPE => round_trip::<CustomerPaymentEvent>(event),
            SupplierPaymentEvent::STREAM_TYPE => round_trip::<SupplierPaymentEvent>(event),
            other => panic!("the fixture holds stream type {other}, which this test does not know"),
        };
        assert_eq!(
            version, event.schema_version,
            "{} {} is written at its stored version",
            event.stream_type, event.event_type
        );
        // The stored text is what encoding wrote, so encoding again must give the same bytes.
        assert_eq!(
            serde_json::to_string(&encoded).expect("json"),
            event.data,
            "{} {} of stream {} encodes back to its stored bytes",
            event.stream_type,
            event.event_type,
            event.stream_id
        );
        *per_type.entry(&event.stream_type).or_default() += 1;
    }
    assert_eq!(per_type.len(), 28, "the fixture holds events of every aggregate: {per_type:?}");
}

/// Every read table of every projection, each row as JSON, the rows in a stable order. A row's
/// `transaction_id` (the ledger's commit order) is left out: it is the id the server gave the replay's
/// one transaction, which differs from run to run, not something the log says.
async fn read_tables(pool: &PgPool) -> BTreeMap<String, Value> {
    let mut tables = BTreeMap::new();
    for projection in projections::all() {
        for table in projection.tables() {
            // The table names are the projections' own constants.
            let rows: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "select coalesce(json_agg(r order by r::text), '[]')::text
                 from (select to_jsonb(t) - 'transaction_id' as r from {table} t) rows"
            )))
            .fetch_one(pool)
            .await
            .expect("the table reads");
            tables.insert((*table).to_owned(), serde_json::from_str(&rows).expect("json"));
        }
    }
    tables
}

/// Waits until `count` events lie below the commit horizon: a rebuild folds only those, and other
/// tests' open transactions on the server can hold it back for a moment.
async fn below_horizon(pool: &PgPool, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let visible = events::follower::read_committed_after(pool, events::CommitKey::ZERO, 100_000)
            .await
            .expect("the log reads")
            .len();
        if visible >= count {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "only {visible} of {count} events below the horizon");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Stores `event` of the fixture as it was stored, under `stream_id` when one is given.
async fn store(executor: impl sqlx::PgExecutor<'_>, event: &Stored, stream_id: Option<Uuid>) {
    sqlx::query(
        "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data,
                                 metadata, recorded_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8::json, $9::json, $10::timestamptz)",
    )
    .bind(event.org_id)
    .bind(&event.stream_type)
    .bind(stream_id.unwrap_or(event.stream_id))
    .bind(event.version)
    .bind(event.event_id)
    .bind(&event.event_type)
    .bind(event.schema_version)
    .bind(&event.data)
    .bind(&event.metadata)
    .bind(&event.recorded_at)
    .execute(executor)
    .await
    .expect("the fixture event inserts");
}

#[sqlx::test(migrations = "../schema")]
async fn the_fixture_log_replays_into_the_recorded_read_tables(pool: PgPool) {
    let log = log();
    let mut tx = pool.begin().await.expect("begin");
    for event in &log {
        store(&mut *tx, event, None).await;
    }
    tx.commit().await.expect("commit");
    below_horizon(&pool, log.len()).await;
    for projection in projections::all() {
        projections::rebuild::rebuild(&pool, &*projection, |_| {}).await.expect("the rebuild");
    }
    let replayed = read_tables(&pool).await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLES);
    if std::env::var_os("UPDATE_REPLAY_FIXTURE").is_some() {
        let text = serde_json::to_string_pretty(&replayed).expect("json");
        std::fs::write(&path, text + "\n").expect("the fixture is written");
        return;
    }
    let recorded: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the recorded tables")).expect("json");
    assert_eq!(replayed.keys().collect::<Vec<_>>(), recorded.keys().collect::<Vec<_>>(), "the same read tables");
    for (table, rows) in &recorded {
        assert_eq!(&replayed[table], rows, "{table} replays into the rows recorded with the fixture");
    }
}

/// A sale and the payment it took are one event: its statement shows the sale, then the payment,
/// whichever of their ids sorts first (here the payment's, derived from the sale's highest one).
#[sqlx::test(migrations = "../schema")]
async fn a_statement_shows_a_sale_before_the_payment_it_took(pool: PgPool) {
    let log = log();
    let stored = log
        .iter()
        .find(|e| e.event_type == "SaleRecorded" && e.data.contains("\"payments\":[{"))
        .expect("the fixture holds a sale that took a payment");
    let SaleEvent::SaleRecorded(sale) =
        SaleEvent::decode(&stored.event_type, stored.schema_version, serde_json::from_str(&stored.data).expect("json"))
            .expect("a sale")
    else {
        unreachable!("found by its type")
    };
    let id = Uuid::max();
    assert!(events::catalogue::sale_payment_id(id) < id, "the payment's id sorts first");
    store(&pool, stored, Some(id)).await;
    below_horizon(&pool, 1).await;
    let projection = projections::all()
        .into_iter()
        .find(|p| p.id() == projections::ProjectionId::Accounts)
        .expect("the accounts projection");
    projections::rebuild::rebuild(&pool, &*projection, |_| {}).await.expect("the rebuild");
    let side = events::catalogue::PaymentSide::Customer;
    let day = (sale.invoice_date, sale.invoice_date);
    let (_, lines) = projections::accounts::statement(&pool, stored.org_id, side, sale.customer.id, day, 10)
        .await
        .expect("the statement");
    let paid: i64 = sale.payments.iter().map(|p| p.amount.get()).sum();
    let seen: Vec<(&str, i64)> = lines.iter().map(|l| (l.kind.as_str(), l.balance)).collect();
    assert_eq!(seen, [("sale", sale.total.get()), ("payment", sale.total.get() - paid)]);
}
