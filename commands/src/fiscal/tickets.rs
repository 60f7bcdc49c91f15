//! The authority's login tickets (WSAA), obtained with each organization's certificate and kept in
//! Postgres (`fiscal_tickets`, schema/0034) so that every process uses the same one.
//!
//! A ticket belongs to a certificate (its SHA-256): organizations sharing a representative's
//! certificate share its ticket. It is used until [`Tickets::renew_before`] its expiry; then the next
//! call logs in again. Logins take turns per certificate across processes (a transaction-scoped
//! advisory lock, the ticket re-read once it is held), because the authority refuses a new login while
//! a ticket is valid (`coe.alreadyAuthenticated`): when it does, the ticket still held is used until it
//! expires. Each process keeps the ticket it last read in memory, per organization.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use events::catalogue::SealedSecret;
use events::secrets::SecretBox;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use time::OffsetDateTime;
use url::Url;
use uuid::Uuid;

use super::wsaa::{self, LoginRefused, Signer};
use super::{Authenticator, Credentials, FiscalError, Issuer};

/// How long before its expiry a ticket is renewed, by default.
pub const RENEW_BEFORE: Duration = Duration::from_secs(10 * 60);
/// The least a ticket must have left to be sent at all (a call takes time to arrive).
const LAST_USE: time::Duration = time::Duration::seconds(1);
/// How far in the past a login request says it was generated (the reference: "a few minutes", for
/// clock skew), and how long after that it asks the ticket to last.
const SKEW: time::Duration = time::Duration::minutes(5);
const LIFETIME: time::Duration = time::Duration::hours(12);

/// The login tickets of every organization, from Postgres and the authentication service at `wsaa`.
#[derive(Clone)]
pub struct Tickets {
    inner: Arc<Inner>,
    renew_before: Duration,
}

struct Inner {
    pool: PgPool,
    secrets: SecretBox,
    wsaa: Url,
    http: reqwest::Client,
    held: Mutex<HashMap<Uuid, Held>>,
    /// This process's logins take turns, so concurrent callers wait for one login (and one pooled
    /// connection waits on the cross-process lock) instead of each asking.
    logins: tokio::sync::Mutex<()>,
}

/// A ticket this process holds for an organization.
#[derive(Clone)]
struct Held {
    fingerprint: Vec<u8>,
    credentials: Credentials,
    expiration: OffsetDateTime,
    /// The authority refused to renew it early: used as it is until it expires, without asking again.
    kept_to_expiry: bool,
}

/// A ticket as stored.
#[derive(sqlx::FromRow)]
struct Stored {
    token: String,
    sign: String,
    expiration: OffsetDateTime,
}

impl Tickets {
    /// Tickets from the service at `wsaa`, each call given up after `timeout`.
    pub async fn new(pool: PgPool, wsaa: Url, timeout: Duration) -> Result<Self, FiscalError> {
        let secrets = SecretBox::load(&pool)
            .await
            .map_err(|error| FiscalError::Protocol(format!("cannot read the service's secrets key: {error}")))?;
        Ok(Tickets {
            inner: Arc::new(Inner {
                pool,
                secrets,
                wsaa,
                http: super::client::http_client(timeout)?,
                held: Mutex::new(HashMap::new()),
                logins: tokio::sync::Mutex::new(()),
            }),
            renew_before: RENEW_BEFORE,
        })
    }

    /// The same store, renewing tickets `renew_before` their expiry (tests use short tickets).
    pub fn renewing_before(mut self, renew_before: Duration) -> Self {
        self.renew_before = renew_before;
        self
    }

    /// Whether a ticket expiring at `expiration` is still to be used at `now`.
    fn fresh(&self, expiration: OffsetDateTime, now: OffsetDateTime) -> bool {
        expiration - now > self.renew_before
    }

    fn held(&self, org_id: Uuid) -> Option<Held> {
        self.inner.held.lock().ok().and_then(|held| held.get(&org_id).cloned())
    }

    fn hold(&self, org_id: Uuid, held: Held) {
        if let Ok(mut map) = self.inner.held.lock() {
            map.insert(org_id, held);
        }
    }

