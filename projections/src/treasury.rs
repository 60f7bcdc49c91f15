//! The treasury read models: the locations (`treasury_locations_view`), every journal line of a location
//! with the location's running balance after it (`journal_lines`: balances now and as of any instant),
//! the movements as they stand (`treasury_movements_view`) and the funds transfers
//! (`funds_transfers_view`). All of it folds from the locations', transfers', manual movements' and
//! payments' events (a payment's lines are movements of its locations; a void removes them).
//!
//! Running balances follow the order entries were recorded in (`recorded_at`, then the commit order):
//! a line recorded earlier than lines already folded (two transactions that began in one order and
//! committed in the other) takes the balance before it and adds itself to the lines after it, so the
//! figure of the last line recorded by an instant is always the sum of every line recorded by then.

use crate::{Folded, Target};
use events::RecordedEvent;
use events::catalogue::{
    AppliedRate, CounterLine, Currency, CustomerPaymentEvent, PaymentFact, SupplierPaymentEvent, Direction, Distribution, FundsTransfer, FundsTransferEvent, JournalLine,
    LocationKind, LocationRef, ManualMovement, TreasuryLocation, TreasuryLocationEvent, TreasuryMovementEvent,
};
use events::domain::Cents;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const LOCATIONS: &str = "treasury_locations_view";
pub const JOURNAL: &str = "journal_lines";
pub const MOVEMENTS: &str = "treasury_movements_view";
pub const TRANSFERS: &str = "funds_transfers_view";

pub struct TreasuryProjection;

projection!(TreasuryProjection {
    id: Treasury,
    tables: &[LOCATIONS, JOURNAL, MOVEMENTS, TRANSFERS],
    folds: [TreasuryLocationEvent, FundsTransferEvent, TreasuryMovementEvent, CustomerPaymentEvent, SupplierPaymentEvent]
});

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let mut currencies = Currencies::default();
    for event in events {
        if event.stream_type == <TreasuryLocationEvent as events::EventPayload>::STREAM_TYPE {
            match crate::decode::<TreasuryLocationEvent>(event)? {
                TreasuryLocationEvent::LocationOpened(location) => open(conn, target, event, &location).await?,
                TreasuryLocationEvent::LocationStatusChanged(change) => {
                    let sql = format!(
                        "update {} set status = $3, doc = jsonb_set(doc, '{{status}}', to_jsonb($3::text)), updated_at = $4
                         where org_id = $1 and id = $2",
                        target.table(LOCATIONS)
                    );
                    sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(event.org_id)
                        .bind(event.stream_id)
                        .bind(change.status.as_str())
                        .bind(event.recorded_at)
                        .execute(&mut *conn)
                        .await?;
                }
            }
        } else if event.stream_type == <FundsTransferEvent as events::EventPayload>::STREAM_TYPE {
            let FundsTransferEvent::FundsTransferred(transfer) = crate::decode::<FundsTransferEvent>(event)?;
            transferred(conn, target, &mut currencies, event, &transfer).await?;
        } else if let Some(fact) = crate::payment_fact(event)? {
            match fact {
                PaymentFact::Recorded(payment) => {
                    let by = payment.created_by.as_deref();
                    post_entry(conn, target, &mut currencies, event, &payment.entry, 0, Posting::Fact, by).await?;
                    // The entry's location lines follow the payment's lines, one each.
                    let located = payment.entry.lines.iter().filter_map(|l| l.location.map(|side| (l, side)));
                    for ((line, side), paid) in located.zip(&payment.lines) {
                        let currency = currencies.of(conn, target, event.org_id, side.location).await?;
                        let outgoing = line.functional.is_negative();
                        let (origin, rate) = rate_origin(paid.rate, outgoing, payment.occurred_on);
                        let doc = MovementDoc {
                            id: side.row_id(),
                            treasury_movement_id: side.movement_id,
                            balance_type: side.location.kind,
                            balance_id: side.location.id,
                            currency,
                            movement_type: side.movement_type.as_str().to_owned(),
                            native_amount: native_of(line, currency),
                            functional_amount: line.functional,
                            functional_amount_origin: origin.into(),
                            rate,
                            occurred_on: payment.occurred_on,
                            funds_transfer_id: None,
                            manual: None,
                        };
                        insert_movement(conn, target, event.org_id, &doc, by, event.recorded_at).await?;
                    }
                }
                PaymentFact::Voided(void) => {
                    let by = created_by(conn, target, event).await?;
                    let reversal = &void.reversal;
                    post_entry(conn, target, &mut currencies, event, reversal, 0, Posting::Reversal, by.as_deref())
                        .await?;
                    remove_rows(conn, target, event).await?;
                }
                // Allocating what was on account moves no money.
                PaymentFact::Allocated(_) => {}
            }
        } else {
            match crate::decode::<TreasuryMovementEvent>(event)? {
                TreasuryMovementEvent::ManualMovementRecorded(movement) => {
                    post_entry(
                        conn,
                        target,
                        &mut currencies,
                        event,
                        &movement.entry,
                        0,
                        Posting::Fact,
                        movement.created_by.as_deref(),
                    )
                    .await?;
                    manual_row(conn, target, &mut currencies, event, &movement, event.recorded_at).await?;
                }
                TreasuryMovementEvent::ManualMovementReplaced(replaced) => {
                    let by = replaced.movement.created_by.as_deref();
                    post_entry(conn, target, &mut currencies, event, &replaced.reversal, 0, Posting::Reversal, by)
                        .await?;
                    let created_at = remove_rows(conn, target, event).await?.unwrap_or(event.recorded_at);
                    let entry = &replaced.movement.entry;
                    post_entry(conn, target, &mut currencies, event, entry, REPLACEMENT_LINES, Posting::Fact, by)
                        .await?;
                    manual_row(conn, target, &mut currencies, event, &replaced.movement, created_at).await?;
                }
                TreasuryMovementEvent::ManualMovementDeleted(deleted) => {
                    let by = created_by(conn, target, event).await?;
                    let reversal = &deleted.reversal;
                    post_entry(conn, target, &mut currencies, event, reversal, 0, Posting::Reversal, by.as_deref())
                        .await?;
                    remove_rows(conn, target, event).await?;
                }
            }
        }
    }
    // Treasury reads are not cached.
    Ok(Vec::new())
}

