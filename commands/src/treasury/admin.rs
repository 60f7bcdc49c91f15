//! The operator's treasury set-up (`backoffice admin create-bank-account | create-cash-register |
//! create-safe | set-location-status | create-ledger-account | create-cost-center | load-rates`): each
//! appends its event and writes the write-model row in one transaction. `create-org` opens a new
//! organization's chart, register and safe through the same `open_account` and `open_location`.

use super::is_valid_cbu;
use crate::admin::{AdminError, organization_version};
use events::catalogue::{
    CostCenter, CostCenterEvent, Currency, LedgerAccount, LedgerAccountEvent, LocationKind, LocationStatus,
    LocationStatusChange, TreasuryLocation, TreasuryLocationEvent,
};
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::{PgConnection, PgPool};
use time::Date;
use uuid::Uuid;

/// A location as the operator describes it (bank details only for bank accounts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLocation {
    pub kind: LocationKind,
    pub name: String,
    pub currency: Currency,
    pub bank: Option<String>,
    pub account_number: Option<String>,
    pub alias: Option<String>,
    pub uses_checkbook: bool,
    /// The ledger account behind it; none opens one of the location's name and currency.
    pub ledger_account_id: Option<Uuid>,
}

async fn append<E: EventPayload>(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    version: i32,
    event: E,
) -> Result<(), AdminError> {
    let stream = StreamRef { org_id, stream_type: E::STREAM_TYPE, stream_id: id, expected_version: version };
    store::append(conn, stream, &[event.to_new_event()?], &Metadata::system("admin")).await?;
    Ok(())
}

fn text(value: &str, what: &str, max: usize) -> Result<String, AdminError> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > max {
        return Err(AdminError::Invalid(format!("{what} must be 1 to {max} characters")));
    }
    Ok(value.to_owned())
}

/// Opens a ledger account inside the caller's transaction: its row and its `LedgerAccountOpened` event
/// (`create_ledger_account`, a location's own account, and the chart `create-org` seeds).
pub(crate) async fn open_account(
    conn: &mut PgConnection,
    org_id: Uuid,
    account: LedgerAccount,
) -> Result<Uuid, AdminError> {
    let id = Uuid::now_v7();
    let inserted = sqlx::query(
        "insert into ledger_accounts (org_id, id, code, name, currency) values ($1, $2, $3, $4, $5)
         on conflict (org_id, code) do nothing",
    )
    .bind(org_id)
    .bind(id)
    .bind(&account.code)
    .bind(&account.name)
    .bind(account.currency.as_str())
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(AdminError::Invalid(format!("the ledger account code {} is taken", account.code)));
    }
    append(conn, org_id, id, 0, LedgerAccountEvent::LedgerAccountOpened(account)).await?;
    Ok(id)
}

/// Opens a ledger account of the organization's chart (codes are unique in the organization).
pub async fn create_ledger_account(
    pool: &PgPool,
    org_id: Uuid,
    code: &str,
    name: &str,
    currency: Currency,
) -> Result<Uuid, AdminError> {
    let account = LedgerAccount { code: text(code, "the code", 20)?, name: text(name, "the name", 100)?, currency };
    let mut tx = pool.begin().await?;
    organization_version(&mut tx, org_id).await?;
    let id = open_account(&mut tx, org_id, account).await?;
    tx.commit().await?;
    Ok(id)
}

/// Opens a cost center (codes are unique in the organization).
pub async fn create_cost_center(pool: &PgPool, org_id: Uuid, code: &str, name: &str) -> Result<Uuid, AdminError> {
    let center = CostCenter { code: text(code, "the code", 20)?, name: text(name, "the name", 100)? };
    let mut tx = pool.begin().await?;
    organization_version(&mut tx, org_id).await?;
    let id = Uuid::now_v7();
    let inserted = sqlx::query(
        "insert into cost_centers (org_id, id, code, name) values ($1, $2, $3, $4) on conflict (org_id, code) do nothing",
    )
    .bind(org_id)
    .bind(id)
    .bind(&center.code)
    .bind(&center.name)
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(AdminError::Invalid(format!("the cost center code {} is taken", center.code)));
    }
    append(&mut tx, org_id, id, 0, CostCenterEvent::CostCenterOpened(center)).await?;
    tx.commit().await?;
    Ok(id)
}

