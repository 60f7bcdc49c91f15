//! Secrets encrypted at rest (webhook signing secrets): AES-256-GCM under the service's secrets key,
//! which comes from `SECRETS_KEY` (64 hex characters) or, when that is unset, from a key the database
//! generated at installation.

use crate::catalogue::SealedSecret;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the stored secrets key: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Key(#[from] SecretError),
}

#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the secrets key must be 32 bytes (64 hex characters)")]
    BadKey,
    #[error("a sealed secret could not be opened (wrong key or damaged data)")]
    Unreadable,
}

impl SecretBox {
    pub fn new(key: &[u8]) -> Result<Self, SecretError> {
        let cipher = Aes256Gcm::new_from_slice(key).map_err(|_| SecretError::BadKey)?;
        Ok(Self { cipher })
    }

    /// The key from `SECRETS_KEY`, else `fallback` (the database's own key).
    pub fn from_env_or(fallback: &[u8]) -> Result<Self, SecretError> {
        match std::env::var("SECRETS_KEY") {
            Ok(hex_key) => Self::new(&hex::decode(hex_key.trim()).map_err(|_| SecretError::BadKey)?),
            Err(_) => Self::new(fallback),
        }
    }

    /// The service's key: `SECRETS_KEY`, else the one stored in the database at installation.
    pub async fn load(pool: &sqlx::PgPool) -> Result<Self, LoadError> {
        let stored: Vec<u8> =
            sqlx::query_scalar("select value from service_settings where name = 'secrets_key'").fetch_one(pool).await?;
        Ok(Self::from_env_or(&stored)?)
    }

    pub fn seal(&self, plaintext: &str) -> SealedSecret {
        let nonce_bytes: [u8; 12] = rand_bytes();
        let nonce = Nonce::from(nonce_bytes);
        // Encrypting in memory with a valid key and nonce cannot fail.
        let ciphertext = self.cipher.encrypt(&nonce, plaintext.as_bytes()).unwrap_or_default();
        SealedSecret { nonce: hex::encode(nonce_bytes), ciphertext: hex::encode(ciphertext) }
    }

    pub fn open(&self, sealed: &SealedSecret) -> Result<String, SecretError> {
        let nonce: [u8; 12] =
            hex::decode(&sealed.nonce).ok().and_then(|n| n.try_into().ok()).ok_or(SecretError::Unreadable)?;
        let ciphertext = hex::decode(&sealed.ciphertext).map_err(|_| SecretError::Unreadable)?;
        let plaintext =
            self.cipher.decrypt(&Nonce::from(nonce), ciphertext.as_slice()).map_err(|_| SecretError::Unreadable)?;
        String::from_utf8(plaintext).map_err(|_| SecretError::Unreadable)
    }
}

fn rand_bytes<const N: usize>() -> [u8; N] {
    // Version 4 UUIDs carry 122 random bits from the operating system's generator.
    let mut out = [0_u8; N];
    for chunk in out.chunks_mut(16) {
        let random = uuid::Uuid::new_v4();
        chunk.copy_from_slice(&random.as_bytes()[..chunk.len()]);
    }
    out
}

/// A fresh signing secret for a webhook endpoint.
pub fn new_signing_secret() -> String {
    format!("whsec_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_their_key() {
        let key = [7_u8; 32];
        let sealed = SecretBox::new(&key).expect("key").seal("whsec_abc");
        // The secret's bytes are not in the ciphertext's bytes. (Its hex text may contain "abc" by
        // chance, about once in a hundred seals, which an earlier form of this check tripped on.)
        let ciphertext = hex::decode(&sealed.ciphertext).expect("hex");
        assert!(!ciphertext.windows(3).any(|w| w == b"abc"), "{}", sealed.ciphertext);
        assert_eq!(SecretBox::new(&key).expect("key").open(&sealed).expect("opens"), "whsec_abc");
        assert!(SecretBox::new(&[8_u8; 32]).expect("key").open(&sealed).is_err());
        assert!(SecretBox::new(&[1_u8; 5]).is_err());
    }
}
