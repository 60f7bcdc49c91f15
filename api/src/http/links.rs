//! Signed document links: the token format, and the key that signs and checks it (no route and no
//! state here; `documents.rs` serves the links and `state.rs` holds the key).
//!
//! A token is opaque: Base64url of the payload (format version, organization, owner id, expiry in
//! Unix seconds, owner kind), a dot, and Base64url of the payload's HMAC-SHA256 under the database's
//! `document_signing_key` (`schema/0022_documents.sql`), so every api process of one database accepts
//! the links any of them signed. Nothing in it can be changed without the key, and it names one
//! document of one organization.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use projections::documents::OwnerKind;
use sha2::Sha256;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

/// How long a signed link stays valid.
pub const LINK_LIFETIME: time::Duration = time::Duration::minutes(5);

const TOKEN_VERSION: u8 = 1;

/// The key that signs document links.
#[derive(Clone)]
pub struct DocumentKey(Vec<u8>);

impl DocumentKey {
    pub fn new(key: Vec<u8>) -> Self {
        Self(key)
    }

    /// The database's key (`service_settings.document_signing_key`).
    pub async fn load(pool: &PgPool) -> Result<Self, sqlx::Error> {
        sqlx::query_scalar("select value from service_settings where name = 'document_signing_key'")
            .fetch_one(pool)
            .await
            .map(Self)
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts any key length")
    }
}

impl std::fmt::Debug for DocumentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DocumentKey(..)")
    }
}

/// What a genuine link names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentLink {
    pub org: Uuid,
    pub kind: OwnerKind,
    pub id: Uuid,
    pub expires_at: OffsetDateTime,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Not a token, or not one this key signed (altered, forged, signed by another database).
    #[error("the document link is not valid")]
    Invalid,
    /// Genuine, but past its five minutes.
    #[error("the document link has expired")]
    Expired,
}

/// The public path of the document of (`org`, `kind`, `id`), valid [`LINK_LIFETIME`] from `now`.
pub fn signed_path(key: &DocumentKey, org: Uuid, kind: OwnerKind, id: Uuid, now: OffsetDateTime) -> String {
    let expires = (now + LINK_LIFETIME).unix_timestamp();
    let mut payload = Vec::with_capacity(41 + kind.as_str().len());
    payload.push(TOKEN_VERSION);
    payload.extend_from_slice(org.as_bytes());
    payload.extend_from_slice(id.as_bytes());
    payload.extend_from_slice(&expires.to_be_bytes());
    payload.extend_from_slice(kind.as_str().as_bytes());
    let mut mac = key.mac();
    mac.update(&payload);
    let signature = mac.finalize().into_bytes();
    format!("/documents/{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(signature))
}

/// What `token` (the last segment of a signed path) names, if `key` signed it and it is still valid
/// at `now`. The signature is checked first, in constant time; only a genuine token can be
/// [`LinkError::Expired`].
pub fn verify(key: &DocumentKey, token: &str, now: OffsetDateTime) -> Result<DocumentLink, LinkError> {
    let (payload, signature) = token.split_once('.').ok_or(LinkError::Invalid)?;
    let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| LinkError::Invalid)?;
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| LinkError::Invalid)?;
    let mut mac = key.mac();
    mac.update(&payload);
    mac.verify_slice(&signature).map_err(|_| LinkError::Invalid)?;
    // Genuine from here on: the layout is ours.
    if payload.len() < 41 || payload[0] != TOKEN_VERSION {
        return Err(LinkError::Invalid);
    }
    let uuid = |bytes: &[u8]| <[u8; 16]>::try_from(bytes).map(Uuid::from_bytes).map_err(|_| LinkError::Invalid);
    let org = uuid(&payload[1..17])?;
    let id = uuid(&payload[17..33])?;
    let expires = <[u8; 8]>::try_from(&payload[33..41]).map(i64::from_be_bytes).map_err(|_| LinkError::Invalid)?;
    let kind = std::str::from_utf8(&payload[41..]).ok().and_then(|k| k.parse().ok()).ok_or(LinkError::Invalid)?;
    let expires_at = OffsetDateTime::from_unix_timestamp(expires).map_err(|_| LinkError::Invalid)?;
    if now >= expires_at {
        return Err(LinkError::Expired);
    }
    Ok(DocumentLink { org, kind, id, expires_at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-08-20 12:00 UTC);

    fn token(path: &str) -> &str {
        path.strip_prefix("/documents/").expect("a public document path")
    }

    #[test]
    fn a_signed_link_names_its_document_for_five_minutes() {
        let key = DocumentKey::new(vec![7; 32]);
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let path = signed_path(&key, org, OwnerKind::Purchase, id, NOW);
        assert!(token(&path).bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)), "{path}");
        let link = verify(&key, token(&path), NOW).expect("valid");
        assert_eq!(link, DocumentLink { org, kind: OwnerKind::Purchase, id, expires_at: NOW + LINK_LIFETIME });
        assert!(verify(&key, token(&path), NOW + time::Duration::seconds(299)).is_ok());
        assert_eq!(verify(&key, token(&path), NOW + LINK_LIFETIME), Err(LinkError::Expired));
        assert_eq!(verify(&key, token(&path), NOW + time::Duration::days(1)), Err(LinkError::Expired));
    }

    #[test]
    fn altered_forged_or_foreign_links_are_invalid() {
        let key = DocumentKey::new(vec![7; 32]);
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let path = signed_path(&key, org, OwnerKind::Sale, id, NOW);
        let (payload, signature) = token(&path).split_once('.').expect("two parts");

        // Another payload under the original signature: a later expiry, another document.
        let mut bytes = URL_SAFE_NO_PAD.decode(payload).expect("b64");
        bytes[40] ^= 1;
        let later = format!("{}.{signature}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(verify(&key, &later, NOW), Err(LinkError::Invalid));
        let other = signed_path(&key, org, OwnerKind::Sale, Uuid::now_v7(), NOW);
        let other_payload = token(&other).split_once('.').expect("two parts").0;
        assert_eq!(verify(&key, &format!("{other_payload}.{signature}"), NOW), Err(LinkError::Invalid));

        // The signature altered, cut short or missing.
        let mut sig = URL_SAFE_NO_PAD.decode(signature).expect("b64");
        sig[0] ^= 0x80;
        assert_eq!(verify(&key, &format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&sig)), NOW), Err(LinkError::Invalid));
        assert_eq!(
            verify(&key, &format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&sig[..16])), NOW),
            Err(LinkError::Invalid)
        );
        assert_eq!(verify(&key, payload, NOW), Err(LinkError::Invalid));
        assert_eq!(verify(&key, &format!("{payload}."), NOW), Err(LinkError::Invalid));

        // Signed with another key (another database), or not a token at all.
        let foreign = signed_path(&DocumentKey::new(vec![8; 32]), org, OwnerKind::Sale, id, NOW);
        assert_eq!(verify(&key, token(&foreign), NOW), Err(LinkError::Invalid));
        for garbage in ["", ".", "abc", "abc.def", "!!!.???", "%2e.%2e"] {
            assert_eq!(verify(&key, garbage, NOW), Err(LinkError::Invalid), "{garbage:?}");
        }
        // An expired forgery is invalid, not expired: nothing about it is to be believed.
        assert_eq!(verify(&key, &later, NOW + time::Duration::days(1)), Err(LinkError::Invalid));
    }
}
