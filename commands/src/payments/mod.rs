//! Customer and supplier payments: lines (a payment method, an amount, the location the money lands in
//! or leaves from, a reference), allocations to the contact's documents, and one balanced journal
//! entry posted through the treasury: each location against the contact's receivable (customer) or
//! payable (supplier) account, and the payment methods' fees to the fees account. A customer's
//! location receives the net of the fee; a supplier payment's location pays the fee on top. A void
//! posts the reversing entry and gives the allocations back. Here the body's parsing, the facts and the
//! pure decision; `handler.rs` loads, locks the documents settled, and appends.
//!
//! What each sale and purchase still owes is write model (`open_documents`, [`open_document`]): sales
//! and purchases open their row in the transaction that records them, credit notes lower the sale they
//! correct, and payments lock the rows they settle.

mod handler;

pub use handler::{CustomerPayments, SupplierPayments, credit_sale, open_document, with_sale};

use crate::aggregate::{Rejection, reject_fields};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    Allocation, Currency, JournalEntry, JournalLine, LocationKind, LocationLine, LocationRef, LocationStatus,
    MovementType, PaymentAllocated, PaymentFact, PaymentLine, PaymentRecorded, PaymentSide, PaymentVoided,
};
use events::catalogue::{AppliedRate, RateSource};
use events::domain::{Cents, ExchangeRate, Percentage};
use super::treasury::movements::{Holding, holdings_out_of_range, stays_in_range};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines or allocations one payment has.
pub const MAX_LINES: usize = 100;

const KNOWN_LINE: &[&str] =
    &["payment_method_id", "amount", "balance_type", "balance_id", "reference", "exchange_rate"];

/// A payment line as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineInput {
    pub method_id: Uuid,
    pub amount: Cents,
    pub location: LocationRef,
    pub reference: Option<String>,
    /// The pesos per dollar of a dollar location's line, when sent (the central bank's rate of the
    /// payment's date otherwise).
    pub exchange_rate: Option<ExchangeRate>,
}

/// A payment as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentInput {
    pub contact_id: Uuid,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub note: Option<String>,
    pub lines: Vec<LineInput>,
    pub allocations: Vec<Allocation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PaymentCommand {
    /// `created_by`: the delegated user recording it (none for an API key).
    Record {
        side: PaymentSide,
        id: Uuid,
        input: PaymentInput,
        created_by: Option<String>,
    },
    Void {
        side: PaymentSide,
        id: Uuid,
    },
    /// Allocates what the payment left on account.
    Allocate {
        side: PaymentSide,
        id: Uuid,
        allocations: Vec<Allocation>,
    },
}

impl PaymentCommand {
    pub fn payment_id(&self) -> Uuid {
        match self {
            Self::Record { id, .. } | Self::Void { id, .. } | Self::Allocate { id, .. } => *id,
        }
    }

    pub fn side(&self) -> PaymentSide {
        match self {
            Self::Record { side, .. } | Self::Void { side, .. } | Self::Allocate { side, .. } => *side,
        }
    }
}

/// What the workers answer: the payment as this command left it, and whether it is voided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentOutcome {
    pub id: Uuid,
    pub side: PaymentSide,
    pub payment: PaymentRecorded,
    pub voided: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// The field naming the contact, and an allocation's document, on each side.
pub fn names(side: PaymentSide) -> (&'static str, &'static str) {
    match side {
        PaymentSide::Customer => ("customer_id", "sale_id"),
        PaymentSide::Supplier => ("supplier_id", "purchase_id"),
    }
}



