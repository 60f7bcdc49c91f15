//! Manual movements: an income or an expense on one location against its counterparts (one ledger
//! account with the cost centers at the root, or itemized `lines` with the cost centers on each), with
//! cost-center `distributions`, a `note` and a `contact_id`. A replacement (`PUT`) and a delete carry the
//! `updated_at` they read; each posts the entry undoing the version it replaces, so the journal is never
//! edited. Here the bodies' parsing, the facts and the pure decision; the handler loads and appends.
//!
//! On a dollar location the amounts are dollars. Each counterpart is converted to pesos at the
//! movement's rate (the one sent, or the central bank's of the date); an income enters at the
//! counterparts' peso value, an expense leaves at the dollars' carrying value (their share of the peso
//! value the location holds them at), and the difference is booked to the organization's
//! exchange-difference account. [`resolve_rate`] keeps the spec's rules for a replacement's rate.

use crate::aggregate::{Rejection, reject_fields};
use crate::validate::{FieldEdit, FieldError, ObjectReader};
use events::catalogue::{
    AppliedRate, CounterLine, Currency, Direction, Distribution, JournalEntry, JournalLine, LocationKind, LocationLine,
    LocationRef, LocationStatus, ManualMovement, ManualMovementDeletion, ManualMovementReplacement, MovementType,
    RateSource, TreasuryMovementEvent,
};
use events::domain::{Cents, ExchangeRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::LocationFacts;

/// The most counterpart lines or distributions one movement has.
pub const MAX_LINES: usize = 100;

const KNOWN: &[&str] = &[
    "balance_type",
    "balance_id",
    "direction",
    "amount",
    "occurred_on",
    "account_id",
    "lines",
    "cost_center1_id",
    "cost_center2_id",
    "cost_center3_id",
    "distributions",
    "note",
    "contact_id",
    "exchange_rate",
];
const KNOWN_LINE: &[&str] = &["account_id", "amount", "cost_center1_id", "cost_center2_id", "cost_center3_id"];
const KNOWN_DISTRIBUTION: &[&str] = &["cost_center1_id", "amount_cents"];

/// A manual movement as sent (by `POST`, or by `PUT` with its `updated_at`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovementInput {
    pub location: LocationRef,
    pub direction: Direction,
    pub amount: Cents,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub counterparts: Vec<CounterLine>,
    pub itemized: bool,
    pub distributions: Vec<Distribution>,
    pub note: Option<String>,
    /// Omitted on a replacement: the contact is kept.
    pub contact_id: FieldEdit<Uuid>,
    /// Pesos per dollar: omitted (`Keep`: the stored rate where the rules keep it, else the central
    /// bank's), null (`Clear`: the central bank's) or sent (refused on a peso location).
    pub exchange_rate: FieldEdit<ExchangeRate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MovementCommand {
    Record {
        id: Uuid,
        input: MovementInput,
        created_by: Option<String>,
    },
    Replace {
        id: Uuid,
        input: MovementInput,
        #[serde(with = "time::serde::rfc3339")]
        updated_at: OffsetDateTime,
    },
    Delete {
        id: Uuid,
        #[serde(with = "time::serde::rfc3339")]
        updated_at: OffsetDateTime,
    },
}

impl MovementCommand {
    pub fn movement_id(&self) -> Uuid {
        match self {
            Self::Record { id, .. } | Self::Replace { id, .. } | Self::Delete { id, .. } => *id,
        }
    }
}

/// What the workers answer: the movement as this command left it (none once deleted), with its
/// location's currency and its times, so a replay answers exactly what the first request did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovementOutcome {
    pub id: Uuid,
    pub movement: Option<ManualMovement>,
    pub currency: Currency,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The recorded time of the event this command appended.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

fn optional_cost_centers(r: &mut ObjectReader<'_>) -> [Option<Uuid>; 3] {
    [r.optional_uuid("cost_center1_id"), r.optional_uuid("cost_center2_id"), r.optional_uuid("cost_center3_id")]
}



/// `updated_at` of a `PUT` or `DELETE` body: required, an RFC 3339 timestamp.
pub fn parse_updated_at(r: &mut ObjectReader<'_>) -> Option<OffsetDateTime> {
    match r.value("updated_at") {
        None | Some(Value::Null) => {
            r.reject("updated_at", "required", "send the updated_at of the detail you read");
            None
        }
        Some(Value::String(text)) => OffsetDateTime::parse(text, &Rfc3339).ok().or_else(|| {
            r.reject("updated_at", "invalid_format", "must be an RFC 3339 timestamp");
            None
        }),
        Some(_) => {
            r.reject("updated_at", "invalid_type", "must be an RFC 3339 timestamp");
            None
        }
    }
}

/// Parses a movement's body (`with_updated_at`: a `PUT`'s, which also carries `updated_at`); every bad
/// field is named at once.
pub fn parse_movement(
    body: &Value,
    with_updated_at: bool,
) -> Result<(MovementInput, Option<OffsetDateTime>), Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    if let Some(object) = body.as_object() {
        for key in object.keys().filter(|k| !(KNOWN.contains(&k.as_str()) || with_updated_at && *k == "updated_at")) {
            r.reject(key, "unknown_field", "is not a field of a treasury movement");
        }
    }
    let updated_at = if with_updated_at { parse_updated_at(&mut r) } else { None };
    let kind = r.required_str("balance_type", 1, 20);
    let kind = match (kind.as_str(), LocationKind::parse(&kind)) {
        ("", _) => None,
        (_, None) => {
            r.reject("balance_type", "invalid_value", format!("must be one of: {}", LocationKind::NAMES.join(", ")));
            None
        }
        (_, found) => found,
    };
    let id = r.required_uuid("balance_id");
    let direction = r.required_str("direction", 1, 10);
    let direction = match direction.as_str() {
        "income" => Some(Direction::Income),
        "expense" => Some(Direction::Expense),
        "" => None,
        _ => {
            r.reject("direction", "invalid_value", "must be one of: income, expense");
            None
        }
    };
    let amount = r.required_positive_cents("amount");
    let occurred_on = r.required_date("occurred_on");
    let root_centers = optional_cost_centers(&mut r);
    let mut counterparts = Vec::new();
    // Null is as good as absent, for the counterparts as for every optional field.
    let itemized = r.value("lines").is_some();
    match (r.value("account_id").is_some(), itemized) {
        (true, true) => r.reject("lines", "both_kinds", "send one account_id or lines, not both"),
        (false, false) => r.reject("account_id", "required", "send the counterpart account_id, or lines"),
        (true, false) => {
            if let (Some(account_id), Some(amount)) = (r.required_uuid("account_id"), amount) {
                let [cost_center1_id, cost_center2_id, cost_center3_id] = root_centers;
                counterparts.push(CounterLine {
                    account_id,
                    amount,
                    cost_center1_id,
                    cost_center2_id,
                    cost_center3_id,
                });
            }
        }
        (false, true) => {
            if root_centers.iter().any(Option::is_some) {
                r.reject("cost_center1_id", "not_allowed", "with lines, cost centers go on each line");
            }
            for (i, line) in r.required_array("lines", 1, MAX_LINES).iter().enumerate() {
                let mut l = ObjectReader::new(line, &format!("lines[{i}]"));
                l.refuse_unknown(line, KNOWN_LINE, "a counterpart line");
                let account_id = l.required_uuid("account_id");
                let line_amount = l.required_positive_cents("amount");
                let [cost_center1_id, cost_center2_id, cost_center3_id] = optional_cost_centers(&mut l);
                r.errors.append(&mut l.errors);
                if let (Some(account_id), Some(amount)) = (account_id, line_amount) {
                    counterparts.push(CounterLine {
                        account_id,
                        amount,
                        cost_center1_id,
                        cost_center2_id,
                        cost_center3_id,
                    });
                }
            }
            let sum = Cents::checked_sum(counterparts.iter().map(|l| l.amount));
            if amount.is_some()
                && counterparts.len() == r.value("lines").and_then(Value::as_array).map_or(0, Vec::len)
                && sum != amount
            {
                r.reject("lines", "unbalanced", "the lines' amounts must add up to the movement's amount");
            }
        }
    }
    let mut distributions = Vec::new();
    if r.value("distributions").is_some() {
        for (i, share) in r.required_array("distributions", 0, MAX_LINES).iter().enumerate() {
            let mut d = ObjectReader::new(share, &format!("distributions[{i}]"));
            d.refuse_unknown(share, KNOWN_DISTRIBUTION, "a distribution");
            let center = d.required_uuid("cost_center1_id");
            let cents = d.required_positive_cents("amount_cents");
            r.errors.append(&mut d.errors);
            if let (Some(cost_center1_id), Some(amount_cents)) = (center, cents) {
                distributions.push(Distribution { cost_center1_id, amount_cents });
            }
        }
        let sum = Cents::checked_sum(distributions.iter().map(|d| d.amount_cents));
        // A sum beyond the range of money passes any amount.
        if !distributions.is_empty() && amount.is_some_and(|a| sum.is_none_or(|s| s > a)) {
            r.reject("distributions", "out_of_range", "the distributions may not pass the movement's amount");
        }
    }
    let note = r.optional_str("note", 2000);
    // Omitted keeps the contact on a replacement; null clears it.
    let contact_id = match body.get("contact_id") {
        None => FieldEdit::Keep,
        Some(Value::Null) => FieldEdit::Clear,
        Some(_) => r.optional_uuid("contact_id").map_or(FieldEdit::Keep, FieldEdit::Set),
    };
    let exchange_rate = match body.get("exchange_rate") {
        None => FieldEdit::Keep,
        Some(Value::Null) => FieldEdit::Clear,
        Some(value) => match ExchangeRate::parse(value) {
            Ok(rate) => FieldEdit::Set(rate),
            Err(_) => {
                r.reject("exchange_rate", "invalid_format", "pesos per dollar: a positive decimal of up to six places");
                FieldEdit::Keep
            }
        },
    };
    let (Some(kind), Some(id), Some(direction), Some(amount), Some(occurred_on)) =
        (kind, id, direction, amount, occurred_on)
    else {
        return Err(r.errors);
    };
    let input = MovementInput {
        location: LocationRef { kind, id },
        direction,
        amount,
        occurred_on,
        counterparts,
        itemized,
        distributions,
        note,
        contact_id,
        exchange_rate,
    };
    r.finish((input, updated_at))
}

