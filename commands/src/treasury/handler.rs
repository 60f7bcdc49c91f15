//! How the workers run funds transfers: the document shape ([`crate::document`]) with the facts loaded
//! from the write model (both endpoints with their ledger accounts, whether the transfer exists) and the
//! decision appended as one event carrying its balanced entry. Balances are folds of the journal, so a
//! transfer locks nothing: fifty transfers out of one register commit side by side.

use super::movements::{Holding, MovementCommand, MovementFacts, MovementOutcome};
use super::{LocationFacts, TransferCommand, TransferFacts, TransferOutcome};
use crate::aggregate::Rejection;
use crate::document::Document;
use crate::engine::{Committed, ExecuteError, append_typed};
use crate::handler::handler;
use crate::reply::CommandReply;
use events::catalogue::{
    Currency, FundsTransferEvent, JournalEntry, LocationRef, LocationStatus, TreasuryMovementEvent, ar_date,
};
use events::domain::{Cents, ExchangeRate};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use std::collections::{BTreeMap, BTreeSet};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A location of the organization with its ledger account, as commands see them.
pub async fn load_location(
    conn: &mut PgConnection,
    org_id: Uuid,
    at: LocationRef,
) -> Result<Option<LocationFacts>, ExecuteError> {
    let row: Option<(Currency, LocationStatus, Uuid, Option<bool>)> = sqlx::query_as(
        "select l.currency, l.status, l.ledger_account_id, a.is_active
         from treasury_locations l left join ledger_accounts a on a.org_id = l.org_id and a.id = l.ledger_account_id
         where l.org_id = $1 and l.kind = $2 and l.id = $3",
    )
    .bind(org_id)
    .bind(at.kind.as_str())
    .bind(at.id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|(currency, status, ledger_account_id, account_active)| LocationFacts {
        currency,
        status,
        ledger_account_id,
        account_active,
    }))
}

/// Funds transfers (`POST /api/v1/funds-transfers`).
pub struct FundsTransfers;

handler! {
    impl Handler for FundsTransfers as Document {
        type Command = TransferCommand;
        JOBS: &[];

        stream_id(command) {
            command.transfer_id()
        }
    }
}

impl Document for FundsTransfers {
    type Command = TransferCommand;
    type Facts = TransferFacts;
    type Decision = events::catalogue::FundsTransfer;

    async fn load(
        command: &TransferCommand,
        conn: &mut PgConnection,
        org_id: Uuid,
    ) -> Result<TransferFacts, ExecuteError> {
        let TransferCommand::Create { id, input, .. } = command;
        let exists: bool = sqlx::query_scalar("select exists(select 1 from events where stream_id = $1)")
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
        Ok(TransferFacts {
            exists,
            source: load_location(conn, org_id, input.source).await?,
            destination: load_location(conn, org_id, input.destination).await?,
            today: Some(ar_date(OffsetDateTime::now_utc())),
        })
    }

    fn decide(command: &TransferCommand, facts: &TransferFacts) -> Result<Self::Decision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &TransferCommand,
        _facts: TransferFacts,
        transfer: Self::Decision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.transfer_id();
        let event = FundsTransferEvent::FundsTransferred(Box::new(transfer.clone()));
        let stream =
            StreamRef { org_id, stream_type: FundsTransferEvent::STREAM_TYPE, stream_id: id, expected_version: 0 };
        let request = AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() };
        let Committed { key, keys, recorded_at } = append_typed(conn, &[request], id).await?;
        let outcome = TransferOutcome { id, transfer, at: recorded_at };
        Ok(CommandReply::accepted(key, true, &outcome, keys)?)
    }
}