/// Parses a payment's body (every bad field named at once).
pub fn parse_payment(body: &Value, side: PaymentSide) -> Result<PaymentInput, Vec<FieldError>> {
    let (contact_field, _) = names(side);
    let mut r = ObjectReader::new(body, "");
    let known = [contact_field, "occurred_on", "note", "lines", "allocations"];
    r.refuse_unknown(body, &known, "a payment");
    let contact_id = r.required_uuid(contact_field);
    let occurred_on = r.required_date("occurred_on");
    let note = r.optional_str("note", 2000);
    let mut lines = Vec::new();
    for (i, line) in r.required_array("lines", 1, MAX_LINES).iter().enumerate() {
        let mut l = ObjectReader::new(line, &format!("lines[{i}]"));
        l.refuse_unknown(line, KNOWN_LINE, "a payment line");
        let method_id = l.required_uuid("payment_method_id");
        let amount = l.required_positive_cents("amount");
        let kind = l.required_str("balance_type", 1, 20);
        let kind = match (kind.as_str(), LocationKind::parse(&kind)) {
            ("", _) => None,
            (_, None) => {
                l.reject(
                    "balance_type",
                    "invalid_value",
                    format!("must be one of: {}", LocationKind::NAMES.join(", ")),
                );
                None
            }
            (_, found) => found,
        };
        let location_id = l.required_uuid("balance_id");
        let reference = l.optional_str("reference", 100);
        let exchange_rate = match l.value("exchange_rate").map(ExchangeRate::parse) {
            None => None,
            Some(Ok(rate)) => Some(rate),
            Some(Err(_)) => {
                l.reject("exchange_rate", "invalid_format", "pesos per dollar: a positive decimal of up to six places");
                None
            }
        };
        r.errors.append(&mut l.errors);
        if let (Some(method_id), Some(amount), Some(kind), Some(id)) = (method_id, amount, kind, location_id) {
            let location = LocationRef { kind, id };
            lines.push(LineInput { method_id, amount, location, reference, exchange_rate });
        }
    }
    let allocations = if r.value("allocations").is_some() { allocations(&mut r, side, 0) } else { Vec::new() };
    let (Some(contact_id), Some(occurred_on)) = (contact_id, occurred_on) else {
        return Err(r.errors);
    };
    r.finish(PaymentInput { contact_id, occurred_on, note, lines, allocations })
}

/// An `allocations` array (at least `min` of them); a document named twice takes the sum of its shares.
fn allocations(r: &mut ObjectReader<'_>, side: PaymentSide, min: usize) -> Vec<Allocation> {
    let (_, document_field) = names(side);
    let mut allocations: Vec<Allocation> = Vec::new();
    for (i, share) in r.required_array("allocations", min, MAX_LINES).iter().enumerate() {
        let mut a = ObjectReader::new(share, &format!("allocations[{i}]"));
        a.refuse_unknown(share, &[document_field, "amount"], "an allocation");
        let document_id = a.required_uuid(document_field);
        let amount = a.required_positive_cents("amount");
        r.errors.append(&mut a.errors);
        if let (Some(document_id), Some(amount)) = (document_id, amount) {
            match allocations.iter_mut().find(|a| a.document_id == document_id) {
                Some(share) => match share.amount.checked_add(amount) {
                    Some(sum) => share.amount = sum,
                    None => r.reject(&format!("allocations[{i}].amount"), "out_of_range", "too large"),
                },
                None => allocations.push(Allocation { document_id, amount }),
            }
        }
    }
    allocations
}

/// Parses the body of `POST /{id}/allocations`: one to 100 allocations.
pub fn parse_allocation(body: &Value, side: PaymentSide) -> Result<Vec<Allocation>, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    r.refuse_unknown(body, &["allocations"], "an allocation request");
    let allocations = allocations(&mut r, side, 1);
    r.finish(allocations)
}

/// Parses the body of `POST /{id}/void`: an empty object. A field in it is refused rather than ignored,
/// so a client that means something by it (an `amount`, as if a void could be partial) voids nothing.
pub fn parse_void(body: &Value) -> Result<(), Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    r.refuse_unknown(body, &[], "a void");
    r.finish(())
}

/// A payment method as a payment reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodFacts {
    pub active: bool,
    pub requires_reference: bool,
    pub fee_percentage: Option<Percentage>,
    /// Cents.
    pub fee_fixed: Cents,
}

impl MethodFacts {
    /// The fee on `amount` pesos: its percentage (half away from zero) plus the fixed fee.
    pub fn fee(&self, amount: Cents) -> Option<Cents> {
        let share = self.fee_percentage.map_or(Cents::ZERO, |p| p.apply_to(amount));
        share.checked_add(self.fee_fixed)
    }
}