/// A `DELETE` body: `updated_at` and nothing else.
pub fn parse_deletion(body: &Value) -> Result<OffsetDateTime, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    r.refuse_unknown(body, &["updated_at"], "a movement's deletion");
    let updated_at = parse_updated_at(&mut r);
    match updated_at {
        Some(at) => r.finish(at),
        None => Err(r.errors),
    }
}

/// What a movement's decision reads.
#[derive(Debug, Clone, Default)]
pub struct MovementFacts {
    /// The movement as it stands (none when new or deleted), whether it was deleted, and when its last
    /// event was recorded.
    pub current: Option<ManualMovement>,
    pub deleted: bool,
    pub updated_at: Option<OffsetDateTime>,
    /// When its first event was recorded.
    pub created_at: Option<OffsetDateTime>,
    pub location: Option<LocationFacts>,
    /// The holdings of the dollar locations the command moves (the version's, and those the version it
    /// undoes moved), locked until the movement commits.
    pub holdings: BTreeMap<LocationRef, Holding>,
    /// The central bank's dollar rate of the movement's date, or the latest earlier one loaded (a dollar
    /// location's): its date and value.
    pub central_rate: Option<(Date, ExchangeRate)>,
    /// The organization's exchange-difference account, and whether it is active.
    pub exchange_account: Option<(Uuid, bool)>,
    /// Each counterpart account named: whether it is active, and its currency.
    pub accounts: BTreeMap<Uuid, (bool, Currency)>,
    /// The counterpart accounts named that back a register, safe or bank account.
    pub location_accounts: BTreeSet<Uuid>,
    /// Each cost center named: whether it is active.
    pub cost_centers: BTreeMap<Uuid, bool>,
    /// Whether the contact named (when one is) is a customer or supplier of the organization.
    pub contact_known: bool,
    pub today: Option<Date>,
}

