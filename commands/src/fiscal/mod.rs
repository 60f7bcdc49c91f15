//! The tax authority's electronic invoicing (WSFEv1): the adapter the invoicing code calls to learn
//! the last authorized number of a series, to authorize a voucher (its CAE), to consult a voucher by
//! number, and to check the service's health.
//!
//! # Transport
//!
//! JSON over HTTP carrying WSFEv1's own operation and field names: `POST {FISCAL_URL}/wsfev1/<Operation>`
//! with the operation's request fields as a JSON object, answered by its response fields
//! ([`wire`] spells every one). The operations: `FEDummy`, `FECompUltimoAutorizado`,
//! `FECAESolicitar` and `FECompConsultar`. The authority itself speaks SOAP; a SOAP transport can be
//! added behind the same [`FiscalClient`] methods (the wire structs map one to one onto its elements)
//! without the callers changing. Amounts travel as exact two-place decimals and are integer cents on
//! both sides of the adapter ([`decimal`]); no float ever holds money.
//!
//! # Using it
//!
//! ```text
//! n = last_authorized(issuer, pos, type) + 1
//! authorize(issuer, voucher numbered n):
//!   Ok(authorization)      -> store the CAE and its expiry on the sale
//!   Err(Rejected{errors})  -> final: the authority's codes say why (10016: the number was not next)
//!   Err(Unavailable)       -> nothing happened: retry later, from last_authorized
//!   Err(NoReply)           -> unknown: consult(issuer, pos, type, n) before anything else
//!       Some(v) if v.matches(voucher) -> it was approved: v.cae is the authorization
//!       Some(_)                       -> someone else used n: start over from last_authorized
//!       None                          -> it was not approved: ask again (same n)
//! ```
//!
//! The authority is not idempotent (asking again for an approved number fails with 10016), so a
//! voucher is asked for again only once a consult has shown it missing.
//!
//! # Configuration
//!
//! [`FiscalSettings::from_env`]: `FISCAL_URL` (the service's base URL; unset means the built-in
//! simulator), `FISCAL_SIMULATOR_ADDR` (where the built-in simulator listens, default
//! `127.0.0.1:8099`) and `FISCAL_TIMEOUT_MS` (longest wait for any call, default 10000).
//! Authentication (the authority's WSAA ticket: token and sign) sits behind [`Authenticator`];
//! [`StaticCredentials`] serves the simulator, which accepts any non-empty token.

pub mod certificate;
pub mod client;
pub mod decimal;
pub mod voucher;
pub mod wire;
pub mod wsaa;

use std::net::SocketAddr;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

pub use client::{FiscalClient, FiscalError};
pub use decimal::{Amount, Rate};
pub use voucher::{AssociatedVoucher, Authorization, OtherTaxLine, StoredVoucher, VatLine, VoucherRequest};

/// The issuer of vouchers: the organization's CUIT, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Issuer(i64);

/// A number that is not a CUIT (11 digits, a known prefix, a valid check digit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid CUIT")]
pub struct InvalidCuit;

impl Issuer {
    pub fn new(cuit: i64) -> Result<Self, InvalidCuit> {
        if crate::validate::is_valid_cuit(&cuit.to_string()) { Ok(Issuer(cuit)) } else { Err(InvalidCuit) }
    }

    pub fn cuit(self) -> i64 {
        self.0
    }
}

/// The ticket of the authority's authentication service (WSAA) for one issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub token: String,
    pub sign: String,
}

/// Where the adapter gets `Token` and `Sign`. The real one logs in to WSAA with the issuer's
/// certificate and keeps the ticket for its twelve hours; it fails with [`FiscalError::Unavailable`]
/// when WSAA cannot be reached and [`FiscalError::Rejected`] when it refuses the login.
pub trait Authenticator: Send + Sync {
    fn credentials(&self, issuer: Issuer) -> BoxFuture<'_, Result<Credentials, FiscalError>>;
}

/// The same token and sign for every issuer: what the simulator needs.
#[derive(Debug, Clone)]
pub struct StaticCredentials(Credentials);