/// What a payment's decision reads.
#[derive(Debug, Clone, Default)]
pub struct PaymentFacts {
    /// The payment as it stands (none when new; its allocations include later ones), whether it is
    /// voided, and its stream's version.
    pub current: Option<PaymentRecorded>,
    pub voided: bool,
    pub version: i32,
    /// Whether the contact is a customer (supplier) of the organization (contacts are never inactive).
    pub contact_known: bool,
    pub methods: BTreeMap<Uuid, MethodFacts>,
    pub locations: BTreeMap<LocationRef, super::treasury::LocationFacts>,
    /// Each document allocated to: its contact and what it still owes (locked).
    pub documents: BTreeMap<Uuid, (Uuid, Cents)>,
    /// The contact's account (receivables or payables) and the fees account, each with whether it is
    /// active.
    pub contact_account: Option<(Uuid, bool)>,
    pub fees_account: Option<(Uuid, bool)>,
    /// The holdings of the dollar locations the lines name (locked until the payment commits), the
    /// central bank's dollar rate of the payment's date or the latest earlier one (its date and value),
    /// and the organization's exchange-difference account with whether it is active.
    pub holdings: BTreeMap<LocationRef, Holding>,
    pub central_rate: Option<(Date, ExchangeRate)>,
    pub exchange_account: Option<(Uuid, bool)>,
    pub today: Option<Date>,
}


/// The id of a payment's `n`th location line (derived, so a retry names the same lines).
pub fn line_id(payment: Uuid, n: usize) -> Uuid {
    Uuid::new_v5(&payment, format!("line-{n}").as_bytes())
}

/// The id of a payment's reversing entry.
pub fn reversal_id(payment: Uuid) -> Uuid {
    Uuid::new_v5(&payment, b"void")
}

