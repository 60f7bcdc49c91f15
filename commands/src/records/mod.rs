//! Configuration records: the generic aggregate (created, then replaced as a whole) shared by payment
//! methods, warehouses, categories, points of sale, metafield definitions and price lists, and the
//! field rules of the simple kinds. Metafield definitions and price lists have homes of their own.

mod handler;

pub use handler::RecordRules;
pub(crate) use handler::current_defaults;

use crate::aggregate::{Aggregate, Rejection};
use crate::validate::{FieldError, ObjectReader};
use events::EventPayload;
use events::catalogue::{
    CategoryEvent, CategoryFields, PaymentMethodEvent, PaymentMethodFields, PointOfSaleEvent, PointOfSaleFields,
    RecordEvent, WarehouseEvent, WarehouseFields,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

/// The state of one record of kind `E`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
pub struct Record<E: RecordEvent> {
    pub id: Uuid,
    pub fields: E::Fields,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(skip)]
    _kind: PhantomData<E>,
}

impl<E: RecordEvent> Record<E> {
    pub fn with_id(self, id: Uuid) -> Self {
        Self { id, ..self }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", bound(serialize = "", deserialize = ""))]
pub enum RecordCommand<E: RecordEvent> {
    Create { id: Uuid, fields: E::Fields },
    Replace { id: Uuid, fields: E::Fields },
}

impl<E: RecordEvent> RecordCommand<E> {
    pub fn id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Replace { id, .. } => *id,
        }
    }

    pub fn is_creation(&self) -> bool {
        matches!(self, Self::Create { .. })
    }

    pub fn fields(&self) -> &E::Fields {
        match self {
            Self::Create { fields, .. } | Self::Replace { fields, .. } => fields,
        }
    }
}

impl<E: RecordEvent> Aggregate for Record<E> {
    type Command = RecordCommand<E>;
    type Event = E;

    fn decide(state: Option<&Self>, command: &RecordCommand<E>) -> Result<Vec<E>, Rejection> {
        match (state, command) {
            (None, RecordCommand::Create { fields, .. }) => Ok(vec![E::created(fields.clone())]),
            (Some(_), RecordCommand::Create { .. }) => {
                Err(Rejection::conflict("ALREADY_EXISTS", "a record with this id already exists"))
            }
            (None, RecordCommand::Replace { .. }) => Err(Rejection::not_found(E::STREAM_TYPE)),
            (Some(current), RecordCommand::Replace { fields, .. }) if current.fields == *fields => Ok(vec![]),
            (Some(_), RecordCommand::Replace { fields, .. }) => Ok(vec![E::replaced(fields.clone())]),
        }
    }

    fn evolve(state: Option<Self>, event: &E, at: OffsetDateTime) -> Option<Self> {
        match state {
            _ if event.is_creation() => Some(Record {
                id: Uuid::nil(),
                fields: event.fields().clone(),
                created_at: at,
                updated_at: at,
                _kind: PhantomData,
            }),
            Some(current) => Some(Record { fields: event.fields().clone(), updated_at: at, ..current }),
            None => None,
        }
    }
}

pub type PaymentMethod = Record<PaymentMethodEvent>;
pub type Warehouse = Record<WarehouseEvent>;
pub type Category = Record<CategoryEvent>;
pub type PointOfSale = Record<PointOfSaleEvent>;

fn bool_or(r: &mut ObjectReader<'_>, name: &str, default: bool) -> bool {
    r.optional_bool(name).unwrap_or(default)
}

/// Plain decimal text from 0 to 100 (`3`, `3.5`, `100`); the field's length limit bounds the decimals.
fn is_percentage(text: &str) -> bool {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let well_formed = !whole.is_empty()
        && whole.len() <= 3
        && digits(whole)
        && digits(fraction)
        && fraction.is_empty() != text.contains('.');
    well_formed && text.parse::<f64>().is_ok_and(|f| (0.0..=100.0).contains(&f))
}

/// Payment method body: `name` 1–50, `icon` ≤ 50, `feePercentage` ≤ 10 characters, `feeFixed` ≥ 0,
/// `requiresReference` (false), `isActive` (true), `isDefault` (false).
pub fn parse_payment_method(body: &Value) -> Result<PaymentMethodFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = r.required_str("name", 1, 50);
    let icon = r.optional_str("icon", 50);
    let fee_percentage = r.optional_str("feePercentage", 10);
    if let Some(fee) = &fee_percentage
        && !is_percentage(fee)
    {
        r.reject("feePercentage", "invalid_format", "must be a decimal number from 0 to 100 written as text, like 3.5");
    }
    let fee_fixed = r.optional_number("feeFixed");
    if fee_fixed.as_ref().is_some_and(|n| n.as_f64().is_none_or(|f| f < 0.0)) {
        r.reject("feeFixed", "out_of_range", "must be zero or more");
    }
    let requires_reference = bool_or(&mut r, "requiresReference", false);
    let is_active = bool_or(&mut r, "isActive", true);
    let is_default = bool_or(&mut r, "isDefault", false);
    r.finish(PaymentMethodFields { name, icon, fee_percentage, fee_fixed, requires_reference, is_active, is_default })
}