/// A dollar location's holdings as the write model keeps them: its dollars and the pesos they are
/// carried at (the sum of its lines' native and functional amounts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holding {
    pub native: Cents,
    pub functional: Cents,
}

impl Default for Holding {
    fn default() -> Self {
        Self { native: Cents::ZERO, functional: Cents::ZERO }
    }
}

impl Holding {
    /// The pesos `amount` dollars leave at: their share of the carrying value while the location holds
    /// them, and any dollars beyond its holdings at `rate` (none when the share leaves the range).
    pub fn carrying_value(self, amount: Cents, rate: ExchangeRate) -> Option<Cents> {
        if self.native <= Cents::ZERO {
            return rate.to_pesos(amount);
        }
        if amount <= self.native {
            return self.functional.share(amount, self.native);
        }
        self.functional.checked_add(rate.to_pesos(amount.checked_sub(self.native)?)?)
    }

    /// The holdings without a line of the location (the version a replacement undoes). A line without
    /// its dollars (an entry from before dollars were recorded) never moved them, as `hold` moves only
    /// the lines that carry dollars, so it leaves them as they are.
    fn without(self, line: &JournalLine) -> Option<Holding> {
        let Some(native) = line.native else { return Some(self) };
        Some(Holding {
            native: self.native.checked_sub(native)?,
            functional: self.functional.checked_sub(line.functional)?,
        })
    }