/// Checks a new payment against the facts and makes it.
fn record(
    side: PaymentSide,
    id: Uuid,
    input: &PaymentInput,
    facts: &PaymentFacts,
    created_by: Option<String>,
) -> Result<PaymentRecorded, Rejection> {
    let (contact_field, _) = names(side);
    // Every missing reference and every field the facts make malformed are named together: the answer
    // is 404 only when all of them are missing references, else 400.
    let mut errors = Vec::new();
    if !facts.contact_known {
        errors.push(FieldError::new(contact_field, "not_found", "no contact of this organization has this id"));
    }
    // An inactive payment method is a reference like a missing one (404), as every reference of the API
    // is; an inactive location is a state conflict, as the spec has it for treasury endpoints.
    for (i, line) in input.lines.iter().enumerate() {
        if !facts.methods.get(&line.method_id).is_some_and(|m| m.active) {
            let field = format!("lines[{i}].payment_method_id");
            let message = "no active payment method of this organization has this id";
            errors.push(FieldError::new(field, "not_found", message));
        }
        if !facts.locations.contains_key(&line.location) {
            let field = format!("lines[{i}].balance_id");
            errors.push(FieldError::new(field, "not_found", "no location of this organization has this id"));
        }
        let needs = facts.methods.get(&line.method_id).is_some_and(|m| m.active && m.requires_reference);
        if needs && line.reference.as_deref().is_none_or(|r| r.trim().is_empty()) {
            let field = format!("lines[{i}].reference");
            errors.push(FieldError::new(field, "required", "the payment method requires a reference"));
        }
        let pesos = facts.locations.get(&line.location).is_some_and(|l| l.currency == Currency::Pes);
        if line.exchange_rate.is_some() && pesos {
            let field = format!("lines[{i}].exchange_rate");
            errors.push(FieldError::new(field, "not_allowed", "a peso location takes no exchange_rate"));
        }
    }
    errors.extend(unknown_documents(side, input.contact_id, &input.allocations, facts));
    reject_fields(errors)?;
    for (i, line) in input.lines.iter().enumerate() {
        let location = facts.locations[&line.location];
        if location.status == LocationStatus::Inactive || location.account_active == Some(false) {
            return Err(Rejection::state_conflict(
                "LOCATION_INACTIVE",
                "inactive",
                format!("the location of lines[{i}] or its ledger account is inactive"),
            ));
        }
        if location.account_active.is_none() {
            return Err(Rejection::unprocessable(
                "LEDGER_NOT_CONFIGURED",
                &format!("lines[{i}].balance_id"),
                "the location has no ledger account",
            ));
        }
    }
    if facts.today.is_none_or(|today| input.occurred_on > today) {
        return Err(Rejection::unprocessable("FUTURE_DATE", "occurred_on", "a payment cannot happen after today (UTC-3)"));
    }
    let too_large = || Rejection::unprocessable("OUT_OF_RANGE", "lines", "the payment's total passes the integer limit");
    // Each line in pesos: a dollar line converts at its rate.
    let mut rates = Vec::with_capacity(input.lines.len());
    for (i, line) in input.lines.iter().enumerate() {
        let dollars = facts.locations[&line.location].currency != Currency::Pes;
        let rate = match (dollars, line.exchange_rate, facts.central_rate) {
            (false, _, _) => None,
            (true, Some(value), _) => {
                Some(AppliedRate { value, source: RateSource::Manual, rate_date: input.occurred_on })
            }
            (true, None, Some((rate_date, value))) => {
                Some(AppliedRate { value, source: RateSource::CentralBank, rate_date })
            }
            (true, None, None) => {
                return Err(Rejection::unprocessable(
                    "EXCHANGE_RATE_NOT_FOUND",
                    &format!("lines[{i}].exchange_rate"),
                    &format!(
                        "no central-bank dollar rate is loaded for {} or any earlier date: send exchange_rate",
                        input.occurred_on
                    ),
                ));
            }
        };
        let pesos = match rate {
            Some(rate) => rate.value.to_pesos(line.amount).ok_or_else(too_large)?,
            None => line.amount,
        };
        rates.push((rate, pesos));
    }
    let total = Cents::checked_sum(rates.iter().map(|(_, pesos)| *pesos)).ok_or_else(too_large)?;
    within(side, &input.allocations, total, facts)?;
    let (contact_account, fees_account) = match (facts.contact_account, facts.fees_account) {
        (None, _) => {
            let which = if side == PaymentSide::Customer { "--receivables-account" } else { "--payables-account" };
            return Err(Rejection::unprocessable(
                "LEDGER_NOT_CONFIGURED",
                contact_field,
                &format!(
                    "the organization has no account for this side: an operator sets it with admin update-org {which}"
                ),
            ));
        }
        (Some((_, false)), _) | (_, Some((_, false))) => {
            return Err(Rejection::state_conflict(
                "LEDGER_ACCOUNT_INACTIVE",
                "inactive",
                "the organization's receivables, payables or fees account is inactive",
            ));
        }
        (Some((contact, true)), fees) => (contact, fees.map(|(id, _)| id)),
    };
    let movement_type =
        if side == PaymentSide::Customer { MovementType::CustomerPayment } else { MovementType::SupplierPayment };
    let money_in = side == PaymentSide::Customer;
    let mut lines = Vec::with_capacity(input.lines.len());
    let mut entry_lines = Vec::with_capacity(input.lines.len() + 3);
    let (mut fees, mut difference) = (Cents::ZERO, Cents::ZERO);
    let mut holdings = facts.holdings.clone();
    for (n, (line, (rate, pesos))) in input.lines.iter().zip(rates).enumerate() {
        let method = &facts.methods[&line.method_id];
        // The customer's location receives the net of the fee; the supplier payment's location pays the
        // fee on top. A dollar line's fee is in dollars (the fixed part in cents of the line's currency).
        let fee_native = method.fee(line.amount).ok_or_else(too_large)?;
        // A customer's payment brings money in: a fee above it would take money out of the location.
        if money_in && fee_native > line.amount {
            return Err(Rejection::unprocessable(
                "FEE_EXCEEDS_AMOUNT",
                &format!("lines[{n}].amount"),
                &format!("the payment method's fee ({fee_native} cents) is more than the line's amount"),
            ));
        }
        let gross = if money_in { line.amount.checked_sub(fee_native) } else { line.amount.checked_add(fee_native) };
        let gross = gross.ok_or_else(too_large)?;
        let (moved, native, fee) = match rate {
            None => (if money_in { gross } else { -gross }, None, fee_native),
            Some(rate) => {
                let at_rate = rate.value.to_pesos(gross).ok_or_else(too_large)?;
                let holding = holdings.entry(line.location).or_default();
                if money_in {
                    // Dollars enter at the rate; the fee is what the gross dollars lack of the line's pesos.
                    let fee = pesos.checked_sub(at_rate).ok_or_else(too_large)?;
                    *holding = Holding {
                        native: holding.native.checked_add(gross).ok_or_else(too_large)?,
                        functional: holding.functional.checked_add(at_rate).ok_or_else(too_large)?,
                    };
                    (at_rate, Some(gross), fee)
                } else {
                    // Dollars leave at carrying value; what it differs from their pesos at the rate is the
                    // exchange difference.
                    let carrying = holding.carrying_value(gross, rate.value).ok_or_else(too_large)?;
                    let fee = at_rate.checked_sub(pesos).ok_or_else(too_large)?;
                    difference = difference
                        .checked_add(carrying.checked_sub(at_rate).ok_or_else(too_large)?)
                        .ok_or_else(too_large)?;
                    *holding = Holding {
                        native: holding.native.checked_sub(gross).ok_or_else(too_large)?,
                        functional: holding.functional.checked_sub(carrying).ok_or_else(too_large)?,
                    };
                    (-carrying, Some(-gross), fee)
                }
            }
        };
        fees = fees.checked_add(fee).ok_or_else(too_large)?;
        let location = facts.locations[&line.location];
        entry_lines.push(JournalLine {
            account_id: location.ledger_account_id,
            functional: moved,
            native,
            location: Some(LocationLine {
                location: line.location,
                movement_id: id,
                movement_type,
                line_id: Some(line_id(id, n)),
            }),
        });
        lines.push(PaymentLine {
            method_id: line.method_id,
            amount: line.amount,
            location: line.location,
            reference: line.reference.clone(),
            rate,
            pesos,
            fee,
        });
    }
    if difference != Cents::ZERO {
        let account = match facts.exchange_account {
            Some((id, true)) => id,
            Some((_, false)) => {
                return Err(Rejection::state_conflict(
                    "LEDGER_ACCOUNT_INACTIVE",
                    "inactive",
                    "the organization's exchange-difference account is inactive",
                ));
            }
            None => {
                return Err(Rejection::unprocessable(
                    "EXCHANGE_DIFFERENCE_ACCOUNT_MISSING",
                    "lines",
                    "the dollars leave at a carrying value other than their pesos at the rate, and the \
                     organization has no exchange-difference account: an operator sets it with admin update-org \
                     --exchange-difference-account",
                ));
            }
        };
        entry_lines.push(JournalLine { account_id: account, functional: difference, native: None, location: None });
    }
    if fees != Cents::ZERO {
        let Some(fees_account) = fees_account else {
            return Err(Rejection::unprocessable(
                "LEDGER_NOT_CONFIGURED",
                "lines",
                "the payment methods charge a fee and the organization has no fees account: an operator sets it \
                 with admin update-org --payment-fees-account",
            ));
        };
        entry_lines.push(JournalLine { account_id: fees_account, functional: fees, native: None, location: None });
    }
    let contact_side = if money_in { -total } else { total };
    entry_lines.push(JournalLine {
        account_id: contact_account,
        functional: contact_side,
        native: None,
        location: None,
    });
    Ok(PaymentRecorded {
        contact_id: input.contact_id,
        occurred_on: input.occurred_on,
        note: input.note.clone(),
        lines,
        total,
        allocations: input.allocations.clone(),
        created_by,
        entry: JournalEntry { id, occurred_on: input.occurred_on, lines: entry_lines },
        sale_id: None,
    })
}