/// Warehouse body: `name` 1–100, `address` ≤ 200, `isDefault` (false), `isActive` (true).
pub fn parse_warehouse(body: &Value) -> Result<WarehouseFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = r.required_str("name", 1, 100);
    let address = r.optional_str("address", 200);
    let is_default = bool_or(&mut r, "isDefault", false);
    let is_active = bool_or(&mut r, "isActive", true);
    r.finish(WarehouseFields { name, address, is_default, is_active })
}

/// Category body: `name` 1–100, `parentId` (a category of the organization, or null).
pub fn parse_category(body: &Value) -> Result<CategoryFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = r.required_str("name", 1, 100);
    let parent_id = r.optional_uuid("parentId");
    r.finish(CategoryFields { name, parent_id })
}

/// A point of sale as the operator creates it.
pub fn point_of_sale_fields(number: i32, name: Option<&str>, kind: &str) -> Result<PointOfSaleFields, Rejection> {
    if !["electronic", "manual"].contains(&kind) {
        return Err(Rejection::Invalid {
            errors: vec![FieldError::new("kind", "invalid_value", "must be electronic or manual")],
        });
    }
    if !(1..=99_999).contains(&number) {
        return Err(Rejection::Invalid {
            errors: vec![FieldError::new("number", "out_of_range", "must be from 1 to 99999")],
        });
    }
    let name = name.map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let name = name.unwrap_or_else(|| format!("Punto de venta {number}"));
    Ok(PointOfSaleFields { number, name, is_active: true, kind: kind.to_owned() })
}

/// Stream type names, for lookups that are not generic.
pub fn stream_type_of<E: EventPayload>() -> &'static str {
    E::STREAM_TYPE
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn given_a_warehouse_when_replaced_with_other_fields_then_replaced() {
        let fields = parse_warehouse(&json!({"name": "Central"})).expect("valid");
        assert!(fields.is_active && !fields.is_default, "defaults apply");
        let created = Warehouse::decide(None, &RecordCommand::Create { id: Uuid::now_v7(), fields: fields.clone() })
            .expect("created");
        let state = Warehouse::fold(created.iter().map(|e| (e, OffsetDateTime::UNIX_EPOCH))).expect("state");
        let same = RecordCommand::Replace { id: state.id, fields: fields.clone() };
        assert_eq!(Warehouse::decide(Some(&state), &same), Ok(vec![]), "no change, no event");
        let other = WarehouseFields { name: "Norte".into(), ..fields };
        let replaced = Warehouse::decide(Some(&state), &RecordCommand::Replace { id: state.id, fields: other.clone() });
        assert_eq!(replaced, Ok(vec![WarehouseEvent::WarehouseReplaced(other)]));
        assert_eq!(
            Warehouse::decide(None, &RecordCommand::Replace { id: Uuid::now_v7(), fields: state.fields }),
            Err(Rejection::not_found("warehouse"))
        );
    }

    #[test]
    fn payment_method_rules() {
        let errors = parse_payment_method(&json!({
            "name": "", "icon": "i".repeat(51), "feePercentage": "abc", "feeFixed": -1,
            "requiresReference": "yes", "isActive": 1, "isDefault": null
        }))
        .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["name", "icon", "feePercentage", "feeFixed", "requiresReference", "isActive"]);
        let ok =
            parse_payment_method(&json!({"name": "Tarjeta", "feePercentage": "3.5", "feeFixed": 150})).expect("valid");
        assert!(ok.is_active && !ok.is_default && !ok.requires_reference);
    }

    #[test]
    fn fee_percentages_are_plain_decimals() {
        for ok in ["0", "3", "3.5", "99.99", "100", "12.3456", "12.0000000"] {
            assert!(is_percentage(ok), "{ok}");
        }
        for bad in ["1e1", "+5", ".5", "5.", "100.01", "-1", "abc", "1000", "1.2.3"] {
            assert!(!is_percentage(bad), "{bad}");
        }
    }

    #[test]
    fn category_parent_must_be_an_id() {
        let errors = parse_category(&json!({"name": "Bebidas", "parentId": "nope"})).expect_err("invalid");
        assert_eq!(errors[0].field, "parentId");
        assert!(parse_category(&json!({"name": "Bebidas", "parentId": null})).is_ok());
    }
}
