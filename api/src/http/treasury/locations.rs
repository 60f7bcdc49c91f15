//! Bank accounts, cash registers and safes as reads show them, and their balances (leaf: none of
//! the treasury's other files is imported here).

use crate::http::ar_time;
use crate::http::presence::Nullable;
use events::catalogue::{LocationKind, LocationStatus};
use poem_openapi::{Enum, Object};
use projections::treasury::{BalanceRow, LocationRow};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// `bank_account`, `cash_register` or `safe`: the kind of a treasury location (`balance_type`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum BalanceType {
    BankAccount,
    CashRegister,
    Safe,
}

impl From<LocationKind> for BalanceType {
    fn from(kind: LocationKind) -> Self {
        match kind {
            LocationKind::BankAccount => Self::BankAccount,
            LocationKind::CashRegister => Self::CashRegister,
            LocationKind::Safe => Self::Safe,
        }
    }
}

/// `PES` (pesos) or `DOL` (dollars).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
pub enum LocationCurrency {
    #[oai(rename = "PES")]
    #[serde(rename = "PES")]
    Pes,
    #[oai(rename = "DOL")]
    #[serde(rename = "DOL")]
    Dol,
}

impl From<events::catalogue::Currency> for LocationCurrency {
    fn from(currency: events::catalogue::Currency) -> Self {
        match currency {
            events::catalogue::Currency::Pes => Self::Pes,
            events::catalogue::Currency::Dol => Self::Dol,
        }
    }
}

/// `active` or `inactive` (an inactive location takes no movements).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum LocationStatusData {
    Active,
    Inactive,
}

impl From<LocationStatus> for LocationStatusData {
    fn from(status: LocationStatus) -> Self {
        match status {
            LocationStatus::Active => Self::Active,
            LocationStatus::Inactive => Self::Inactive,
        }
    }
}

/// A bank account's safe configuration: no ledger account, organization or balance.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct BankAccountData {
    /// Always `bank_account`.
    pub object: String,
    pub id: Uuid,
    pub bank: String,
    pub name: String,
    pub currency: LocationCurrency,
    /// The 22-digit CBU.
    pub account_number: Nullable<String>,
    pub alias: Nullable<String>,
    /// Whether the account issues checks.
    pub uses_checkbook: bool,
    pub status: LocationStatusData,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A cash register or a safe.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct CashLocationData {
    /// `cash_register` or `safe`.
    pub object: String,
    pub id: Uuid,
    pub name: String,
    pub currency: LocationCurrency,
    pub status: LocationStatusData,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

pub fn bank_account(row: &LocationRow) -> BankAccountData {
    let l = &row.location;
    BankAccountData {
        object: "bank_account".into(),
        id: row.id,
        bank: l.bank.clone().unwrap_or_default(),
        name: l.name.clone(),
        currency: l.currency.into(),
        account_number: l.account_number.clone().into(),
        alias: l.alias.clone().into(),
        uses_checkbook: l.uses_checkbook,
        status: l.status.into(),
        created_at: ar_time(row.created_at),
        updated_at: ar_time(row.updated_at),
    }
}

pub fn cash_location(row: &LocationRow) -> CashLocationData {
    let l = &row.location;
    CashLocationData {
        object: l.kind.as_str().into(),
        id: row.id,
        name: l.name.clone(),
        currency: l.currency.into(),
        status: l.status.into(),
        created_at: ar_time(row.created_at),
        updated_at: ar_time(row.updated_at),
    }
}

/// `exact` (every line carries its native amount), `derived` (not used by this version) or
/// `unavailable` (some line of a dollar location lacks its dollars: `native_amount` is null).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum NativeQuality {
    Exact,
    Derived,
    Unavailable,
}

/// `organization`, or `own`: the sum counts only movements the delegated user created.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum VisibilityScope {
    Organization,
    Own,
}

/// A location's balance, from the ledger.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct BalanceData {
    /// Always `treasury_balance`.
    pub object: String,
    pub balance_type: BalanceType,
    /// With `balance_type`, the location's identity (one id may name a register and a safe).
    pub balance_id: Uuid,
    pub name: String,
    /// The location's currency.
    pub currency: LocationCurrency,
    pub status: LocationStatusData,
    /// Integer minor units in `currency`; null when the history lacks evidence.
    pub native_amount: Nullable<i64>,
    /// Integer cents of `functional_currency`: for a dollar location, the pesos its dollars were
    /// recorded at (carrying value).
    pub functional_amount: i64,
    /// Always `ARS`.
    pub functional_currency: String,
    pub native_amount_quality: NativeQuality,
    /// Facts needing review: lines of this location whose native amount is unknown.
    pub anomaly_count: i64,
    pub visibility_scope: VisibilityScope,
}

pub fn balance(row: &BalanceRow, scope: VisibilityScope) -> BalanceData {
    BalanceData {
        object: "treasury_balance".into(),
        balance_type: row.at.kind.into(),
        balance_id: row.at.id,
        name: row.location.name.clone(),
        currency: row.location.currency.into(),
        status: row.location.status.into(),
        native_amount: row.native.into(),
        functional_amount: row.functional,
        functional_currency: "ARS".into(),
        native_amount_quality: if row.native.is_some() { NativeQuality::Exact } else { NativeQuality::Unavailable },
        anomaly_count: row.anomalies,
        visibility_scope: scope,
    }
}

#[derive(Debug, Serialize, Object)]
pub struct BankAccountEnvelope {
    pub request_id: String,
    pub data: BankAccountData,
}

#[derive(Debug, Serialize, Object)]
pub struct CashLocationEnvelope {
    pub request_id: String,
    pub data: CashLocationData,
}
