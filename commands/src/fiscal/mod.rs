//! The tax authority's electronic invoicing (WSFEv1): the adapter the invoicing code calls to learn
//! the last authorized number of a series, to authorize a voucher (its CAE), to consult a voucher by
//! number, to list the points of sale the authority has enabled, and to check the service's health.
//!
//! # Transport
//!
//! SOAP 1.1 as the authority speaks it ([`soap`]): `POST` to the service's address with
//! `SOAPAction: "http://ar.gov.afip.dif.FEV1/<Operation>"`, the operation's element in that namespace
//! holding `Auth` {`Token`, `Sign`, `Cuit`} and its fields ([`wire`] spells every one), answered by
//! `<Operation>Response`/`<Operation>Result`. The operations: `FEDummy`, `FECompUltimoAutorizado`,
//! `FECAESolicitar`, `FECompConsultar`, `FEParamGetPtosVenta`. Amounts travel as exact two-place
//! decimals and are integer cents on both sides of the adapter ([`decimal`]); no float ever holds money.
//!
//! `Token` and `Sign` come from the authority's authentication service (WSAA, [`wsaa`]): a login
//! ticket obtained with the organization's certificate and key ([`certificate`]) and kept in Postgres
//! for every process ([`tickets`]).
//!
//! # Using it
//!
//! ```text
//! n = last_authorized(issuer, pos, type) + 1
//! authorize(issuer, voucher numbered n):
//!   Ok(authorization)        -> store the CAE and its expiry on the sale
//!   Err(Rejected{errors})    -> final: the authority's codes say why (10016: the number was not next)
//!   Err(Unavailable)         -> nothing happened: retry later, from last_authorized
//!   Err(Unauthenticated)     -> nothing happened: no valid ticket (no certificate, a refused login, a
//!                               token the authority did not accept); retry once that is mended
//!   Err(NoReply)             -> unknown: consult(issuer, pos, type, n) before anything else
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
//! [`FiscalSettings::from_env`]: `FISCAL_ENV` (`homologation` or `production`: the authority's own
//! addresses for both services; unset means the built-in simulator), `FISCAL_URL` (a base URL under
//! which both services answer at the authority's paths, `/wsfev1/service.asmx` and
//! `/ws/services/LoginCms`: another simulator, a proxy; it overrides `FISCAL_ENV`),
//! `FISCAL_SIMULATOR_ADDR` (where the built-in simulator listens, default `127.0.0.1:8099`) and
//! `FISCAL_TIMEOUT_MS` (longest wait for any call).

pub mod certificate;
pub mod check;
pub mod client;
pub mod decimal;
pub mod soap;
pub mod tickets;
pub mod voucher;
pub mod wire;
pub mod wsaa;

use std::net::SocketAddr;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;
use uuid::Uuid;

pub use client::{FiscalClient, FiscalError};
pub use decimal::{Amount, Rate};
pub use tickets::Tickets;
pub use voucher::{AssociatedVoucher, Authorization, OtherTaxLine, StoredVoucher, VatLine, VoucherRequest};

/// The issuer of vouchers: an organization and its CUIT, checked. The organization says whose
/// certificate logs in; the CUIT goes into every `Auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Issuer {
    org_id: Uuid,
    cuit: i64,
}

/// A number that is not a CUIT (11 digits, a known prefix, a valid check digit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid CUIT")]
pub struct InvalidCuit;

impl Issuer {
    pub fn new(org_id: Uuid, cuit: i64) -> Result<Self, InvalidCuit> {
        if crate::validate::is_valid_cuit(&cuit.to_string()) { Ok(Issuer { org_id, cuit }) } else { Err(InvalidCuit) }
    }

    pub fn cuit(self) -> i64 {
        self.cuit
    }

    pub fn org_id(self) -> Uuid {
        self.org_id
    }
}

/// Whether an issuer of `category` issues vouchers of `letter`: Responsables Inscriptos issue A, B
/// (and M, E); Monotributistas and Exentos issue C.
pub fn issuer_may_issue(category: &str, letter: &str) -> bool {
    match category {
        "Responsable Inscripto" => matches!(letter, "A" | "B" | "M" | "E"),
        _ => letter == "C",
    }
}

