//! Events of the organization aggregate (stream type `organization`, stream id = organization id):
//! the organization itself, its settings, and the credentials that act on it.

use super::{DecodeError, EventPayload, parse, to_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;
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

/// The organization's settings after an operator changed them (the whole set, so one event is the
/// state): the negative-stock policy and the fiscal profile invoicing uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationSettings {
    /// `allow` (a shortfall is a warning) or `block` (a 422 with nothing written).
    pub negative_stock: String,
    pub legal_name: Option<String>,
    /// The issuer's CUIT (11 digits).
    pub tax_id: Option<String>,
    /// `Responsable Inscripto`, `Monotributista` or `Exento`: decides the voucher letters it issues.
    pub tax_category: Option<String>,
    /// Whether prices the historical sale contract receives include VAT.
    pub prices_include_tax: bool,
}

impl Default for OrganizationSettings {
    fn default() -> Self {
        Self {
            negative_stock: "allow".to_owned(),
            legal_name: None,
            tax_id: None,
            tax_category: None,
            prices_include_tax: true,
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

impl EventPayload for OrganizationEvent {
    const STREAM_TYPE: &'static str = "organization";

    fn event_type(&self) -> &'static str {
        match self {
            Self::OrganizationCreated(_) => "OrganizationCreated",
            Self::ApiKeyIssued(_) => "ApiKeyIssued",
            Self::DelegatedTokenIssued(_) => "DelegatedTokenIssued",
            Self::CredentialRevoked(_) => "CredentialRevoked",
            Self::RateLimitsChanged(_) => "RateLimitsChanged",
            Self::SettingsChanged(_) => "SettingsChanged",
        }
    }

    fn schema_version(&self) -> i32 {
        match self {
            Self::OrganizationCreated(_) => 2,
            Self::ApiKeyIssued(_)
            | Self::DelegatedTokenIssued(_)
            | Self::CredentialRevoked(_)
            | Self::RateLimitsChanged(_)
            | Self::SettingsChanged(_) => 1,
        }
    }

    fn to_data(&self) -> Value {
        match self {
            Self::OrganizationCreated(e) => to_value(e),
            Self::ApiKeyIssued(e) => to_value(e),
            Self::DelegatedTokenIssued(e) => to_value(e),
            Self::CredentialRevoked(e) => to_value(e),
            Self::RateLimitsChanged(e) => to_value(e),
            Self::SettingsChanged(e) => to_value(e),
        }
    }

    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
        let unknown_version = || DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version };
        match (event_type, schema_version) {
            ("OrganizationCreated", 1) => {
                let v1: OrganizationCreatedV1 = parse(event_type, data)?;
                Ok(Self::OrganizationCreated(OrganizationCreated {
                    name: v1.name,
                    slug: v1.slug,
                    country: "Argentina".to_owned(),
                    rate_limit_per_minute: DEFAULT_RATE_LIMIT_PER_MINUTE,
                    rate_limit_per_hour: DEFAULT_RATE_LIMIT_PER_HOUR,
                }))
            }
            ("OrganizationCreated", 2) => parse(event_type, data).map(Self::OrganizationCreated),
            ("ApiKeyIssued", 1) => parse(event_type, data).map(Self::ApiKeyIssued),
            ("DelegatedTokenIssued", 1) => parse(event_type, data).map(Self::DelegatedTokenIssued),
            ("CredentialRevoked", 1) => parse(event_type, data).map(Self::CredentialRevoked),
            ("RateLimitsChanged", 1) => parse(event_type, data).map(Self::RateLimitsChanged),
            ("SettingsChanged", 1) => parse(event_type, data).map(Self::SettingsChanged),
            (
                "OrganizationCreated"
                | "ApiKeyIssued"
                | "DelegatedTokenIssued"
                | "CredentialRevoked"
                | "RateLimitsChanged"
                | "SettingsChanged",
                _,
            ) => Err(unknown_version()),
            (other, _) => Err(DecodeError::UnknownType {
                stream_type: Self::STREAM_TYPE.to_owned(),
                event_type: other.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
