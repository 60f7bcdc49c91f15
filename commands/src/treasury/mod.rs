//! Treasury: the places money is kept (bank accounts, cash registers and safes, each backed by a
//! ledger account), set up by operators ([`admin`]), and funds transfers between them, each one
//! balanced journal entry in its event.
//!
//! Transfers have the document shape ([`crate::document`]): here the body's parsing, the facts
//! ([`TransferFacts`]) and the pure [`decide`]; in `handler.rs` the loads and the write.

pub mod admin;
mod handler;
pub mod movements;

pub use handler::{
    FundsTransfers, ManualMovements, OrgAccount, central_rate, held_locations, hold, load_location, load_movement,
    lock_holdings, org_account,
};

use crate::aggregate::{Rejection, reject_fields};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    Currency, FundsTransfer, JournalEntry, JournalLine, LocationKind, LocationLine, LocationRef, LocationStatus,
    MovementType,
};
use events::domain::Cents;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const KNOWN: &[&str] = &["source", "destination", "amount", "occurred_on"];
const KNOWN_ENDPOINT: &[&str] = &["balance_type", "balance_id"];

/// A funds transfer as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferInput {
    pub source: LocationRef,
    pub destination: LocationRef,
    pub amount: Cents,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TransferCommand {
    /// `created_by`: the delegated user making it (none for an API key).
    Create { id: Uuid, input: TransferInput, created_by: Option<String> },
}

impl TransferCommand {
    pub fn transfer_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } => *id,
        }
    }
}

/// What the workers answer: the transfer as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferOutcome {
    pub id: Uuid,
    pub transfer: FundsTransfer,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// An endpoint `{balance_type, balance_id}` at `field`.
fn endpoint(r: &mut ObjectReader<'_>, field: &str) -> Option<LocationRef> {
    let value = match r.value(field) {
        None | Some(Value::Null) => {
            r.reject(field, "required", "is required");
            return None;
        }
        Some(value) => value,
    };
    let mut e = ObjectReader::new(value, field);
    if let Some(object) = value.as_object() {
        for key in object.keys().filter(|k| !KNOWN_ENDPOINT.contains(&k.as_str())) {
            e.reject(key, "unknown_field", "is not a field of a transfer's endpoint");
        }
    } else {
        e.errors.push(FieldError::new(field, "invalid_type", "must be an object"));
    }
    let kind = e.required_str("balance_type", 1, 20);
    let kind = match (kind.as_str(), LocationKind::parse(&kind)) {
        ("", _) => None,
        (_, None) => {
            e.reject("balance_type", "invalid_value", format!("must be one of: {}", LocationKind::NAMES.join(", ")));
            None
        }
        (_, found) => found,
    };
    let id = e.required_uuid("balance_id");
    r.errors.append(&mut e.errors);
    Some(LocationRef { kind: kind?, id: id? })
}

/// Parses a funds transfer's body: unknown fields (`currency` among them: a transfer is in pesos) are
/// named, every bad field reported at once.
pub fn parse_transfer(body: &Value) -> Result<TransferInput, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    if let Some(object) = body.as_object() {
        for key in object.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
            let message = if key == "currency" {
                "must not be sent: a transfer is in pesos (the endpoints' currency)"
            } else {
                "is not a field of a funds transfer"
            };
            r.reject(key, "unknown_field", message);
        }
    }
    let source = endpoint(&mut r, "source");
    let destination = endpoint(&mut r, "destination");
    let amount = r.required_cents("amount");
    if amount == Some(Cents::ZERO) {
        r.reject("amount", "out_of_range", "must be at least 1 cent");
    }
    let occurred_on = r.required_date("occurred_on");
    if let (Some(source), Some(destination)) = (source, destination)
        && source == destination
    {
        r.reject("destination", "same_as_source", "must differ from the source");
    }
    let (Some(source), Some(destination), Some(amount), Some(occurred_on)) = (source, destination, amount, occurred_on)
    else {
        return Err(r.errors);
    };
    r.finish(TransferInput { source, destination, amount, occurred_on })
}

/// A location as a command sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationFacts {
    pub currency: Currency,
    pub status: LocationStatus,
    pub ledger_account_id: Uuid,
    /// Whether its ledger account exists (`Some`) and is active.
    pub account_active: Option<bool>,
}

/// What a transfer's decision reads.
#[derive(Debug, Clone, Default)]
pub struct TransferFacts {
    /// Whether the transfer's stream already exists.
    pub exists: bool,
    pub source: Option<LocationFacts>,
    pub destination: Option<LocationFacts>,
    /// The organization's date (Argentine calendar).
    pub today: Option<Date>,
}