impl StaticCredentials {
    pub fn new(token: impl Into<String>, sign: impl Into<String>) -> Self {
        StaticCredentials(Credentials { token: token.into(), sign: sign.into() })
    }

    /// Credentials the simulator accepts.
    pub fn simulator() -> Self {
        Self::new("simulator-token", "simulator-sign")
    }
}

impl Authenticator for StaticCredentials {
    fn credentials(&self, _issuer: Issuer) -> BoxFuture<'_, Result<Credentials, FiscalError>> {
        Box::pin(std::future::ready(Ok(self.0.clone())))
    }
}

/// Where the authority is and how long to wait for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalSettings {
    /// `FISCAL_URL`: the service's base URL; `None` means the built-in simulator.
    pub url: Option<Url>,
    /// `FISCAL_SIMULATOR_ADDR`: where the built-in simulator listens (default `127.0.0.1:8099`).
    pub simulator_addr: String,
    /// `FISCAL_TIMEOUT_MS`: the longest wait for one call, connection included (default
    /// [`DEFAULT_TIMEOUT`], at most [`AUTHORITY_BUDGET`]).
    pub timeout: Duration,
}

/// A fiscal setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FiscalConfigError {
    #[error("FISCAL_URL must be an http or https URL: {0}")]
    Url(String),
    #[error("FISCAL_TIMEOUT_MS must be a positive whole number of milliseconds")]
    Timeout,
    #[error(
        "FISCAL_TIMEOUT_MS is {0} ms, but the authority's share of a command is {budget} ms (the command's {command} ms \
         less {margin} ms for the rest of it): a lost reply would time the caller out before the sale could answer \
         deferred",
        budget = AUTHORITY_BUDGET.as_millis(),
        command = crate::client::COMMAND_TIMEOUT.as_millis(),
        margin = COMMAND_MARGIN.as_millis()
    )]
    TimeoutTooLong(u128),
    #[error("FISCAL_SIMULATOR_ADDR must be host:port: {0}")]
    SimulatorAddr(String),
}

pub const DEFAULT_SIMULATOR_ADDR: &str = "127.0.0.1:8099";
/// What a command needs besides the authority (its queue, locks, transaction and reply): kept out of the
/// authority's share of the command's time.
pub const COMMAND_MARGIN: Duration = Duration::from_secs(2);
/// The authority's share of a command: every call one voucher makes together (a sale asks for the last
/// number and then for its authorization, and asks again once when the number proves taken) ends by
/// then, so a lost reply still leaves the sale time to answer `deferred` before its caller gives up.
pub const AUTHORITY_BUDGET: Duration =
    Duration::from_millis(crate::client::COMMAND_TIMEOUT.as_millis() as u64 - COMMAND_MARGIN.as_millis() as u64);
/// One call's default wait: half the authority's share, so the authorization itself is waited for in
/// full even after a slow lookup of the last number.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(AUTHORITY_BUDGET.as_millis() as u64 / 2);

impl FiscalSettings {
    pub fn from_env() -> Result<Self, FiscalConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `var`. Empty values count as unset.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, FiscalConfigError> {
        let var = |name: &str| var(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        let url = match var("FISCAL_URL") {
            None => None,
            Some(text) => {
                let url = Url::parse(&text).map_err(|error| FiscalConfigError::Url(format!("{text}: {error}")))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(FiscalConfigError::Url(text));
                }
                Some(url)
            }
        };
        let timeout = match var("FISCAL_TIMEOUT_MS") {
            None => DEFAULT_TIMEOUT,
            Some(text) => match text.parse::<u64>() {
                Ok(ms) if Duration::from_millis(ms) > AUTHORITY_BUDGET => {
                    return Err(FiscalConfigError::TimeoutTooLong(u128::from(ms)));
                }
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(FiscalConfigError::Timeout),
            },
        };
        let simulator_addr = var("FISCAL_SIMULATOR_ADDR").unwrap_or_else(|| DEFAULT_SIMULATOR_ADDR.to_owned());
        Ok(FiscalSettings { url, simulator_addr, timeout })
    }