/// A manual movement as its stream stands: the current version (none when deleted or new), whether it
/// was deleted, how many entries it has posted, its stream version and when its last event was recorded.
pub async fn load_movement(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<(MovementFacts, usize, i32), ExecuteError> {
    let mut facts = MovementFacts::default();
    let (mut posted, mut version) = (0, 0);
    for event in events::store::load_stream(conn, org_id, id).await? {
        if event.stream_type != TreasuryMovementEvent::STREAM_TYPE {
            return Err(Rejection::not_found("treasury_movement").into());
        }
        let decoded = TreasuryMovementEvent::decode(&event.event_type, event.schema_version, event.data)
            .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        match decoded {
            TreasuryMovementEvent::ManualMovementRecorded(movement) => {
                facts.current = Some(*movement);
                posted += 1;
            }
            TreasuryMovementEvent::ManualMovementReplaced(replaced) => {
                facts.current = Some(replaced.movement);
                posted += 2;
            }
            TreasuryMovementEvent::ManualMovementDeleted(_) => {
                facts.current = None;
                facts.deleted = true;
                posted += 1;
            }
        }
        version = event.version;
        facts.created_at.get_or_insert(event.recorded_at);
        facts.updated_at = Some(event.recorded_at);
    }
    Ok((facts, posted, version))
}

/// Which of `ids` are ledger accounts of the organization: whether each is active and its currency;
/// and which of them back a register, safe or bank account.
pub async fn ledger_accounts(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: Vec<Uuid>,
) -> Result<(BTreeMap<Uuid, (bool, Currency)>, BTreeSet<Uuid>), ExecuteError> {
    if ids.is_empty() {
        return Ok((BTreeMap::new(), BTreeSet::new()));
    }
    let rows: Vec<(Uuid, bool, Currency, bool)> = sqlx::query_as(
        "select a.id, a.is_active, a.currency,
                exists(select 1 from treasury_locations l where l.org_id = a.org_id and l.ledger_account_id = a.id)
         from ledger_accounts a where a.org_id = $1 and a.id = any($2)",
    )
    .bind(org_id)
    .bind(ids)
    .fetch_all(&mut *conn)
    .await?;
    let backing = rows.iter().filter(|row| row.3).map(|row| row.0).collect();
    Ok((rows.into_iter().map(|(id, active, currency, _)| (id, (active, currency))).collect(), backing))
}

/// Which of `ids` are cost centers of the organization, and whether each is active.
pub async fn cost_centers(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: Vec<Uuid>,
) -> Result<BTreeMap<Uuid, bool>, ExecuteError> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(Uuid, bool)> =
        sqlx::query_as("select id, is_active from cost_centers where org_id = $1 and id = any($2)")
            .bind(org_id)
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
    Ok(rows.into_iter().collect())
}

/// The holdings of the dollar locations `locations` names (in any order, any repeated), each locked until
/// the transaction ends (a decision that leaves at carrying value or gives dollars back reads them, and
/// the append moves them). Every command that locks holdings locks them here, in `lock_order`, so two
/// commands naming the same locations (a replacement moving a movement from one to the other and
/// another moving one back, a payment and a void over several) queue instead of deadlocking.
pub async fn lock_holdings(
    conn: &mut PgConnection,
    org_id: Uuid,
    locations: Vec<LocationRef>,
) -> Result<BTreeMap<LocationRef, Holding>, ExecuteError> {
    let mut holdings = BTreeMap::new();
    for at in lock_order(locations) {
        holdings.insert(at, lock_holding(conn, org_id, at).await?);
    }
    Ok(holdings)
}

/// The one order holdings are locked in: by location (its kind, then its id), each once.
fn lock_order(mut locations: Vec<LocationRef>) -> Vec<LocationRef> {
    locations.sort();
    locations.dedup();
    locations
}

/// The locations whose holdings [`hold`] moves for `entries`: those of the lines of a location that
/// carry dollars (a reversal's are the entry's it undoes).
pub fn held_locations(entries: &[&JournalEntry]) -> Vec<LocationRef> {
    entries
        .iter()
        .flat_map(|entry| &entry.lines)
        .filter(|line| line.native.is_some())
        .filter_map(|line| line.location.map(|side| side.location))
        .collect()
}

/// A dollar location's holdings, locked until the transaction ends; only [`lock_holdings`] takes it, so
/// every lock of several comes in one order.
async fn lock_holding(conn: &mut PgConnection, org_id: Uuid, at: LocationRef) -> Result<Holding, ExecuteError> {
    let row: Option<(Cents, Cents)> = sqlx::query_as(
        "select native_balance, functional_balance from treasury_locations
         where org_id = $1 and kind = $2 and id = $3 for update",
    )
    .bind(org_id)
    .bind(at.kind.as_str())
    .bind(at.id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map_or_else(Holding::default, |(native, functional)| Holding { native, functional }))
}

/// The central bank's dollar rate of `on`, or the latest earlier one loaded: its date and value.
pub async fn central_rate(conn: &mut PgConnection, on: Date) -> Result<Option<(Date, ExchangeRate)>, ExecuteError> {
    let row: Option<(Date, String)> = sqlx::query_as(
        "select rate_on, rate::text from exchange_rates where currency = 'DOL' and rate_on <= $1
         order by rate_on desc limit 1",
    )
    .bind(on)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.and_then(|(date, rate)| rate.parse().ok().map(|rate| (date, rate))))
}