/// The allocations naming a document that is not one of the contact's.
fn unknown_documents(
    side: PaymentSide,
    contact: Uuid,
    allocations: &[Allocation],
    facts: &PaymentFacts,
) -> Vec<FieldError> {
    let (contact_field, document_field) = names(side);
    let mut missing = Vec::new();
    for (i, share) in allocations.iter().enumerate() {
        if facts.documents.get(&share.document_id).is_none_or(|(owner, _)| *owner != contact) {
            let field = format!("allocations[{i}].{document_field}");
            let what = side.document_kind();
            missing.push(FieldError::new(field, "not_found", format!("no {what} of this {contact_field} has this id")));
        }
    }
    missing
}

/// Allocations within what there is to allocate (`available`) and what each document owes.
fn within(
    side: PaymentSide,
    allocations: &[Allocation],
    available: Cents,
    facts: &PaymentFacts,
) -> Result<(), Rejection> {
    let allocated = Cents::checked_sum(allocations.iter().map(|a| a.amount))
        .ok_or_else(|| Rejection::unprocessable("OUT_OF_RANGE", "allocations", "the allocations pass the integer limit"))?;
    if allocated > available {
        return Err(Rejection::unprocessable(
            "ALLOCATION_EXCEEDS_PAYMENT",
            "allocations",
            &format!("the allocations add up to more than the payment has to allocate ({} cents)", available.get()),
        ));
    }
    for (i, share) in allocations.iter().enumerate() {
        let due = facts.documents[&share.document_id].1;
        if share.amount > due {
            return Err(Rejection::unprocessable(
                "ALLOCATION_EXCEEDS_BALANCE",
                &format!("allocations[{i}].amount"),
                &format!("the {} {} owes {} cents", side.document_kind(), share.document_id, due.get()),
            ));
        }
    }
    Ok(())
}

