//! Treasury (Style A, snake_case): bank accounts, cash registers and safes (read-only; operators set
//! them up), their balances now or as of any instant, the movements of each, and funds transfers
//! between them. What a credential sees: an API key, the organization; a delegated token with assigned
//! registers or safes, only those; with `own` visibility, only what its user created.
//!
//! This file holds the routes (the operations, the kinds and every handler); the objects are by
//! resource: `locations.rs` (locations and balances), `movements.rs` (movements and manual movements'
//! bodies) and `transfers.rs` (funds transfers). None of them imports this file.

use crate::http::auth::Principal;
use crate::http::body::RawJson;
use crate::http::error::{ApiError, ErrorType};
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::routes_group::routes;
use crate::http::resource::{Call, Kind, PageParams, Position, Write, decode_state};
use crate::http::shared_filters::{Filters, date_schema, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, Style};
use commands::protocol::{Command, CommandKind};
use commands::treasury::movements::{MovementCommand, MovementOutcome, parse_deletion, parse_movement};
use commands::treasury::{TransferCommand, TransferOutcome, parse_transfer};
use events::catalogue::{AR_OFFSET, LocationKind, LocationRef, LocationStatus, MovementType};
use events::domain::Scope;
use poem::http::StatusCode;
use poem_openapi::param::Query;
use projections::ProjectionId;
use projections::treasury::{
    self as read, BalanceRow, DatedKey, LocationFilter, LocationRow, MovementFilter, MovementRow, TransferFilter,
    TransferRow, Visibility,
};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use uuid::Uuid;

mod locations;
mod movements;
mod transfers;

pub use locations::*;
pub use movements::*;
pub use transfers::*;

operations! {
    TreasuryApi, INPUT_RULES;
    LIST_BANK_ACCOUNTS = read("listBankAccounts", Some(Scope::TreasuryRead));
    GET_BANK_ACCOUNT = read("getBankAccount", Some(Scope::TreasuryRead));
    LIST_CASH_REGISTERS = read("listCashRegisters", Some(Scope::TreasuryRead));
    GET_CASH_REGISTER = read("getCashRegister", Some(Scope::TreasuryRead));
    LIST_SAFES = read("listSafes", Some(Scope::TreasuryRead));
    GET_SAFE = read("getSafe", Some(Scope::TreasuryRead));
    LIST_BALANCES = read("listTreasuryBalances", Some(Scope::TreasuryRead));
    LIST_MOVEMENTS = read("listTreasuryMovements", Some(Scope::TreasuryRead));
    GET_MOVEMENT = read("getTreasuryMovement", Some(Scope::TreasuryRead))
        .unprocessable("A dollar movement recorded before complete amounts (its dollars or their pesos unknown: \
                        `functional_amount_origin` `legacy_unknown`) has no detail (`INCOMPLETE_AMOUNTS`); \
                        it still shows in the list");
    LIST_TRANSFERS = read("listFundsTransfers", Some(Scope::TreasuryRead));
    GET_TRANSFER = read("getFundsTransfer", Some(Scope::TreasuryRead));
    CREATE_MOVEMENT = write("createTreasuryMovement", Scope::TreasuryWrite, Idempotency::Required, CommandKind::TreasuryMovement)
        .unprocessable(MOVEMENT_WHY);
    REPLACE_MOVEMENT = write("replaceTreasuryMovement", Scope::TreasuryWrite, Idempotency::Required, CommandKind::TreasuryMovement)
        .unprocessable(MOVEMENT_WHY);
    DELETE_MOVEMENT = write("deleteTreasuryMovement", Scope::TreasuryWrite, Idempotency::Required, CommandKind::TreasuryMovement)
        .unprocessable(DELETE_WHY);
    CREATE_TRANSFER = write("createFundsTransfer", Scope::TreasuryWrite, Idempotency::Required, CommandKind::FundsTransfer)
        .unprocessable("The date is after today (UTC-3) (`FUTURE_DATE`), an endpoint is a dollar location \
                        (`UNSUPPORTED_CURRENCY`), or an endpoint has no ledger account (`LEDGER_NOT_CONFIGURED`); \
                        nothing was saved");
}

const MOVEMENT_WHY: &str = "The date is after today (UTC-3) (`FUTURE_DATE`); the location has no ledger \
                            account (`LEDGER_NOT_CONFIGURED`); a dollar movement has no rate (none sent and \
                            no central-bank rate loaded for its date or earlier: `EXCHANGE_RATE_NOT_FOUND`), \
                            or has an exchange difference and the organization no exchange-difference \
                            account (`EXCHANGE_DIFFERENCE_ACCOUNT_MISSING`); a dollar ledger account is a \
                            counterpart of a peso location (`CURRENCY_MISMATCH`); or a peso amount, or the \
                            dollars or pesos a dollar location would hold after it (the location a replacement \
                            leaves too, given back what the version replaced moved), passes the integer limit \
                            (`OUT_OF_RANGE`). Nothing was saved";

