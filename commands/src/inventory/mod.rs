//! Stock: manual movements, transfers between warehouses (combos moved as their components),
//! reservations, and the negative-stock policy they all honour. The pattern every command that moves
//! stock follows (purchases, sales and delivery notes will too):
//!
//! - its own document stream (a fresh id: `stock_movement`, `stock_transfer`, ...) takes one event
//!   listing every [`StockChange`] with the on-hand it left;
//! - the `stock_levels` rows of every (variant, warehouse) it touches are locked in key order
//!   ([`levels::lock`]) for the whole decision, in the command's own transaction: the lock, not a
//!   stream version, serializes concurrent moves of the same stock, so there is nothing to retry;
//! - the pure [`plan`] decides the changes and the shortfalls against what is available (on hand −
//!   active reservations); under the `block` policy a shortfall is a 422 and the transaction rolls
//!   back, under `allow` it is a warning;
//! - the levels and the event are written in the same transaction, or nothing is.
//!
//! Every write-model row here is a fold of the events ([`rebuild`]).

pub mod group;
mod handler;
pub mod levels;
mod movement;
pub mod rebuild;
pub mod reservations;

pub use handler::{
    StockMovements, StockTransfers, active_product_types, combo_components, combos_and_retired, inactive_components,
    negative_stock_policy, product_types, write_components,
};

use crate::aggregate::{BusinessDetail, Rejection};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{StockChange, StockLine, iso_date};
use events::domain::Quantity;
use levels::{Key, Level};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines one movement or transfer lists.
pub const MAX_LINES: usize = 100;

pub use events::catalogue::NegativeStock;

/// A line that asks for more than is available: a warning under `allow`, a refusal under `block`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockShortfall {
    /// The request field the line came from (`lines[0].quantity`).
    pub field: String,
    pub product_id: Uuid,
    pub warehouse_id: Uuid,
    pub requested_quantity: Quantity,
    pub available_quantity: Quantity,
}

/// What a line asks of one (variant, warehouse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Add(Quantity),
    Take(Quantity),
    /// Set on-hand to a counted quantity.
    Set(Quantity),
}

/// One wanted move, with the request field it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedMove {
    pub key: Key,
    pub action: Move,
    pub field: String,
}

/// Decides the changes `moves` make to the locked `levels` (updated in place, in order) and the
/// shortfalls among them: a take beyond what is available (on hand − active reservations). Counts are
/// never short: they record what is there. A level beyond the quantity bounds is refused.
pub fn plan(
    levels: &mut BTreeMap<Key, Level>,
    moves: &[WantedMove],
) -> Result<(Vec<StockChange>, Vec<StockShortfall>), Rejection> {
    let mut changes = Vec::with_capacity(moves.len());
    let mut shortfalls = Vec::new();
    let mut errors = Vec::new();
    for wanted in moves {
        let level = levels.entry(wanted.key).or_default();
        let before = level.on_hand;
        let after = match wanted.action {
            Move::Add(q) => before.checked_add(q),
            Move::Take(q) => {
                let available = level.available();
                if q > available {
                    shortfalls.push(StockShortfall {
                        field: wanted.field.clone(),
                        product_id: wanted.key.0,
                        warehouse_id: wanted.key.1,
                        requested_quantity: q,
                        available_quantity: available,
                    });
                }
                before.checked_sub(q)
            }
            Move::Set(q) => Some(q),
        };
        // A count far from a level far the other way moves more than one quantity holds.
        let Some((after, delta)) = after.and_then(|after| Some((after, after.checked_sub(before)?))) else {
            errors.push(FieldError::new(&wanted.field, "out_of_range", "would take the stock level beyond its bounds"));
            continue;
        };
        level.on_hand = after;
        if !delta.is_zero() {
            if changes.len() == events::catalogue::MAX_STOCK_CHANGES {
                let most = events::catalogue::MAX_STOCK_CHANGES;
                errors.push(FieldError::new(
                    &wanted.field,
                    "too_many_changes",
                    format!("a document changes at most {most} stock levels (combos count each component)"),
                ));
                break;
            }
            changes.push(StockChange {
                variant_id: wanted.key.0,
                warehouse_id: wanted.key.1,
                quantity: delta,
                on_hand: after,
            });
        }
    }
    if errors.is_empty() { Ok((changes, shortfalls)) } else { Err(Rejection::Invalid { errors }) }
}

