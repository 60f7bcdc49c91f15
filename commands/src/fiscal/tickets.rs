//! The authority's login tickets (WSAA), obtained with each organization's certificate and kept in
//! Postgres (`fiscal_tickets`, schema/0034) so that every process uses the same one.
//!
//! A ticket belongs to the authentication service that issued it, known by its name
//! ([`super::FiscalSettings::service`]: `homologation` and `production`, a `FISCAL_URL`, or the built-in
//! `simulator` wherever it listens, each hold their own ticket for one certificate, valid only there),
//! and to a certificate (its SHA-256): organizations sharing a representative's certificate
//! share its ticket. A process never reads, renews over or forgets another service's ticket, so a
//! `fiscal check` against homologation on the production database leaves production's alone
//! (schema/0044). A ticket is used until [`Tickets::renew_before`] its expiry; then the next call logs
//! in again. Logins take turns per service and certificate across processes (a transaction-scoped
//! advisory lock, the ticket re-read once it is held), because the authority refuses a new login while
//! a ticket is valid (`coe.alreadyAuthenticated`): when it does, the ticket still held is used until it
//! expires, or, none being stored for the service, one stored before tickets named their service. Each
//! process keeps the ticket it last read in memory, per organization, in the `Tickets` of its one
//! service.

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

/// The login tickets of every organization, from Postgres and the authentication service at `wsaa`
/// that service's tickets only, in Postgres as in memory.
#[derive(Clone)]
pub struct Tickets {
    inner: Arc<Inner>,
    renew_before: Duration,
}

struct Inner {
    pool: PgPool,
    secrets: SecretBox,
    /// The authentication service's name, which keys its tickets in `fiscal_tickets`.
    service: String,
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
    /// Tickets from the authentication service `service` ([`super::FiscalSettings::service`]: the
    /// authority's environment, or the `FISCAL_URL` or simulator standing for it) at `wsaa`, each call
    /// given up after `timeout`.
    pub async fn new(pool: PgPool, service: String, wsaa: Url, timeout: Duration) -> Result<Self, FiscalError> {
        let secrets = SecretBox::load(&pool)
            .await
            .map_err(|error| FiscalError::Protocol(format!("cannot read the service's secrets key: {error}")))?;
        Ok(Tickets {
            inner: Arc::new(Inner {
                pool,
                secrets,
                service,
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

    /// The service whose tickets these are, as `fiscal_tickets.service` names it.
    fn service(&self) -> &str {
        &self.inner.service
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
        if let Some(stored) = stored(&self.inner.pool, self.service(), &fingerprint).await.map_err(storage)?
            && self.fresh(stored.expiration, now)
        {
            return Ok(self.keep(issuer, fingerprint, stored, false));
        }
        let _turn = self.inner.logins.lock().await;
        if let Some(held) = self.held(issuer.org_id()).filter(usable) {
            return Ok(held.credentials);
        }
        let mut conn = self.inner.pool.acquire().await.map_err(storage)?;
        // One login per service and certificate at a time, across processes: whoever held the lock may
        // have stored a ticket meanwhile.
        let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(storage)?;
        sqlx::query(
            "select pg_advisory_xact_lock(hashtextextended('fiscal-ticket ' || $1 || ' ' || encode($2, 'hex'), 0))",
        )
        .bind(self.service())
        .bind(&fingerprint)
        .execute(&mut *tx)
        .await
        .map_err(storage)?;
        let current = match stored(&mut *tx, self.service(), &fingerprint).await.map_err(storage)? {
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
        let ticket = match self.login(&signer).await {
            Ok(ticket) => ticket,
            // The authority refused because this service holds a valid ticket for the certificate: the
            // one stored (a renewal refused while it is still valid), else one stored before tickets
            // named their service, which the refusal shows to be this service's. Used to its end.
            Err(FiscalError::Unauthenticated(refusal)) if refusal.contains(ALREADY_AUTHENTICATED) => {
                let now = OffsetDateTime::now_utc();
                let usable = |stored: &Stored| stored.expiration - now > LAST_USE;
                let held = match current.filter(usable) {
                    Some(stored) => Some(stored),
                    None => adopt(&mut *tx, self.service(), &fingerprint).await.map_err(storage)?.filter(usable),
                };
                let Some(stored) = held else {
                    return Err(FiscalError::Unauthenticated(refusal));
                };
                tx.commit().await.map_err(storage)?;
                tracing::info!(org_id = %issuer.org_id(), "the authority keeps the current ticket until it expires");
                return Ok(self.keep(issuer, fingerprint, stored, true));
            }
            Err(error) => return Err(error),
        };
        sqlx::query(
            "insert into fiscal_tickets (service, fingerprint, token, sign, generation, expiration, obtained_at)
             values ($1, $2, $3, $4, $5, $6, now())
             on conflict (service, fingerprint) do update set token = excluded.token, sign = excluded.sign,
                 generation = excluded.generation, expiration = excluded.expiration, obtained_at = now()",
        )
        .bind(self.service())
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

    /// Forgets `credentials` wherever this service's tickets are still held: the authority refused them.
    /// Another service's ticket for the same certificate, and one stored before tickets named their
    /// service, stay.
    pub async fn forget(&self, issuer: Issuer, credentials: &Credentials) {
        let fingerprint = self.held(issuer.org_id()).map(|held| held.fingerprint);
        if let Ok(mut held) = self.inner.held.lock() {
            held.retain(|_, held| held.credentials != *credentials);
        }
        if let Some(fingerprint) = fingerprint {
            let deleted =
                sqlx::query("delete from fiscal_tickets where service = $1 and fingerprint = $2 and token = $3")
                    .bind(self.service())
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

/// The SHA-256 of a certificate's DER: with the service's name, the key of its ticket.
fn fingerprint(cert_pem: &str) -> Result<Vec<u8>, FiscalError> {
    let der = super::certificate::certificate_der(cert_pem)
        .map_err(|error| FiscalError::Unauthenticated(format!("the organization's certificate: {error}")))?;
    Ok(Sha256::digest(der).to_vec())
}

/// The ticket `service` issued for the certificate `fingerprint`, as stored.
async fn stored<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    service: &str,
    fingerprint: &[u8],
) -> Result<Option<Stored>, sqlx::Error> {
    sqlx::query_as("select token, sign, expiration from fiscal_tickets where service = $1 and fingerprint = $2")
        .bind(service)
        .bind(fingerprint)
        .fetch_optional(conn)
        .await
}

/// The ticket of the certificate `fingerprint` stored before tickets named their service (schema/0044),
/// if it has not expired, stored again as `service`'s. Called once `service` refused a login for holding
/// a valid ticket for the certificate while none is stored under its name: the old ticket is then
/// `service`'s. The old row stays, as that is inferred: were it another service's, that one can still
/// take it up the same way.
async fn adopt<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    service: &str,
    fingerprint: &[u8],
) -> Result<Option<Stored>, sqlx::Error> {
    sqlx::query_as(
        "insert into fiscal_tickets (service, fingerprint, token, sign, generation, expiration, obtained_at)
         select $1, fingerprint, token, sign, generation, expiration, obtained_at from fiscal_tickets
         where service is null and fingerprint = $2 and expiration > now()
         on conflict (service, fingerprint) do update set token = excluded.token, sign = excluded.sign,
             generation = excluded.generation, expiration = excluded.expiration, obtained_at = excluded.obtained_at
         returning token, sign, expiration",
    )
    .bind(service)
    .bind(fingerprint)
    .fetch_optional(conn)
    .await
}
