//! Events of the organization aggregate (stream type `organization`, stream id = organization id):
//! the organization itself, its settings, and the credentials that act on it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const DEFAULT_RATE_LIMIT_PER_MINUTE: i32 = 120;
pub const DEFAULT_RATE_LIMIT_PER_HOUR: i32 = 5000;

/// Schema version 2. Version 1 carried only `name` and `slug`; it is upcast with the defaults that
/// applied when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationCreated {
    pub name: String,
    pub slug: String,
    pub country: String,
    pub rate_limit_per_minute: i32,
    pub rate_limit_per_hour: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct OrganizationCreatedV1 {
    name: String,
    slug: String,
}

/// Version 1 of `OrganizationCreated`, with the defaults that applied when it was written.
fn organization_created_v1(v1: OrganizationCreatedV1) -> OrganizationEvent {
    OrganizationEvent::OrganizationCreated(OrganizationCreated {
        name: v1.name,
        slug: v1.slug,
        country: "Argentina".to_owned(),
        rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE,
        rate_limit_per_hour: DEFAULT_RATE_LIMIT_PER_HOUR,
    })
}

/// An API key was issued. Only the SHA-256 of the secret is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKeyIssued {
    pub key_id: Uuid,
    pub key_hash: String,
    pub scopes: Vec<String>,
}

/// A token acting for one user of the organization, with that user's visibility.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegatedTokenIssued {
    pub token_id: Uuid,
    pub token_hash: String,
    pub user: String,
    pub scopes: Vec<String>,
    /// Treasury visibility: `own` or `organization`.
    pub visibility: String,
    pub registers: Vec<Uuid>,
    pub safes: Vec<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialRevoked {
    pub credential_id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimitsChanged {
    pub per_minute: i32,
    pub per_hour: i32,
}

named_enum! {
    /// The organization's answer to a shortfall of stock.
    #[derive(Default)]
    pub enum NegativeStock {
        /// The write goes through and carries warnings (the default).
        #[default]
        Allow = "allow",
        /// The write is refused (422 `INSUFFICIENT_STOCK`) and nothing is written.
        Block = "block",
    }
}

/// The organization's settings after an operator changed them (the whole set, so one event is the
/// state): the negative-stock policy and the fiscal profile invoicing uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
pub struct OrganizationSettings {
    pub negative_stock: NegativeStock,
    pub legal_name: Option<String>,
    /// The issuer's CUIT (11 digits).
    pub tax_id: Option<String>,
    /// `Responsable Inscripto`, `Monotributista` or `Exento`: decides the voucher letters it issues.
    pub tax_category: Option<String>,
    /// Whether prices the historical sale contract receives include VAT.
    pub prices_include_tax: bool,
    /// The peso ledger account a dollar expense books its exchange difference to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_difference_account_id: Option<Uuid>,
    /// The peso ledger accounts customer payments credit (receivables), supplier payments debit
    /// (payables), and payment methods' fees are expensed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receivables_account_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payables_account_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_fees_account_id: Option<Uuid>,
    /// What its printed vouchers show besides its name, CUIT and VAT condition: the commercial address,
    /// the gross-income tax number (Ingresos Brutos) and the activity start date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commercial_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gross_income_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::iso_date_option")]
    pub activity_start: Option<time::Date>,
}

impl Default for OrganizationSettings {
    fn default() -> Self {
        Self {
            negative_stock: NegativeStock::Allow,
            legal_name: None,
            tax_id: None,
            tax_category: None,
            prices_include_tax: true,
            exchange_difference_account_id: None,
            receivables_account_id: None,
            payables_account_id: None,
            payment_fees_account_id: None,
            commercial_address: None,
            gross_income_number: None,
            activity_start: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrganizationEvent {
    OrganizationCreated(OrganizationCreated),
    ApiKeyIssued(ApiKeyIssued),
    DelegatedTokenIssued(DelegatedTokenIssued),
    CredentialRevoked(CredentialRevoked),
    RateLimitsChanged(RateLimitsChanged),
    SettingsChanged(OrganizationSettings),
}

payloads!(
    OrganizationEvent,
    "organization",
    OrganizationCreated(_) @ 2,
    ApiKeyIssued(_),
    DelegatedTokenIssued(_),
    CredentialRevoked(_),
    RateLimitsChanged(_),
    SettingsChanged(_);
    upcast OrganizationCreated 1 with organization_created_v1,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::EventPayload;

    #[test]
    fn version_one_of_organization_created_is_upcast_on_read() {
        let stored = serde_json::json!({"name": "Almacén", "slug": "almacen"});
        let decoded = OrganizationEvent::decode("OrganizationCreated", 1, stored).expect("upcast");
        let OrganizationEvent::OrganizationCreated(created) = decoded else { panic!("wrong event") };
        assert_eq!(created.rate_limit_per_minute, DEFAULT_RATE_LIMIT_PER_MINUTE);
        assert_eq!(created.country, "Argentina");
        assert!(OrganizationEvent::decode("OrganizationCreated", 3, serde_json::json!({})).is_err());
    }
}