const DELETE_WHY: &str = "Giving back what the movement moved would take the dollars its dollar location holds, \
                          or the pesos they are carried at, past the integer limit (`OUT_OF_RANGE`). Nothing was \
                          deleted";

const BANK_ACCOUNTS: Kind = Kind::new("bank_account", ProjectionId::Treasury, "/api/v1/bank-accounts", "bank_accounts");
const CASH_REGISTERS: Kind =
    Kind::new("cash_register", ProjectionId::Treasury, "/api/v1/cash-registers", "cash_registers");
const SAFES: Kind = Kind::new("safe", ProjectionId::Treasury, "/api/v1/safes", "safes");
const BALANCES: Kind =
    Kind::new("treasury_balance", ProjectionId::Treasury, "/api/v1/treasury/balances", "treasury_balances");
const MOVEMENTS: Kind =
    Kind::new("treasury_movement", ProjectionId::Treasury, "/api/v1/treasury/movements", "treasury_movements");
const TRANSFERS: Kind =
    Kind::new("funds_transfer", ProjectionId::Treasury, "/api/v1/funds-transfers", "funds_transfers");

responses! {
    BankAccounts: Ok(RawJson<ListEnvelope<BankAccountData>>) = 200, "A page of bank accounts.";
    BankAccount: Ok(RawJson<BankAccountEnvelope>) = 200, "The bank account.";
    CashLocations: Ok(RawJson<ListEnvelope<CashLocationData>>) = 200, "A page of locations.";
    CashLocation: Ok(RawJson<CashLocationEnvelope>) = 200, "The location.";
    Balances: Ok(RawJson<ListEnvelope<BalanceData>>) = 200, "A page of balances, by `balance_type` then `balance_id`.";
    Movements: Ok(RawJson<ListEnvelope<MovementData>>) = 200, "A page of movements, newest first.";
    Movement: Ok(RawJson<MovementEnvelope>) = 200, "The movement.";
    Transfers: Ok(RawJson<ListEnvelope<FundsTransferData>>) = 200, "A page of funds transfers, newest first.";
    Transfer: Ok(RawJson<FundsTransferEnvelope>) = 200, "The funds transfer with its accounting effects.";
    TransferCreated: Created(RawJson<FundsTransferEnvelope>) = 201, "The funds transfer with its accounting effects.";
    MovementCreated: Created(RawJson<MovementEnvelope>) = 201, "The manual movement.";
    MovementDeleted: Ok(RawJson<MovementDeletedEnvelope>) = 200, "The movement is deleted and its entry reversed.";
}

pub struct TreasuryApi;

fn status_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "enum": LocationStatus::NAMES })
}

fn balance_type_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "enum": LocationKind::NAMES })
}

