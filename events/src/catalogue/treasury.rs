//! Events of the treasury: where money is kept (stream type `treasury_location`: bank accounts, cash
//! registers and safes, each backed by a ledger account), the chart of accounts (`ledger_account`),
//! cost centers (`cost_center`), and funds transfers (`funds_transfer`). Every fact that moves money
//! carries its journal entry: lines on ledger accounts whose functional (peso) amounts sum to zero, the
//! lines of a location also naming it, so balances and movements are folds of these events alone.

use super::stock::iso_date;
use crate::domain::{Cents, ExchangeRate};
use serde::{Deserialize, Serialize};
use time::Date;
use uuid::Uuid;

named_enum! {
    /// The kinds of place money is kept, as `balance_type` names them.
    #[derive(PartialOrd, Ord)]
    pub enum LocationKind { BankAccount = "bank_account", CashRegister = "cash_register", Safe = "safe" }
}

named_enum! {
    /// A location's currency: pesos (`PES`) or dollars (`DOL`).
    pub enum Currency { Pes = "PES", Dol = "DOL" }
}

named_enum! {
    /// `active` or `inactive`: an inactive location takes no new movements.
    pub enum LocationStatus { Active = "active", Inactive = "inactive" }
}

/// A location: the pair is its identity (one uuid may name a register and a safe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LocationRef {
    pub kind: LocationKind,
    pub id: Uuid,
}

/// A place money is kept. Bank accounts carry their bank details; registers and safes a name only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreasuryLocation {
    pub kind: LocationKind,
    pub name: String,
    pub currency: Currency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank: Option<String>,
    /// The 22-digit CBU (both check digits verified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(default)]
    pub uses_checkbook: bool,
    /// The ledger account behind the location (never shown by the API).
    pub ledger_account_id: Uuid,
    pub status: LocationStatus,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreasuryLocationEvent {
    LocationOpened(Box<TreasuryLocation>),
    LocationStatusChanged(LocationStatusChange),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocationStatusChange {
    pub status: LocationStatus,
}

payloads!(TreasuryLocationEvent, "treasury_location", LocationOpened(Box), LocationStatusChanged(_));

/// An account of the organization's chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerAccount {
    pub code: String,
    pub name: String,
    pub currency: Currency,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerAccountEvent {
    LedgerAccountOpened(LedgerAccount),
}

payloads!(LedgerAccountEvent, "ledger_account", LedgerAccountOpened(_));

/// A cost center movements may be distributed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostCenter {
    pub code: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CostCenterEvent {
    CostCenterOpened(CostCenter),
}

payloads!(CostCenterEvent, "cost_center", CostCenterOpened(_));

named_enum! {
    /// What a location's line of a journal entry is, as the movements list names it.
    pub enum MovementType {
        TransferOut = "transfer_out", TransferIn = "transfer_in", ManualIncome = "manual_income",
        ManualExpense = "manual_expense", CustomerPayment = "customer_payment", SupplierPayment = "supplier_payment",
    }
}

/// A location's side of a line: which location, the movement it belongs to (its id in the movements
/// list) and what kind of movement it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocationLine {
    pub location: LocationRef,
    pub movement_id: Uuid,
    pub movement_type: MovementType,
    /// The ledger line's own id when it is not the movement's (a manual movement's line changes with
    /// every version of the movement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_id: Option<Uuid>,
}

impl LocationLine {
    /// The id the movements list shows for this line.
    pub fn row_id(&self) -> Uuid {
        self.line_id.unwrap_or(self.movement_id)
    }
}

/// One line of a journal entry: a ledger account and its functional (peso) amount, positive on the
/// debit side (money in, for a location), with the native amount when the account is in dollars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalLine {
    pub account_id: Uuid,
    pub functional: Cents,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Cents>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<LocationLine>,
}

/// A balanced entry: its lines' functional amounts sum to zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub id: Uuid,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<JournalLine>,
}

impl JournalEntry {
    /// The entry that undoes this one: every line negated, under `id` and `occurred_on`.
    pub fn reversal(&self, id: Uuid, occurred_on: Date) -> JournalEntry {
        let lines = self
            .lines
            .iter()
            .map(|line| JournalLine { functional: -line.functional, native: line.native.map(|n| -n), ..line.clone() })
            .collect();
        JournalEntry { id, occurred_on, lines }
    }