    /// The holdings with a line of the location, as `hold` moves them, or `None` when either figure
    /// leaves the range of money (every later decision at the location reads them as amounts).
    fn with(self, line: &JournalLine) -> Option<Holding> {
        let Some(native) = line.native else { return Some(self) };
        Some(Holding {
            native: self.native.checked_add(native)?,
            functional: self.functional.checked_add(line.functional)?,
        })
    }
}

/// Whether `entries`, moved onto `holdings` line by line as `hold` moves them (the lines of a location
/// that carry dollars), keep every dollar location's dollars and their pesos within the range of money.
/// Every later movement and payment at a location reads its holdings back as amounts (`lock_holding`),
/// so an entry that takes them past it, a reversal as much as a new version, would leave each of them
/// failing. `holdings` holds every location the entries move (locked; one missing counts as empty).
pub fn stays_in_range(holdings: &BTreeMap<LocationRef, Holding>, entries: &[&JournalEntry]) -> bool {
    let mut held = holdings.clone();
    for line in entries.iter().flat_map(|entry| &entry.lines) {
        let Some(side) = line.location else { continue };
        let holding = held.entry(side.location).or_default();
        match holding.with(line) {
            Some(moved) => *holding = moved,
            None => return false,
        }
    }
    true
}

/// The refusal of an entry that would take a location's holdings past the range of money, naming
/// `fields` (none for a deletion or a void, whose bodies carry no amount).
pub fn holdings_out_of_range(fields: &[&str]) -> Rejection {
    Rejection::unprocessable_on(
        "OUT_OF_RANGE",
        fields,
        "the dollars a location would hold, or the pesos they are carried at, would pass the integer limit",
    )
}


fn too_large() -> Rejection {
    Rejection::unprocessable("OUT_OF_RANGE", "amount", "the movement's amount in pesos passes the integer limit")
}

/// The rate a dollar version converts at (spec, manual movement rule 7). The previous version's rate
/// is kept when `exchange_rate` is omitted and the version moves the same dollars the same way (same
/// location, date and direction, and for an expense the same amount), and for an income also when the
/// same rate is sent; null, or an omitted rate on a changed version, takes the central bank's rate of
/// the date; any other rate sent is recorded as manual.
pub fn resolve_rate(
    input: &MovementInput,
    previous: Option<&ManualMovement>,
    facts: &MovementFacts,
) -> Result<AppliedRate, Rejection> {
    let kept = previous
        .filter(|p| {
            p.location == input.location
                && p.occurred_on == input.occurred_on
                && p.direction == input.direction
                && (input.direction == Direction::Income || p.amount == input.amount)
        })
        .and_then(|p| p.rate);
    let central = || match facts.central_rate {
        Some((rate_date, value)) => Ok(AppliedRate { value, source: RateSource::CentralBank, rate_date }),
        None => Err(Rejection::unprocessable(
            "EXCHANGE_RATE_NOT_FOUND",
            "occurred_on",
            &format!(
                "no central-bank dollar rate is loaded for {} or any earlier date: send exchange_rate",
                input.occurred_on
            ),
        )),
    };
    match (&input.exchange_rate, kept) {
        (FieldEdit::Keep, Some(rate)) => Ok(rate),
        (FieldEdit::Set(value), Some(rate)) if input.direction == Direction::Income && rate.value == *value => Ok(rate),
        (FieldEdit::Set(value), _) => {
            Ok(AppliedRate { value: *value, source: RateSource::Manual, rate_date: input.occurred_on })
        }
        (FieldEdit::Keep | FieldEdit::Clear, _) => central(),
    }
}

