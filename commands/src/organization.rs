//! Organizations and their credentials, as the operator creates them from the admin CLI.

use events::catalogue::{ApiKeyIssued, CustomerEvent, CustomerFields, OrganizationCreated, OrganizationEvent};
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Every scope the interface names; an organization's first key carries them all.
pub const ALL_SCOPES: &[&str] = &[
    "customers:read",
    "customers:write",
    "categories:read",
    "categories:write",
    "suppliers:read",
    "suppliers:write",
    "products:read",
    "products:write",
    "warehouses:read",
    "warehouses:write",
    "purchases:read",
    "purchases:write",
    "sales:read",
    "sales:write",
    "transfers:read",
    "transfers:write",
    "price_lists:read",
    "price_lists:write",
    "payment_methods:read",
    "payment_methods:write",
    "reports:read",
    "quotes:read",
    "quotes:write",
    "treasury:read",
    "treasury:write",
    "webhooks:read",
    "webhooks:write",
    "orders:read",
];

/// SHA-256 of a credential secret: what is stored and looked up; the secret itself never is.
pub fn credential_hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// A fresh API key secret (244 random bits).
pub fn new_api_key_secret() -> String {
    format!("bo_sk_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { "org".to_owned() } else { slug.chars().take(48).collect() }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CreatedOrganization {
    pub organization_id: Uuid,
    pub api_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum OrganizationError {
    #[error("the organization name must be 1 to 100 characters")]
    InvalidName,
    #[error(transparent)]
    Append(#[from] events::store::AppendError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Creates an organization with a key carrying every scope and the records an integrator needs to
/// start (the default customer), all in one transaction.
pub async fn create_organization(pool: &PgPool, name: &str) -> Result<CreatedOrganization, OrganizationError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(OrganizationError::InvalidName);
    }
    let org_id = Uuid::now_v7();
    let metadata = Metadata::system("admin");
    let mut tx = pool.begin().await?;
    let base = slugify(name);
    let taken: bool = sqlx::query_scalar("select exists(select 1 from organizations where slug = $1)")
        .bind(&base)
        .fetch_one(&mut *tx)
        .await?;
    let slug = if taken { format!("{base}-{}", &org_id.simple().to_string()[24..]) } else { base };
    let created: (time::OffsetDateTime,) = sqlx::query_as(
        "insert into organizations (id, name, slug, created_at) values ($1, $2, $3, now()) returning created_at",
    )
    .bind(org_id)
    .bind(name)
    .bind(&slug)
    .fetch_one(&mut *tx)
    .await?;
    let _ = created;

    let secret = new_api_key_secret();
    let key_id = Uuid::now_v7();
    let scopes: Vec<String> = ALL_SCOPES.iter().map(|s| (*s).to_owned()).collect();
    insert_api_key(&mut tx, org_id, key_id, &secret, &scopes).await?;

    let org_events = [
        OrganizationEvent::OrganizationCreated(OrganizationCreated { name: name.to_owned(), slug }),
        OrganizationEvent::ApiKeyIssued(ApiKeyIssued { key_id, key_hash: hex_digest(&secret), scopes: scopes.clone() }),
    ];
    let org_stream =
        StreamRef { org_id, stream_type: OrganizationEvent::STREAM_TYPE, stream_id: org_id, expected_version: 0 };
    let new: Vec<_> = org_events.iter().map(EventPayload::to_new_event).collect();
    store::append(&mut tx, org_stream, &new, &metadata).await?;

    let default_customer = CustomerEvent::CustomerCreated(CustomerFields {
        name: "Consumidor Final".to_owned(),
        tax_id_type: Some("DNI".to_owned()),
        tax_category: Some("Consumidor Final".to_owned()),
        ..CustomerFields::default()
    });
    let customer_stream =
        StreamRef { org_id, stream_type: CustomerEvent::STREAM_TYPE, stream_id: Uuid::now_v7(), expected_version: 0 };
    store::append(&mut tx, customer_stream, &[default_customer.to_new_event()], &metadata).await?;
    tx.commit().await?;
    Ok(CreatedOrganization { organization_id: org_id, api_key: secret })
}

fn hex_digest(secret: &str) -> String {
    credential_hash(secret).iter().map(|b| format!("{b:02x}")).collect()
}

async fn insert_api_key(
    conn: &mut PgConnection,
    org_id: Uuid,
    key_id: Uuid,
    secret: &str,
    scopes: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query("insert into api_keys (id, org_id, key_hash, scopes, created_at) values ($1, $2, $3, $4, now())")
        .bind(key_id)
        .bind(org_id)
        .bind(credential_hash(secret))
        .bind(scopes)
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_words_joined_by_dashes() {
        assert_eq!(slugify("  Almacén Don José S.A. "), "almac-n-don-jos-s-a");
        assert_eq!(slugify("!!!"), "org");
    }

    #[test]
    fn secrets_are_unique_and_hashes_stable() {
        let a = new_api_key_secret();
        assert_ne!(a, new_api_key_secret());
        assert_eq!(credential_hash(&a), credential_hash(&a));
        assert_eq!(hex_digest("x").len(), 64);
    }
}