    /// The credentials of `issuer`'s certificate: the ticket held, the one stored, or a new login.
    pub async fn ticket(&self, issuer: Issuer) -> Result<Credentials, FiscalError> {
        let now = OffsetDateTime::now_utc();
        let usable = |held: &Held| {
            if held.kept_to_expiry { held.expiration - now > LAST_USE } else { self.fresh(held.expiration, now) }
        };
        if let Some(held) = self.held(issuer.org_id()).filter(usable) {
            return Ok(held.credentials);
        }
        let storage = |error: sqlx::Error| FiscalError::Unavailable(format!("the ticket store: {error}"));
        let certificate: Option<(String, sqlx::types::Json<SealedSecret>)> =
            sqlx::query_as("select certificate, sealed_key from fiscal_certificates where org_id = $1")
                .bind(issuer.org_id())
                .fetch_optional(&self.inner.pool)
                .await
                .map_err(storage)?;
        let Some((cert_pem, sealed_key)) = certificate else {
            return Err(FiscalError::Unauthenticated(
                "the organization has no certificate for the tax authority: set one with \
                 `backoffice admin set-fiscal-certificate`"
                    .into(),
            ));
        };
        let fingerprint = fingerprint(&cert_pem)?;
        if let Some(stored) = stored(&self.inner.pool, &fingerprint).await.map_err(storage)?
            && self.fresh(stored.expiration, now)
        {
            return Ok(self.keep(issuer, fingerprint, stored, false));
        }
        let _turn = self.inner.logins.lock().await;
        if let Some(held) = self.held(issuer.org_id()).filter(usable) {
            return Ok(held.credentials);
        }
        let mut conn = self.inner.pool.acquire().await.map_err(storage)?;
        // One login per certificate at a time, across processes: whoever held the lock may have
        // stored a ticket meanwhile.
        let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(storage)?;
        sqlx::query("select pg_advisory_xact_lock(hashtextextended('fiscal-ticket ' || encode($1, 'hex'), 0))")
            .bind(&fingerprint)
            .execute(&mut *tx)
            .await
            .map_err(storage)?;
        let current = match stored(&mut *tx, &fingerprint).await.map_err(storage)? {
            Some(stored) if self.fresh(stored.expiration, OffsetDateTime::now_utc()) => {
                return Ok(self.keep(issuer, fingerprint, stored, false));
            }
            current => current,
        };
        let key_pem = self.inner.secrets.open(&sealed_key).map_err(|error| {
            FiscalError::Unauthenticated(format!("the organization's private key cannot be opened: {error}"))
        })?;
        let signer = Signer::from_pem(&cert_pem, &key_pem)
            .map_err(|error| FiscalError::Unauthenticated(format!("the organization's certificate: {error}")))?;
        let ticket = match (self.login(&signer).await, current) {
            (Ok(ticket), _) => ticket,
            // A renewal the authority refused while the ticket held is still valid: keep using it.
            (Err(FiscalError::Unauthenticated(refusal)), Some(stored))
                if refusal.contains(ALREADY_AUTHENTICATED)
                    && stored.expiration - OffsetDateTime::now_utc() > LAST_USE =>
            {
                tracing::info!(org_id = %issuer.org_id(), "the authority keeps the current ticket until it expires");
                return Ok(self.keep(issuer, fingerprint, stored, true));
            }
            (Err(error), _) => return Err(error),
        };
        sqlx::query(
            "insert into fiscal_tickets (fingerprint, token, sign, generation, expiration, obtained_at)
             values ($1, $2, $3, $4, $5, now())
             on conflict (fingerprint) do update set token = excluded.token, sign = excluded.sign,
                 generation = excluded.generation, expiration = excluded.expiration, obtained_at = now()",
        )
        .bind(&fingerprint)
        .bind(&ticket.token)
        .bind(&ticket.sign)
        .bind(ticket.generation)
        .bind(ticket.expiration)
        .execute(&mut *tx)
        .await
        .map_err(storage)?;
        tx.commit().await.map_err(storage)?;
        tracing::info!(org_id = %issuer.org_id(), expiration = %ticket.expiration, "new ticket from the authority");
        let stored = Stored { token: ticket.token, sign: ticket.sign, expiration: ticket.expiration };
        Ok(self.keep(issuer, fingerprint, stored, false))
    }

    /// Holds `stored` for `issuer` in this process (to its very end when `kept_to_expiry`) and answers
    /// its credentials.
    fn keep(&self, issuer: Issuer, fingerprint: Vec<u8>, stored: Stored, kept_to_expiry: bool) -> Credentials {
        let credentials = Credentials { token: stored.token, sign: stored.sign };
        let held =
            Held { fingerprint, credentials: credentials.clone(), expiration: stored.expiration, kept_to_expiry };
        self.hold(issuer.org_id(), held);
        credentials
    }

