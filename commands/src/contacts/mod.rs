//! The contact aggregates, customers and suppliers: what a valid contact is, and how creating and
//! replacing one decide.

mod handler;

use crate::aggregate::{Aggregate, Rejection};
pub use crate::validate::is_valid_cuit;
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{CustomerEvent, CustomerFields, RecordEvent, SupplierEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

pub const TAX_ID_TYPES: &[&str] = &["CUIL/CUIT", "DNI"];
pub const TAX_CATEGORIES: &[&str] =
    &["Responsable Inscripto", "Consumidor Final", "Monotributista", "Exento", "IVA no alcanzado"];
pub const PERSON_TYPES: &[&str] = &["FISICA", "JURIDICA"];

/// ISO 3166-2:AR province letters and names.
pub const PROVINCES: &[(&str, &str)] = &[
    ("A", "Salta"),
    ("B", "Buenos Aires"),
    ("C", "Ciudad Autónoma de Buenos Aires"),
    ("D", "San Luis"),
    ("E", "Entre Ríos"),
    ("F", "La Rioja"),
    ("G", "Santiago del Estero"),
    ("H", "Chaco"),
    ("J", "San Juan"),
    ("K", "Catamarca"),
    ("L", "La Pampa"),
    ("M", "Mendoza"),
    ("N", "Misiones"),
    ("P", "Formosa"),
    ("Q", "Neuquén"),
    ("R", "Río Negro"),
    ("S", "Santa Fe"),
    ("T", "Tucumán"),
    ("U", "Chubut"),
    ("V", "Tierra del Fuego"),
    ("W", "Corrientes"),
    ("X", "Córdoba"),
    ("Y", "Jujuy"),
    ("Z", "Santa Cruz"),
];

pub fn province_name(code: &str) -> Option<&'static str> {
    PROVINCES.iter().find(|(c, _)| *c == code).map(|(_, name)| *name)
}

/// Whether an address looks like a deliverable e-mail address (one `@`, a dotted domain, no spaces).
pub fn is_valid_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    !local.is_empty()
        && !domain.contains('@')
        && !text.chars().any(char::is_whitespace)
        && domain.split('.').count() >= 2
        && domain
            .split('.')
            .all(|label| !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Field name of the default ledger account (spelled as the spec names it).
pub const DEFAULT_ACCOUNT_FIELD: &str = "default_account_id";

/// Whether a write body sets (or clears, with null) the default ledger account; omitted means "keep".
pub fn sets_default_account(body: &Value) -> bool {
    body.as_object().is_some_and(|o| o.contains_key(DEFAULT_ACCOUNT_FIELD))
}

/// Parses and validates a customer write body (create and replace share it), reporting every
/// offending field by its camelCase name.
pub fn parse_fields(body: &Value) -> Result<CustomerFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let default_account_id = r.optional_uuid(DEFAULT_ACCOUNT_FIELD);
    let name = r.required_str("name", 1, 70);
    let email = r.optional_str("email", 100);
    if let Some(email) = &email
        && !is_valid_email(email)
    {
        r.reject("email", "invalid_format", "must be an e-mail address");
    }
    let phone = r.optional_str("phone", 13);
    let tax_id = r.optional_str("taxId", 11);
    let tax_id_type = r.optional_enum("taxIdType", TAX_ID_TYPES);
    if let Some(tax_id) = &tax_id {
        if !tax_id.bytes().all(|b| b.is_ascii_digit()) {
            r.reject("taxId", "invalid_format", "must contain digits only, without dashes");
        } else if tax_id.len() < 7 {
            r.reject("taxId", "too_short", "must be 7 to 11 digits");
        } else {
            match tax_id_type.as_deref() {
                Some("CUIL/CUIT") if !is_valid_cuit(tax_id) => {
                    r.reject("taxId", "invalid_check_digit", "is not a valid CUIT/CUIL (11 digits, valid check digit)")
                }
                Some("DNI") if tax_id.len() > 8 => r.reject("taxId", "invalid_format", "a DNI has 7 or 8 digits"),
                _ => {}
            }
        }
    }
    let tax_category = r.optional_enum("taxCategory", TAX_CATEGORIES);
    let person_type = r.optional_enum("personType", PERSON_TYPES);
    let country = r.optional_str("country", 50);
    let province = r.optional_str("province", 2).map(|p| p.to_ascii_uppercase());
    if let Some(code) = &province
        && province_name(code).is_none()
    {
        r.reject("province", "invalid_value", "must be a province code (ISO 3166-2:AR letter, for example B)");
    }
    let city = r.optional_str("city", 100);
    let address = r.optional_str("address", 70);
    let apartment = r.optional_str("apartment", 10);
    let postal_code = r.optional_str("postalCode", 8);
    r.finish(CustomerFields {
        name,
        email,
        phone,
        tax_id,
        tax_id_type,
        tax_category,
        person_type,
        country,
        province,
        city,
        address,
        apartment,
        postal_code,
        default_account_id,
    })
}