async fn open(
    conn: &mut PgConnection,
    target: Target,
    event: &RecordedEvent,
    location: &TreasuryLocation,
) -> Result<(), crate::ProjectionError> {
    let sql = format!(
        "insert into {} (org_id, kind, id, currency, status, doc, created_at, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, $7)",
        target.table(LOCATIONS)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(location.kind.as_str())
        .bind(event.stream_id)
        .bind(location.currency.as_str())
        .bind(location.status.as_str())
        .bind(sqlx::types::Json(location))
        .bind(event.recorded_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// A location's line as the journal keeps it: its functional amount and, in the location's currency,
/// its native amount (a peso location's are the same; a dollar line without one is unknown).
fn native_of(line: &JournalLine, currency: Currency) -> Option<Cents> {
    match currency {
        Currency::Pes => Some(line.functional),
        Currency::Dol => line.native,
    }
}

/// Whether an entry states a fact or reverses one (a deletion's, a replacement's or a void's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Posting {
    Fact,
    Reversal,
}

/// Appends a location's line to the journal with its running balance, and moves the balance of any
/// line recorded after it (see the module's header).
///
/// A line without its dollars is a gap in the location's dollars, counted in `running_gaps`; the line
/// reversing it (as short of dollars as the line it undoes) closes that gap again. The running native
/// figure is unknown while any gap is open; when the last one closes it is the sum of the dollars the
/// lines carry, which only then is read back over the location's earlier lines.
#[allow(clippy::too_many_arguments, reason = "one line's columns")]
async fn post(
    conn: &mut PgConnection,
    target: Target,
    event: &RecordedEvent,
    line_no: i32,
    entry_id: Uuid,
    at: LocationRef,
    functional: Cents,
    native: Option<Cents>,
    posting: Posting,
    created_by: Option<&str>,
) -> Result<(), crate::ProjectionError> {
    let gap: i64 = match (native, posting) {
        (Some(_), _) => 0,
        (None, Posting::Fact) => 1,
        (None, Posting::Reversal) => -1,
    };
    let journal = target.table(JOURNAL);
    let known = format!(
        "select coalesce(sum(k.native), 0)::bigint from {journal} k
         where k.org_id = $1 and k.location_kind = $2 and k.location_id = $3"
    );
    // One statement: the lines recorded after this one move by its amounts (the update cannot see the
    // new row, and the insert reads the figures before this line, which the update leaves alone).
    let sql = format!(
        "with later as (
             update {journal} u set running_functional = u.running_functional + $8,
                 running_native = case when u.running_gaps + $11::bigint > 0 then null
                     else coalesce(u.running_native,
                                   ({known} and (k.recorded_at, k.position, k.line_no)
                                                    <= (u.recorded_at, u.position, u.line_no)))
                          + coalesce($9::bigint, 0) end,
                 running_gaps = u.running_gaps + $11::bigint
             where u.org_id = $1 and u.location_kind = $2 and u.location_id = $3
               and (u.recorded_at, u.position, u.line_no) > ($4, $5, $6))
         insert into {journal} (org_id, location_kind, location_id, recorded_at, position, line_no, entry_id, functional,
                                native, created_by, running_functional, running_native, running_gaps)
         select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $8 + coalesce(p.running_functional, 0),
                case when coalesce(p.running_gaps, 0) + $11::bigint > 0 then null
                     else coalesce(p.running_native,
                                   case when p.found
                                        then ({known} and (k.recorded_at, k.position, k.line_no) < ($4, $5, $6))
                                        else 0 end)
                          + coalesce($9::bigint, 0) end,
                coalesce(p.running_gaps, 0) + $11::bigint
         from (select 1) one
         left join lateral (
             select true as found, j.running_functional, j.running_native, j.running_gaps from {journal} j
             where j.org_id = $1 and j.location_kind = $2 and j.location_id = $3
               and (j.recorded_at, j.position, j.line_no) < ($4, $5, $6)
             order by j.recorded_at desc, j.position desc, j.line_no desc limit 1) p on true"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(at.kind.as_str())
        .bind(at.id)
        .bind(event.recorded_at)
        .bind(event.position)
        .bind(line_no)
        .bind(entry_id)
        .bind(functional)
        .bind(native)
        .bind(created_by)
        .bind(gap)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Where a replacement's new lines are numbered from, after its reversal's.
const REPLACEMENT_LINES: i32 = 10_000;

/// Posts every location line of `entry`, numbered from `first`.
#[allow(clippy::too_many_arguments, reason = "an entry's lines and what they are")]
async fn post_entry(
    conn: &mut PgConnection,
    target: Target,
    currencies: &mut Currencies,
    event: &RecordedEvent,
    entry: &events::catalogue::JournalEntry,
    first: i32,
    posting: Posting,
    created_by: Option<&str>,
) -> Result<(), crate::ProjectionError> {
    for (n, line) in entry.lines.iter().enumerate() {
        let Some(side) = line.location else { continue };
        let currency = currencies.of(conn, target, event.org_id, side.location).await?;
        let line_no = first + i32::try_from(n).unwrap_or(i32::MAX - first);
        post(
            conn,
            target,
            event,
            line_no,
            entry.id,
            side.location,
            line.functional,
            native_of(line, currency),
            posting,
            created_by,
        )
        .await?;
    }
    Ok(())
}

/// Removes a movement's rows; answers when it was first persisted.
async fn remove_rows(
    conn: &mut PgConnection,
    target: Target,
    event: &RecordedEvent,
) -> Result<Option<OffsetDateTime>, sqlx::Error> {
    let sql = format!(
        "delete from {} where org_id = $1 and treasury_movement_id = $2 returning created_at",
        target.table(MOVEMENTS)
    );
    let removed: Vec<OffsetDateTime> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(event.stream_id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(removed.into_iter().min())
}

async fn created_by(
    conn: &mut PgConnection,
    target: Target,
    event: &RecordedEvent,
) -> Result<Option<String>, sqlx::Error> {
    let sql = format!(
        "select created_by from {} where org_id = $1 and treasury_movement_id = $2 limit 1",
        target.table(MOVEMENTS)
    );
    let found: Option<Option<String>> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(event.stream_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(found.flatten())
}

/// The row a manual movement's version shows: its location's line with the movement's own fields. A
/// peso line is at the rate of one; a dollar income at the movement's rate; a dollar expense at the
/// dollars' carrying value; a dollar line without its dollars (an entry from before dollars were
/// recorded) is of unknown origin.
pub fn manual_doc(movement: &ManualMovement, currency: Currency, updated_at: OffsetDateTime) -> Option<MovementDoc> {
    let (line, side) = movement.entry.lines.iter().find_map(|l| l.location.map(|side| (l, side)))?;
    let expense = movement.direction == Direction::Expense;
    let (origin, rate) = match (currency, movement.rate, line.native) {
        (Currency::Pes, _, _) => rate_origin(None, expense, movement.occurred_on),
        (Currency::Dol, Some(rate), Some(_)) => rate_origin(Some(rate), expense, movement.occurred_on),
        (Currency::Dol, _, _) => ("legacy_unknown", None),
    };
    Some(MovementDoc {
        id: side.row_id(),
        treasury_movement_id: side.movement_id,
        balance_type: side.location.kind,
        balance_id: side.location.id,
        currency,
        movement_type: side.movement_type.as_str().to_owned(),
        native_amount: native_of(line, currency),
        functional_amount: line.functional,
        functional_amount_origin: origin.into(),
        rate,
        occurred_on: movement.occurred_on,
        funds_transfer_id: None,
        manual: Some(ManualDoc {
            direction: movement.direction,
            amount: movement.amount,
            note: movement.note.clone(),
            contact_id: movement.contact_id,
            itemized: movement.itemized,
            counterparts: movement.counterparts.clone(),
            distributions: movement.distributions.clone(),
            rate: movement.rate,
            exchange_difference: movement.exchange_difference,
            updated_at,
        }),
    })
}

async fn manual_row(
    conn: &mut PgConnection,
    target: Target,
    currencies: &mut Currencies,
    event: &RecordedEvent,
    movement: &ManualMovement,
    created_at: OffsetDateTime,
) -> Result<(), crate::ProjectionError> {
    let Some(side) = movement.entry.lines.iter().find_map(|l| l.location) else { return Ok(()) };
    let currency = currencies.of(conn, target, event.org_id, side.location).await?;
    let Some(doc) = manual_doc(movement, currency, event.recorded_at) else { return Ok(()) };
    insert_movement(conn, target, event.org_id, &doc, movement.created_by.as_deref(), created_at).await?;
    Ok(())
}

/// A movement's row in the movements view.
async fn insert_movement(
    conn: &mut PgConnection,
    target: Target,
    org_id: Uuid,
    doc: &MovementDoc,
    created_by: Option<&str>,
    created_at: OffsetDateTime,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "insert into {} (org_id, id, treasury_movement_id, location_kind, location_id, movement_type, occurred_on,
                         created_by, doc, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        target.table(MOVEMENTS)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(doc.id)
        .bind(doc.treasury_movement_id)
        .bind(doc.balance_type.as_str())
        .bind(doc.balance_id)
        .bind(&doc.movement_type)
        .bind(doc.occurred_on)
        .bind(created_by)
        .bind(sqlx::types::Json(doc))
        .bind(created_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The locations' currencies a batch has read (a location's currency never changes).
#[derive(Default)]
struct Currencies(HashMap<(Uuid, LocationRef), Currency>);

impl Currencies {
    async fn of(
        &mut self,
        conn: &mut PgConnection,
        target: Target,
        org_id: Uuid,
        at: LocationRef,
    ) -> Result<Currency, sqlx::Error> {
        if let Some(currency) = self.0.get(&(org_id, at)) {
            return Ok(*currency);
        }
        let sql =
            format!("select currency from {} where org_id = $1 and kind = $2 and id = $3", target.table(LOCATIONS));
        let currency: Option<Currency> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(org_id)
            .bind(at.kind.as_str())
            .bind(at.id)
            .fetch_optional(&mut *conn)
            .await?;
        // A location not (yet) folded is in pesos, as every location but a dollar account.
        let currency = currency.unwrap_or(Currency::Pes);
        self.0.insert((org_id, at), currency);
        Ok(currency)
    }
}

async fn transferred(
    conn: &mut PgConnection,
    target: Target,
    currencies: &mut Currencies,
    event: &RecordedEvent,
    transfer: &FundsTransfer,
) -> Result<(), crate::ProjectionError> {
    let mut effects = Vec::new();
    for (n, line) in transfer.entry.lines.iter().enumerate() {
        let Some(side) = line.location else { continue };
        let currency = currencies.of(conn, target, event.org_id, side.location).await?;
        let native = native_of(line, currency);
        let created_by = transfer.created_by.as_deref();
        let line_no = i32::try_from(n).unwrap_or(i32::MAX);
        let (entry_id, posting) = (transfer.entry.id, Posting::Fact);
        post(conn, target, event, line_no, entry_id, side.location, line.functional, native, posting, created_by)
            .await?;
        let movement = MovementDoc {
            id: side.movement_id,
            treasury_movement_id: side.movement_id,
            balance_type: side.location.kind,
            balance_id: side.location.id,
            currency,
            movement_type: side.movement_type.as_str().to_owned(),
            native_amount: native,
            functional_amount: line.functional,
            functional_amount_origin: "rate".into(),
            rate: Some(RateDoc::functional(transfer.occurred_on)),
            occurred_on: transfer.occurred_on,
            funds_transfer_id: Some(event.stream_id),
            manual: None,
        };
        insert_movement(conn, target, event.org_id, &movement, created_by, event.recorded_at).await?;
        effects.push(json!({ "treasury_movement_id": side.movement_id, "balance_type": side.location.kind,
            "balance_id": side.location.id, "amount": line.functional }));
    }
    let doc = json!({ "source": transfer.source, "destination": transfer.destination, "amount": transfer.amount,
        "occurred_on": transfer.occurred_on.to_string(), "accounting_effects": effects });
    let sql = format!(
        "insert into {} (org_id, id, source_kind, source_id, destination_kind, destination_id, occurred_on, created_by,
                         doc, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        target.table(TRANSFERS)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(event.stream_id)
        .bind(transfer.source.kind.as_str())
        .bind(transfer.source.id)
        .bind(transfer.destination.kind.as_str())
        .bind(transfer.destination.id)
        .bind(transfer.occurred_on)
        .bind(transfer.created_by.as_deref())
        .bind(doc)
        .bind(event.recorded_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The rate a movement's functional amount came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateDoc {
    /// Pesos per unit, exact decimal text.
    pub value: String,
    #[serde(with = "events::catalogue::iso_date")]
    pub rate_date: Date,
    /// `functional_currency` (a peso movement: one to one), `manual` or `central_bank`.
    pub source: String,
}

impl RateDoc {
    /// A peso line's: one to one, on its date.
    fn functional(on: Date) -> Self {
        Self { value: "1".into(), rate_date: on, source: "functional_currency".into() }
    }
}

/// Where a location line's pesos came from, and the rate shown: a peso line at one to one; dollars
/// leaving (`outgoing`) at their carrying value; dollars entering at their line's rate.
fn rate_origin(rate: Option<AppliedRate>, outgoing: bool, on: Date) -> (&'static str, Option<RateDoc>) {
    match rate {
        None => ("rate", Some(RateDoc::functional(on))),
        Some(_) if outgoing => ("carrying_value", None),
        Some(rate) => (
            "rate",
            Some(RateDoc {
                value: rate.value.to_string(),
                rate_date: rate.rate_date,
                source: rate.source.as_str().to_owned(),
            }),
        ),
    }
}

/// A movement as stored for reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovementDoc {
    pub id: Uuid,
    pub treasury_movement_id: Uuid,
    pub balance_type: LocationKind,
    pub balance_id: Uuid,
    pub currency: Currency,
    pub movement_type: String,
    pub native_amount: Option<Cents>,
    pub functional_amount: Cents,
    pub functional_amount_origin: String,
    pub rate: Option<RateDoc>,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub funds_transfer_id: Option<Uuid>,
    /// A manual movement's own fields (none for a transfer's effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<ManualDoc>,
}

/// What a manual movement's detail adds to its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualDoc {
    pub direction: Direction,
    pub amount: Cents,
    pub note: Option<String>,
    pub contact_id: Option<Uuid>,
    pub itemized: bool,
    pub counterparts: Vec<CounterLine>,
    pub distributions: Vec<Distribution>,
    /// A dollar movement's rate and exchange difference (none on a peso location, or for an entry
    /// from before dollars were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<AppliedRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_difference: Option<Cents>,
    /// The recorded time of the movement's last event: what a `PUT` or `DELETE` sends back.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Which locations a reader may see: all, or the assigned registers and safes (a delegated token with
/// assignments), and whether only what its user created counts (`own` visibility).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Visibility {
    /// `None`: every location. `Some`: only these (registers and safes; no bank account).
    pub locations: Option<Vec<LocationRef>>,
    /// `Some(user)`: only movements and transfers that user created.
    pub own: Option<String>,
}

impl Visibility {
    pub fn sees(&self, at: LocationRef) -> bool {
        self.locations.as_ref().is_none_or(|seen| seen.contains(&at))
    }

    fn kinds_and_ids(&self) -> (Option<Vec<String>>, Option<Vec<Uuid>>) {
        match &self.locations {
            None => (None, None),
            Some(seen) => (
                Some(seen.iter().map(|l| l.kind.as_str().to_owned()).collect()),
                Some(seen.iter().map(|l| l.id).collect()),
            ),
        }
    }
}

/// A location as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LocationRow {
    pub id: Uuid,
    #[sqlx(json, rename = "doc")]
    pub location: TreasuryLocation,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// What a locations list filters on (each `None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LocationFilter {
    pub kind: Option<LocationKind>,
    pub id: Option<Uuid>,
    pub status: Option<String>,
    pub currency: Option<String>,
}

/// One location of a kind.
pub async fn location(pool: &PgPool, org_id: Uuid, at: LocationRef) -> Result<Option<LocationRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, doc, created_at, updated_at from treasury_locations_view where org_id = $1 and kind = $2 and id = $3",
    )
    .bind(org_id)
    .bind(at.kind.as_str())
    .bind(at.id)
    .fetch_optional(pool)
    .await
}

/// Up to `limit` locations after `after` (kind, id), in that order.
pub async fn locations(
    pool: &PgPool,
    org_id: Uuid,
    filter: &LocationFilter,
    visibility: &Visibility,
    after: Option<(String, Uuid)>,
    limit: i64,
) -> Result<Vec<LocationRow>, sqlx::Error> {
    let (kinds, ids) = visibility.kinds_and_ids();
    sqlx::query_as(
        "select l.id, l.doc, l.created_at, l.updated_at from treasury_locations_view l
         where l.org_id = $1 and ($2::text is null or l.kind = $2) and ($3::uuid is null or l.id = $3)
           and ($4::text is null or l.status = $4) and ($5::text is null or l.currency = $5)
           and ($6::text[] is null or (l.kind, l.id) in (select * from unnest($6::text[], $7::uuid[])))
           and ($8::text is null or (l.kind, l.id) > ($8, $9))
         order by l.kind, l.id limit $10",
    )
    .bind(org_id)
    .bind(filter.kind.map(LocationKind::as_str))
    .bind(filter.id)
    .bind(filter.status.as_deref())
    .bind(filter.currency.as_deref())
    .bind(kinds)
    .bind(ids)
    .bind(after.as_ref().map(|a| a.0.clone()))
    .bind(after.map(|a| a.1))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// A location's balance: its functional (peso) figure and its native one (none when some line of a
/// dollar location lacks its dollars), with the lines counted that need review.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceRow {
    pub at: LocationRef,
    pub location: TreasuryLocation,
    /// In cents, as sums over every line: like a report's measures, beyond the range of one amount.
    pub functional: i64,
    pub native: Option<i64>,
    pub anomalies: i64,
}

/// kind, id, doc, the last line's running functional and native figures, whether there is one, its
/// running count of unknown native amounts.
type BalanceTuple = (LocationKind, Uuid, Value, Option<i64>, Option<i64>, bool, i64);

/// The balances of the locations `filter` selects, after `after` (kind, id): from every line recorded
/// by `as_of` (none: now). With `own` visibility, only the lines the user created count.
pub async fn balances(
    pool: &PgPool,
    org_id: Uuid,
    filter: &LocationFilter,
    visibility: &Visibility,
    as_of: Option<OffsetDateTime>,
    after: Option<(String, Uuid)>,
    limit: i64,
) -> Result<Vec<BalanceRow>, sqlx::Error> {
    let (kinds, ids) = visibility.kinds_and_ids();
    // With `as_of`, the bound is written into the statement, so each location's index descent starts
    // at that instant instead of stepping back over every later line.
    let bound = if as_of.is_some() { "and j.recorded_at <= $10" } else { "and $10::timestamptz is null" };
    let rows: Vec<BalanceTuple> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select l.kind, l.id, l.doc, b.functional, b.native, coalesce(b.found, false), coalesce(b.anomalies, 0)
         from treasury_locations_view l
         left join lateral (
             select true as found, j.running_functional as functional, j.running_native as native,
                    j.running_gaps as anomalies
             from journal_lines j
             where $11::text is null and j.org_id = l.org_id and j.location_kind = l.kind and j.location_id = l.id
               {bound}
             order by j.recorded_at desc, j.position desc, j.line_no desc limit 1
         ) b on $11::text is null
         where l.org_id = $1 and ($2::text is null or l.kind = $2) and ($3::uuid is null or l.id = $3)
           and ($4::text is null or l.status = $4) and ($5::text is null or l.currency = $5)
           and ($6::text[] is null or (l.kind, l.id) in (select * from unnest($6::text[], $7::uuid[])))
           and ($8::text is null or (l.kind, l.id) > ($8, $9))
         order by l.kind, l.id limit $12"
    )))
    .bind(org_id)
    .bind(filter.kind.map(LocationKind::as_str))
    .bind(filter.id)
    .bind(filter.status.as_deref())
    .bind(filter.currency.as_deref())
    .bind(kinds)
    .bind(ids)
    .bind(after.as_ref().map(|a| a.0.clone()))
    .bind(after.map(|a| a.1))
    .bind(as_of)
    .bind(visibility.own.as_deref())
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let mut balances = Vec::with_capacity(rows.len());
    for (kind, id, doc, functional, native, found, anomalies) in rows {
        let location: TreasuryLocation = crate::from_doc(doc)?;
        let at = LocationRef { kind, id };
        let (functional, native, anomalies) = match &visibility.own {
            // The user's own lines: summed, their gaps counted (no running figure is kept per user). A
            // line's own gap is what it moved the location's running count by (a reversal closes one).
            Some(user) => {
                let (functional, native, gaps): (Option<i64>, Option<i64>, i64) = sqlx::query_as(
                    "select sum(functional)::bigint, sum(native)::bigint, coalesce(sum(gap), 0)::bigint
                     from (select functional, native, created_by,
                                  running_gaps - coalesce(lag(running_gaps) over (
                                      order by recorded_at, position, line_no), 0) as gap
                           from journal_lines where org_id = $1 and location_kind = $2 and location_id = $3
                             and ($5::timestamptz is null or recorded_at <= $5)) l
                     where created_by = $4",
                )
                .bind(org_id)
                .bind(kind)
                .bind(id)
                .bind(user)
                .bind(as_of)
                .fetch_one(pool)
                .await?;
                // A sum over no lines is none: nothing moved.
                (functional.unwrap_or(0), if gaps > 0 { None } else { Some(native.unwrap_or(0)) }, gaps)
            }
            None if found => (functional.unwrap_or(0), native, anomalies),
            None => (0, Some(0), anomalies),
        };
        balances.push(BalanceRow { at, location, functional, native, anomalies });
    }
    Ok(balances)
}