/// The shortfalls as the policy wants them: the warnings to answer with, or the refusal.
pub fn apply_policy(policy: NegativeStock, shortfalls: Vec<StockShortfall>) -> Result<Vec<StockShortfall>, Rejection> {
    match policy {
        NegativeStock::Block if !shortfalls.is_empty() => Err(insufficient_stock(shortfalls)),
        _ => Ok(shortfalls),
    }
}

/// The refusal under the `block` policy: 422 `INSUFFICIENT_STOCK`, one detail per short line with
/// what it asked for and what was available.
pub fn insufficient_stock(shortfalls: Vec<StockShortfall>) -> Rejection {
    let details = shortfalls
        .into_iter()
        .map(|s| BusinessDetail {
            field: Some(s.field),
            code: "INSUFFICIENT_STOCK".into(),
            message: format!(
                "{} requested but only {} available in the warehouse (the organization blocks negative stock)",
                s.requested_quantity, s.available_quantity
            ),
            metadata: BTreeMap::from([
                ("product_id".to_owned(), Value::String(s.product_id.to_string())),
                ("warehouse_id".to_owned(), Value::String(s.warehouse_id.to_string())),
                ("requested_quantity".to_owned(), Value::String(s.requested_quantity.to_string())),
                ("available_quantity".to_owned(), Value::String(s.available_quantity.to_string())),
            ]),
        })
        .collect();
    Rejection::Unprocessable {
        code: "INSUFFICIENT_STOCK".into(),
        message: "not enough stock is available and the organization blocks negative stock; nothing was written".into(),
        details,
    }
}

events::named_enum! {
    /// `in`, `out` or `count`.
    pub enum MovementType { In = "in", Out = "out", Count = "count" }
}

/// A manual stock movement in one warehouse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockMovementCommand {
    pub id: Uuid,
    pub movement_type: MovementType,
    pub warehouse_id: Uuid,
    pub reason: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<StockLine>,
}

/// A transfer of stock between two warehouses of the organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockTransferCommand {
    pub id: Uuid,
    pub origin_warehouse_id: Uuid,
    pub destination_warehouse_id: Uuid,
    pub items: Vec<StockLine>,
    pub notes: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
}

/// A movement as the workers answer it (and the gateway renders it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovementOutcome {
    pub id: Uuid,
    pub movement_type: MovementType,
    pub warehouse_id: Uuid,
    pub reason: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<StockLine>,
    pub changes: Vec<StockChange>,
    pub warnings: Vec<StockShortfall>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A transfer as stored for reads: the moved lines (combos replaced by their components) and the lines
/// as requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferOutcome {
    pub id: Uuid,
    pub origin_warehouse_id: Uuid,
    pub destination_warehouse_id: Uuid,
    pub items: Vec<StockLine>,
    pub requested_items: Vec<StockLine>,
    pub notes: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    #[serde(default)]
    pub warnings: Vec<StockShortfall>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// `YYYY-MM-DD`, a real date, not after `today`.
fn optional_date(r: &mut ObjectReader<'_>, name: &str, today: Date) -> Option<Date> {
    let value = r.value(name)?;
    let Some(text) = value.as_str() else {
        r.reject(name, "invalid_type", "must be a date written YYYY-MM-DD");
        return None;
    };
    match events::catalogue::parse_date(text) {
        Some(date) if date > today => {
            r.reject(name, "in_future", format!("must not be after today ({today})"));
            None
        }
        Some(date) => Some(date),
        None => {
            r.reject(name, "invalid_format", "must be a date written YYYY-MM-DD");
            None
        }
    }
}