    /// Whether this process should run the built-in simulator (no `FISCAL_URL`).
    pub fn uses_simulator(&self) -> bool {
        self.url.is_none()
    }

    /// The same settings, with the simulator found where it was actually bound (`FISCAL_SIMULATOR_ADDR`
    /// may name port 0).
    pub fn with_simulator_at(mut self, addr: SocketAddr) -> Self {
        self.simulator_addr = addr.to_string();
        self
    }

    /// The base URL calls go to: `FISCAL_URL`, else the simulator's address (an unspecified host such
    /// as `0.0.0.0` is reached on loopback).
    pub fn base_url(&self) -> Result<Url, FiscalConfigError> {
        if let Some(url) = &self.url {
            return Ok(url.clone());
        }
        let invalid = || FiscalConfigError::SimulatorAddr(self.simulator_addr.clone());
        let (host, port) = self.simulator_addr.rsplit_once(':').ok_or_else(invalid)?;
        let port: u16 = port.parse().map_err(|_| invalid())?;
        let host = match host.trim_start_matches('[').trim_end_matches(']') {
            "" | "0.0.0.0" => "127.0.0.1".to_owned(),
            "::" => "[::1]".to_owned(),
            other if other.contains(':') => format!("[{other}]"),
            other => other.to_owned(),
        };
        Url::parse(&format!("http://{host}:{port}")).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<FiscalSettings, FiscalConfigError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        FiscalSettings::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn defaults_use_the_built_in_simulator() {
        let defaults = settings(&[]).expect("defaults");
        assert!(defaults.uses_simulator());
        assert_eq!(defaults.timeout, Duration::from_secs(4), "half of the command's 10 s less its 2 s margin");
        assert_eq!(defaults.base_url().expect("url").as_str(), "http://127.0.0.1:8099/");
        let everywhere = settings(&[("FISCAL_SIMULATOR_ADDR", "0.0.0.0:9000"), ("FISCAL_URL", "")]).expect("set");
        assert_eq!(everywhere.base_url().expect("url").as_str(), "http://127.0.0.1:9000/");
        let v6 = settings(&[("FISCAL_SIMULATOR_ADDR", "[::]:9000")]).expect("set");
        assert_eq!(v6.base_url().expect("url").as_str(), "http://[::1]:9000/");
        let bound = defaults.with_simulator_at("127.0.0.1:41234".parse().expect("addr"));
        assert_eq!(bound.base_url().expect("url").as_str(), "http://127.0.0.1:41234/");
    }

    #[test]
    fn a_fiscal_url_and_timeout_are_read_and_checked() {
        let real = settings(&[("FISCAL_URL", "https://fiscal.example/afip/"), ("FISCAL_TIMEOUT_MS", "2500")])
            .expect("settings");
        assert!(!real.uses_simulator());
        assert_eq!(real.timeout, Duration::from_millis(2500));
        assert_eq!(real.base_url().expect("url").as_str(), "https://fiscal.example/afip/");
        assert!(matches!(settings(&[("FISCAL_URL", "ftp://x")]), Err(FiscalConfigError::Url(_))));
        assert!(matches!(settings(&[("FISCAL_URL", "not a url")]), Err(FiscalConfigError::Url(_))));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "0")]), Err(FiscalConfigError::Timeout));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "10000")]), Err(FiscalConfigError::TimeoutTooLong(10_000)));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "8000")]).map(|s| s.timeout), Ok(Duration::from_secs(8)));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "10s")]), Err(FiscalConfigError::Timeout));
        let bad_addr = settings(&[("FISCAL_SIMULATOR_ADDR", "nowhere")]).expect("read");
        assert!(matches!(bad_addr.base_url(), Err(FiscalConfigError::SimulatorAddr(_))));
    }

    #[test]
    fn issuers_are_valid_cuits() {
        assert_eq!(Issuer::new(20267565393).map(Issuer::cuit), Ok(20267565393));
        assert_eq!(Issuer::new(20267565392), Err(InvalidCuit));
        assert_eq!(Issuer::new(123), Err(InvalidCuit));
    }
}