/// What the movements list filters on (each `None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MovementFilter {
    /// The location's kind and id (each `None`: any).
    pub kind: Option<LocationKind>,
    pub id: Option<Uuid>,
    pub movement_type: Option<String>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
}

/// A movement as stored for reads, with its persistence time.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct MovementRow {
    #[sqlx(json, rename = "doc")]
    pub movement: MovementDoc,
    pub created_at: OffsetDateTime,
}

/// One movement row by its id (a ledger line's) or its movement id, when the reader may see it.
pub async fn movement(
    pool: &PgPool,
    org_id: Uuid,
    id: Uuid,
    visibility: &Visibility,
) -> Result<Option<MovementRow>, sqlx::Error> {
    // A payment's id names all its lines: the first the reader sees, whichever location it is at.
    let (kinds, ids) = visibility.kinds_and_ids();
    sqlx::query_as(
        "select doc, created_at from treasury_movements_view
         where org_id = $1 and (id = $2 or treasury_movement_id = $2) and ($3::text is null or created_by = $3)
           and ($4::text[] is null or (location_kind, location_id) in (select * from unnest($4::text[], $5::uuid[])))
         order by id limit 1",
    )
    .bind(org_id)
    .bind(id)
    .bind(visibility.own.as_deref())
    .bind(kinds)
    .bind(ids)
    .fetch_optional(pool)
    .await
}