/// Lines `{product_id, quantity}` under `name`: 1 to [`MAX_LINES`], quantities positive unless
/// `zero_allowed` (counts), each product once unless `repeats`.
fn lines(r: &mut ObjectReader<'_>, name: &str, zero_allowed: bool, repeats: bool) -> Vec<StockLine> {
    let mut out: Vec<StockLine> = Vec::new();
    for (i, item) in r.required_array(name, 1, MAX_LINES).iter().enumerate() {
        let mut line = ObjectReader::new(item, &format!("{name}[{i}]"));
        let variant_id = line.required_uuid("product_id");
        let quantity = line.required_quantity("quantity", !zero_allowed);
        if let Some(q) = quantity
            && q.is_negative()
        {
            line.reject("quantity", "negative", "must not be negative");
        }
        if !repeats
            && let Some(id) = variant_id
            && out.iter().any(|l| l.variant_id == id)
        {
            line.reject("product_id", "duplicate", "each product may appear once");
        }
        r.errors.append(&mut line.errors);
        if let (Some(variant_id), Some(quantity)) = (variant_id, quantity) {
            out.push(StockLine { variant_id, quantity });
        }
    }
    out
}

/// Parses a stock movement: `type`, `warehouse_id`, `lines` [{`product_id`, `quantity`}], `reason`
/// (at most 500 characters), `occurred_on` (default `today`, never later).
pub fn parse_movement(body: &Value, today: Date) -> Result<StockMovementCommand, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let movement_type = r.optional_named::<MovementType>("type");
    if r.value("type").is_none() {
        r.reject("type", "required", "is required: in, out or count");
    }
    let warehouse_id = r.required_uuid("warehouse_id");
    let reason = r.optional_str("reason", 500);
    let occurred_on = optional_date(&mut r, "occurred_on", today).unwrap_or(today);
    let lines = lines(&mut r, "lines", movement_type == Some(MovementType::Count), false);
    let command = StockMovementCommand {
        id: Uuid::now_v7(),
        movement_type: movement_type.unwrap_or(MovementType::In),
        warehouse_id: warehouse_id.unwrap_or_default(),
        reason,
        occurred_on,
        lines,
    };
    r.finish(command)
}

/// Parses a stock transfer: `origin_warehouse_id` and `destination_warehouse_id` (different), `items`
/// [{`product_id`, `quantity`}] (a product may repeat; lines are aggregated), `notes` (at most 1000
/// characters). It happens `today`.
pub fn parse_transfer(body: &Value, today: Date) -> Result<StockTransferCommand, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let origin = r.required_uuid("origin_warehouse_id");
    let destination = r.required_uuid("destination_warehouse_id");
    if origin.is_some() && origin == destination {
        r.reject("destination_warehouse_id", "same_warehouse", "must differ from origin_warehouse_id");
    }
    let notes = r.optional_str("notes", 1000);
    let items = lines(&mut r, "items", false, true);
    let command = StockTransferCommand {
        id: Uuid::now_v7(),
        origin_warehouse_id: origin.unwrap_or_default(),
        destination_warehouse_id: destination.unwrap_or_default(),
        items,
        notes,
        occurred_on: today,
    };
    r.finish(command)
}