/// A version's entry and, on a dollar location, its exchange difference: the location's line (its own
/// line id, new with every version), the counterparts' opposite lines, and on a dollar expense whose
/// carrying value differs from the counterparts' pesos the difference's line.
fn entry(
    id: Uuid,
    input: &MovementInput,
    facts: &MovementFacts,
    location: LocationFacts,
    entry_id: Uuid,
    dollars: Option<(AppliedRate, Holding)>,
) -> Result<(JournalEntry, Option<Cents>), Rejection> {
    let income = input.direction == Direction::Income;
    let sign = |cents: Cents| if income { cents } else { -cents };
    let movement_type = if income { MovementType::ManualIncome } else { MovementType::ManualExpense };
    let mut counterparts = Vec::with_capacity(input.counterparts.len());
    for c in &input.counterparts {
        let pesos = match dollars {
            Some((rate, _)) => rate.value.to_pesos(c.amount).ok_or_else(too_large)?,
            None => c.amount,
        };
        let in_dollars = facts.accounts.get(&c.account_id).is_some_and(|(_, currency)| *currency == Currency::Dol);
        counterparts.push(JournalLine {
            account_id: c.account_id,
            functional: -sign(pesos),
            native: in_dollars.then(|| -sign(c.amount)),
            location: None,
        });
    }
    // The counterparts' pesos, signed as the location's line would be.
    let converted = -Cents::checked_sum(counterparts.iter().map(|l| l.functional)).ok_or_else(too_large)?;
    let (functional, difference) = match dollars {
        None => (sign(input.amount), None),
        Some(_) if income => (converted, Some(Cents::ZERO)),
        Some((rate, holding)) => {
            let carrying = holding.carrying_value(input.amount, rate.value).ok_or_else(too_large)?;
            // An expense: the counterparts received `-converted` pesos of dollars carried at `carrying`.
            let gain = (-converted).checked_sub(carrying).ok_or_else(too_large)?;
            (-carrying, Some(gain))
        }
    };
    let mut lines = vec![JournalLine {
        account_id: location.ledger_account_id,
        functional,
        native: dollars.map(|_| sign(input.amount)),
        location: Some(LocationLine {
            location: input.location,
            movement_id: id,
            movement_type,
            line_id: Some(entry_id),
        }),
    }];
    lines.extend(counterparts);
    if let Some(gain) = difference.filter(|gain| *gain != Cents::ZERO) {
        match facts.exchange_account {
            None => {
                return Err(Rejection::unprocessable(
                    "EXCHANGE_DIFFERENCE_ACCOUNT_MISSING",
                    "exchange_rate",
                    "the movement has an exchange difference and the organization has no exchange-difference \
                     account: an operator sets it with admin update-org --exchange-difference-account",
                ));
            }
            Some((_, false)) => {
                return Err(Rejection::state_conflict(
                    "LEDGER_ACCOUNT_INACTIVE",
                    "inactive",
                    "the organization's exchange-difference account is inactive",
                ));
            }
            Some((account_id, true)) => {
                lines.push(JournalLine { account_id, functional: -gain, native: None, location: None })
            }
        }
    }
    Ok((JournalEntry { id: entry_id, occurred_on: input.occurred_on, lines }, difference))
}