/// The `document_numbers` row of a fiscal series (a point of sale's id and a voucher type): the last
/// number the authority approved to this service there.
pub fn series_row(point_of_sale_id: Uuid, voucher_type: i32) -> String {
    format!("fiscal:{point_of_sale_id}:{voucher_type}")
}

/// The ticket of the authority's authentication service (WSAA) for one issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub token: String,
    pub sign: String,
}

/// Where the adapter gets `Token` and `Sign`: [`tickets::Tickets`], the authority's login tickets
/// kept in Postgres. It fails with [`FiscalError::Unauthenticated`] when the issuer has no usable
/// certificate or the authentication service refuses it, and [`FiscalError::Unavailable`] when that
/// service cannot be reached.
pub trait Authenticator: Send + Sync {
    fn credentials(&self, issuer: Issuer) -> BoxFuture<'_, Result<Credentials, FiscalError>>;

    /// The authority did not accept `credentials` (error 600): they are not handed out again, so
    /// the next call logs in anew.
    fn rejected(&self, issuer: Issuer, credentials: &Credentials) -> BoxFuture<'_, ()>;

    /// The authority answered that the credentials do not represent `issuer`'s CUIT (601). They stay
    /// good for their certificate, but the next call looks at the issuer's certificate again: it may
    /// have been replaced by one that does.
    fn not_represented(&self, issuer: Issuer) -> BoxFuture<'_, ()> {
        let _ = issuer;
        Box::pin(std::future::ready(()))
    }
}

/// The adapter of the services `settings` name, its login tickets kept in `pool`.
pub async fn connect(settings: &FiscalSettings, pool: sqlx::PgPool) -> Result<FiscalClient, FiscalError> {
    let endpoints = settings.endpoints().map_err(|error| FiscalError::Protocol(error.to_string()))?;
    let tickets = Tickets::new(pool, settings.service(), endpoints.wsaa.clone(), settings.timeout).await?;
    FiscalClient::new(&endpoints.wsfe, settings.timeout, std::sync::Arc::new(tickets))
}

/// `FISCAL_ENV`: which of the authority's services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiscalEnv {
    /// Testing (`wswhomo`, `wsaahomo`): vouchers without fiscal value.
    Homologation,
    Production,
}

/// The authority's documented addresses: (WSFEv1, WSAA).
const HOMOLOGATION: (&str, &str) =
    ("https://wswhomo.afip.gov.ar/wsfev1/service.asmx", "https://wsaahomo.afip.gov.ar/ws/services/LoginCms");
const PRODUCTION: (&str, &str) =
    ("https://servicios1.afip.gov.ar/wsfev1/service.asmx", "https://wsaa.afip.gov.ar/ws/services/LoginCms");
/// The services' paths, under `FISCAL_URL` or the simulator's address as at the authority.
pub const WSFE_PATH: &str = "/wsfev1/service.asmx";
pub const WSAA_PATH: &str = "/ws/services/LoginCms";

/// The addresses of the two services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// WSFEv1 (invoicing).
    pub wsfe: Url,
    /// WSAA (login tickets).
    pub wsaa: Url,
}

impl Endpoints {
    /// Both services under `base`, at the authority's paths (a simulator, a proxy).
    pub fn under(base: &Url) -> Result<Self, FiscalConfigError> {
        let root = base.as_str().trim_end_matches('/');
        let at = |path: &str| Url::parse(&format!("{root}{path}")).map_err(|e| FiscalConfigError::Url(e.to_string()));
        Ok(Endpoints { wsfe: at(WSFE_PATH)?, wsaa: at(WSAA_PATH)? })
    }

    fn documented((wsfe, wsaa): (&str, &str)) -> Self {
        // Constants, read back by a test.
        let parse = |text: &str| Url::parse(text).expect("the authority's documented address is a URL");
        Endpoints { wsfe: parse(wsfe), wsaa: parse(wsaa) }
    }
}

