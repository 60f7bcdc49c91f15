//! The organization's X.509 certificate and private key for the authority's login tickets (WSAA):
//! checked before they are kept (the key matches the certificate, the certificate names the
//! organization's CUIT and is valid now), the key sealed at rest like the webhook secrets, and what an
//! operator may see of them (subject, CUIT, validity; never the key).

use crate::admin::AdminError;
use events::secrets::SecretBox;
use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;
use x509_parser::prelude::{FromDer, X509Certificate};

/// What an operator sees of a stored certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateSummary {
    pub organization_id: Uuid,
    /// The certificate's subject, as its distinguished name reads (`C=AR, O=..., serialNumber=CUIT ...`).
    pub subject: String,
    /// The CUIT its subject names (`serialNumber` `CUIT nnnnnnnnnnn`).
    pub cuit: String,
    #[serde(with = "time::serde::rfc3339")]
    pub not_before: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// The label and DER of the first PEM block labelled with one of `labels` in `text`.
fn pem_block(text: &str, labels: &[&str], what: &str) -> Result<(String, Vec<u8>), String> {
    for block in x509_parser::pem::Pem::iter_from_buffer(text.as_bytes()) {
        let block = block.map_err(|e| format!("the {what} is not readable PEM: {e}"))?;
        if labels.contains(&block.label.as_str()) {
            return Ok((block.label, block.contents));
        }
    }
    Err(format!("the {what} file holds no {} block", labels.join(" or ")))
}

/// The DER of the certificate in a PEM text.
pub(crate) fn certificate_der(cert_pem: &str) -> Result<Vec<u8>, String> {
    pem_block(cert_pem, &["CERTIFICATE"], "certificate").map(|(_, der)| der)
}

/// The certificate's DER and its RSA private key (PKCS#8 or PKCS#1), read from their PEM texts: what
/// both the check here and the login's signer start from.
pub(crate) fn read_pair(cert_pem: &str, key_pem: &str) -> Result<(Vec<u8>, ring::rsa::KeyPair), String> {
    let certificate = certificate_der(cert_pem)?;
    let (label, key_der) = pem_block(key_pem, &["PRIVATE KEY", "RSA PRIVATE KEY"], "private key")?;
    let key = match label.as_str() {
        "PRIVATE KEY" => ring::rsa::KeyPair::from_pkcs8(&key_der),
        _ => ring::rsa::KeyPair::from_der(&key_der),
    }
    .map_err(|e| format!("the private key is not a usable RSA key: {e}"))?;
    Ok((certificate, key))
}

/// Checks a certificate and its key for organization CUIT `cuit` at `now`: what the certificate says
/// (its id is filled by the caller).
pub fn inspect(
    cert_pem: &str,
    key_pem: &str,
    cuit: &str,
    now: OffsetDateTime,
) -> Result<CertificateSummary, AdminError> {
    let (der, key) = read_pair(cert_pem, key_pem).map_err(AdminError::Invalid)?;
    let (_, cert) = X509Certificate::from_der(&der)
        .map_err(|e| AdminError::Invalid(format!("the certificate is not a readable X.509 certificate: {e}")))?;
    use ring::signature::KeyPair as _;
    if key.public_key().as_ref() != cert.public_key().subject_public_key.data.as_ref() {
        return Err(AdminError::Invalid("the private key does not match the certificate".into()));
    }
    let Described { subject, cuit: named_cuit, not_before, not_after } = describe(&der).map_err(AdminError::Invalid)?;
    if named_cuit != cuit {
        return Err(AdminError::Invalid(format!(
            "the certificate names CUIT {named_cuit}, not the organization's {cuit}"
        )));
    }
    if now > not_after {
        return Err(AdminError::Invalid(format!("the certificate expired on {not_after}")));
    }
    if now < not_before {
        return Err(AdminError::Invalid(format!("the certificate is not valid before {not_before}")));
    }
    Ok(CertificateSummary { organization_id: Uuid::nil(), subject, cuit: named_cuit, not_before, not_after })
}

/// What a certificate says of its holder: subject, the CUIT it names, validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub subject: String,
    /// The digits of the subject's `serialNumber` (`CUIT nnnnnnnnnnn`).
    pub cuit: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
}

