//! Quotes (Style A, snake_case): created, replaced whole and deleted while `draft`, each with its
//! canonical amounts (the tax engine's, on prices with VAT as the quote-type voucher 90 carries them)
//! and, when asked, a stock reservation taken, adjusted or released in the same transaction through
//! the reservations primitive. A draft is sent, a sent quote accepted or rejected (which releases its
//! reservation); converting one into an order is the orders' command ([`convertible`] says when). A
//! draft or sent quote past its `expires_at` becomes `expired` by itself (the sweeper,
//! [`handler::expire_due`]) and its reservation is released.
//!
//! | from | send | accept | reject | convert | replace, delete | expiry |
//! |---|---|---|---|---|---|---|
//! | draft | sent | 409 | 409 | converted | yes | expired |
//! | sent | 409 | accepted | rejected | converted | 409 | expired |
//! | accepted | 409 | 409 | 409 | converted | 409 | no |
//! | rejected, expired, converted | 409 | 409 | 409 | 409 | 409 | no |
//!
//! The domain has the document shape ([`crate::document`]): here the body's parsing, the facts a
//! decision reads ([`QuoteFacts`]) and the pure [`decide`]; in `handler.rs` what loads the facts and
//! writes the decision (the number, the reservation, the sweeper's row, the append).

mod handler;

pub use handler::{Quotes, SWEEP_QUOTES, expire_due, expires, load_quote, sweep_forever, track_expiry};

use crate::aggregate::{Rejection, reject_fields};
use crate::inventory::reservations::{ReservationChange, Wanted, of_components, through_in_past};
use crate::inventory::{StockShortfall, retired_component};
use crate::lookups::VariantFacts;
use crate::tax::{self, PriceBasis};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    QuoteDiscount, QuoteEvent, QuoteLine, QuoteReservation, QuoteState, QuoteStatus, ReservedLine, StockLine,
    iso_date_option,
};
use events::domain::{Cents, Percentage, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines one quote lists.
pub const MAX_LINES: usize = 200;

/// What the body may not carry: computed or server-assigned fields.
pub const READ_ONLY: &[&str] = &[
    "number",
    "formatted_number",
    "status",
    "subtotal",
    "tax_amount",
    "discount_amount",
    "total",
    "created_at",
    "updated_at",
    "converted_sale_id",
];
const KNOWN: &[&str] = &[
    "customer_id",
    "items",
    "price_list_id",
    "salesperson_member_id",
    "expires_at",
    "notes",
    "global_discount_amount",
    "reservation",
];
const KNOWN_ITEM: &[&str] = &["product_id", "quantity", "unit_price", "warehouse_id", "discount"];

/// A quote as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteInput {
    pub customer_id: Uuid,
    pub items: Vec<ItemInput>,
    pub price_list_id: Option<Uuid>,
    pub salesperson_member_id: Option<Uuid>,
    #[serde(default, with = "iso_date_option")]
    pub expires_at: Option<Date>,
    pub notes: Option<String>,
    pub global_discount_amount: Option<Cents>,
    pub reservation: Option<QuoteReservation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemInput {
    pub variant_id: Uuid,
    pub quantity: events::domain::Quantity,
    pub unit_price: Cents,
    pub warehouse_id: Option<Uuid>,
    pub discount: Option<QuoteDiscount>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QuoteCommand {
    Create { id: Uuid, input: QuoteInput },
    Replace { id: Uuid, input: QuoteInput },
    Delete { id: Uuid },
    Send { id: Uuid },
    Accept { id: Uuid },
    Reject { id: Uuid },
}

impl QuoteCommand {
    pub fn quote_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Replace { id, .. } => *id,
            Self::Delete { id } | Self::Send { id } | Self::Accept { id } | Self::Reject { id } => *id,
        }
    }
}

/// What the workers answer: the quote (none once deleted), the stock shortfalls the policy let
/// through, and whether a reservation was released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteOutcome {
    pub id: Uuid,
    pub quote: Option<QuoteState>,
    pub warnings: Vec<StockShortfall>,
    pub reservation_released: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// Parses a quote body: every read-only and unknown field is named, every bad field reported at once.