/// Where the authority is and how long to wait for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalSettings {
    /// `FISCAL_ENV`: the authority's homologation or production services; `None` (with no
    /// `FISCAL_URL`) means the built-in simulator.
    pub env: Option<FiscalEnv>,
    /// `FISCAL_URL`: a base URL under which both services answer at the authority's paths; it
    /// overrides `FISCAL_ENV`.
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
    #[error("FISCAL_ENV must be homologation or production: {0}")]
    Env(String),
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
        let env = match var("FISCAL_ENV").map(|text| text.to_ascii_lowercase()) {
            None => None,
            Some(text) if text == "homologation" => Some(FiscalEnv::Homologation),
            Some(text) if text == "production" => Some(FiscalEnv::Production),
            Some(text) => return Err(FiscalConfigError::Env(text)),
        };
        let simulator_addr = var("FISCAL_SIMULATOR_ADDR").unwrap_or_else(|| DEFAULT_SIMULATOR_ADDR.to_owned());
        Ok(FiscalSettings { env, url, simulator_addr, timeout })
    }

    /// Whether this process should run the built-in simulator (neither `FISCAL_URL` nor `FISCAL_ENV`).
    pub fn uses_simulator(&self) -> bool {
        self.url.is_none() && self.env.is_none()
    }

    /// Where the two services are: under `FISCAL_URL`, else `FISCAL_ENV`'s documented addresses, else
    /// under the simulator's address.
    pub fn endpoints(&self) -> Result<Endpoints, FiscalConfigError> {
        match (&self.url, self.env) {
            (Some(url), _) => Endpoints::under(url),
            (None, Some(FiscalEnv::Homologation)) => Ok(Endpoints::documented(HOMOLOGATION)),
            (None, Some(FiscalEnv::Production)) => Ok(Endpoints::documented(PRODUCTION)),
            (None, None) => Endpoints::under(&self.base_url()?),
        }
    }

    /// The authentication service the settings name, which keys its login tickets: `production` or
    /// `homologation` (`FISCAL_ENV`), the `FISCAL_URL` that overrides it, or the built-in `simulator`
    /// (wherever it listens: a restart on another port is the same service, with the same tickets).
    pub fn service(&self) -> String {
        match (&self.url, self.env) {
            (Some(url), _) => url.as_str().to_owned(),
            (None, Some(FiscalEnv::Homologation)) => "homologation".to_owned(),
            (None, Some(FiscalEnv::Production)) => "production".to_owned(),
            (None, None) => "simulator".to_owned(),
        }
    }

    /// The same settings, with the simulator found where it was actually bound (`FISCAL_SIMULATOR_ADDR`
    /// may name port 0).
    pub fn with_simulator_at(mut self, addr: SocketAddr) -> Self {
        self.simulator_addr = addr.to_string();
        self
    }

    /// `FISCAL_URL`, else the simulator's address (an unspecified host such as `0.0.0.0` is reached
    /// on loopback).
    fn base_url(&self) -> Result<Url, FiscalConfigError> {
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
        let wsfe = |s: &FiscalSettings| s.endpoints().expect("endpoints").wsfe.to_string();
        assert_eq!(wsfe(&defaults), "http://127.0.0.1:8099/wsfev1/service.asmx");
        assert_eq!(
            defaults.endpoints().expect("endpoints").wsaa.as_str(),
            "http://127.0.0.1:8099/ws/services/LoginCms"
        );
        let everywhere = settings(&[("FISCAL_SIMULATOR_ADDR", "0.0.0.0:9000"), ("FISCAL_URL", "")]).expect("set");
        assert_eq!(wsfe(&everywhere), "http://127.0.0.1:9000/wsfev1/service.asmx");
        let v6 = settings(&[("FISCAL_SIMULATOR_ADDR", "[::]:9000")]).expect("set");
        assert_eq!(wsfe(&v6), "http://[::1]:9000/wsfev1/service.asmx");
        let bound = defaults.with_simulator_at("127.0.0.1:41234".parse().expect("addr"));
        assert_eq!(wsfe(&bound), "http://127.0.0.1:41234/wsfev1/service.asmx");
    }

    #[test]
    fn a_fiscal_url_and_timeout_are_read_and_checked() {
        let real = settings(&[("FISCAL_URL", "https://fiscal.example/afip/"), ("FISCAL_TIMEOUT_MS", "2500")])
            .expect("settings");
        assert!(!real.uses_simulator());
        assert_eq!(real.timeout, Duration::from_millis(2500));
        let endpoints = real.endpoints().expect("endpoints");
        assert_eq!(endpoints.wsfe.as_str(), "https://fiscal.example/afip/wsfev1/service.asmx");
        assert_eq!(endpoints.wsaa.as_str(), "https://fiscal.example/afip/ws/services/LoginCms");
        assert!(matches!(settings(&[("FISCAL_URL", "ftp://x")]), Err(FiscalConfigError::Url(_))));
        assert!(matches!(settings(&[("FISCAL_URL", "not a url")]), Err(FiscalConfigError::Url(_))));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "0")]), Err(FiscalConfigError::Timeout));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "10000")]), Err(FiscalConfigError::TimeoutTooLong(10_000)));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "8000")]).map(|s| s.timeout), Ok(Duration::from_secs(8)));
        assert_eq!(settings(&[("FISCAL_TIMEOUT_MS", "10s")]), Err(FiscalConfigError::Timeout));
        let bad_addr = settings(&[("FISCAL_SIMULATOR_ADDR", "nowhere")]).expect("read");
        assert!(matches!(bad_addr.endpoints(), Err(FiscalConfigError::SimulatorAddr(_))));
    }

    #[test]
    fn fiscal_env_names_the_authoritys_documented_addresses_and_fiscal_url_overrides_them() {
        let homologation = settings(&[("FISCAL_ENV", "homologation")]).expect("settings");
        assert!(!homologation.uses_simulator());
        assert_eq!(
            homologation.endpoints().expect("endpoints"),
            Endpoints {
                wsfe: Url::parse("https://wswhomo.afip.gov.ar/wsfev1/service.asmx").expect("url"),
                wsaa: Url::parse("https://wsaahomo.afip.gov.ar/ws/services/LoginCms").expect("url"),
            }
        );
        let production = settings(&[("FISCAL_ENV", "Production")]).expect("settings").endpoints().expect("endpoints");
        assert_eq!(production.wsfe.as_str(), "https://servicios1.afip.gov.ar/wsfev1/service.asmx");
        assert_eq!(production.wsaa.as_str(), "https://wsaa.afip.gov.ar/ws/services/LoginCms");
        let proxied = settings(&[("FISCAL_ENV", "production"), ("FISCAL_URL", "http://proxy:8099")]).expect("settings");
        assert_eq!(proxied.endpoints().expect("endpoints").wsfe.as_str(), "http://proxy:8099/wsfev1/service.asmx");
        assert_eq!(settings(&[("FISCAL_ENV", "staging")]), Err(FiscalConfigError::Env("staging".into())));
    }

    #[test]
    fn tickets_are_kept_under_the_service_the_settings_name() {
        let service = |vars: &[(&str, &str)]| settings(vars).expect("settings").service();
        assert_eq!(service(&[("FISCAL_ENV", "homologation")]), "homologation");
        assert_eq!(service(&[("FISCAL_ENV", "production")]), "production");
        // The built-in simulator is one service wherever it listens.
        assert_eq!(service(&[]), "simulator");
        let moved = settings(&[]).expect("settings").with_simulator_at("127.0.0.1:41234".parse().expect("addr"));
        assert_eq!(moved.service(), "simulator");
        // A FISCAL_URL overrides FISCAL_ENV, for tickets as for the addresses.
        let proxied = [("FISCAL_ENV", "production"), ("FISCAL_URL", "http://proxy:8099")];
        assert_eq!(service(&proxied), "http://proxy:8099/");
    }

    #[test]
    fn issuers_are_valid_cuits() {
        assert_eq!(Issuer::new(Uuid::nil(), 20267565393).map(Issuer::cuit), Ok(20267565393));
        assert_eq!(Issuer::new(Uuid::nil(), 20267565392), Err(InvalidCuit));
        assert_eq!(Issuer::new(Uuid::nil(), 123), Err(InvalidCuit));
    }
}