const INPUT_RULES: &[InputRule] = &[
    InputRule::Closed { schema: "FundsTransferInput" },
    InputRule::Closed { schema: "EndpointInput" },
    InputRule::Closed { schema: "MovementInput" },
    InputRule::Closed { schema: "MovementReplacement" },
    InputRule::Closed { schema: "MovementDeletion" },
    InputRule::Closed { schema: "CounterLineInput" },
    InputRule::Closed { schema: "DistributionInput" },
    InputRule::Query { operation: "listBankAccounts", parameter: "status", schema: status_schema },
    InputRule::Query {
        operation: "listBankAccounts",
        parameter: "currency",
        schema: || serde_json::json!({ "type": "string", "enum": events::catalogue::Currency::NAMES }),
    },
    InputRule::Query { operation: "listCashRegisters", parameter: "status", schema: status_schema },
    InputRule::Query { operation: "listSafes", parameter: "status", schema: status_schema },
    InputRule::Query {
        operation: "listTreasuryBalances",
        parameter: "as_of",
        schema: || serde_json::json!({ "anyOf": [{ "type": "string", "format": "date" }, { "type": "string", "format": "date-time" }] }),
    },
    InputRule::Query { operation: "listTreasuryBalances", parameter: "balance_type", schema: balance_type_schema },
    InputRule::Query { operation: "listTreasuryBalances", parameter: "balance_id", schema: uuid_schema },
    InputRule::Query { operation: "listTreasuryBalances", parameter: "status", schema: status_schema },
    InputRule::Query { operation: "listTreasuryMovements", parameter: "balance_type", schema: balance_type_schema },
    InputRule::Query { operation: "listTreasuryMovements", parameter: "balance_id", schema: uuid_schema },
    InputRule::Query {
        operation: "listTreasuryMovements",
        parameter: "movement_type",
        schema: || serde_json::json!({ "type": "string", "enum": MovementType::NAMES }),
    },
    InputRule::Query { operation: "listTreasuryMovements", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listTreasuryMovements", parameter: "date_to", schema: date_schema },
    InputRule::Query { operation: "listFundsTransfers", parameter: "balance_type", schema: balance_type_schema },
    InputRule::Query { operation: "listFundsTransfers", parameter: "balance_id", schema: uuid_schema },
    InputRule::Query { operation: "listFundsTransfers", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listFundsTransfers", parameter: "date_to", schema: date_schema },
];

/// What `principal` sees of the treasury.
pub(crate) fn visibility(principal: &Principal) -> Visibility {
    let Some(delegation) = &principal.delegation else { return Visibility::default() };
    let assigned: Vec<LocationRef> = delegation
        .registers
        .iter()
        .map(|id| LocationRef { kind: LocationKind::CashRegister, id: *id })
        .chain(delegation.safes.iter().map(|id| LocationRef { kind: LocationKind::Safe, id: *id }))
        .collect();
    Visibility {
        locations: (!assigned.is_empty()).then_some(assigned),
        own: (delegation.visibility == "own").then(|| delegation.user.clone()),
    }
}

/// The key of a list of locations: the kind, then the id.
impl Position for LocationRef {
    fn write(&self) -> String {
        format!("{}/{}", self.kind.as_str(), self.id)
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        let invalid = || ApiError::invalid_request("INVALID_CURSOR", "the cursor is not valid for this list");
        let (kind, id) = text.split_once('/').ok_or_else(invalid)?;
        let kind = LocationKind::parse(kind).ok_or_else(invalid)?;
        Ok(LocationRef { kind, id: Uuid::parse_str(id).map_err(|_| invalid())? })
    }
}

/// The key of a list newest first by business date: the date, the persistence time, the id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dated(pub(crate) DatedKey);

impl Position for Dated {
    fn write(&self) -> String {
        let (date, at, id) = self.0;
        format!("{date}/{}/{id}", at.format(&Rfc3339).unwrap_or_default())
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        let invalid = || ApiError::invalid_request("INVALID_CURSOR", "the cursor is not valid for this list");
        let mut parts = text.splitn(3, '/');
        let (Some(date), Some(at), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid());
        };
        let date = events::catalogue::parse_date(date).ok_or_else(invalid)?;
        let at = OffsetDateTime::parse(at, &Rfc3339).map_err(|_| invalid())?;
        Ok(Dated((date, at, Uuid::parse_str(id).map_err(|_| invalid())?)))
    }
}

/// `balance_type` and `balance_id`: the location filter (the spec sends them together; either alone
/// narrows by what it names).
fn location_filter(
    filters: &mut Filters,
    balance_type: Option<String>,
    balance_id: Option<String>,
) -> (Option<LocationKind>, Option<Uuid>) {
    let kind = filters.one_of(balance_type.clone(), "balance_type", LocationKind::NAMES);
    let id = filters.id(balance_id.clone(), "balance_id");
    (kind.as_deref().and_then(LocationKind::parse), id)
}

/// `as_of`: a date (the end of that day in UTC-3) or an RFC 3339 timestamp.
fn as_of(text: Option<String>) -> Result<Option<OffsetDateTime>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    if let Ok(at) = OffsetDateTime::parse(&text, &Rfc3339) {
        return Ok(Some(at));
    }
    let date = events::catalogue::parse_date(&text).ok_or_else(|| {
        ApiError::invalid_request("INVALID_PARAMETER", "as_of must be a date (YYYY-MM-DD) or an RFC 3339 timestamp")
            .with_detail(Some("as_of"), "invalid_format", "a date or an RFC 3339 timestamp")
    })?;
    let end = date.next_day().map(|d| d.midnight().assume_offset(AR_OFFSET) - time::Duration::microseconds(1));
    Ok(Some(end.unwrap_or(OffsetDateTime::now_utc())))
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Treasury")]
    TreasuryApi {}
    writes: {
        /// Record a manual movement
        ///
        /// Scope `treasury:write`; `Idempotency-Key` required. An income or an expense of `amount` on one
        /// location (`balance_type`, `balance_id`), against one counterpart `account_id` (its cost centers
        /// at the root: `cost_center1_id` to `cost_center3_id`) or itemized `lines` (cost centers on each
        /// line, never at the root; their amounts add up to `amount`), with optional cost-center
        /// `distributions` (not more than `amount` in all), `note` and `contact_id` (a customer or
        /// supplier). One balanced ledger entry. On a dollar location the amounts are dollars: each
        /// counterpart is converted at `exchange_rate` (or the central bank's rate of the date); an income
        /// enters at the counterparts' pesos; an expense leaves at the dollars' carrying value (their share
        /// of the pesos the location holds its dollars at) and the difference from the counterparts' pesos
        /// is booked to the organization's exchange-difference account (`exchange_difference_amount`:
        /// positive a gain, negative a loss). `exchange_rate` on a peso location is 400. A missing or hidden
        /// location, a missing or inactive account or cost center, or a missing contact is 404; an inactive
        /// location or linked account 409. The same key and body return the stored result, even after a
        /// later edit or delete.
        create_movement("/treasury/movements", "createTreasuryMovement", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> MovementCreated::Created = CREATE_MOVEMENT, |call, write, body: MovementInput| {
                let (input, _) = parse_movement(&body.value, false).map_err(ApiError::validation)?;
                let seen = visibility(call.principal);
                seen_or_404(&seen, [(input.location, "balance_id")])?;
                let created_by = recorded_by(call.principal);
                let command = MovementCommand::Record { id: Uuid::now_v7(), input, created_by };
                let data = write_movement(&call, write, command).await?;
                Style::a(&MovementEnvelope {
                    request_id: call.request_id.to_owned(),
                    data: data.ok_or_else(ApiError::internal)?,
                })?
            }

        /// Replace a manual movement
        ///
        /// Scope `treasury:write`; `Idempotency-Key` required. The whole movement, as on creation, plus the
        /// `updated_at` of the detail you read (missing: 400; the movement changed since: 409 `CONFLICT`,
        /// nothing replaced). Omitting `note`, `lines` or `distributions` clears them; omitting
        /// `contact_id` keeps the contact (null clears it). The previous version's entry is reversed and
        /// the new one posted; the movement keeps its `treasury_movement_id`, its row gets a new `id`.
        /// Transfers' effects are not manual movements (404).
        replace_movement("/treasury/movements/:treasury_movement_id", "replaceTreasuryMovement", "put")
            (treasury_movement_id, "Required: a retry with the same key and body returns the first outcome.")
            -> Movement::Ok = REPLACE_MOVEMENT, |call, write, body: MovementReplacement| {
                let id = call.id(&MOVEMENTS, &treasury_movement_id.0)?;
                let (input, updated_at) = parse_movement(&body.value, true).map_err(ApiError::validation)?;
                let seen = visibility(call.principal);
                seen_or_404(&seen, [(input.location, "balance_id")])?;
                manual_or_404(&call, id, &seen).await?;
                let updated_at = updated_at.ok_or_else(ApiError::internal)?;
                let command = MovementCommand::Replace { id, input, updated_at };
                let data = write_movement(&call, write, command).await?;
                Style::a(&MovementEnvelope {
                    request_id: call.request_id.to_owned(),
                    data: data.ok_or_else(ApiError::internal)?,
                })?
            }

        /// Delete a manual movement
        ///
        /// Scope `treasury:write`; `Idempotency-Key` required. The body is the `updated_at` of the detail
        /// you read, and only that (missing: 400; the movement changed since: 409 `CONFLICT`, nothing
        /// deleted). Its entry is reversed; it leaves the movements list.
        delete_movement("/treasury/movements/:treasury_movement_id", "deleteTreasuryMovement", "delete")
            (treasury_movement_id, "Required: a retry with the same key and body returns the first outcome.")
            -> MovementDeleted::Ok = DELETE_MOVEMENT, |call, write, body: MovementDeletion| {
                let id = call.id(&MOVEMENTS, &treasury_movement_id.0)?;
                let updated_at = parse_deletion(&body.value).map_err(ApiError::validation)?;
                manual_or_404(&call, id, &visibility(call.principal)).await?;
                let command = MovementCommand::Delete { id, updated_at };
                write_movement(&call, write, command).await?;
                let data = MovementDeletedData { object: "treasury_movement".into(), id, deleted: true };
                Style::a(&MovementDeletedEnvelope {
                    request_id: call.request_id.to_owned(),
                    data,
                })?
            }

        /// Create a funds transfer
        ///
        /// Scope `treasury:write`; `Idempotency-Key` required. Moves `amount` (cents ARS) from `source` to
        /// `destination` in one transaction: the transfer, a negative effect at the source, a positive one
        /// at the destination and one balanced ledger entry. The source may go negative (there is no
        /// insufficient-funds error). The same key and body return the same transfer without moving money
        /// again; another body under the key is 409 `IDEMPOTENCY_CONFLICT`. A missing, hidden or
        /// foreign endpoint is 404; an inactive endpoint or linked ledger account is 409 `STATE_CONFLICT`;
        /// a date after today (UTC-3), a dollar or mixed transfer, or an endpoint without ledger
        /// configuration is 422. `currency` must not be sent (400). Transfers have no status and are never
        /// updated, cancelled or deleted.
        create_transfer("/funds-transfers", "createFundsTransfer", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> TransferCreated::Created = CREATE_TRANSFER, |call, write, body: FundsTransferInput| {
                let input = parse_transfer(&body.value).map_err(ApiError::validation)?;
                let seen = visibility(call.principal);
                let endpoints = [(input.source, "source.balance_id"), (input.destination, "destination.balance_id")];
                seen_or_404(&seen, endpoints)?;
                let created_by = recorded_by(call.principal);
                let command = TransferCommand::Create { id: Uuid::now_v7(), input, created_by };
                let accepted = call.dispatch(write, Command::FundsTransfer(command)).await?;
                call.await_reads(&accepted, [ProjectionId::Treasury]).await?;
                let replayed = accepted.replayed;
                let outcome: TransferOutcome = decode_state(accepted.state, "funds_transfer")?;
                let created_at = match read::transfer(&call.state.pool, call.org_id(), outcome.id, &Visibility::default()).await? {
                    Some(row) => row.created_at,
                    None => outcome.at,
                };
                let mut data = transfer_data(outcome.id, &outcome.transfer, created_at, true);
                data.idempotent_replay = Some(replayed);
                Style::a(&FundsTransferEnvelope {
                    request_id: call.request_id.to_owned(),
                    data,
                })?
            }
    }
    cursor_lists: {
        /// List bank accounts
        ///
        /// Scope `treasury:read`. Their safe configuration only (no ledger account, organization or
        /// balance), by id; `status` and `currency` (`PES`, `DOL`) filter. A delegated token with assigned
        /// registers or safes sees no bank account.
        list_bank_accounts("/bank-accounts", "listBankAccounts") -> BankAccounts = LIST_BANK_ACCOUNTS, bank_accounts {
            status: Query<Option<String>>,
            currency: Query<Option<String>>,
        };

        /// List cash registers
        ///
        /// Scope `treasury:read`. By id; `status` filters. A delegated token with assigned registers or
        /// safes sees only its registers.
        list_cash_registers("/cash-registers", "listCashRegisters")
            -> CashLocations = LIST_CASH_REGISTERS, cash_registers {
            status: Query<Option<String>>,
        };

        /// List safes
        ///
        /// Scope `treasury:read`. By id; `status` filters. A delegated token with assigned registers or
        /// safes sees only its safes.
        list_safes("/safes", "listSafes") -> CashLocations = LIST_SAFES, safes {
            status: Query<Option<String>>,
        };

        /// List treasury balances
        ///
        /// Scope `treasury:read`. One entry per location (`balance_type`: `bank_account`, `cash_register`
        /// or `safe`), by `balance_type` then `balance_id`, computed from the ledger: `functional_amount`
        /// is the sum of the location's ledger lines in pesos; `native_amount` the same in the location's
        /// currency. `balance_type`, `balance_id` (sent together), `status` filter. `as_of` answers the
        /// balances at a past point from history: a date means the end of that day in UTC-3; a timestamp
        /// (RFC 3339) that instant; every ledger line recorded by then counts. With `own` visibility
        /// (`visibility_scope: "own"`) only the lines the delegated user created count.
        list_balances("/treasury/balances", "listTreasuryBalances") -> Balances = LIST_BALANCES, balances {
            balance_type: Query<Option<String>>,
            balance_id: Query<Option<String>>,
            status: Query<Option<String>>,
            /// A date (`YYYY-MM-DD`: the end of that day in UTC-3) or an RFC 3339 timestamp.
            as_of: Query<Option<String>>,
        };

        /// List treasury movements
        ///
        /// Scope `treasury:read`. One row per ledger line of a location, as movements stand, newest first
        /// (`occurred_on`, `created_at`, `id`). `balance_type` with `balance_id`, `movement_type`
        /// (`transfer_out`, `transfer_in`) and `date_from`/`date_to` (inclusive operating dates) filter.
        list_movements("/treasury/movements", "listTreasuryMovements") -> Movements = LIST_MOVEMENTS, movements {
            balance_type: Query<Option<String>>,
            balance_id: Query<Option<String>>,
            movement_type: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
        };

        /// List funds transfers
        ///
        /// Scope `treasury:read`. Newest first (`occurred_on`, `created_at`, `id`, all descending), without
        /// `accounting_effects`. `date_from`/`date_to` (inclusive) and `balance_type` with `balance_id` (sent
        /// together: either endpoint) filter. A delegated token sees a transfer only when it sees both
        /// endpoints, and with `own` visibility only the transfers its user made.
        list_transfers("/funds-transfers", "listFundsTransfers") -> Transfers = LIST_TRANSFERS, transfers {
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
            balance_type: Query<Option<String>>,
            balance_id: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a cash register
        ///
        /// Scope `treasury:read`.
        get_cash_register("/cash-registers/:cash_register_id", "getCashRegister")
            -> CashLocation = GET_CASH_REGISTER, CASH_REGISTERS, cash_register_id => cash_register_by_id;

        /// Get a safe
        ///
        /// Scope `treasury:read`.
        get_safe("/safes/:safe_id", "getSafe") -> CashLocation = GET_SAFE, SAFES, safe_id => safe_by_id;

        /// Get a bank account
        ///
        /// Scope `treasury:read`. Its safe configuration only.
        get_bank_account("/bank-accounts/:bank_account_id", "getBankAccount")
            -> BankAccount = GET_BANK_ACCOUNT, BANK_ACCOUNTS, bank_account_id => bank_account_by_id;

        /// Get a treasury movement
        ///
        /// Scope `treasury:read`. By its `treasury_movement_id` (or the `id` of its ledger line).
        get_movement("/treasury/movements/:treasury_movement_id", "getTreasuryMovement")
            -> Movement = GET_MOVEMENT, MOVEMENTS, treasury_movement_id => movement_by_id;

        /// Get a funds transfer
        ///
        /// Scope `treasury:read`. With its two `accounting_effects`, source first.
        get_transfer("/funds-transfers/:funds_transfer_id", "getFundsTransfer")
            -> Transfer = GET_TRANSFER, TRANSFERS, funds_transfer_id => transfer_by_id;
    }
}

/// One bank account the caller sees, in its envelope.
async fn bank_account_by_id(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let at = LocationRef { kind: LocationKind::BankAccount, id };
    let Some(row) = seen_location(call, at).await? else { return Ok(None) };
    let data = bank_account(&row);
    Ok(Some(Style::a(&BankAccountEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// One movement the caller sees, in its envelope (a dollar movement without complete amounts is 422).
async fn movement_by_id(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let seen = visibility(call.principal);
    let Some(row) = read::movement(&call.state.pool, call.org_id(), id, &seen).await? else { return Ok(None) };
    let data = movement(&row);
    if matches!(data.currency, LocationCurrency::Dol) && data.functional_amount_origin == "legacy_unknown" {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorType::BusinessError,
            "INCOMPLETE_AMOUNTS",
            "this dollar movement predates complete amounts: its dollars or their pesos are not recorded",
        ));
    }
    Ok(Some(Style::a(&MovementEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// One funds transfer the caller sees, in its envelope.
async fn transfer_by_id(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let seen = visibility(call.principal);
    let Some(row) = read::transfer(&call.state.pool, call.org_id(), id, &seen).await? else { return Ok(None) };
    let data = transfer_row(&row, true)?;
    Ok(Some(Style::a(&FundsTransferEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// A page of bank accounts, by id.
async fn bank_accounts(
    call: &Call<'_>,
    params: PageParams,
    status: Option<String>,
    currency: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let mut filters = Filters::default();
    let filter = LocationFilter {
        kind: Some(LocationKind::BankAccount),
        id: None,
        status: filters.one_of(status, "status", LocationStatus::NAMES),
        currency: filters.one_of(currency, "currency", events::catalogue::Currency::NAMES),
    };
    filters.check()?;
    locations(call, params, &BANK_ACCOUNTS, "bank_accounts", filter, bank_account).await
}

/// A page of the locations' balances.
async fn balances(
    call: &Call<'_>,
    params: PageParams,
    balance_type: Option<String>,
    balance_id: Option<String>,
    status: Option<String>,
    as_of: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let mut filters = Filters::default();
    let (kind, id) = location_filter(&mut filters, balance_type, balance_id);
    let filter = LocationFilter {
        kind,
        id,
        status: filters.one_of(status, "status", LocationStatus::NAMES),
        currency: None,
    };
    let at = filters.keep(self::as_of(as_of));
    filters.check()?;
    let seen = visibility(call.principal);
    let scope = if seen.own.is_some() { VisibilityScope::Own } else { VisibilityScope::Organization };
    let bound = format!("treasury_balances{filter:?}{seen:?}{at:?}");
    call.cursor_list(
        params,
        BALANCES.list.bound(&bound),
        async |after: Option<LocationRef>, n| {
            let after = after.map(|a| (a.kind.as_str().to_owned(), a.id));
            Ok(read::balances(&state.pool, call.org_id(), &filter, &seen, at, after, n).await?)
        },
        |row: &BalanceRow| row.at,
        async |rows| Ok(rows.iter().map(|row| balance(row, scope)).collect()),
    )
    .await
}

/// A page of treasury movements, newest first.
async fn movements(
    call: &Call<'_>,
    params: PageParams,
    balance_type: Option<String>,
    balance_id: Option<String>,
    movement_type: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let mut filters = Filters::default();
    let (kind, id) = location_filter(&mut filters, balance_type, balance_id);
    let filter = MovementFilter {
        kind,
        id,
        movement_type: filters.one_of(movement_type, "movement_type", MovementType::NAMES),
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
    };
    filters.check()?;
    let seen = visibility(call.principal);
    let bound = format!("treasury_movements{filter:?}{seen:?}");
    call.cursor_list(
        params,
        MOVEMENTS.list.bound(&bound),
        async |after: Option<Dated>, n| {
            Ok(read::movements(&state.pool, call.org_id(), &filter, &seen, after.map(|a| a.0), n).await?)
        },
        |row: &MovementRow| Dated((row.movement.occurred_on, row.created_at, row.movement.id)),
        async |rows| Ok(rows.iter().map(movement).collect()),
    )
    .await
}

/// A page of funds transfers, newest first.
async fn transfers(
    call: &Call<'_>,
    params: PageParams,
    date_from: Option<String>,
    date_to: Option<String>,
    balance_type: Option<String>,
    balance_id: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let mut filters = Filters::default();
    let (kind, id) = location_filter(&mut filters, balance_type, balance_id);
    let filter = TransferFilter {
        kind,
        id,
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
    };
    filters.check()?;
    let seen = visibility(call.principal);
    let bound = format!("funds_transfers{filter:?}{seen:?}");
    call.cursor_list(
        params,
        TRANSFERS.list.bound(&bound),
        async |after: Option<Dated>, n| {
            Ok(read::transfers(&state.pool, call.org_id(), &filter, &seen, after.map(|a| a.0), n).await?)
        },
        |row: &TransferRow| Dated((row.occurred_on, row.created_at, row.id)),
        async |rows| rows.iter().map(|row| transfer_row(row, false)).collect(),
    )
    .await
}

/// A location the credential does not see is unknown to it: one 404 naming the field of every such
/// location (each given with its field), what every write posting to a location checks (movements,
/// transfers, payments, a sale's payments).
pub(crate) fn seen_or_404<F: AsRef<str>>(
    seen: &Visibility,
    locations: impl IntoIterator<Item = (LocationRef, F)>,
) -> Result<(), ApiError> {
    let hidden: Vec<F> = locations.into_iter().filter(|(at, _)| !seen.sees(*at)).map(|(_, field)| field).collect();
    if hidden.is_empty() {
        return Ok(());
    }
    Err(hidden.iter().fold(ApiError::not_found("location"), |error, field| {
        error.with_detail(Some(field.as_ref()), "not_found", "no location this credential sees has this id")
    }))
}

/// The delegated user a credential records treasury facts as (none for an API key): the one `own`
/// visibility later matches.
pub(crate) fn recorded_by(principal: &Principal) -> Option<String> {
    principal.delegation.as_ref().map(|d| d.user.clone())
}

/// A manual movement the credential sees (not a transfer's effect), or 404. A movement deleted since
/// is left to the command, which refuses it the same way unless this is the replay of its deletion; one
/// that stands where the credential does not look (another user's under `own`, or at a location it is
/// not assigned) is 404 here, as it is to read.
async fn manual_or_404(call: &Call<'_>, id: Uuid, seen: &Visibility) -> Result<(), ApiError> {
    let pool = &call.state.pool;
    match read::movement(pool, call.org_id(), id, seen).await? {
        Some(row) if row.movement.manual.is_none() || row.movement.treasury_movement_id != id => {
            Err(ApiError::not_found("treasury_movement"))
        }
        Some(_) => Ok(()),
        None if *seen == Visibility::default() => Ok(()),
        None => match read::movement(pool, call.org_id(), id, &Visibility::default()).await? {
            Some(_) => Err(ApiError::not_found("treasury_movement")),
            None => Ok(()),
        },
    }
}

/// Sends a movement command, waits until reads show it, and answers the movement as the command left
/// it (a replay: as the first request did).
async fn write_movement(
    call: &Call<'_>,
    write: Write<'_>,
    command: MovementCommand,
) -> Result<Option<MovementData>, ApiError> {
    let accepted = call.dispatch(write, Command::TreasuryMovement(command)).await?;
    call.await_reads(&accepted, [ProjectionId::Treasury]).await?;
    let outcome: MovementOutcome = decode_state(accepted.state, "treasury_movement")?;
    let Some(movement) = &outcome.movement else { return Ok(None) };
    let Some(doc) = read::manual_doc(movement, outcome.currency, outcome.updated_at) else { return Ok(None) };
    Ok(Some(self::movement(&MovementRow { movement: doc, created_at: outcome.created_at })))
}

/// A page of cash registers.
async fn cash_registers(call: &Call<'_>, params: PageParams, status: Option<String>) -> Result<bytes::Bytes, ApiError> {
    list_cash(call, &CASH_REGISTERS, LocationKind::CashRegister, status, params).await
}

/// A page of safes.
async fn safes(call: &Call<'_>, params: PageParams, status: Option<String>) -> Result<bytes::Bytes, ApiError> {
    list_cash(call, &SAFES, LocationKind::Safe, status, params).await
}

/// A page of the cash locations of one kind (registers or safes), by id.
async fn list_cash(
    call: &Call<'_>,
    kind: &Kind,
    location: LocationKind,
    status: Option<String>,
    params: PageParams,
) -> Result<bytes::Bytes, ApiError> {
    let mut filters = Filters::default();
    let filter = LocationFilter {
        kind: Some(location),
        id: None,
        status: filters.one_of(status, "status", LocationStatus::NAMES),
        currency: None,
    };
    filters.check()?;
    locations(call, params, kind, location.as_str(), filter, cash_location).await
}

/// A page of the locations `filter` keeps that the credential sees, by kind then id, each as `render`
/// shows it; the list's cursors are bound to `name`, the filter and the visibility.
async fn locations<T>(
    call: &Call<'_>,
    params: PageParams,
    kind: &Kind,
    name: &str,
    filter: LocationFilter,
    render: fn(&LocationRow) -> T,
) -> Result<bytes::Bytes, ApiError>
where
    T: poem_openapi::types::Type
        + poem_openapi::types::ParseFromJSON
        + poem_openapi::types::ToJSON
        + serde::Serialize
        + Send
        + Sync,
{
    let seen = visibility(call.principal);
    let bound = format!("{name}{filter:?}{seen:?}");
    call.cursor_list(
        params,
        kind.list.bound(&bound),
        async |after: Option<LocationRef>, n| {
            let after = after.map(|a| (a.kind.as_str().to_owned(), a.id));
            Ok(read::locations(&call.state.pool, call.org_id(), &filter, &seen, after, n).await?)
        },
        |row: &LocationRow| LocationRef { kind: row.location.kind, id: row.id },
        async |rows| Ok(rows.iter().map(render).collect()),
    )
    .await
}

async fn cash_register_by_id(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    cash_by_id(call, LocationRef { kind: LocationKind::CashRegister, id }).await
}

async fn safe_by_id(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    cash_by_id(call, LocationRef { kind: LocationKind::Safe, id }).await
}

/// The location's row, if the caller sees it (none otherwise, as for a location that does not exist).
async fn seen_location(call: &Call<'_>, at: LocationRef) -> Result<Option<LocationRow>, ApiError> {
    if !visibility(call.principal).sees(at) {
        return Ok(None);
    }
    Ok(read::location(&call.state.pool, call.org_id(), at).await?)
}

/// One cash register or safe the caller sees, in its envelope.
async fn cash_by_id(call: &Call<'_>, at: LocationRef) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = seen_location(call, at).await? else { return Ok(None) };
    let data = cash_location(&row);
    Ok(Some(Style::a(&CashLocationEnvelope { request_id: call.request_id.to_owned(), data })?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_of_is_a_date_in_utc_minus_three_or_an_instant() {
        let end = as_of(Some("2026-03-02".into())).expect("valid").expect("some");
        assert_eq!(end.to_offset(AR_OFFSET).date().to_string(), "2026-03-02");
        assert_eq!((end + time::Duration::microseconds(1)).to_offset(AR_OFFSET).time(), time::Time::MIDNIGHT);
        let at = as_of(Some("2026-03-02T10:00:00Z".into())).expect("valid").expect("some");
        assert_eq!(at.unix_timestamp(), 1_772_445_600);
        assert!(as_of(Some("yesterday".into())).is_err());
    }

    #[test]
    fn cursors_read_back_what_they_wrote() {
        let at = LocationRef { kind: LocationKind::Safe, id: Uuid::now_v7() };
        assert_eq!(LocationRef::read(&at.write()).expect("valid"), at);
        let date = time::Date::from_calendar_date(2026, time::Month::March, 2).expect("date");
        let key = Dated((date, OffsetDateTime::UNIX_EPOCH, Uuid::now_v7()));
        assert_eq!(Dated::read(&key.write()).expect("valid").0, key.0);
        assert!(Dated::read("2026-03-02/x").is_err());
    }
}