/// A reservation's date is checked against the organization's date when the quote is decided.
pub fn parse_quote(body: &Value) -> Result<QuoteInput, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    if let Some(object) = body.as_object() {
        for key in object.keys() {
            if READ_ONLY.contains(&key.as_str()) {
                r.reject(key, "read_only", "is set by the service and must not be sent");
            } else if !KNOWN.contains(&key.as_str()) {
                r.reject(key, "unknown_field", "is not a field of a quote");
            }
        }
    }
    let customer_id = r.required_uuid("customer_id");
    let price_list_id = r.optional_uuid("price_list_id");
    let salesperson_member_id = r.optional_uuid("salesperson_member_id");
    let expires_at = r.optional_date("expires_at");
    let notes = r.optional_str("notes", 2000);
    let global_discount_amount = match r.value("global_discount_amount") {
        None => None,
        Some(_) => r.required_cents("global_discount_amount"),
    };
    let mut reservation = None;
    if let Some(value) = r.value("reservation") {
        let mut res = ObjectReader::new(value, "reservation");
        res.refuse_unknown(value, &["enabled", "reserved_through_date"], "a reservation");
        let enabled = res.optional_bool("enabled").unwrap_or(false);
        let through = res.optional_date("reserved_through_date");
        if enabled {
            match through {
                None if res.value("reserved_through_date").is_none() => res.reject(
                    "reserved_through_date",
                    "required",
                    "a reservation needs the date it holds stock through",
                ),
                Some(d) if expires_at.is_some_and(|e| d > e) => {
                    res.reject("reserved_through_date", "after_expiry", "must not be after expires_at")
                }
                _ => {}
            }
        }
        r.errors.append(&mut res.errors);
        reservation = Some(QuoteReservation { enabled, reserved_through_date: through });
    }
    let mut items = Vec::new();
    for (i, item) in r.required_array("items", 1, MAX_LINES).iter().enumerate() {
        let mut line = ObjectReader::new(item, &format!("items[{i}]"));
        if let Some(object) = item.as_object() {
            for key in object.keys().filter(|k| !KNOWN_ITEM.contains(&k.as_str())) {
                line.reject(key, "unknown_field", "is not a field of a quote line");
            }
        }
        let variant_id = line.required_uuid("product_id");
        let quantity = line.required_quantity("quantity", true);
        let unit_price = line.required_cents("unit_price");
        let warehouse_id = line.optional_uuid("warehouse_id");
        let discount = read_discount(&mut line, &format!("items[{i}]"));
        r.errors.append(&mut line.errors);
        if let (Some(variant_id), Some(quantity), Some(unit_price)) = (variant_id, quantity, unit_price) {
            items.push(ItemInput { variant_id, quantity, unit_price, warehouse_id, discount });
        }
    }
    let input = QuoteInput {
        customer_id: customer_id.unwrap_or_default(),
        items,
        price_list_id,
        salesperson_member_id,
        expires_at,
        notes,
        global_discount_amount,
        reservation,
    };
    r.finish(input)
}

/// A line's `discount` (an `amount` in cents or a `percentage`, not both), its errors on `line`.
/// Orders read their lines' discounts with it too.
pub(crate) fn read_discount(line: &mut ObjectReader, path: &str) -> Option<QuoteDiscount> {
    let value = line.value("discount")?;
    let mut d = ObjectReader::new(value, &format!("{path}.discount"));
    d.refuse_unknown(value, &["amount", "percentage"], "a discount");
    let amount = d.value("amount").and_then(|_| d.required_cents("amount"));
    let percentage = match d.value("percentage") {
        None => None,
        Some(p) => match Percentage::parse(p) {
            Ok(p) => Some(p),
            Err(error) => {
                d.reject("percentage", "out_of_range", error.to_string());
                None
            }
        },
    };
    let chosen = match (d.value("amount").is_some(), d.value("percentage").is_some()) {
        (true, true) => {
            d.reject("percentage", "both_discounts", "send either amount or percentage, not both");
            None
        }
        (false, false) => {
            d.reject("amount", "required", "a discount is an amount or a percentage");
            None
        }
        _ => amount.map(QuoteDiscount::Amount).or(percentage.map(QuoteDiscount::Percentage)),
    };
    line.errors.append(&mut d.errors);
    chosen
}