/// A newest-first key: the operating date, the persistence time and the id.
pub type DatedKey = (Date, OffsetDateTime, Uuid);

/// Up to `limit` movements after `after`, newest first (`occurred_on`, `created_at`, `id`).
pub async fn movements(
    pool: &PgPool,
    org_id: Uuid,
    filter: &MovementFilter,
    visibility: &Visibility,
    after: Option<DatedKey>,
    limit: i64,
) -> Result<Vec<MovementRow>, sqlx::Error> {
    let (kinds, ids) = visibility.kinds_and_ids();
    sqlx::query_as(
        "select doc, created_at from treasury_movements_view m
         where m.org_id = $1 and ($2::text is null or m.location_kind = $2) and ($3::uuid is null or m.location_id = $3)
           and ($4::text is null or m.movement_type = $4) and ($5::date is null or m.occurred_on >= $5)
           and ($6::date is null or m.occurred_on <= $6)
           and ($7::text[] is null or (m.location_kind, m.location_id) in (select * from unnest($7::text[], $8::uuid[])))
           and ($9::text is null or m.created_by = $9)
           and ($10::date is null or (m.occurred_on, m.created_at, m.id) < ($10, $11, $12))
         order by m.occurred_on desc, m.created_at desc, m.id desc limit $13",
    )
    .bind(org_id)
    .bind(filter.kind.map(LocationKind::as_str))
    .bind(filter.id)
    .bind(filter.movement_type.as_deref())
    .bind(filter.date_from)
    .bind(filter.date_to)
    .bind(kinds)
    .bind(ids)
    .bind(visibility.own.as_deref())
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(after.map(|a| a.2))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// A funds transfer as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TransferRow {
    pub id: Uuid,
    pub doc: Value,
    pub occurred_on: Date,
    pub created_at: OffsetDateTime,
}