/// Opens a bank account, cash register or safe, with its ledger account (the one named, which must be
/// an active account of the organization in the location's currency, or a new one).
pub async fn create_location(pool: &PgPool, org_id: Uuid, new: NewLocation) -> Result<Uuid, AdminError> {
    let mut tx = pool.begin().await?;
    organization_version(&mut tx, org_id).await?;
    let id = open_location(&mut tx, org_id, new).await?;
    tx.commit().await?;
    Ok(id)
}

/// [`create_location`] inside the caller's transaction, for an organization known to exist (`create-org`
/// seeds its register and safe with it). A location without a ledger account gets the next code of its
/// kind's group: `1.1.2.NN` for bank accounts, `1.1.1.NN` for registers and safes.
pub(crate) async fn open_location(conn: &mut PgConnection, org_id: Uuid, new: NewLocation) -> Result<Uuid, AdminError> {
    let name = text(&new.name, "the name", 100)?;
    let bank_only = [&new.bank, &new.account_number, &new.alias].iter().any(|v| v.is_some()) || new.uses_checkbook;
    if new.kind != LocationKind::BankAccount && bank_only {
        return Err(AdminError::Invalid("bank details belong to bank accounts only".into()));
    }
    let bank = new.bank.as_deref().map(|b| text(b, "the bank", 100)).transpose()?;
    if new.kind == LocationKind::BankAccount && bank.is_none() {
        return Err(AdminError::Invalid("a bank account names its bank".into()));
    }
    if let Some(number) = &new.account_number
        && !is_valid_cbu(number)
    {
        return Err(AdminError::Invalid("the CBU must be 22 digits with both check digits right".into()));
    }
    let alias = new.alias.as_deref().map(|a| text(a, "the alias", 20)).transpose()?;
    if let Some(alias) = &alias
        && (alias.chars().count() < 6 || !alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
    {
        return Err(AdminError::Invalid("an alias is 6 to 20 letters, digits, dots or hyphens".into()));
    }
    let ledger_account_id = match new.ledger_account_id {
        Some(account) => {
            let found: Option<(String, bool)> =
                sqlx::query_as("select currency, is_active from ledger_accounts where org_id = $1 and id = $2")
                    .bind(org_id)
                    .bind(account)
                    .fetch_optional(&mut *conn)
                    .await?;
            match found {
                Some((currency, true)) if currency == new.currency.as_str() => account,
                Some((_, true)) => return Err(AdminError::Invalid("the ledger account is in another currency".into())),
                _ => {
                    return Err(AdminError::Invalid("no active ledger account of the organization has this id".into()));
                }
            }
        }
        None => {
            let prefix = if new.kind == LocationKind::BankAccount { "1.1.2" } else { "1.1.1" };
            let taken: i64 =
                sqlx::query_scalar("select count(*) from ledger_accounts where org_id = $1 and code like $2")
                    .bind(org_id)
                    .bind(format!("{prefix}.%"))
                    .fetch_one(&mut *conn)
                    .await?;
            let account = LedgerAccount {
                code: format!("{prefix}.{:02}", taken + 1),
                name: name.clone(),
                currency: new.currency,
            };
            open_account(conn, org_id, account).await?
        }
    };
    let id = Uuid::now_v7();
    let location = TreasuryLocation {
        kind: new.kind,
        name,
        currency: new.currency,
        bank,
        account_number: new.account_number,
        alias,
        uses_checkbook: new.uses_checkbook,
        ledger_account_id,
        status: LocationStatus::Active,
    };
    sqlx::query(
        "insert into treasury_locations (org_id, kind, id, currency, ledger_account_id, status) values ($1, $2, $3, $4, $5, 'active')",
    )
    .bind(org_id)
    .bind(new.kind.as_str())
    .bind(id)
    .bind(new.currency.as_str())
    .bind(ledger_account_id)
    .execute(&mut *conn)
    .await?;
    append(conn, org_id, id, 0, TreasuryLocationEvent::LocationOpened(Box::new(location))).await?;
    Ok(id)
}

/// Activates or deactivates a location (an inactive one takes no new movements). Setting the status it
/// has records nothing.
pub async fn set_location_status(
    pool: &PgPool,
    org_id: Uuid,
    kind: LocationKind,
    id: Uuid,
    status: LocationStatus,
) -> Result<(), AdminError> {
    let mut tx = pool.begin().await?;
    let current: Option<String> = sqlx::query_scalar(
        "select status from treasury_locations where org_id = $1 and kind = $2 and id = $3 for update",
    )
    .bind(org_id)
    .bind(kind.as_str())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(current) = current else {
        return Err(AdminError::Invalid(format!("no {} of the organization has this id", kind.as_str())));
    };
    if current == status.as_str() {
        return Ok(());
    }
    sqlx::query("update treasury_locations set status = $4 where org_id = $1 and kind = $2 and id = $3")
        .bind(org_id)
        .bind(kind.as_str())
        .bind(id)
        .bind(status.as_str())
        .execute(&mut *tx)
        .await?;
    let version = store::stream_version(&mut tx, org_id, id).await?;
    append(&mut tx, org_id, id, version, TreasuryLocationEvent::LocationStatusChanged(LocationStatusChange { status }))
        .await?;
    tx.commit().await?;
    Ok(())
}

/// What loading a rates file did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RatesLoaded {
    pub inserted: u64,
    pub updated: u64,
    pub unchanged: u64,
}