/// The tax engine's line of a stored line.
pub(crate) fn tax_line(
    quantity: events::domain::Quantity,
    unit_price: Cents,
    vat_code: VatRate,
    discount: Option<QuoteDiscount>,
) -> tax::Line {
    let discount = discount.map(|discount| match discount {
        QuoteDiscount::Amount(a) => tax::Discount::Fixed(a),
        QuoteDiscount::Percentage(p) => tax::Discount::Percentage(p),
    });
    tax::Line { quantity, unit_price, vat_code, discount }
}

/// The tax engine's amounts of a document's lines, its errors named by field (`lines` is the name of
/// the lines' array: `items` on quotes, `lines` on orders).
pub(crate) fn amounts(
    basis: PriceBasis,
    lines: &[tax::Line],
    global_discount: Option<Cents>,
    array: &str,
) -> Result<tax::Computed, Rejection> {
    let adjustments =
        tax::Adjustments { global_discount: global_discount.map(tax::Discount::Fixed), ..tax::Adjustments::default() };
    tax::compute(basis, lines, &adjustments).map_err(|e| {
        let field = match e {
            tax::TaxError::LineDiscountTooLarge { line, .. } => format!("{array}[{line}].discount.amount"),
            tax::TaxError::GlobalDiscountTooLarge { .. } => "global_discount_amount".to_owned(),
            _ => array.to_owned(),
        };
        Rejection::Invalid { errors: vec![FieldError::new(field, "invalid_value", e.to_string())] }
    })
}

fn not_draft(status: QuoteStatus) -> Rejection {
    Rejection::state_conflict(
        "QUOTE_NOT_DRAFT",
        status.as_str(),
        format!("the quote is {}: only a draft can be replaced or deleted", status.as_str()),
    )
}

/// Everything outside the command that deciding a quote reads, loaded by the handler.
#[derive(Debug, Clone, Default)]
pub struct QuoteFacts {
    /// The quote as its stream has it (none: no such quote), and the stream's version.
    pub current: Option<QuoteState>,
    pub version: i32,
    /// The name of the quote's customer, when it is an active customer of the organization.
    pub customer: Option<String>,
    /// Whether the price list the quote names (if any) is the organization's.
    pub price_list_found: bool,
    /// The facts of each product variant the quote names that is the organization's.
    pub products: BTreeMap<Uuid, VariantFacts>,
    /// Whether each warehouse the quote names is an active warehouse of the organization.
    pub warehouses: BTreeMap<Uuid, bool>,
    /// The components of every combo the quote names.
    pub components: BTreeMap<Uuid, Vec<StockLine>>,
    /// The components no longer active of each combo the quote names that has any: its items are refused.
    pub retired_components: BTreeMap<Uuid, Vec<Uuid>>,
    /// The organization's date as the quote is decided (a reservation may not end before it).
    pub today: Option<Date>,
}

/// What a quote command decided: its event (a new quote's number is assigned when it is written), what
/// becomes of its reservation, and whether stock shortfalls are answered as warnings.
#[derive(Debug, Clone)]
pub struct QuoteDecision {
    pub event: QuoteEvent,
    pub reservation: ReservationChange,
    pub warnings_allowed: bool,
}

/// Whether a quote may be converted into an order: a draft, sent or accepted one.
pub fn convertible(quote: &QuoteState) -> Result<(), Rejection> {
    match quote.status {
        QuoteStatus::Draft | QuoteStatus::Sent | QuoteStatus::Accepted => Ok(()),
        other => Err(Rejection::state_conflict(
            "QUOTE_NOT_CONVERTIBLE",
            other.as_str(),
            format!("the quote is {}: only a draft, sent or accepted quote is converted", other.as_str()),
        )),
    }
}

/// A move between quote states: the state it needs, the event, and what becomes of the reservation.
fn transition(
    quote: &QuoteState,
    from: QuoteStatus,
    (event, verb): (QuoteEvent, &str),
    reservation: ReservationChange,
) -> Result<QuoteDecision, Rejection> {
    if quote.status != from {
        let (current, needed) = (quote.status.as_str(), from.as_str());
        return Err(Rejection::state_conflict(
            "QUOTE_STATE_CONFLICT",
            current,
            format!("the quote is {current}: only a {needed} quote is {verb}"),
        ));
    }
    Ok(QuoteDecision { event, reservation, warnings_allowed: false })
}