/// The state of one contact: a customer or a supplier (`E` is the kind's event enum; both kinds share
/// the body and its rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
pub struct Contact<E> {
    pub id: Uuid,
    pub fields: CustomerFields,
    pub is_active: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(skip)]
    _kind: PhantomData<E>,
}

impl<E> Contact<E> {
    pub fn with_id(self, id: Uuid) -> Self {
        Self { id, ..self }
    }
}

pub type Customer = Contact<CustomerEvent>;
pub type Supplier = Contact<SupplierEvent>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContactCommand {
    Create {
        id: Uuid,
        fields: CustomerFields,
    },
    Replace {
        id: Uuid,
        fields: CustomerFields,
        /// The body omitted `default_account_id`: the current account stays.
        #[serde(default)]
        keep_default_account: bool,
    },
}

pub type CustomerCommand = ContactCommand;

impl ContactCommand {
    pub fn contact_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Replace { id, .. } => *id,
        }
    }

    pub fn is_creation(&self) -> bool {
        matches!(self, Self::Create { .. })
    }

    pub fn fields(&self) -> &CustomerFields {
        match self {
            Self::Create { fields, .. } | Self::Replace { fields, .. } => fields,
        }
    }
}

impl<E> Aggregate for Contact<E>
where
    E: RecordEvent<Fields = CustomerFields> + std::fmt::Debug + Clone + PartialEq + Send + Sync + 'static,
{
    type Command = ContactCommand;
    type Event = E;

    fn decide(state: Option<&Self>, command: &ContactCommand) -> Result<Vec<E>, Rejection> {
        match (state, command) {
            (None, ContactCommand::Create { fields, .. }) => Ok(vec![E::created(fields.clone())]),
            (Some(_), ContactCommand::Create { .. }) => {
                Err(Rejection::conflict("ALREADY_EXISTS", format!("the {} already exists", E::STREAM_TYPE)))
            }
            (None, ContactCommand::Replace { .. }) => Err(Rejection::not_found(E::STREAM_TYPE)),
            (Some(current), ContactCommand::Replace { fields, keep_default_account, .. }) => {
                let mut fields = fields.clone();
                if *keep_default_account {
                    fields.default_account_id = current.fields.default_account_id;
                }
                // Replacing with the same representation records nothing.
                if current.fields == fields { Ok(vec![]) } else { Ok(vec![E::replaced(fields)]) }
            }
        }
    }

    fn evolve(state: Option<Self>, event: &E, at: OffsetDateTime) -> Option<Self> {
        match state {
            _ if event.is_creation() => Some(Contact {
                // The id is filled in by the caller, which knows the stream.
                id: Uuid::nil(),
                fields: event.fields().clone(),
                is_active: true,
                created_at: at,
                updated_at: at,
                _kind: PhantomData,
            }),
            Some(current) => Some(Contact { fields: event.fields().clone(), updated_at: at, ..current }),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(name: &str) -> CustomerFields {
        CustomerFields { name: name.into(), ..CustomerFields::default() }
    }

    fn created(name: &str) -> Customer {
        let at = OffsetDateTime::UNIX_EPOCH;
        Customer::evolve(None, &CustomerEvent::CustomerCreated(fields(name)), at).expect("created")
    }

    #[test]
    fn given_nothing_when_created_then_customer_created() {
        let id = Uuid::now_v7();
        let events = Customer::decide(None, &CustomerCommand::Create { id, fields: fields("Ana") });
        assert_eq!(events, Ok(vec![CustomerEvent::CustomerCreated(fields("Ana"))]));
    }

    #[test]
    fn given_nothing_when_replaced_then_not_found() {
        let id = Uuid::now_v7();
        let result = Customer::decide(
            None,
            &CustomerCommand::Replace { id, fields: fields("Ana"), keep_default_account: false },
        );
        assert_eq!(result, Err(Rejection::not_found("customer")));
    }

    #[test]
    fn given_customer_when_replaced_with_same_fields_then_nothing_is_recorded() {
        let state = created("Ana");
        let command = CustomerCommand::Replace { id: state.id, fields: fields("Ana"), keep_default_account: false };
        assert_eq!(Customer::decide(Some(&state), &command), Ok(vec![]));
    }

    #[test]
    fn given_customer_when_replaced_then_replaced_and_evolved() {
        let state = created("Ana");
        let command = CustomerCommand::Replace { id: state.id, fields: fields("Bea"), keep_default_account: false };
        let events = Customer::decide(Some(&state), &command).expect("accepted");
        assert_eq!(events, vec![CustomerEvent::CustomerReplaced(fields("Bea"))]);
        let later = OffsetDateTime::UNIX_EPOCH + time::Duration::hours(1);
        let next = Customer::evolve(Some(state.clone()), &events[0], later).expect("state");
        assert_eq!(next.fields.name, "Bea");
        assert_eq!(next.created_at, state.created_at);
        assert_eq!(next.updated_at, later);
    }

    #[test]
    fn cuit_check_digit() {
        assert!(is_valid_cuit("20267565393"));
        assert!(is_valid_cuit("20055361682"));
        assert!(!is_valid_cuit("20267565392"));
        assert!(!is_valid_cuit("99267565393"), "unknown prefix");
    }

    #[test]
    fn full_body_parses_and_normalizes() {
        let body = json!({
            "name": "  Ana Gómez ", "email": "ana@example.com", "phone": "1144556677",
            "taxId": "20267565393", "taxIdType": "CUIL/CUIT", "taxCategory": "Responsable Inscripto",
            "personType": "FISICA", "country": "Argentina", "province": "b", "city": "La Plata",
            "address": "Calle 7 1234", "apartment": "3B", "postalCode": "B1900", "unknown": 1
        });
        let parsed = parse_fields(&body).expect("valid");
        assert_eq!(parsed.name, "Ana Gómez");
        assert_eq!(parsed.province.as_deref(), Some("B"));
    }

    #[test]
    fn every_constraint_is_reported_by_field() {
        let body = json!({
            "name": "x".repeat(71), "email": "not-an-email", "phone": "12345678901234",
            "taxId": "12-345", "taxIdType": "PASSPORT", "taxCategory": "Other", "personType": "HUMAN",
            "country": "y".repeat(51), "province": "ZZ", "address": "a".repeat(71), "apartment": "b".repeat(11),
            "postalCode": "123456789"
        });
        let errors = parse_fields(&body).expect_err("invalid");
        let mut fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            vec![
                "address",
                "apartment",
                "country",
                "email",
                "name",
                "personType",
                "phone",
                "postalCode",
                "province",
                "taxCategory",
                "taxId",
                "taxIdType"
            ]
        );
    }

    #[test]
    fn wrong_types_are_reported() {
        let errors = parse_fields(&json!({"name": 12, "email": true})).expect_err("invalid");
        assert!(errors.iter().all(|e| e.code == "invalid_type"), "{errors:?}");
        assert_eq!(errors.len(), 2);
    }
}