    /// `loginCms` with a request signed by `signer`.
    async fn login(&self, signer: &Signer) -> Result<wsaa::Ticket, FiscalError> {
        let now = OffsetDateTime::now_utc();
        let unique_id = (Uuid::new_v4().as_u128() & u128::from(u32::MAX)) as u32;
        let request = wsaa::login_ticket_request(unique_id, now - SKEW, now - SKEW + LIFETIME, wsaa::SERVICE);
        let cms = signer
            .sign(&request, now)
            .map_err(|error| FiscalError::Unauthenticated(format!("cannot sign the login request: {error}")))?;
        let response = self
            .inner
            .http
            .post(self.inner.wsaa.clone())
            .header(reqwest::header::CONTENT_TYPE, super::soap::CONTENT_TYPE)
            .header("SOAPAction", "\"\"")
            .body(wsaa::login_envelope(&cms))
            .send()
            .await
            .map_err(|error| {
                FiscalError::Unavailable(format!("the authentication service: {}", events::error_chain(&error)))
            })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|error| {
            FiscalError::Unavailable(format!("the authentication service: {}", events::error_chain(&error)))
        })?;
        match wsaa::parse_login_response(&body) {
            Ok(ticket) => Ok(ticket),
            Err(LoginRefused::AlreadyAuthenticated) => Err(FiscalError::Unauthenticated(format!(
                "{ALREADY_AUTHENTICATED}: the authority holds a valid ticket for this certificate that this \
                 service does not have; it logs in again once that ticket expires (at most twelve hours)"
            ))),
            Err(LoginRefused::Fault { code, message }) if !code.ends_with("Server") => {
                Err(FiscalError::Unauthenticated(format!(
                    "the authentication service refused the login: {code}: {message}"
                )))
            }
            Err(refused) => {
                Err(FiscalError::Unavailable(format!("the authentication service (HTTP {status}): {refused}")))
            }
        }
    }

    /// Forgets `credentials` wherever they are still held: the authority refused them.
    pub async fn forget(&self, issuer: Issuer, credentials: &Credentials) {
        let fingerprint = self.held(issuer.org_id()).map(|held| held.fingerprint);
        if let Ok(mut held) = self.inner.held.lock() {
            held.retain(|_, held| held.credentials != *credentials);
        }
        if let Some(fingerprint) = fingerprint {
            let deleted = sqlx::query("delete from fiscal_tickets where fingerprint = $1 and token = $2")
                .bind(fingerprint)
                .bind(&credentials.token)
                .execute(&self.inner.pool)
                .await;
            if let Err(error) = deleted {
                tracing::warn!(%error, "cannot forget a refused ticket");
            }
        }
    }
}

/// What the authority's refusal of a second login says (its fault code's end).
const ALREADY_AUTHENTICATED: &str = "coe.alreadyAuthenticated";

impl Authenticator for Tickets {
    fn credentials(&self, issuer: Issuer) -> BoxFuture<'_, Result<Credentials, FiscalError>> {
        Box::pin(self.ticket(issuer))
    }

    fn rejected(&self, issuer: Issuer, credentials: &Credentials) -> BoxFuture<'_, ()> {
        let credentials = credentials.clone();
        Box::pin(async move { self.forget(issuer, &credentials).await })
    }

    /// Lets go of the ticket this process holds for `issuer`, keeping the stored one: the next call
    /// reads the organization's certificate again and uses that certificate's ticket, the same one
    /// (no login) unless the certificate was replaced.
    fn not_represented(&self, issuer: Issuer) -> BoxFuture<'_, ()> {
        if let Ok(mut held) = self.inner.held.lock() {
            held.remove(&issuer.org_id());
        }
        Box::pin(std::future::ready(()))
    }
}

/// The SHA-256 of a certificate's DER: the key of its ticket.
fn fingerprint(cert_pem: &str) -> Result<Vec<u8>, FiscalError> {
    let der = super::certificate::certificate_der(cert_pem)
        .map_err(|error| FiscalError::Unauthenticated(format!("the organization's certificate: {error}")))?;
    Ok(Sha256::digest(der).to_vec())
}

async fn stored<'c>(conn: impl sqlx::PgExecutor<'c>, fingerprint: &[u8]) -> Result<Option<Stored>, sqlx::Error> {
    sqlx::query_as("select token, sign, expiration from fiscal_tickets where fingerprint = $1")
        .bind(fingerprint)
        .fetch_optional(conn)
        .await
}