/// Decides a quote command against the facts: pure.
pub fn decide(command: &QuoteCommand, facts: &QuoteFacts) -> Result<QuoteDecision, Rejection> {
    let current = &facts.current;
    match (command, current) {
        (QuoteCommand::Create { .. }, Some(_)) => {
            Err(Rejection::conflict("ALREADY_EXISTS", "the quote already exists"))
        }
        (
            QuoteCommand::Replace { .. }
            | QuoteCommand::Delete { .. }
            | QuoteCommand::Send { .. }
            | QuoteCommand::Accept { .. }
            | QuoteCommand::Reject { .. },
            None,
        ) => Err(Rejection::not_found("quote")),
        (QuoteCommand::Send { .. }, Some(q)) => {
            transition(q, QuoteStatus::Draft, (QuoteEvent::QuoteSent, "sent"), ReservationChange::Keep)
        }
        (QuoteCommand::Accept { .. }, Some(q)) => {
            transition(q, QuoteStatus::Sent, (QuoteEvent::QuoteAccepted, "accepted"), ReservationChange::Keep)
        }
        (QuoteCommand::Reject { .. }, Some(q)) => {
            transition(q, QuoteStatus::Sent, (QuoteEvent::QuoteRejected, "rejected"), ReservationChange::Set(None))
        }
        (QuoteCommand::Replace { .. } | QuoteCommand::Delete { .. }, Some(q)) if q.status != QuoteStatus::Draft => {
            Err(not_draft(q.status))
        }
        (QuoteCommand::Delete { .. }, Some(_)) => {
            let reservation = ReservationChange::Set(None);
            Ok(QuoteDecision { event: QuoteEvent::QuoteDeleted, reservation, warnings_allowed: false })
        }
        (QuoteCommand::Create { input, .. } | QuoteCommand::Replace { input, .. }, _) => {
            let number = current.as_ref().map_or(0, |q| q.number);
            let (state, wanted) = price(input, facts, number)?;
            let event = match current {
                None => QuoteEvent::QuoteCreated(Box::new(state)),
                Some(_) => QuoteEvent::QuoteReplaced(Box::new(state)),
            };
            Ok(QuoteDecision { event, reservation: ReservationChange::Set(wanted), warnings_allowed: true })
        }
    }
}