/// Checks a version against the facts and makes it (`previous`: the version a replacement undoes).
fn version(
    id: Uuid,
    input: &MovementInput,
    facts: &MovementFacts,
    entry_id: Uuid,
    previous: Option<&ManualMovement>,
    created_by: Option<String>,
    contact_id: Option<Uuid>,
) -> Result<ManualMovement, Rejection> {
    // Every missing reference is named at once, the location among them.
    let mut missing = Vec::new();
    if facts.location.is_none() {
        missing.push(FieldError::new("balance_id", "not_found", "no location of this organization has this id"));
    }
    for (i, line) in input.counterparts.iter().enumerate() {
        let field = if input.itemized { format!("lines[{i}].account_id") } else { "account_id".to_owned() };
        // An inactive account or cost center is a reference like a missing one (404), as every reference
        // of the API is; only the location's own linked account is a state conflict.
        if !facts.accounts.get(&line.account_id).is_some_and(|(active, _)| *active) {
            missing.push(FieldError::new(field, "not_found", "no active ledger account of this organization has this id"));
        }
        let centers = [line.cost_center1_id, line.cost_center2_id, line.cost_center3_id];
        for (n, center) in centers.iter().enumerate() {
            if let Some(center) = center
                && facts.cost_centers.get(center) != Some(&true)
            {
                let field = if input.itemized {
                    format!("lines[{i}].cost_center{}_id", n + 1)
                } else {
                    format!("cost_center{}_id", n + 1)
                };
                missing.push(FieldError::new(field, "not_found", "no active cost center of this organization has this id"));
            }
        }
    }
    for (i, share) in input.distributions.iter().enumerate() {
        if facts.cost_centers.get(&share.cost_center1_id) != Some(&true) {
            missing.push(FieldError::new(
                format!("distributions[{i}].cost_center1_id"),
                "not_found",
                "no active cost center of this organization has this id",
            ));
        }
    }
    if contact_id.is_some() && !facts.contact_known {
        missing.push(FieldError::new(
            "contact_id",
            "not_found",
            "no customer or supplier of this organization has this id",
        ));
    }
    reject_fields(missing)?;
    let Some(location) = facts.location else { return Err(Rejection::not_found("location")) };
    if matches!(input.exchange_rate, FieldEdit::Set(_)) && location.currency == Currency::Pes {
        return Err(Rejection::Invalid {
            errors: vec![FieldError::new("exchange_rate", "not_allowed", "a peso location takes no exchange_rate")],
        });
    }
    if location.status == LocationStatus::Inactive {
        return Err(Rejection::state_conflict("LOCATION_INACTIVE", "inactive", "the location takes no movements"));
    }
    if location.account_active == Some(false) {
        return Err(Rejection::state_conflict(
            "LEDGER_ACCOUNT_INACTIVE",
            "inactive",
            "the ledger account linked to the location is inactive",
        ));
    }
    if location.account_active.is_none() {
        return Err(Rejection::unprocessable(
            "LEDGER_NOT_CONFIGURED",
            "balance_id",
            "the location has no ledger account to post to",
        ));
    }
    // Money between locations is a funds transfer: a location's account as a counterpart would move its
    // ledger and not its balance.
    if let Some(i) = input.counterparts.iter().position(|c| facts.location_accounts.contains(&c.account_id)) {
        let field = if input.itemized { format!("lines[{i}].account_id") } else { "account_id".to_owned() };
        return Err(Rejection::unprocessable(
            "LOCATION_ACCOUNT",
            &field,
            "the account backs a register, safe or bank account: move money between locations with a funds transfer",
        ));
    }
    if location.currency == Currency::Pes && facts.accounts.values().any(|(_, currency)| *currency == Currency::Dol) {
        return Err(Rejection::unprocessable(
            "CURRENCY_MISMATCH",
            "account_id",
            "a dollar ledger account takes dollars: post it from a dollar location",
        ));
    }
    if facts.today.is_none_or(|today| input.occurred_on > today) {
        return Err(Rejection::unprocessable("FUTURE_DATE", "occurred_on", "a movement cannot happen after today (UTC-3)"));
    }
    let dollars = match location.currency {
        Currency::Pes => None,
        Currency::Dol => {
            let rate = resolve_rate(input, previous, facts)?;
            let held = facts.holdings.get(&input.location).copied().unwrap_or_default();
            // A replacement on the same location first gives back what the previous version moved.
            let undone = previous
                .filter(|p| p.location == input.location)
                .and_then(|p| p.entry.lines.iter().find(|l| l.location.is_some()).map(|line| held.without(line)));
            let holding = undone.unwrap_or(Some(held)).ok_or_else(too_large)?;
            Some((rate, holding))
        }
    };
    let (entry, exchange_difference) = entry(id, input, facts, location, entry_id, dollars)?;
    // What a dollar location holds is read back as amounts by every later movement and payment there
    // (`lock_holding`): past the range of money each of them would fail, so this version is refused.
    if let Some((_, holding)) = dollars {
        let mut located = entry.lines.iter().filter(|line| line.location.is_some());
        if located.try_fold(holding, |held, line| held.with(line)).is_none() {
            return Err(holdings_out_of_range(&["amount"]));
        }
    }
    Ok(ManualMovement {
        location: input.location,
        direction: input.direction,
        amount: input.amount,
        occurred_on: input.occurred_on,
        counterparts: input.counterparts.clone(),
        itemized: input.itemized,
        distributions: input.distributions.clone(),
        note: input.note.clone(),
        contact_id,
        created_by,
        rate: dollars.map(|(rate, _)| rate),
        exchange_difference,
        entry,
    })
}

