//! Quotes (Style A, snake_case): created, replaced whole and deleted while `draft`, each with its
//! canonical amounts (the tax engine's, on prices with VAT as the quote-type voucher 90 carries them)
//! and, when asked, a stock reservation taken, adjusted or released in the same transaction through
//! the reservations primitive. A quote past its `expires_at` becomes `expired` by itself (the sweeper,
//! [`expire_due`]) and its reservation is released.

use crate::aggregate::Rejection;
use crate::engine::{Conn, ExecuteError, Sink, append_typed, load, reject_fields};
use crate::handler::{Batching, Commit, Handler, Job, Together};
use crate::inventory::reservations::{self, Wanted};
use crate::inventory::{StockShortfall, negative_stock_policy};
use crate::lookups::load_products;
use crate::records::Warehouse;
use crate::reply::CommandReply;
use crate::tax::{self, PriceBasis};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    QuoteDiscount, QuoteEvent, QuoteExpired, QuoteLine, QuoteReservation, QuoteState, QuoteStatus, ReservationOwner,
    ReservedLine, ar_date, fold_quote, iso_date_option,
};
use events::domain::{Cents, Percentage};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
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
    pub global_discount_amount: Option<i64>,
    pub reservation: Option<QuoteReservation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemInput {
    pub variant_id: Uuid,
    pub quantity: events::domain::Quantity,
    pub unit_price: i64,
    pub warehouse_id: Option<Uuid>,
    pub discount: Option<QuoteDiscount>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum QuoteCommand {
    Create { id: Uuid, input: QuoteInput },
    Replace { id: Uuid, input: QuoteInput },
    Delete { id: Uuid },
}

impl QuoteCommand {
    pub fn quote_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Replace { id, .. } | Self::Delete { id } => *id,
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
/// `today` is the organization's date (a reservation may not end before it).
pub fn parse_quote(body: &Value, today: Date) -> Result<QuoteInput, Vec<FieldError>> {
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
        Some(_) => r.required_cents("global_discount_amount").map(Cents::get),
    };
    let mut reservation = None;
    if let Some(value) = r.value("reservation") {
        let mut res = ObjectReader::new(value, "reservation");
        let enabled = res.optional_bool("enabled").unwrap_or(false);
        let through = res.optional_date("reserved_through_date");
        if enabled {
            match through {
                None if res.value("reserved_through_date").is_none() => res.reject(
                    "reserved_through_date",
                    "required",
                    "a reservation needs the date it holds stock through",
                ),
                Some(d) if d < today => {
                    res.reject("reserved_through_date", "in_past", format!("must be today ({today}) or later"))
                }
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
        let discount = match line.value("discount") {
            None => None,
            Some(value) => {
                let mut d = ObjectReader::new(value, &format!("items[{i}].discount"));
                let amount = d.value("amount").and_then(|_| d.required_cents("amount"));
                let percentage = match d.value("percentage") {
                    None => None,
                    Some(p) => match Percentage::parse(p) {
                        Ok(p) => Some(i64::from(p.hundredths())),
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
                    _ => amount.map(|a| QuoteDiscount::Amount(a.get())).or(percentage.map(QuoteDiscount::Percentage)),
                };
                line.errors.append(&mut d.errors);
                chosen
            }
        };
        r.errors.append(&mut line.errors);
        if let (Some(variant_id), Some(quantity), Some(unit_price)) = (variant_id, quantity, unit_price) {
            items.push(ItemInput { variant_id, quantity, unit_price: unit_price.get(), warehouse_id, discount });
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

/// The quote's state and its stream version, folded from its events.
pub async fn load_quote(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<(Option<QuoteState>, i32, bool), ExecuteError> {
    let stored = events::store::load_stream(conn, org_id, id).await?;
    let (mut state, mut version, mut existed) = (None, 0, false);
    for event in stored {
        if event.stream_type != QuoteEvent::STREAM_TYPE {
            return Ok((None, 0, false));
        }
        let decoded = QuoteEvent::decode(&event.event_type, event.schema_version, event.data)
            .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        state = fold_quote(state, &decoded);
        version = event.version;
        existed = true;
    }
    Ok((state, version, existed))
}

/// Quotes (`POST`, `PUT` and `DELETE /api/v1/quotes`).
pub struct Quotes;

impl Handler for Quotes {
    type Command = QuoteCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[crate::quotes::SWEEP_QUOTES];

    fn stream_id(command: &QuoteCommand) -> Uuid {
        command.quote_id()
    }

    /// Checked in `run`, after the quote itself.
    async fn check_references(_: &QuoteCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &QuoteCommand,
        conn: &mut Conn<'_>,
        _: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        run_quote(conn.get().await?, org_id, command, metadata).await
    }
}

fn not_draft(status: QuoteStatus) -> Rejection {
    Rejection::state_conflict(
        "QUOTE_NOT_DRAFT",
        status.as_str(),
        format!("the quote is {}: only a draft can be replaced or deleted", status.as_str()),
    )
}

async fn run_quote(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &QuoteCommand,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let id = command.quote_id();
    let (current, version, _) = load_quote(conn, org_id, id).await?;
    let owner = ReservationOwner { kind: "quote".into(), id };
    let today = ar_date(OffsetDateTime::now_utc());
    let policy = negative_stock_policy(conn, org_id).await?;
    let (event, wanted, warnings_allowed) = match (command, &current) {
        (QuoteCommand::Create { .. }, Some(_)) => {
            return Err(Rejection::conflict("ALREADY_EXISTS", "the quote already exists").into());
        }
        (QuoteCommand::Replace { .. } | QuoteCommand::Delete { .. }, None) => {
            return Err(Rejection::not_found("quote").into());
        }
        (QuoteCommand::Replace { .. } | QuoteCommand::Delete { .. }, Some(q)) if q.status != QuoteStatus::Draft => {
            return Err(not_draft(q.status).into());
        }
        (QuoteCommand::Delete { .. }, Some(_)) => (QuoteEvent::QuoteDeleted, None, false),
        (QuoteCommand::Create { input, .. } | QuoteCommand::Replace { input, .. }, _) => {
            let number = match &current {
                Some(q) => q.number,
                None => 0,
            };
            let (state, wanted) = decide(conn, org_id, input, number).await?;
            let state = if current.is_none() {
                let number: i64 = sqlx::query_scalar(
                    "insert into document_numbers (org_id, series, last) values ($1, 'quote', 1)
                     on conflict (org_id, series) do update set last = document_numbers.last + 1 returning last",
                )
                .bind(org_id)
                .fetch_one(&mut *conn)
                .await?;
                QuoteState { number, ..state }
            } else {
                state
            };
            let event = if current.is_none() {
                QuoteEvent::QuoteCreated(Box::new(state))
            } else {
                QuoteEvent::QuoteReplaced(Box::new(state))
            };
            (event, wanted, true)
        }
    };
    let decided = reservations::set(conn, org_id, &owner, wanted.as_ref(), today, policy, metadata).await?;
    let warnings = if warnings_allowed { decided.warnings } else { Vec::new() };
    let next = fold_quote(current.clone(), &event);
    track_expiry(conn, org_id, id, next.as_ref()).await?;
    let stream = StreamRef { org_id, stream_type: QuoteEvent::STREAM_TYPE, stream_id: id, expected_version: version };
    let mut requests = vec![AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() }];
    requests.extend(decided.append);
    let (key, keys) = append_typed(conn, &requests, id).await?;
    let outcome = QuoteOutcome {
        id,
        quote: next,
        warnings,
        reservation_released: decided.released,
        at: OffsetDateTime::now_utc(),
    };
    let state = serde_json::to_value(outcome).unwrap_or_default();
    Ok(CommandReply::Accepted { commit: key, created: current.is_none(), state, replayed: false, keys })
}

/// Checks a quote's references, prices it and says what it reserves.
async fn decide(
    conn: &mut PgConnection,
    org_id: Uuid,
    input: &QuoteInput,
    number: i64,
) -> Result<(QuoteState, Option<Wanted>), ExecuteError> {
    let mut errors = Vec::new();
    let customer = load::<crate::contacts::Customer>(conn, org_id, input.customer_id).await?.0.filter(|c| c.is_active);
    if customer.is_none() {
        errors.push(FieldError::new("customer_id", "not_found", "no active customer of this organization has this id"));
    }
    if let Some(list) = input.price_list_id {
        let found = load::<crate::price_lists::PriceList>(conn, org_id, list).await?.0;
        if found.is_none() {
            errors.push(FieldError::new(
                "price_list_id",
                "not_found",
                "no price list of this organization has this id",
            ));
        }
    }
    let variants: Vec<Uuid> = input.items.iter().map(|i| i.variant_id).collect();
    let (facts, _) = load_products(conn, org_id, &variants).await?;
    let reserving = input.reservation.as_ref().is_some_and(|r| r.enabled);
    let mut checked: BTreeMap<Uuid, bool> = BTreeMap::new();
    let mut reserved = Vec::new();
    for (i, item) in input.items.iter().enumerate() {
        let fact = facts.get(&item.variant_id).filter(|f| f.is_active);
        if fact.is_none() {
            errors.push(FieldError::new(
                format!("items[{i}].product_id"),
                "not_found",
                "no active product of this organization has this id",
            ));
        }
        if let Some(w) = item.warehouse_id {
            let ok = match checked.get(&w) {
                Some(ok) => *ok,
                None => {
                    let ok = load::<Warehouse>(conn, org_id, w).await?.0.is_some_and(|w| w.fields.is_active);
                    checked.insert(w, ok);
                    ok
                }
            };
            if !ok {
                errors.push(FieldError::new(
                    format!("items[{i}].warehouse_id"),
                    "not_found",
                    "no active warehouse of this organization has this id",
                ));
            }
        }
        let physical = fact.is_some_and(|f| f.product_type == "product");
        if reserving && physical {
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
        return Err(Rejection::Invalid { errors }.into());
    }
    reject_fields(errors)?;
    let codes: Vec<i32> = input.items.iter().map(|i| facts.get(&i.variant_id).map_or(5, |f| f.tax_rate_id)).collect();
    let mut lines = Vec::with_capacity(input.items.len());
    let mut errors = Vec::new();
    for (i, (item, code)) in input.items.iter().zip(&codes).enumerate() {
        let discount = match item.discount {
            None => Ok(None),
            Some(QuoteDiscount::Amount(a)) => Cents::new(a)
                .map(|c| Some(tax::Discount::Fixed(c)))
                .map_err(|e| FieldError::new(format!("items[{i}].discount.amount"), "out_of_range", e.to_string())),
            Some(QuoteDiscount::Percentage(h)) => Percentage::from_hundredths(h)
                .map(|p| Some(tax::Discount::Percentage(p)))
                .map_err(|e| FieldError::new(format!("items[{i}].discount.percentage"), "out_of_range", e.to_string())),
        };
        match (Cents::new(item.unit_price), discount) {
            (Ok(unit_price), Ok(discount)) => {
                lines.push(tax::Line { quantity: item.quantity, unit_price, vat_code: *code, discount })
            }
            (Err(e), _) => {
                errors.push(FieldError::new(format!("items[{i}].unit_price"), "out_of_range", e.to_string()))
            }
            (_, Err(error)) => errors.push(error),
        }
    }
    let global_discount = match input.global_discount_amount.map(Cents::new).transpose() {
        Ok(amount) => amount.map(tax::Discount::Fixed),
        Err(e) => {
            errors.push(FieldError::new("global_discount_amount", "out_of_range", e.to_string()));
            None
        }
    };
    reject_fields(errors)?;
    let adjustments = tax::Adjustments { global_discount, ..tax::Adjustments::default() };
    let computed = tax::compute(PriceBasis::Gross, &lines, &adjustments).map_err(|e| {
        let field = match e {
            tax::TaxError::LineDiscountTooLarge { line, .. } => format!("items[{line}].discount.amount"),
            tax::TaxError::GlobalDiscountTooLarge { .. } => "global_discount_amount".to_owned(),
            _ => "items".to_owned(),
        };
        Rejection::Invalid { errors: vec![FieldError::new(field, "invalid_value", e.to_string())] }
    })?;
    let state = QuoteState {
        number,
        status: QuoteStatus::Draft,
        customer_id: input.customer_id,
        customer_name: customer.map(|c| c.fields.name).unwrap_or_default(),
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
        subtotal: computed.subtotal.get(),
        tax_amount: computed.tax_amount.get(),
        discount_amount: computed.discount_amount.get(),
        total: computed.total.get(),
    };
    let wanted = match (&input.reservation, reserved.is_empty()) {
        (Some(QuoteReservation { enabled: true, reserved_through_date: Some(through) }), false) => {
            Some(Wanted { reserved_through: *through, lines: reserved })
        }
        _ => None,
    };
    Ok((state, wanted))
}

/// Keeps the sweeper's row of a draft quote that expires (none for any other).
async fn track_expiry(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    quote: Option<&QuoteState>,
) -> Result<(), sqlx::Error> {
    match quote.filter(|q| q.status == QuoteStatus::Draft).and_then(|q| q.expires_at) {
        Some(expires_at) => {
            sqlx::query(
                "insert into quote_expiries (org_id, quote_id, expires_at) values ($1, $2, $3)
                 on conflict (org_id, quote_id) do update set expires_at = excluded.expires_at",
            )
            .bind(org_id)
            .bind(id)
            .bind(expires_at)
            .execute(conn)
            .await?;
        }
        None => {
            sqlx::query("delete from quote_expiries where org_id = $1 and quote_id = $2")
                .bind(org_id)
                .bind(id)
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}

/// Expires the draft quotes whose `expires_at` is before `today` (the organization's date): one
/// `QuoteExpired` each and its reservation released, in one transaction per quote. Returns how many.
pub async fn expire_due(pool: &PgPool, today: Date) -> Result<usize, ExecuteError> {
    let mut expired = 0;
    for _ in 0..500 {
        let mut tx = pool.begin().await?;
        let due: Option<(Uuid, Uuid)> = sqlx::query_as(
            "select org_id, quote_id from quote_expiries where expires_at < $1 limit 1 for update skip locked",
        )
        .bind(today)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((org_id, id)) = due else { break };
        let (state, version, _) = load_quote(&mut tx, org_id, id).await?;
        let metadata = Metadata::system("quote_sweeper");
        let mut requests = Vec::new();
        if state.as_ref().is_some_and(|q| q.status == QuoteStatus::Draft) {
            let event = QuoteEvent::QuoteExpired(QuoteExpired { expired_on: today });
            let stream =
                StreamRef { org_id, stream_type: QuoteEvent::STREAM_TYPE, stream_id: id, expected_version: version };
            requests.push(AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() });
            let owner = ReservationOwner { kind: "quote".into(), id };
            let policy = crate::inventory::NegativeStock::Allow;
            requests.extend(reservations::set(&mut tx, org_id, &owner, None, today, policy, &metadata).await?.append);
            expired += 1;
        }
        track_expiry(&mut tx, org_id, id, None).await?;
        append_typed(&mut tx, &requests, id).await?;
        tx.commit().await?;
    }
    Ok(expired)
}

/// The quotes' background job: [`sweep_forever`].
pub const SWEEP_QUOTES: Job = Job { name: "quote_expiry", run: |pool, _| Box::pin(sweep_forever(pool)) };

/// Expires due quotes every minute, for ever.
pub async fn sweep_forever(pool: PgPool) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match expire_due(&pool, ar_date(OffsetDateTime::now_utc())).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "quotes past their expiry recorded as expired"),
            Err(error) => tracing::warn!(%error, "could not expire quotes"),
        }
    }
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
            TODAY,
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
            TODAY,
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["reservation.reserved_through_date", "items[0].discount.percentage"]);
        let past = parse_quote(
            &json!({"customer_id": Uuid::now_v7(), "reservation": {"enabled": true, "reserved_through_date": "2026-11-24"},
                    "items": [{"product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 100}]}),
            TODAY,
        )
        .expect_err("a past date");
        assert_eq!(past[0].code, "in_past");
    }
}