/// Checks a quote's references against the facts, prices it and says what it reserves.
fn price(input: &QuoteInput, facts: &QuoteFacts, number: i64) -> Result<(QuoteState, Option<Wanted>), Rejection> {
    let mut errors = Vec::new();
    let customer = facts.customer.clone();
    if customer.is_none() {
        errors.push(FieldError::new("customer_id", "not_found", "no active customer of this organization has this id"));
    }
    if input.price_list_id.is_some() && !facts.price_list_found {
        errors.push(FieldError::new("price_list_id", "not_found", "no active price list of this organization has this id"));
    }
    errors.extend(through_in_past(input.reservation.as_ref().and_then(|r| r.reserved_through_date), facts.today));

    let products = &facts.products;
    let reserving = input.reservation.as_ref().is_some_and(|r| r.enabled);
    let mut reserved = Vec::new();
    for (i, item) in input.items.iter().enumerate() {
        let fact = products.get(&item.variant_id).filter(|f| f.is_active);
        if fact.is_none() {
            errors.push(FieldError::new(
                format!("items[{i}].product_id"),
                "not_found",
                "no active product of this organization has this id",
            ));
        } else if let Some(components) = facts.retired_components.get(&item.variant_id) {
            // A combo reserves its components: one deactivated is refused as an inactive product is.
            errors.push(retired_component(format!("items[{i}].product_id"), components));
        }
        if let Some(w) = item.warehouse_id {
            let ok = facts.warehouses.get(&w).copied().unwrap_or(false);
            if !ok {
                errors.push(FieldError::new(
                    format!("items[{i}].warehouse_id"),
                    "not_found",
                    "no active warehouse of this organization has this id",
                ));
            }
        }
        // A combo reserves its components (below), in the line's warehouse too.
        let stocked = fact.is_some_and(|f| f.product_type.is_stocked());
        if reserving && stocked {
            match item.warehouse_id {
                None => errors.push(FieldError::new(
                    format!("items[{i}].warehouse_id"),
                    "required",
                    "a reservation needs the warehouse of every physical product line",
                )),
                Some(warehouse_id) => reserved.push((
                    ReservedLine { variant_id: item.variant_id, warehouse_id, quantity: item.quantity },
                    format!("items[{i}].quantity"),
                )),
            }
        }
    }
    // A missing warehouse is a malformed request (400), whatever else the data refuses.
    if errors.iter().any(|e| e.code == "required") {
        return Err(Rejection::Invalid { errors });
    }
    reject_fields(errors)?;
    let codes: Vec<VatRate> =
        input.items.iter().map(|i| products.get(&i.variant_id).map_or(VatRate::GENERAL, |f| f.tax_rate_id)).collect();
    let lines: Vec<tax::Line> = input
        .items
        .iter()
        .zip(&codes)
        .map(|(item, code)| tax_line(item.quantity, item.unit_price, *code, item.discount))
        .collect();
    let computed = amounts(PriceBasis::Gross, &lines, input.global_discount_amount, "items")?;
    let state = QuoteState {
        number,
        status: QuoteStatus::Draft,
        customer_id: input.customer_id,
        customer_name: customer.unwrap_or_default(),
        items: input
            .items
            .iter()
            .zip(&codes)
            .map(|(i, code)| QuoteLine {
                variant_id: i.variant_id,
                quantity: i.quantity,
                unit_price: i.unit_price,
                tax_rate_id: *code,
                warehouse_id: i.warehouse_id,
                discount: i.discount,
            })
            .collect(),
        price_list_id: input.price_list_id,
        salesperson_member_id: input.salesperson_member_id,
        expires_at: input.expires_at,
        notes: input.notes.clone(),
        global_discount_amount: input.global_discount_amount,
        reservation: input.reservation.clone(),
        subtotal: computed.subtotal,
        tax_amount: computed.tax_amount,
        discount_amount: computed.discount_amount,
        total: computed.total,
        converted_order_id: None,
    };
    let wanted = match (&input.reservation, reserved.is_empty()) {
        (Some(QuoteReservation { enabled: true, reserved_through_date: Some(through) }), false) => {
            Some(Wanted { reserved_through: *through, lines: of_components(reserved, &facts.components)? })
        }
        _ => None,
    };
    Ok((state, wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TODAY: Date = time::macros::date!(2026 - 11 - 25);

    #[test]
    fn read_only_unknown_and_conflicting_fields_are_named() {
        let errors = parse_quote(
            &json!({"customer_id": Uuid::now_v7(), "total": 5, "status": "sent", "colour": 1,
                    "items": [{"product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 100,
                               "discount": {"amount": 10, "percentage": 5}}]}),
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        for field in ["total", "status", "colour", "items[0].discount.percentage"] {
            assert!(fields.contains(&field), "{field} in {fields:?}");
        }
        let errors = parse_quote(
            &json!({"customer_id": Uuid::now_v7(), "expires_at": "2026-11-30",
                    "reservation": {"enabled": true, "reserved_through_date": "2026-12-01"},
                    "items": [{"product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 100, "discount": {"percentage": 101}}]}),
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["reservation.reserved_through_date", "items[0].discount.percentage"]);
        // A reservation ending before the day the quote is decided is refused then, not when read.
        let past = parse_quote(
            &json!({"customer_id": Uuid::now_v7(), "reservation": {"enabled": true, "reserved_through_date": "2026-11-24"},
                    "items": [{"product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 100, "warehouse_id": Uuid::now_v7()}]}),
        )
        .expect("read");
        let command = QuoteCommand::Create { id: Uuid::now_v7(), input: past.clone() };
        let Err(Rejection::Invalid { errors }) = decide(&command, &facts_for(&past)) else { panic!("refused") };
        assert_eq!(
            errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect::<Vec<_>>(),
            [("reservation.reserved_through_date", "in_past")]
        );
    }

    fn facts_for(input: &QuoteInput) -> QuoteFacts {
        let products = input
            .items
            .iter()
            .map(|item| (item.variant_id, VariantFacts::plain_product(item.variant_id)))
            .collect();
        let warehouses = input.items.iter().filter_map(|item| item.warehouse_id).map(|id| (id, true)).collect();
        QuoteFacts {
            customer: Some("Ana".into()),
            price_list_found: true,
            products,
            warehouses,
            today: Some(TODAY),
            ..QuoteFacts::default()
        }
    }

    fn input() -> QuoteInput {
        parse_quote(
            &json!({"customer_id": Uuid::now_v7(), "global_discount_amount": 100,
                    "reservation": {"enabled": true, "reserved_through_date": "2026-11-30"},
                    "items": [{"product_id": Uuid::now_v7(), "quantity": 2, "unit_price": 1210,
                               "warehouse_id": Uuid::now_v7(), "discount": {"percentage": 10}}]}),
        )
        .expect("a quote")
    }

    #[test]
    fn a_new_quote_is_priced_and_reserves_its_physical_lines_from_the_facts_alone() {
        let input = input();
        let command = QuoteCommand::Create { id: Uuid::now_v7(), input: input.clone() };
        let decision = decide(&command, &facts_for(&input)).expect("decided");
        let QuoteEvent::QuoteCreated(state) = &decision.event else { panic!("a creation: {:?}", decision.event) };
        // 2 × 12.10 = 24.20, less 10% = 21.78, less 1.00 global = 20.78 (VAT included at 21%).
        assert_eq!((state.total.get(), state.discount_amount.get(), state.customer_name.as_str()), (2078, 342, "Ana"));
        assert_eq!(state.subtotal.checked_add(state.tax_amount), Some(state.total));
        let ReservationChange::Set(Some(wanted)) = decision.reservation else { panic!("a reservation") };
        assert_eq!(wanted.reserved_through, time::macros::date!(2026 - 11 - 30));
        assert_eq!(wanted.lines.len(), 1);
        assert!(decision.warnings_allowed);
    }

    #[test]
    fn a_combo_whose_component_was_deactivated_is_refused_as_an_inactive_product_is() {
        let input = input();
        let mut facts = facts_for(&input);
        let combo = input.items[0].variant_id;
        if let Some(fact) = facts.products.get_mut(&combo) {
            fact.product_type = events::catalogue::ProductType::Combo;
        }
        let retired = Uuid::now_v7();
        facts.retired_components.insert(combo, vec![retired]);
        let command = QuoteCommand::Create { id: Uuid::now_v7(), input };
        let Err(Rejection::Invalid { errors }) = decide(&command, &facts) else { panic!("refused") };
        assert_eq!(
            errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect::<Vec<_>>(),
            [("items[0].product_id", "not_found")]
        );
        assert!(errors[0].message.contains(&retired.to_string()), "names the component: {errors:?}");
    }

    #[test]
    fn references_the_facts_lack_are_named_field_by_field() {
        let input = input();
        let mut facts = facts_for(&input);
        facts.customer = None;
        facts.price_list_found = false;
        facts.warehouses.values_mut().for_each(|active| *active = false);
        let command = QuoteCommand::Create { id: Uuid::now_v7(), input };
        let Err(Rejection::Invalid { errors }) = decide(&command, &facts) else { panic!("refused") };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["customer_id", "items[0].warehouse_id"]);
    }

    #[test]
    fn only_a_draft_is_replaced_or_deleted_and_a_quote_is_created_once() {
        let input = input();
        let mut facts = facts_for(&input);
        let id = Uuid::now_v7();
        let created = decide(&QuoteCommand::Create { id, input: input.clone() }, &facts).expect("created");
        let QuoteEvent::QuoteCreated(state) = created.event else { panic!("a creation") };
        facts.current = Some(QuoteState { status: QuoteStatus::Expired, ..*state });
        let refused = decide(&QuoteCommand::Delete { id }, &facts).expect_err("not a draft");
        assert!(matches!(refused, Rejection::StateConflict { .. }), "{refused:?}");
        let again = decide(&QuoteCommand::Create { id, input }, &facts).expect_err("exists");
        assert!(matches!(again, Rejection::Conflict { ref code, .. } if code == "ALREADY_EXISTS"), "{again:?}");
        facts.current = None;
        let missing = decide(&QuoteCommand::Delete { id }, &facts).expect_err("no quote");
        assert_eq!(missing, Rejection::not_found("quote"));
    }
}