/// Reads a certificate (DER): what [`inspect`] checks, and what the simulator's authentication
/// service reads of a certificate that logs in.
pub fn describe(der: &[u8]) -> Result<Described, String> {
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| format!("the certificate is not a readable X.509 certificate: {e}"))?;
    let named: Vec<String> = cert
        .subject()
        .iter_by_oid(&x509_parser::oid_registry::OID_X509_SERIALNUMBER)
        .filter_map(|attribute| attribute.as_str().ok())
        .map(|text| text.chars().filter(char::is_ascii_digit).collect())
        .collect();
    let cuit = named
        .first()
        .cloned()
        .ok_or_else(|| "the certificate's subject names no CUIT (serialNumber `CUIT n`)".to_owned())?;
    let validity = cert.validity();
    Ok(Described {
        subject: cert.subject().to_string(),
        cuit,
        not_before: validity.not_before.to_datetime(),
        not_after: validity.not_after.to_datetime(),
    })
}

/// `admin set-fiscal-certificate`: checks the certificate and key against the organization's CUIT and
/// keeps them (the key sealed), replacing any earlier pair; answers what an operator may see.
pub async fn set_certificate(
    pool: &PgPool,
    secrets: &SecretBox,
    org_id: Uuid,
    cert_pem: &str,
    key_pem: &str,
) -> Result<CertificateSummary, AdminError> {
    let cuit: Option<Option<String>> =
        sqlx::query_scalar("select tax_id from organizations where id = $1").bind(org_id).fetch_optional(pool).await?;
    let cuit = cuit.ok_or(AdminError::UnknownOrganization(org_id))?.ok_or_else(|| {
        AdminError::Invalid("the organization has no CUIT: set it first with update-org --tax-id".into())
    })?;
    let mut summary = inspect(cert_pem, key_pem, &cuit, OffsetDateTime::now_utc())?;
    summary.organization_id = org_id;
    let sealed = serde_json::to_value(secrets.seal(key_pem))?;
    sqlx::query(
        "insert into fiscal_certificates (org_id, certificate, sealed_key, subject, cuit, not_before, not_after, updated_at)
         values ($1, $2, $3, $4, $5, $6, $7, now())
         on conflict (org_id) do update set certificate = excluded.certificate, sealed_key = excluded.sealed_key,
             subject = excluded.subject, cuit = excluded.cuit, not_before = excluded.not_before,
             not_after = excluded.not_after, updated_at = now()",
    )
    .bind(org_id)
    .bind(cert_pem)
    .bind(sealed)
    .bind(&summary.subject)
    .bind(&summary.cuit)
    .bind(summary.not_before)
    .bind(summary.not_after)
    .execute(pool)
    .await?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = include_str!("../../tests/fixtures/fiscal/org.crt");
    const KEY: &str = include_str!("../../tests/fixtures/fiscal/org.key");
    const KEY_PKCS1: &str = include_str!("../../tests/fixtures/fiscal/org-pkcs1.key");
    const OTHER_KEY: &str = include_str!("../../tests/fixtures/fiscal/other.key");
    const CUIT: &str = "20267565393";

    fn refusal(result: Result<CertificateSummary, AdminError>) -> String {
        match result {
            Err(AdminError::Invalid(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_matching_pair_naming_the_cuit_is_accepted_in_either_key_format() {
        let now = OffsetDateTime::now_utc();
        for key in [KEY, KEY_PKCS1] {
            let summary = inspect(CERT, key, CUIT, now).expect("accepted");
            assert_eq!(summary.cuit, CUIT);
            assert!(summary.subject.contains("serialNumber=CUIT 20267565393"), "{}", summary.subject);
            assert!(summary.not_after > now);
        }
    }

    #[test]
    fn a_foreign_key_another_cuit_an_expired_certificate_or_garbage_are_refused() {
        let now = OffsetDateTime::now_utc();
        assert!(refusal(inspect(CERT, OTHER_KEY, CUIT, now)).contains("does not match"));
        assert!(refusal(inspect(CERT, KEY, "30712345678", now)).contains("names CUIT 20267565393"));
        let later = now + time::Duration::days(365 * 11);
        assert!(refusal(inspect(CERT, KEY, CUIT, later)).contains("expired"));
        assert!(refusal(inspect(KEY, KEY, CUIT, now)).contains("no CERTIFICATE block"));
        assert!(refusal(inspect(CERT, CERT, CUIT, now)).contains("no PRIVATE KEY or RSA PRIVATE KEY block"));
    }
}