/// What the transfers list filters on (each `None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TransferFilter {
    /// Either endpoint's kind and id (each `None`: any).
    pub kind: Option<LocationKind>,
    pub id: Option<Uuid>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
}

const TRANSFER_VISIBLE: &str =
    "($2::text[] is null or ((t.source_kind, t.source_id) in (select * from unnest($2::text[], $3::uuid[]))
           and (t.destination_kind, t.destination_id) in (select * from unnest($2::text[], $3::uuid[]))))
         and ($4::text is null or t.created_by = $4)";

/// One transfer, when the reader sees both its endpoints (and, with `own`, made it).
pub async fn transfer(
    pool: &PgPool,
    org_id: Uuid,
    id: Uuid,
    visibility: &Visibility,
) -> Result<Option<TransferRow>, sqlx::Error> {
    let (kinds, ids) = visibility.kinds_and_ids();
    let sql = format!(
        "select t.id, t.doc, t.occurred_on, t.created_at from funds_transfers_view t
         where t.org_id = $1 and {TRANSFER_VISIBLE} and t.id = $5"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(kinds)
        .bind(ids)
        .bind(visibility.own.as_deref())
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Up to `limit` transfers after `after`, newest first (`occurred_on`, `created_at`, `id`).
pub async fn transfers(
    pool: &PgPool,
    org_id: Uuid,
    filter: &TransferFilter,
    visibility: &Visibility,
    after: Option<DatedKey>,
    limit: i64,
) -> Result<Vec<TransferRow>, sqlx::Error> {
    let (kinds, ids) = visibility.kinds_and_ids();
    let sql = format!(
        "select t.id, t.doc, t.occurred_on, t.created_at from funds_transfers_view t
         where t.org_id = $1 and {TRANSFER_VISIBLE}
           and (($5::text is null or t.source_kind = $5) and ($6::uuid is null or t.source_id = $6)
                or ($5::text is null or t.destination_kind = $5) and ($6::uuid is null or t.destination_id = $6))
           and ($7::date is null or t.occurred_on >= $7) and ($8::date is null or t.occurred_on <= $8)
           and ($9::date is null or (t.occurred_on, t.created_at, t.id) < ($9, $10, $11))
         order by t.occurred_on desc, t.created_at desc, t.id desc limit $12"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(kinds)
        .bind(ids)
        .bind(visibility.own.as_deref())
        .bind(filter.kind.map(LocationKind::as_str))
        .bind(filter.id)
        .bind(filter.date_from)
        .bind(filter.date_to)
        .bind(after.map(|a| a.0))
        .bind(after.map(|a| a.1))
        .bind(after.map(|a| a.2))
        .bind(limit)
        .fetch_all(pool)
        .await
}