    /// Whether the functional amounts sum to exactly zero (and the sum fits).
    pub fn is_balanced(&self) -> bool {
        Cents::checked_sum(self.lines.iter().map(|l| l.functional)).is_some_and(|sum| sum == Cents::ZERO)
    }
}

/// Money moved between two locations of the same organization, in pesos: one entry, the source line
/// first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundsTransfer {
    pub source: LocationRef,
    pub destination: LocationRef,
    pub amount: Cents,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    /// The delegated user who made it (none for an API key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub entry: JournalEntry,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FundsTransferEvent {
    FundsTransferred(Box<FundsTransfer>),
}

payloads!(FundsTransferEvent, "funds_transfer", FundsTransferred(Box));

named_enum! {
    /// `income` (money in) or `expense` (money out) of a manual movement.
    pub enum Direction { Income = "income", Expense = "expense" }
}

/// A counterpart of a manual movement: a ledger account, its share of the amount (in the location's
/// currency) and up to three cost centers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterLine {
    pub account_id: Uuid,
    pub amount: Cents,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_center1_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_center2_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_center3_id: Option<Uuid>,
}

/// A share of a movement assigned to a cost center.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    pub cost_center1_id: Uuid,
    pub amount_cents: Cents,
}

named_enum! {
    /// Where a dollar movement's rate came from.
    pub enum RateSource {
        /// The central bank's rate of the date (or the latest earlier one the operator loaded).
        CentralBank = "central_bank",
        /// The rate the request sent.
        Manual = "manual",
    }
}

/// The rate a dollar movement's counterparts were converted at: pesos per dollar, its source and the
/// date it is the rate of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedRate {
    pub value: ExchangeRate,
    pub source: RateSource,
    #[serde(with = "iso_date")]
    pub rate_date: Date,
}

/// A manual income or expense on one location: its counterparts (itemized `lines`, or one account
/// with the cost centers at the root) and the entry it posted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualMovement {
    pub location: LocationRef,
    pub direction: Direction,
    /// In the location's currency.
    pub amount: Cents,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub counterparts: Vec<CounterLine>,
    /// Whether the counterparts were sent as `lines` (otherwise one `account_id`).
    pub itemized: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distributions: Vec<Distribution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_id: Option<Uuid>,
    /// The delegated user who made it (none for an API key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// A dollar movement's rate (none on a peso location).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<AppliedRate>,
    /// A dollar movement's exchange difference in peso cents: the counterparts at the rate less the
    /// dollars' carrying value (positive a gain, negative a loss; zero for an income). None on a peso
    /// location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_difference: Option<Cents>,
    pub entry: JournalEntry,
}

/// A replaced movement: the entry undoing the previous version, and the new version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualMovementReplacement {
    pub reversal: JournalEntry,
    pub movement: ManualMovement,
}

/// A deleted movement: the entry undoing it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualMovementDeletion {
    pub reversal: JournalEntry,
    pub location: LocationRef,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreasuryMovementEvent {
    ManualMovementRecorded(Box<ManualMovement>),
    ManualMovementReplaced(Box<ManualMovementReplacement>),
    ManualMovementDeleted(Box<ManualMovementDeletion>),
}

payloads!(
    TreasuryMovementEvent,
    "treasury_movement",
    ManualMovementRecorded(Box),
    ManualMovementReplaced(Box),
    ManualMovementDeleted(Box)
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_balanced_only_when_its_lines_sum_to_zero() {
        let line =
            |cents| JournalLine { account_id: Uuid::nil(), functional: Cents::of(cents), native: None, location: None };
        let date = Date::from_calendar_date(2026, time::Month::March, 2).expect("date");
        let entry = JournalEntry { id: Uuid::nil(), occurred_on: date, lines: vec![line(-500), line(500)] };
        assert!(entry.is_balanced());
        let off = JournalEntry { lines: vec![line(-500), line(499)], ..entry };
        assert!(!off.is_balanced());
    }

    #[test]
    fn names_are_stored_as_the_api_spells_them() {
        let at = LocationRef { kind: LocationKind::CashRegister, id: Uuid::nil() };
        let text = serde_json::to_value(at).expect("json");
        assert_eq!(text["kind"], "cash_register");
        assert_eq!(serde_json::to_value(Currency::Dol).expect("json"), "DOL");
        for name in LocationKind::NAMES {
            assert_eq!(LocationKind::parse(name).map(LocationKind::as_str), Some(*name));
        }
    }
}