/// Lines whose products may be combos, expanded: each combo line becomes its components times the
/// combo's quantity (which must be whole), then every variant's quantities are summed, in order of
/// first appearance. `combos` maps each combo among the lines to its components.
pub fn expand_combos(
    items: &[StockLine],
    combos: &BTreeMap<Uuid, Vec<StockLine>>,
    field: &str,
) -> Result<Vec<StockLine>, Vec<FieldError>> {
    let mut out: Vec<StockLine> = Vec::new();
    let mut errors = Vec::new();
    let mut add = |variant_id: Uuid, quantity: Quantity, path: String, errors: &mut Vec<FieldError>| match out
        .iter_mut()
        .find(|l| l.variant_id == variant_id)
    {
        Some(line) => match line.quantity.checked_add(quantity) {
            Some(sum) => line.quantity = sum,
            None => errors.push(FieldError::new(path, "out_of_range", "the total quantity is too large")),
        },
        None => out.push(StockLine { variant_id, quantity }),
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("{field}[{i}].quantity");
        match combos.get(&item.variant_id) {
            None => add(item.variant_id, item.quantity, path, &mut errors),
            Some(components) => {
                let Some(units) = item.quantity.whole_units() else {
                    errors.push(FieldError::new(path, "not_whole", "a combo moves in whole units"));
                    continue;
                };
                for component in components {
                    let moved = i128::from(component.quantity.thousandths()) * i128::from(units);
                    match i64::try_from(moved).ok().and_then(|t| Quantity::from_thousandths(t).ok()) {
                        Some(quantity) => add(component.variant_id, quantity, path.clone(), &mut errors),
                        None => errors.push(FieldError::new(
                            path.clone(),
                            "out_of_range",
                            "the total quantity is too large",
                        )),
                    }
                }
            }
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// The refusal of a line, at `path` (its product), naming a combo whose `components` are no longer active
/// products of the organization ([`inactive_components`]): the combo moves as them, and an inactive
/// product moves no stock, so the line is refused as one naming an inactive product is (`not_found`).
pub fn retired_component(path: impl Into<String>, components: &[Uuid]) -> FieldError {
    let ids: Vec<String> = components.iter().map(ToString::to_string).collect();
    FieldError::new(
        path,
        "not_found",
        format!("a component of this combo is no active product of this organization: {}", ids.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(text: &str) -> Quantity {
        text.parse().expect("quantity")
    }

    fn level(on_hand: &str, reserved: &str) -> Level {
        Level { on_hand: q(on_hand), reserved: q(reserved) }
    }

    const TODAY: Date = time::macros::date!(2026 - 11 - 25);

    #[test]
    fn takes_beyond_availability_are_shortfalls_and_counts_never_are() {
        let (a, w) = (Uuid::now_v7(), Uuid::now_v7());
        let mut levels = BTreeMap::from([((a, w), level("10", "4"))]);
        let moves = [
            WantedMove { key: (a, w), action: Move::Take(q("6")), field: "lines[0].quantity".into() },
            WantedMove { key: (a, w), action: Move::Take(q("0.5")), field: "lines[1].quantity".into() },
        ];
        let (changes, shortfalls) = plan(&mut levels, &moves).expect("planned");
        assert_eq!(
            changes.iter().map(|c| (c.quantity, c.on_hand)).collect::<Vec<_>>(),
            [(q("-6"), q("4")), (q("-0.5"), q("3.5"))]
        );
        assert_eq!(shortfalls.len(), 1, "6 of 6 available is fine; 0.5 more of 0 is short");
        assert_eq!((shortfalls[0].requested_quantity, shortfalls[0].available_quantity), (q("0.5"), q("0")));
        let counted = [WantedMove { key: (a, w), action: Move::Set(q("1.25")), field: "lines[0].quantity".into() }];
        let (changes, shortfalls) = plan(&mut levels, &counted).expect("planned");
        assert_eq!((changes[0].quantity, changes[0].on_hand), (q("-2.25"), q("1.25")));
        assert!(shortfalls.is_empty());
        let most = Quantity::from_units(Quantity::MAX_UNITS).expect("in range");
        let mut far = BTreeMap::from([((a, w), Level { on_hand: -most, reserved: Quantity::ZERO })]);
        let count = [WantedMove { key: (a, w), action: Move::Set(most), field: "lines[0].quantity".into() }];
        let Err(Rejection::Invalid { errors }) = plan(&mut far, &count) else { panic!("a change no quantity holds") };
        assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("lines[0].quantity", "out_of_range"));
        assert!(
            matches!(apply_policy(NegativeStock::Block, vec![shortfalls_of(a, w)]), Err(Rejection::Unprocessable { ref code, .. }) if code == "INSUFFICIENT_STOCK")
        );
        assert_eq!(apply_policy(NegativeStock::Allow, vec![shortfalls_of(a, w)]).map(|w| w.len()), Ok(1));
    }

    fn shortfalls_of(a: Uuid, w: Uuid) -> StockShortfall {
        StockShortfall {
            field: "x".into(),
            product_id: a,
            warehouse_id: w,
            requested_quantity: q("1"),
            available_quantity: q("0"),
        }
    }

    #[test]
    fn a_document_changes_at_most_as_many_levels_as_the_ledger_numbers() {
        let most = events::catalogue::MAX_STOCK_CHANGES;
        let warehouse = Uuid::now_v7();
        let moves: Vec<WantedMove> = (0..=most)
            .map(|i| WantedMove {
                key: (Uuid::now_v7(), warehouse),
                action: Move::Add(q("1")),
                field: format!("items[{}].quantity", i / 50),
            })
            .collect();
        let (changes, _) = plan(&mut BTreeMap::new(), &moves[..most]).expect("the most there may be");
        assert_eq!(changes.len(), most);
        let Err(Rejection::Invalid { errors }) = plan(&mut BTreeMap::new(), &moves) else { panic!("one too many") };
        assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("items[20].quantity", "too_many_changes"));
    }

    #[test]
    fn combos_expand_into_aggregated_component_lines() {
        let (combo, a, b) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let combos = BTreeMap::from([(
            combo,
            vec![StockLine { variant_id: a, quantity: q("2") }, StockLine { variant_id: b, quantity: q("0.5") }],
        )]);
        let items = [StockLine { variant_id: combo, quantity: q("3") }, StockLine { variant_id: a, quantity: q("1") }];
        let lines = expand_combos(&items, &combos, "items").expect("expanded");
        assert_eq!(
            lines,
            [StockLine { variant_id: a, quantity: q("7") }, StockLine { variant_id: b, quantity: q("1.5") }]
        );
        let fractional = [StockLine { variant_id: combo, quantity: q("1.5") }];
        let errors = expand_combos(&fractional, &combos, "items").expect_err("refused");
        assert_eq!(errors[0].field, "items[0].quantity");
    }

    #[test]
    fn movements_report_every_bad_field() {
        let errors = parse_movement(
            &json!({"type": "sideways", "lines": [{"product_id": "x", "quantity": "1.2345"}, {"quantity": 0}], "occurred_on": "2099-01-01"}),
            TODAY,
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        for field in [
            "type",
            "warehouse_id",
            "occurred_on",
            "lines[0].product_id",
            "lines[0].quantity",
            "lines[1].product_id",
            "lines[1].quantity",
        ] {
            assert!(fields.contains(&field), "{field} in {fields:?}");
        }
        let count = parse_movement(
            &json!({"type": "count", "warehouse_id": Uuid::now_v7(), "lines": [{"product_id": Uuid::now_v7(), "quantity": 0}]}),
            TODAY,
        )
        .expect("a count may be zero");
        assert_eq!(count.occurred_on, TODAY);
        let same = Uuid::now_v7();
        let errors = parse_transfer(
            &json!({"origin_warehouse_id": same, "destination_warehouse_id": same, "items": [{"product_id": Uuid::now_v7(), "quantity": -1}]}),
            TODAY,
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["destination_warehouse_id", "items[0].quantity"]);
        let text = parse_movement(
            &json!({"type": "in", "warehouse_id": same, "lines": [{"product_id": same, "quantity": "25e-1"}]}),
            TODAY,
        )
        .expect_err("text quantities are plain decimals");
        assert_eq!(text[0].code, "invalid_format");
    }
}