/// The id of a movement's `n`th entry (0: recorded; then one per replacement or deletion): derived,
/// so a retried command names the same entries.
pub fn entry_id(movement: Uuid, n: usize) -> Uuid {
    Uuid::new_v5(&movement, format!("entry-{n}").as_bytes())
}

/// The event a command records, given the facts and how many entries the movement has posted.
pub fn decide(
    command: &MovementCommand,
    facts: &MovementFacts,
    posted: usize,
) -> Result<TreasuryMovementEvent, Rejection> {
    let stale = |updated_at: &OffsetDateTime| facts.updated_at != Some(*updated_at);
    let conflict = || {
        Rejection::conflict(
            "CONFLICT",
            "the movement changed since updated_at: read the detail again and resend with its updated_at",
        )
    };
    match (command, &facts.current) {
        (MovementCommand::Record { .. }, _) if facts.updated_at.is_some() => {
            Err(Rejection::conflict("ALREADY_EXISTS", "the movement already exists"))
        }
        (MovementCommand::Record { id, input, created_by }, _) => {
            let contact = input.contact_id.apply(&None);
            let movement = version(*id, input, facts, entry_id(*id, 0), None, created_by.clone(), contact)?;
            Ok(TreasuryMovementEvent::ManualMovementRecorded(Box::new(movement)))
        }
        (MovementCommand::Replace { .. } | MovementCommand::Delete { .. }, None) => {
            Err(Rejection::not_found("treasury_movement"))
        }
        (MovementCommand::Replace { id, input, updated_at }, Some(current)) => {
            if stale(updated_at) {
                return Err(conflict());
            }
            let contact = input.contact_id.apply(&current.contact_id);
            let reversal = current.entry.reversal(entry_id(*id, posted), input.occurred_on);
            let created_by = current.created_by.clone();
            let movement = version(*id, input, facts, entry_id(*id, posted + 1), Some(current), created_by, contact)?;
            // The version undone gives its dollars back where it moved them, perhaps another location
            // than the new version's: what that location holds after it must stay in range too.
            if !stays_in_range(&facts.holdings, &[&reversal, &movement.entry]) {
                return Err(holdings_out_of_range(&["amount"]));
            }
            Ok(TreasuryMovementEvent::ManualMovementReplaced(Box::new(ManualMovementReplacement {
                reversal,
                movement,
            })))
        }
        (MovementCommand::Delete { id, updated_at }, Some(current)) => {
            if stale(updated_at) {
                return Err(conflict());
            }
            let reversal = current.entry.reversal(entry_id(*id, posted), facts.today.unwrap_or(current.occurred_on));
            if !stays_in_range(&facts.holdings, &[&reversal]) {
                return Err(holdings_out_of_range(&[]));
            }
            Ok(TreasuryMovementEvent::ManualMovementDeleted(Box::new(ManualMovementDeletion {
                reversal,
                location: current.location,
            })))
        }
    }
}

#[cfg(test)]
mod tests;