/// The ledger accounts an organization's settings name for the treasury and payments to post to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrgAccount {
    ExchangeDifference,
    Receivables,
    Payables,
    PaymentFees,
}

impl OrgAccount {
    fn column(self) -> &'static str {
        match self {
            Self::ExchangeDifference => "exchange_difference_account_id",
            Self::Receivables => "receivables_account_id",
            Self::Payables => "payables_account_id",
            Self::PaymentFees => "payment_fees_account_id",
        }
    }
}

/// The account the organization's settings name for `which`, and whether it is active.
pub async fn org_account(
    conn: &mut PgConnection,
    org_id: Uuid,
    which: OrgAccount,
) -> Result<Option<(Uuid, bool)>, ExecuteError> {
    let column = which.column();
    let sql = format!(
        "select o.{column}, a.is_active from organizations o
         left join ledger_accounts a on a.org_id = o.id and a.id = o.{column} where o.id = $1"
    );
    let row: Option<(Option<Uuid>, Option<bool>)> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).fetch_optional(&mut *conn).await?;
    Ok(row.and_then(|(id, active)| id.map(|id| (id, active.unwrap_or(false)))))
}

/// Moves the holdings of the dollar locations `entries` post to (the lines of a location that carry
/// dollars), in the transaction that appends them.
pub async fn hold(conn: &mut PgConnection, org_id: Uuid, entries: &[&JournalEntry]) -> Result<(), ExecuteError> {
    for line in entries.iter().flat_map(|entry| &entry.lines) {
        let (Some(side), Some(native)) = (line.location, line.native) else { continue };
        sqlx::query(
            "update treasury_locations set native_balance = native_balance + $4,
                    functional_balance = functional_balance + $5
             where org_id = $1 and kind = $2 and id = $3",
        )
        .bind(org_id)
        .bind(side.location.kind.as_str())
        .bind(side.location.id)
        .bind(native)
        .bind(line.functional)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Manual movements (`POST`, `PUT` and `DELETE /api/v1/treasury/movements`).
pub struct ManualMovements;

handler! {
    impl Handler for ManualMovements as Document {
        type Command = MovementCommand;
        JOBS: &[];

        stream_id(command) {
            command.movement_id()
        }
    }
}

impl Document for ManualMovements {
    type Command = MovementCommand;
    type Facts = (MovementFacts, usize, i32);
    type Decision = TreasuryMovementEvent;

    async fn load(
        command: &MovementCommand,
        conn: &mut PgConnection,
        org_id: Uuid,
    ) -> Result<Self::Facts, ExecuteError> {
        let (mut facts, posted, version) = load_movement(conn, org_id, command.movement_id()).await?;
        facts.today = Some(ar_date(OffsetDateTime::now_utc()));
        // The dollar locations the command moves: those the version a replacement or deletion undoes
        // moved, and the new version's location when it holds dollars; all locked at once, in one order.
        let mut dollars = match (command, &facts.current) {
            (MovementCommand::Replace { .. } | MovementCommand::Delete { .. }, Some(current)) => {
                held_locations(&[&current.entry])
            }
            _ => Vec::new(),
        };
        let input = match command {
            MovementCommand::Record { input, .. } | MovementCommand::Replace { input, .. } => input,
            MovementCommand::Delete { .. } => {
                facts.holdings = lock_holdings(conn, org_id, dollars).await?;
                return Ok((facts, posted, version));
            }
        };
        facts.location = load_location(conn, org_id, input.location).await?;
        if facts.location.is_some_and(|l| l.currency == Currency::Dol) {
            dollars.push(input.location);
            facts.central_rate = central_rate(conn, input.occurred_on).await?;
            facts.exchange_account = org_account(conn, org_id, OrgAccount::ExchangeDifference).await?;
        }
        facts.holdings = lock_holdings(conn, org_id, dollars).await?;
        let accounts = input.counterparts.iter().map(|c| c.account_id).collect();
        (facts.accounts, facts.location_accounts) = ledger_accounts(conn, org_id, accounts).await?;
        let centers = input
            .counterparts
            .iter()
            .flat_map(|c| [c.cost_center1_id, c.cost_center2_id, c.cost_center3_id])
            .flatten()
            .chain(input.distributions.iter().map(|d| d.cost_center1_id))
            .collect();
        facts.cost_centers = cost_centers(conn, org_id, centers).await?;
        let current = facts.current.as_ref().and_then(|m| m.contact_id);
        if let Some(contact) = input.contact_id.apply(&current) {
            facts.contact_known = sqlx::query_scalar(
                "select exists(select 1 from events where stream_id = $1 and org_id = $2
                               and stream_type in ('customer', 'supplier'))",
            )
            .bind(contact)
            .bind(org_id)
            .fetch_one(&mut *conn)
            .await?;
        }
        Ok((facts, posted, version))
    }

    fn decide(command: &MovementCommand, (facts, posted, _): &Self::Facts) -> Result<Self::Decision, Rejection> {
        super::movements::decide(command, facts, *posted)
    }

    async fn write(
        command: &MovementCommand,
        (facts, _, version): Self::Facts,
        event: Self::Decision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.movement_id();
        let movement = match &event {
            TreasuryMovementEvent::ManualMovementRecorded(movement) => Some((**movement).clone()),
            TreasuryMovementEvent::ManualMovementReplaced(replaced) => Some(replaced.movement.clone()),
            TreasuryMovementEvent::ManualMovementDeleted(_) => None,
        };
        let created = matches!(event, TreasuryMovementEvent::ManualMovementRecorded(_));
        let entries = match &event {
            TreasuryMovementEvent::ManualMovementRecorded(movement) => vec![&movement.entry],
            TreasuryMovementEvent::ManualMovementReplaced(replaced) => {
                vec![&replaced.reversal, &replaced.movement.entry]
            }
            TreasuryMovementEvent::ManualMovementDeleted(deleted) => vec![&deleted.reversal],
        };
        hold(conn, org_id, &entries).await?;
        let stream = StreamRef {
            org_id,
            stream_type: TreasuryMovementEvent::STREAM_TYPE,
            stream_id: id,
            expected_version: version,
        };
        let request = AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() };
        let Committed { key, keys, recorded_at: now } = append_typed(conn, &[request], id).await?;
        let currency = facts.location.map_or(Currency::Pes, |l| l.currency);
        let created_at = facts.created_at.unwrap_or(now);
        let outcome = MovementOutcome { id, movement, currency, created_at, updated_at: now };
        Ok(CommandReply::accepted(key, created, &outcome, keys)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::catalogue::{JournalLine, LocationKind, LocationLine, MovementType};

    fn at(kind: LocationKind, n: u128) -> LocationRef {
        LocationRef { kind, id: Uuid::from_u128(n) }
    }

    #[test]
    fn holdings_are_locked_in_one_order_whatever_order_a_command_names_them_in() {
        let (first, second, safe) =
            (at(LocationKind::BankAccount, 1), at(LocationKind::BankAccount, 2), at(LocationKind::Safe, 1));
        // A replacement moving a movement from the second account to the first names the second (the
        // version it undoes) first; one moving another movement back names it last. Both lock the first
        // account, then the second, so neither holds one while waiting for the other's.
        assert_eq!(lock_order(vec![second, first]), [first, second]);
        assert_eq!(lock_order(vec![first, second]), [first, second]);
        // A payment with several lines per location, or a void of one, locks each location once.
        assert_eq!(lock_order(vec![safe, second, first, second, safe]), [first, second, safe]);
    }

    #[test]
    fn the_locations_held_are_those_whose_lines_carry_dollars() {
        let line = |location: Option<LocationRef>, native: Option<i64>| JournalLine {
            account_id: Uuid::from_u128(9),
            functional: Cents::of(100),
            native: native.map(Cents::of),
            location: location.map(|location| LocationLine {
                location,
                movement_id: Uuid::from_u128(5),
                movement_type: MovementType::ManualIncome,
                line_id: None,
            }),
        };
        let (dollars, pesos, legacy) =
            (at(LocationKind::BankAccount, 2), at(LocationKind::CashRegister, 1), at(LocationKind::BankAccount, 1));
        let entry = JournalEntry {
            id: Uuid::from_u128(6),
            occurred_on: Date::from_calendar_date(2026, time::Month::March, 2).expect("date"),
            // A dollar location's line, a peso location's, a dollar line imported without its dollars
            // (which never moved the holdings) and a counterpart in dollars (no location).
            lines: vec![
                line(Some(dollars), Some(1)),
                line(Some(pesos), None),
                line(Some(legacy), None),
                line(None, Some(1)),
            ],
        };
        assert_eq!(held_locations(&[&entry]), [dollars]);
        let reversal = entry.reversal(Uuid::from_u128(7), entry.occurred_on);
        assert_eq!(held_locations(&[&entry, &reversal]), [dollars, dollars]);
    }
}
