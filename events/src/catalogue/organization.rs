//! Events of the organization aggregate (stream type `organization`, stream id = organization id):
//! the organization itself and the credentials that act on it.

use super::{DecodeError, EventPayload, parse, to_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationCreated {
    pub name: String,
    pub slug: String,
}

/// An API key was issued. Only the SHA-256 of the secret is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKeyIssued {
    pub key_id: Uuid,
    pub key_hash: String,
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrganizationEvent {
    OrganizationCreated(OrganizationCreated),
    ApiKeyIssued(ApiKeyIssued),
}

impl EventPayload for OrganizationEvent {
    const STREAM_TYPE: &'static str = "organization";

    fn event_type(&self) -> &'static str {
        match self {
            Self::OrganizationCreated(_) => "OrganizationCreated",
            Self::ApiKeyIssued(_) => "ApiKeyIssued",
        }
    }

    fn to_data(&self) -> Value {
        match self {
            Self::OrganizationCreated(e) => to_value(e),
            Self::ApiKeyIssued(e) => to_value(e),
        }
    }

    fn decode(event_type: &str, schema_version: i32, data: Value) -> Result<Self, DecodeError> {
        if schema_version != 1 {
            return Err(DecodeError::UnknownVersion { event_type: event_type.to_owned(), schema_version });
        }
        match event_type {
            "OrganizationCreated" => parse(event_type, data).map(Self::OrganizationCreated),
            "ApiKeyIssued" => parse(event_type, data).map(Self::ApiKeyIssued),
            other => Err(DecodeError::UnknownType {
                stream_type: Self::STREAM_TYPE.to_owned(),
                event_type: other.to_owned(),
            }),
        }
    }
}