/// The transfer: one entry, the source's line first and the destination's after, with opposite
/// amounts. The rules, in the spec's order: a missing endpoint is 404; an inactive endpoint or linked
/// account 409; a future date, a dollar or mixed transfer, or an endpoint without its ledger account
/// 422. The source may go negative.
pub fn decide(command: &TransferCommand, facts: &TransferFacts) -> Result<FundsTransfer, Rejection> {
    let TransferCommand::Create { id, input, created_by } = command;
    if facts.exists {
        return Err(Rejection::conflict("ALREADY_EXISTS", "the funds transfer already exists"));
    }
    let mut missing = Vec::new();
    if facts.source.is_none() {
        missing.push(FieldError::new("source.balance_id", "not_found", "no location of this organization has this id"));
    }
    if facts.destination.is_none() {
        missing.push(FieldError::new(
            "destination.balance_id",
            "not_found",
            "no location of this organization has this id",
        ));
    }
    reject_fields(missing)?;
    let (Some(source), Some(destination)) = (facts.source, facts.destination) else {
        return Err(Rejection::not_found("location"));
    };
    let sides = [("source", source), ("destination", destination)];
    for (side, at) in sides {
        if at.status == LocationStatus::Inactive {
            return Err(Rejection::state_conflict(
                "LOCATION_INACTIVE",
                "inactive",
                format!("the {side} is inactive and takes no movements"),
            ));
        }
        if at.account_active == Some(false) {
            return Err(Rejection::state_conflict(
                "LEDGER_ACCOUNT_INACTIVE",
                "inactive",
                format!("the ledger account linked to the {side} is inactive"),
            ));
        }
    }
    if facts.today.is_none_or(|today| input.occurred_on > today) {
        return Err(Rejection::unprocessable("FUTURE_DATE", "occurred_on", "a transfer cannot happen after today (UTC-3)"));
    }
    // A refusal names each endpoint at fault (both when both are).
    let dollars: Vec<&str> =
        sides.iter().filter(|(_, at)| at.currency != Currency::Pes).map(|(side, _)| *side).collect();
    if !dollars.is_empty() {
        return Err(Rejection::unprocessable_on(
            "UNSUPPORTED_CURRENCY",
            &dollars,
            "transfers move pesos between peso locations; dollar and mixed transfers are not supported",
        ));
    }
    let unlinked: Vec<&str> =
        sides.iter().filter(|(_, at)| at.account_active.is_none()).map(|(side, _)| *side).collect();
    if !unlinked.is_empty() {
        let message = "the endpoint has no ledger account to post to";
        return Err(Rejection::unprocessable_on("LEDGER_NOT_CONFIGURED", &unlinked, message));
    }
    let amount = input.amount;
    let line = |at: LocationRef, facts: LocationFacts, functional: Cents, movement_type, n: u8| JournalLine {
        account_id: facts.ledger_account_id,
        functional,
        native: None,
        location: Some(LocationLine { location: at, movement_id: effect_id(*id, n), movement_type, line_id: None }),
    };
    let entry = JournalEntry {
        id: *id,
        occurred_on: input.occurred_on,
        lines: vec![
            line(input.source, source, -amount, MovementType::TransferOut, 0),
            line(input.destination, destination, amount, MovementType::TransferIn, 1),
        ],
    };
    Ok(FundsTransfer {
        source: input.source,
        destination: input.destination,
        amount,
        occurred_on: input.occurred_on,
        created_by: created_by.clone(),
        entry,
    })
}

/// The id of a transfer's `n`th accounting effect (its movement in the movements list): derived, so a
/// replay names the same ones.
pub fn effect_id(transfer: Uuid, n: u8) -> Uuid {
    Uuid::new_v5(&transfer, &[b'e', n])
}