/// What a payment has left on account: its total less its allocations, or `None` where their sum
/// leaves the range of [`Cents`] (which allocating, bounded by the total, never lets happen).
pub fn unallocated(payment: &PaymentRecorded) -> Option<Cents> {
    Cents::checked_sum(payment.allocations.iter().map(|a| a.amount)).and_then(|sum| payment.total.checked_sub(sum))
}

/// The fact a command records.
pub fn decide(command: &PaymentCommand, facts: &PaymentFacts) -> Result<PaymentFact, Rejection> {
    match (command, &facts.current) {
        (PaymentCommand::Record { .. }, Some(_)) => {
            Err(Rejection::conflict("ALREADY_EXISTS", "the payment already exists"))
        }
        (PaymentCommand::Record { side, id, input, created_by }, None) => {
            record(*side, *id, input, facts, created_by.clone()).map(|p| PaymentFact::Recorded(Box::new(p)))
        }
        (PaymentCommand::Void { .. } | PaymentCommand::Allocate { .. }, None) => Err(Rejection::not_found("payment")),
        (PaymentCommand::Allocate { .. }, Some(_)) if facts.voided => {
            Err(Rejection::state_conflict("STATE_CONFLICT", "voided", "a voided payment allocates nothing"))
        }
        (PaymentCommand::Allocate { side, allocations, .. }, Some(current)) => {
            reject_fields(unknown_documents(*side, current.contact_id, allocations, facts))?;
            let left = unallocated(current)
                .ok_or_else(|| Rejection::conflict("ALLOCATIONS_OUT_OF_RANGE", "the payment's allocations pass any amount"))?;
            within(*side, allocations, left, facts)?;
            Ok(PaymentFact::Allocated(Box::new(PaymentAllocated { allocations: allocations.clone() })))
        }
        (PaymentCommand::Void { .. }, Some(_)) if facts.voided => {
            Err(Rejection::state_conflict("STATE_CONFLICT", "voided", "the payment is already voided"))
        }
        (PaymentCommand::Void { id, .. }, Some(current)) => {
            let on = facts.today.unwrap_or(current.occurred_on).max(current.occurred_on);
            let reversal = current.entry.reversal(reversal_id(*id), on);
            // Giving a dollar line back moves its location's holdings as recording did: past the range
            // of money, every later movement and payment there would fail reading them.
            if !stays_in_range(&facts.holdings, &[&reversal]) {
                return Err(holdings_out_of_range(&[]));
            }
            Ok(PaymentFact::Voided(Box::new(PaymentVoided { reversal, allocations: current.allocations.clone() })))
        }
    }
}

#[cfg(test)]
mod tests;