/// One rate of a rates file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRow {
    pub date: Date,
    pub currency: Currency,
    /// Pesos per unit, as exact decimal text.
    pub rate: events::domain::ExchangeRate,
}

/// Reads a rates file: `date,currency,rate` per line (`2026-03-02,DOL,1050.25`), an optional header
/// line, blank lines and `#` comments ignored. Every bad line is named.
pub fn parse_rates(text: &str) -> Result<Vec<RateRow>, AdminError> {
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || (n == 0 && line.to_ascii_lowercase().starts_with("date")) {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed = match fields.as_slice() {
            [date, currency, rate] => {
                events::catalogue::parse_date(date).zip(Currency::parse(currency)).and_then(|(date, currency)| {
                    let rate = rate.parse::<events::domain::ExchangeRate>().ok()?;
                    (currency == Currency::Dol).then_some(RateRow { date, currency, rate })
                })
            }
            _ => None,
        };
        match parsed {
            Some(row) => rows.push(row),
            None => bad.push(n + 1),
        }
    }
    if !bad.is_empty() {
        let lines: Vec<String> = bad.iter().map(ToString::to_string).collect();
        return Err(AdminError::Invalid(format!(
            "lines {} are not `YYYY-MM-DD,DOL,rate` with a positive rate of up to six decimals",
            lines.join(", ")
        )));
    }
    Ok(rows)
}

/// Stores the rates (one per date and currency: loading the same file twice changes nothing; a new
/// figure for a date replaces the old one for movements recorded afterwards).
pub async fn load_rates(pool: &PgPool, rows: &[RateRow]) -> Result<RatesLoaded, AdminError> {
    let mut loaded = RatesLoaded::default();
    let mut tx = pool.begin().await?;
    for row in rows {
        let rate = row.rate.to_string();
        let previous: Option<bool> = sqlx::query_scalar(
            "select rate = $3::numeric from exchange_rates where currency = $1 and rate_on = $2 for update",
        )
        .bind(row.currency.as_str())
        .bind(row.date)
        .bind(&rate)
        .fetch_optional(&mut *tx)
        .await?;
        match previous {
            Some(true) => loaded.unchanged += 1,
            _ => {
                sqlx::query(
                    "insert into exchange_rates (currency, rate_on, rate) values ($1, $2, $3::numeric)
                     on conflict (currency, rate_on) do update set rate = excluded.rate",
                )
                .bind(row.currency.as_str())
                .bind(row.date)
                .bind(&rate)
                .execute(&mut *tx)
                .await?;
                if previous.is_some() {
                    loaded.updated += 1;
                } else {
                    loaded.inserted += 1;
                }
            }
        }
    }
    tx.commit().await?;
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rates_file_is_read_line_by_line() {
        let rows = parse_rates("date,currency,rate\n2026-03-02,DOL,1050.25\n\n# a comment\n2026-03-03, DOL ,1051\n")
            .expect("valid");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].rate.to_string(), "1050.25");
        let error = parse_rates("2026-03-02,DOL,1050.25\n2026-02-30,DOL,1\n2026-03-04,EUR,1\n2026-03-05,DOL,-1")
            .expect_err("bad lines");
        assert!(error.to_string().contains("lines 2, 3, 4"), "{error}");
    }
}