/// Whether the 22 digits are a CBU: an 8-digit block (bank, branch, check digit) and a 14-digit block
/// (account, check digit), each check digit from weights 7-1-3-9 repeated from the right.
pub fn is_valid_cbu(text: &str) -> bool {
    fn block_ok(digits: &[u8]) -> bool {
        let (body, check) = digits.split_at(digits.len() - 1);
        const WEIGHTS: [u32; 4] = [3, 1, 7, 9];
        let sum: u32 = body.iter().rev().enumerate().map(|(i, d)| u32::from(*d) * WEIGHTS[i % 4]).sum();
        (10 - sum % 10) % 10 == u32::from(check[0])
    }
    if text.len() != 22 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let digits: Vec<u8> = text.bytes().map(|b| b - b'0').collect();
    block_ok(&digits[..8]) && block_ok(&digits[8..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(kind: LocationKind) -> LocationRef {
        LocationRef { kind, id: Uuid::from_u128(kind as u128 + 1) }
    }

    fn facts() -> TransferFacts {
        let pesos = LocationFacts {
            currency: Currency::Pes,
            status: LocationStatus::Active,
            ledger_account_id: Uuid::from_u128(9),
            account_active: Some(true),
        };
        TransferFacts {
            exists: false,
            source: Some(pesos),
            destination: Some(pesos),
            today: Some(Date::from_calendar_date(2026, time::Month::March, 2).expect("date")),
        }
    }

    fn command(amount: i64, occurred_on: Date) -> TransferCommand {
        let input = TransferInput {
            source: at(LocationKind::CashRegister),
            destination: at(LocationKind::Safe),
            amount: Cents::of(amount),
            occurred_on,
        };
        TransferCommand::Create { id: Uuid::from_u128(7), input, created_by: None }
    }

    fn code(rejection: Rejection) -> String {
        match rejection {
            Rejection::Unprocessable { code, .. } => code,
            Rejection::StateConflict { details, .. } => details[0].code.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn a_transfer_is_one_balanced_entry_source_first() {
        let today = facts().today.expect("today");
        let transfer = decide(&command(12_345, today), &facts()).expect("decided");
        assert!(transfer.entry.is_balanced());
        let lines = &transfer.entry.lines;
        assert_eq!((lines[0].functional, lines[1].functional), (Cents::of(-12_345), Cents::of(12_345)));
        assert_eq!(lines[0].location.expect("source").location, at(LocationKind::CashRegister));
        assert_ne!(lines[0].location.expect("a").movement_id, lines[1].location.expect("b").movement_id);
    }

    #[test]
    fn the_spec_outcomes_of_a_bad_transfer() {
        let today = facts().today.expect("today");
        let tomorrow = today.next_day().expect("date");
        assert_eq!(code(decide(&command(1, tomorrow), &facts()).expect_err("future")), "FUTURE_DATE");
        let mut dollars = facts();
        dollars.destination.as_mut().expect("destination").currency = Currency::Dol;
        assert_eq!(code(decide(&command(1, today), &dollars).expect_err("mixed")), "UNSUPPORTED_CURRENCY");
        let mut shut = facts();
        shut.source.as_mut().expect("source").status = LocationStatus::Inactive;
        assert_eq!(code(decide(&command(1, today), &shut).expect_err("inactive")), "LOCATION_INACTIVE");
        let mut closed = facts();
        closed.destination.as_mut().expect("destination").account_active = Some(false);
        assert_eq!(code(decide(&command(1, today), &closed).expect_err("account")), "LEDGER_ACCOUNT_INACTIVE");
        let mut unlinked = facts();
        unlinked.destination.as_mut().expect("destination").account_active = None;
        assert_eq!(code(decide(&command(1, today), &unlinked).expect_err("ledger")), "LEDGER_NOT_CONFIGURED");
        let missing = TransferFacts { source: None, ..facts() };
        assert!(matches!(decide(&command(1, today), &missing), Err(Rejection::Invalid { .. })));
    }

    #[test]
    fn a_refusal_names_the_endpoint_at_fault() {
        let today = facts().today.expect("today");
        // The code and the fields its details name.
        let refused = |facts: &TransferFacts| match decide(&command(1, today), facts) {
            Err(Rejection::Unprocessable { code, details, .. }) => {
                let fields: Vec<String> = details.into_iter().filter_map(|d| d.field).collect();
                format!("{code} on {}", fields.join(", "))
            }
            other => panic!("expected 422, got {other:?}"),
        };
        let mut dollars = facts();
        dollars.source.as_mut().expect("source").currency = Currency::Dol;
        assert_eq!(refused(&dollars), "UNSUPPORTED_CURRENCY on source");
        dollars.destination.as_mut().expect("destination").currency = Currency::Dol;
        assert_eq!(refused(&dollars), "UNSUPPORTED_CURRENCY on source, destination");
        let mut unlinked = facts();
        unlinked.destination.as_mut().expect("destination").account_active = None;
        assert_eq!(refused(&unlinked), "LEDGER_NOT_CONFIGURED on destination");
        unlinked.source.as_mut().expect("source").account_active = None;
        assert_eq!(refused(&unlinked), "LEDGER_NOT_CONFIGURED on source, destination");
    }

    #[test]
    fn a_transfer_body_is_checked_field_by_field() {
        let id = Uuid::now_v7();
        let good = json!({ "source": { "balance_type": "cash_register", "balance_id": id },
            "destination": { "balance_type": "safe", "balance_id": id }, "amount": 100, "occurred_on": "2026-03-01" });
        let parsed = parse_transfer(&good).expect("valid");
        assert_eq!(parsed.amount, Cents::of(100));
        let bad = json!({ "source": { "balance_type": "vault", "balance_id": id, "x": 1 },
            "destination": { "balance_type": "safe", "balance_id": id }, "amount": 0, "currency": "PES",
            "occurred_on": "2026-02-30" });
        let fields: Vec<String> = parse_transfer(&bad).expect_err("invalid").into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["currency", "source.x", "source.balance_type", "amount", "occurred_on"]);
        let same = json!({ "source": { "balance_type": "safe", "balance_id": id },
            "destination": { "balance_type": "safe", "balance_id": id }, "amount": 1, "occurred_on": "2026-03-01" });
        let fields: Vec<String> = parse_transfer(&same).expect_err("same").into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["destination"]);
    }

    #[test]
    fn cbu_check_digits_are_verified() {
        assert!(is_valid_cbu("2850590940090418135201"));
        assert!(!is_valid_cbu("2850590940090418135202"), "second block's check digit");
        assert!(!is_valid_cbu("2850591940090418135201"), "first block's check digit");
        assert!(!is_valid_cbu("285059094009041813520"), "21 digits");
        assert!(!is_valid_cbu("28505909400904181352a1"));
    }
}
