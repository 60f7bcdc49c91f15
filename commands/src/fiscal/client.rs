//! `FiscalClient`: the WSFEv1 operations as SOAP over HTTP, and the reading of every way a call can end
//! into the few cases the invoicing code must treat differently (`FiscalError`).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::soap::{self, SoapError};
use super::voucher::{Authorization, StoredVoucher, VoucherRequest, well_formed_cae};
use super::{Authenticator, Credentials, Issuer, wire};

/// How a call to the authority ended, when it did not end well. The cases differ in what the caller
/// may do next:
///
/// | error | what happened | what to do |
/// |---|---|---|
/// | `Unavailable` | refused before processing: connection refused, HTTP 503 (or 500, 408, 429); for a read, also the authority's internal errors 501 and 502 | nothing was done; retry later |
/// | `NoReply` | the request may have reached the authority but no usable answer came back (timeout, connection cut, a gateway's 502 or 504, an unreadable answer, internal error 501 or 502 on an authorization) | the outcome is unknown: for `authorize`, [`FiscalClient::consult`] the number before asking again |
/// | `Unauthenticated` | no valid ticket: the issuer has no usable certificate, the authentication service refused the login, or the authority did not accept the token (600) or the CUIT (601) | nothing was done; mend the credentials, retry later |
/// | `Rejected` | the authority answered with errors (`Resultado` `R`, `Errors[]`) | final for this request; fix it |
/// | `Protocol` | our side of the exchange is wrong (HTTP 4xx, a request we could not write, a read-only answer we could not read) | nothing was authorized; a bug or a misconfiguration |
///
/// `authorize` never answers `Protocol` once its request may have been processed: an answer it cannot
/// read, or one that does not name the voucher it asked for, is `NoReply`, because the voucher may
/// have been approved all the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FiscalError {
    #[error("the tax authority is unavailable, nothing was done: {0}")]
    Unavailable(String),
    #[error("no usable reply from the tax authority, the outcome is unknown: {0}")]
    NoReply(String),
    #[error("the tax authority rejected the request: {}", describe(errors))]
    Rejected {
        /// The authority's codes and messages, `Errors[]` first, then the voucher's `Observaciones[]`.
        errors: Vec<(i64, String)>,
    },
    #[error("the tax authority did not accept the organization's credentials, nothing was done: {0}")]
    Unauthenticated(String),
    /// 601: the ticket is good but does not represent the organization's CUIT (a representative's
    /// certificate not yet authorized for it in the authority's portal). The ticket is kept: the
    /// authority would refuse another login while it is valid.
    #[error("the tax authority's ticket does not represent the organization's CUIT, nothing was done: {0}")]
    NotRepresented(String),
    #[error("unexpected exchange with the tax authority: {0}")]
    Protocol(String),
}

impl FiscalError {
    /// Whether the same request may succeed later (after a consult, for `NoReply`).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            FiscalError::Unavailable(_)
                | FiscalError::NoReply(_)
                | FiscalError::Unauthenticated(_)
                | FiscalError::NotRepresented(_)
        )
    }

    /// Whether the authority may have acted on the request without us hearing of it.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, FiscalError::NoReply(_))
    }

    /// The authority's codes, for a rejection; empty otherwise.
    pub fn codes(&self) -> Vec<i64> {
        match self {
            FiscalError::Rejected { errors } => errors.iter().map(|(code, _)| *code).collect(),
            _ => Vec::new(),
        }
    }
}

fn describe(errors: &[(i64, String)]) -> String {
    if errors.is_empty() {
        return "no reason given".to_owned();
    }
    errors.iter().map(|(code, msg)| format!("{code} {msg}")).collect::<Vec<_>>().join("; ")
}

/// Whether an operation changes anything at the authority; it decides what an unreadable answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stakes {
    Read,
    Write,
}

/// The electronic-invoicing operations of the tax authority (WSFEv1), spoken as SOAP over HTTP to the
/// service's address. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct FiscalClient {
    http: reqwest::Client,
    wsfe: Url,
    authenticator: Arc<dyn Authenticator>,
}

impl std::fmt::Debug for FiscalClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FiscalClient").field("wsfe", &self.wsfe.as_str()).finish_non_exhaustive()
    }
}

/// The HTTP client of the authority's services: every call given up after `timeout`, no redirects.
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, FiscalError> {
    // reqwest is built without a TLS provider of its own; ring is the process's (as for webhooks).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("backoffice-fiscal/1")
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|error| FiscalError::Protocol(format!("cannot build the HTTP client: {error}")))
}

impl FiscalClient {
    /// A client of the WSFEv1 service at `wsfe` giving up on any call after `timeout`.
    pub fn new(wsfe: &Url, timeout: Duration, authenticator: Arc<dyn Authenticator>) -> Result<Self, FiscalError> {
        if !matches!(wsfe.scheme(), "http" | "https") {
            return Err(FiscalError::Protocol(format!("{wsfe} is not an http or https URL")));
        }
        Ok(FiscalClient { http: http_client(timeout)?, wsfe: wsfe.clone(), authenticator })
    }

    /// `FEDummy`: whether the authority's application, database and authentication servers are up.
    #[tracing::instrument(skip_all, err(Display))]
    pub async fn health(&self) -> Result<(), FiscalError> {
        let answer: wire::DummyResponse = self.call("FEDummy", &wire::DummyRequest {}, Stakes::Read).await?;
        let servers = [&answer.app_server, &answer.db_server, &answer.auth_server];
        if servers.iter().all(|state| state.eq_ignore_ascii_case("OK")) {
            Ok(())
        } else {
            Err(FiscalError::Unavailable(format!(
                "AppServer {}, DbServer {}, AuthServer {}",
                answer.app_server, answer.db_server, answer.auth_server
            )))
        }
    }

    /// `FECompUltimoAutorizado`: the last number authorized in a series (0 when none).
    #[tracing::instrument(skip_all, fields(pos = point_of_sale, voucher_type), err(Display))]
    pub async fn last_authorized(
        &self,
        issuer: Issuer,
        point_of_sale: i32,
        voucher_type: i32,
    ) -> Result<i64, FiscalError> {
        let (auth, credentials) = self.auth(issuer).await?;
        let request = wire::LastAuthorizedRequest { auth: Some(auth), point_of_sale, voucher_type };
        let answered = self.call("FECompUltimoAutorizado", &request, Stakes::Read).await.and_then(
            |answer: wire::LastAuthorizedResponse| {
                log_events(&answer.events);
                if answer.errors.is_empty() {
                    Ok(answer.number)
                } else {
                    Err(answered_errors(answer.errors, Stakes::Read))
                }
            },
        );
        self.checked(issuer, &credentials, answered).await
    }

    /// `FEParamGetPtosVenta`: the points of sale the authority has enabled for the issuer.
    #[tracing::instrument(skip_all, err(Display))]
    pub async fn points_of_sale(&self, issuer: Issuer) -> Result<Vec<wire::PointOfSale>, FiscalError> {
        let (auth, credentials) = self.auth(issuer).await?;
        let request = wire::AuthOnly { auth: Some(auth) };
        let answered = self.call("FEParamGetPtosVenta", &request, Stakes::Read).await.and_then(
            |answer: wire::PointsOfSaleResponse| {
                log_events(&answer.events);
                // 602: none enabled.
                match answer.errors.iter().all(|e| e.code == NOT_FOUND) {
                    true => Ok(answer.points),
                    false => Err(answered_errors(answer.errors, Stakes::Read)),
                }
            },
        );
        self.checked(issuer, &credentials, answered).await
    }

    /// `FECAESolicitar` for one voucher. Not idempotent at the authority: asking again for a number it
    /// approved fails with 10016. After [`FiscalError::NoReply`], [`consult`](Self::consult) the
    /// number: a stored voucher that [`matches`](StoredVoucher::matches) the request is the
    /// authorization; only a missing one may be asked for again.
    #[tracing::instrument(
        skip_all,
        fields(pos = voucher.point_of_sale, voucher_type = voucher.voucher_type, number = voucher.number),
        err(Display)
    )]
    pub async fn authorize(&self, issuer: Issuer, voucher: &VoucherRequest) -> Result<Authorization, FiscalError> {
        let mut answered = self.authorize_batch(issuer, std::slice::from_ref(voucher)).await;
        answered.pop().unwrap_or_else(|| Err(FiscalError::NoReply("no verdict on the voucher".into())))
    }

    /// `FECAESolicitar` for consecutive vouchers of one point of sale and type, in one request: each
    /// voucher's verdict, in order. A failure of the request as a whole (the authority unreachable, a
    /// lost reply, refused credentials) is every voucher's; a lost reply leaves each one's outcome
    /// unknown, to be consulted before it is asked for again.
    #[tracing::instrument(skip_all, fields(pos = vouchers.first().map(|v| v.point_of_sale), count = vouchers.len()))]
    pub async fn authorize_batch(
        &self,
        issuer: Issuer,
        vouchers: &[VoucherRequest],
    ) -> Vec<Result<Authorization, FiscalError>> {
        let answered = self.send_batch(issuer, vouchers).await;
        match answered {
            Ok(verdicts) => verdicts,
            Err(error) => vouchers.iter().map(|_| Err(error.clone())).collect(),
        }
    }

    async fn send_batch(
        &self,
        issuer: Issuer,
        vouchers: &[VoucherRequest],
    ) -> Result<Vec<Result<Authorization, FiscalError>>, FiscalError> {
        let Some(first) = vouchers.first() else { return Ok(Vec::new()) };
        let (mut header, _) = first.to_wire();
        header.count = i32::try_from(vouchers.len()).unwrap_or(i32::MAX);
        let details = vouchers.iter().map(|voucher| voucher.to_wire().1).collect();
        let (auth, credentials) = self.auth(issuer).await?;
        let request = wire::CaeRequest { auth: Some(auth), request: wire::FeCaeReq { header, details } };
        let numbers: Vec<i64> = vouchers.iter().map(|voucher| voucher.number).collect();
        let answered =
            self.call("FECAESolicitar", &request, Stakes::Write).await.map(|answer| read_batch(&numbers, answer));
        let refusal = |wanted: fn(&FiscalError) -> bool| match &answered {
            Ok(verdicts) => verdicts.iter().any(|v| v.as_ref().is_err_and(wanted)),
            Err(error) => wanted(error),
        };
        if refusal(|e: &FiscalError| matches!(e, FiscalError::Unauthenticated(_))) {
            self.authenticator.rejected(issuer, &credentials).await;
        } else if refusal(|e: &FiscalError| matches!(e, FiscalError::NotRepresented(_))) {
            self.authenticator.not_represented(issuer).await;
        }
        answered
    }

    /// `FECompTotXRequest`: the most vouchers one `FECAESolicitar` may carry.
    pub async fn batch_limit(&self, issuer: Issuer) -> Result<i32, FiscalError> {
        let (auth, credentials) = self.auth(issuer).await?;
        let answered = self
            .call("FECompTotXRequest", &wire::AuthOnly { auth: Some(auth) }, Stakes::Read)
            .await
            .and_then(|answer: wire::BatchLimitResponse| {
                log_events(&answer.events);
                if answer.errors.is_empty() && answer.per_request > 0 {
                    Ok(answer.per_request)
                } else {
                    Err(answered_errors(answer.errors, Stakes::Read))
                }
            });
        self.checked(issuer, &credentials, answered).await
    }

    /// `FECompConsultar`: the voucher the authority holds under that number, `None` when it holds
    /// none (error 602).
    #[tracing::instrument(skip_all, fields(pos = point_of_sale, voucher_type, number), err(Display))]
    pub async fn consult(
        &self,
        issuer: Issuer,
        point_of_sale: i32,
        voucher_type: i32,
        number: i64,
    ) -> Result<Option<StoredVoucher>, FiscalError> {
        let (auth, credentials) = self.auth(issuer).await?;
        let request = wire::ConsultRequest {
            auth: Some(auth),
            request: wire::ConsultQuery { voucher_type, number, point_of_sale },
        };
        let answered =
            self.call("FECompConsultar", &request, Stakes::Read).await.and_then(|answer: wire::ConsultResponse| {
                log_events(&answer.events);
                match answer.result {
                    None if answer.errors.iter().any(|e| e.code == NOT_FOUND) => Ok(None),
                    None if !answer.errors.is_empty() => Err(answered_errors(answer.errors, Stakes::Read)),
                    None => {
                        Err(FiscalError::Protocol("FECompConsultar answered neither a voucher nor an error".into()))
                    }
                    Some(_) if !answer.errors.is_empty() => Err(answered_errors(answer.errors, Stakes::Read)),
                    Some(detail) => StoredVoucher::from_wire(detail).map(Some).map_err(FiscalError::Protocol),
                }
            });
        self.checked(issuer, &credentials, answered).await
    }

    async fn auth(&self, issuer: Issuer) -> Result<(wire::Auth, Credentials), FiscalError> {
        let credentials = self.authenticator.credentials(issuer).await?;
        let auth = wire::Auth { token: credentials.token.clone(), sign: credentials.sign.clone(), cuit: issuer.cuit() };
        Ok((auth, credentials))
    }

    /// `answered`, after telling the authenticator when the authority refused its credentials or the
    /// CUIT they were sent for.
    async fn checked<T>(
        &self,
        issuer: Issuer,
        credentials: &Credentials,
        answered: Result<T, FiscalError>,
    ) -> Result<T, FiscalError> {
        match &answered {
            Err(FiscalError::Unauthenticated(_)) => self.authenticator.rejected(issuer, credentials).await,
            Err(FiscalError::NotRepresented(_)) => self.authenticator.not_represented(issuer).await,
            _ => {}
        }
        answered
    }

    async fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        operation: &str,
        request: &Q,
        stakes: Stakes,
    ) -> Result<A, FiscalError> {
        let body = soap::request(operation, request)
            .map_err(|error| FiscalError::Protocol(format!("cannot write {operation}: {error}")))?;
        let response = self
            .http
            .post(self.wsfe.clone())
            .header(reqwest::header::CONTENT_TYPE, soap::CONTENT_TYPE)
            .header("SOAPAction", soap::action(operation))
            .body(body)
            .send()
            .await
            .map_err(|error| sending_failed(&error))?;
        let status = response.status();
        // A body cut short or late is an answer lost on the way, whatever the status said.
        let bytes = response.bytes().await.map_err(|error| FiscalError::NoReply(events::error_chain(&error)))?;
        // A SOAP fault comes with HTTP 500: the service refused the request as a whole.
        if let Some(SoapError::Fault { code, message }) = soap::read_fault(&bytes) {
            let said = format!("{operation}: SOAP fault {code}: {message}");
            return Err(if code.ends_with("Client") {
                FiscalError::Protocol(said)
            } else {
                FiscalError::Unavailable(said)
            });
        }
        if let Some(error) = status_error(status.as_u16(), &bytes) {
            return Err(error);
        }
        soap::read_response(&bytes, operation).map_err(|error| {
            let reason = format!("cannot read the answer to {operation}: {error}");
            match stakes {
                Stakes::Write => FiscalError::NoReply(reason),
                Stakes::Read => FiscalError::Protocol(reason),
            }
        })
    }
}

/// `FECompConsultar`'s "no such voucher".
const NOT_FOUND: i64 = 602;

/// A request that did not get an answer. A connection that could not be made (refused, no route,
/// name not resolved, TLS refused, connect timeout) carried nothing; anything after that may have.
fn sending_failed(error: &reqwest::Error) -> FiscalError {
    if error.is_connect() {
        FiscalError::Unavailable(events::error_chain(error))
    } else if error.is_builder() || error.is_redirect() {
        FiscalError::Protocol(events::error_chain(error))
    } else {
        FiscalError::NoReply(events::error_chain(error))
    }
}

/// What a non-2xx status means. A gateway's 502 or 504 means the request went on to the service,
/// which may have acted on it; every other 5xx (and 408, 429) is the service declining to act.
fn status_error(status: u16, body: &[u8]) -> Option<FiscalError> {
    let said = || {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_owned();
        if text.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {text}") }
    };
    match status {
        200..=299 => None,
        502 | 504 => Some(FiscalError::NoReply(said())),
        408 | 429 | 500..=599 => Some(FiscalError::Unavailable(said())),
        _ => Some(FiscalError::Protocol(said())),
    }
}

/// The authority's internal failures (501 database, 502 transaction in progress): it did not finish,
/// and says nothing of whether it started.
const INTERNAL_ERRORS: [i64; 2] = [501, 502];

/// `Errors[]` answered without a verdict on any voucher. Internal failures alone are an outage (for a
/// read) or an unknown outcome (for an authorization); anything else is the authority's refusal.
fn answered_errors(errors: Vec<wire::Message>, stakes: Stakes) -> FiscalError {
    if let Some(refusal) = auth_refusal(&errors) {
        return refusal;
    }
    if !errors.is_empty() && errors.iter().all(|e| INTERNAL_ERRORS.contains(&e.code)) {
        let reason = errors.iter().map(|e| format!("{} {}", e.code, e.msg)).collect::<Vec<_>>().join("; ");
        return match stakes {
            Stakes::Read => FiscalError::Unavailable(reason),
            Stakes::Write => FiscalError::NoReply(reason),
        };
    }
    rejected(errors, Vec::new())
}

fn rejected(errors: Vec<wire::Message>, observations: Vec<wire::Message>) -> FiscalError {
    FiscalError::Rejected { errors: errors.into_iter().chain(observations).map(|m| (m.code, m.msg)).collect() }
}

/// The authority's refusal of the ticket itself: the token or sign did not validate or expired.
const TICKET_REFUSED: i64 = 600;
/// The authority's refusal of `Auth.Cuit`: not one the (good) ticket represents.
const NOT_REPRESENTED: i64 = 601;

/// `Errors[]` that refuse who asked rather than what was asked: nothing was done. Only a refused
/// ticket is [`FiscalError::Unauthenticated`], which makes the adapter drop it.
fn auth_refusal(errors: &[wire::Message]) -> Option<FiscalError> {
    let refused: Vec<String> = errors
        .iter()
        .filter(|e| [TICKET_REFUSED, NOT_REPRESENTED].contains(&e.code))
        .map(|e| format!("{} {}", e.code, e.msg))
        .collect();
    if errors.iter().any(|e| e.code == TICKET_REFUSED) {
        Some(FiscalError::Unauthenticated(refused.join("; ")))
    } else {
        (!refused.is_empty()).then(|| FiscalError::NotRepresented(refused.join("; ")))
    }
}

/// Reads `FECAESolicitar`'s answer for each voucher `numbers` asked for: each voucher's detail with
/// the answer's header (and, for a single voucher or when no voucher was answered, its `Errors`).
fn read_batch(numbers: &[i64], answer: wire::CaeResponse) -> Vec<Result<Authorization, FiscalError>> {
    log_events(&answer.events);
    let wire::CaeResponse { header, mut details, errors, .. } = answer;
    let shared_errors = numbers.len() == 1 || details.is_empty();
    numbers
        .iter()
        .map(|&number| {
            let detail = details.iter().position(|d| d.number_from == number).map(|at| details.swap_remove(at));
            let own = wire::CaeResponse {
                header: header.clone(),
                details: detail.into_iter().collect(),
                errors: if shared_errors { errors.clone() } else { Vec::new() },
                events: Vec::new(),
            };
            read_authorization(number, own)
        })
        .collect()
}

/// Reads `FECAESolicitar`'s answer for the one voucher `number` asked for.
fn read_authorization(number: i64, answer: wire::CaeResponse) -> Result<Authorization, FiscalError> {
    if let Some(refusal) = auth_refusal(&answer.errors) {
        return Err(refusal);
    }
    let wire::CaeResponse { header, details, errors, .. } = answer;
    let detail = details.into_iter().find(|d| d.number_from == number);
    let internal_only = !errors.is_empty() && errors.iter().all(|e| INTERNAL_ERRORS.contains(&e.code));
    if internal_only && detail.as_ref().is_none_or(|d| d.result != "A") {
        return Err(answered_errors(errors, Stakes::Write));
    }
    let result = detail.as_ref().map(|d| d.result.clone()).or_else(|| header.map(|h| h.result));
    match (detail, result.as_deref()) {
        (Some(detail), Some("A")) if errors.is_empty() => {
            let cae_due = detail
                .cae_due
                .ok_or_else(|| FiscalError::NoReply(format!("voucher {number} approved without CAEFchVto")))?;
            if !well_formed_cae(&detail.cae) {
                return Err(FiscalError::NoReply(format!("voucher {number} approved with a malformed CAE")));
            }
            Ok(Authorization {
                cae: detail.cae,
                cae_due,
                number,
                observations: detail.observations.into_iter().map(|m| (m.code, m.msg)).collect(),
            })
        }
        (detail, Some("R")) => Err(rejected(errors, detail.map(|d| d.observations).unwrap_or_default())),
        // Errors without a voucher result: the request as a whole was refused (authentication, header).
        (None, None) if !errors.is_empty() => Err(answered_errors(errors, Stakes::Write)),
        (_, result) => Err(FiscalError::NoReply(format!(
            "the answer gives no verdict on voucher {number} (result {result:?}, {} errors)",
            errors.len()
        ))),
    }
}

fn log_events(events: &[wire::Message]) {
    for event in events {
        tracing::info!(code = event.code, message = %event.msg, "tax authority event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;
    use wire::{CaeResponse, DetResponse, Message};

    fn detail(result: &str, cae: &str, observations: Vec<Message>) -> DetResponse {
        DetResponse {
            concept: 1,
            doc_type: 99,
            doc_number: 0,
            number_from: 8,
            number_to: 8,
            date: Some(date!(2025 - 03 - 07)),
            result: result.into(),
            observations,
            cae: cae.into(),
            cae_due: (result == "A").then_some(date!(2025 - 03 - 17)),
        }
    }

    fn answer(details: Vec<DetResponse>, errors: Vec<Message>) -> CaeResponse {
        CaeResponse { header: None, details, errors, events: vec![] }
    }

    #[test]
    fn statuses_keep_refusals_apart_from_lost_answers() {
        assert_eq!(status_error(200, b"{}"), None);
        assert!(matches!(status_error(503, b""), Some(FiscalError::Unavailable(m)) if m == "HTTP 503"));
        assert!(matches!(status_error(500, b"db down"), Some(FiscalError::Unavailable(m)) if m == "HTTP 500: db down"));
        assert!(matches!(status_error(429, b""), Some(FiscalError::Unavailable(_))));
        assert!(matches!(status_error(504, b""), Some(FiscalError::NoReply(_))));
        assert!(matches!(status_error(502, b""), Some(FiscalError::NoReply(_))));
        assert!(matches!(status_error(400, b"bad"), Some(FiscalError::Protocol(_))));
        assert!(matches!(status_error(404, b""), Some(FiscalError::Protocol(_))));
    }

    #[test]
    fn an_approval_carries_its_cae_expiry_and_observations() {
        let observed = vec![Message::new(10217, "note")];
        let approved = read_authorization(8, answer(vec![detail("A", "71234567890123", observed)], vec![]));
        assert_eq!(
            approved,
            Ok(Authorization {
                cae: "71234567890123".into(),
                cae_due: date!(2025 - 03 - 17),
                number: 8,
                observations: vec![(10217, "note".into())],
            })
        );
    }

    #[test]
    fn rejections_gather_errors_and_the_vouchers_observations() {
        let rejected = read_authorization(
            8,
            answer(vec![detail("R", "", vec![Message::new(10048, "total")])], vec![Message::new(10016, "number")]),
        );
        assert_eq!(rejected.clone().map_err(|e| e.codes()), Err(vec![10016, 10048]));
        assert!(!rejected.is_err_and(|e| e.is_retryable()));
        // A refusal of the whole request (a header the authority refuses) has no voucher result.
        let refused = read_authorization(8, answer(vec![], vec![Message::new(10001, "CantReg")]));
        assert_eq!(refused.map_err(|e| e.codes()), Err(vec![10001]));
        // Refused credentials did nothing: they are told apart from a rejection of the voucher.
        let unauthenticated = read_authorization(8, answer(vec![], vec![Message::new(600, "token vencido")]));
        assert_eq!(unauthenticated, Err(FiscalError::Unauthenticated("600 token vencido".into())));
    }

    #[test]
    fn an_answer_that_settles_nothing_leaves_the_outcome_unknown() {
        let unknown = |answer| read_authorization(8, answer).is_err_and(|e: FiscalError| e.outcome_unknown());
        assert!(unknown(answer(vec![], vec![])));
        assert!(unknown(answer(vec![detail("A", "123", vec![])], vec![])), "malformed CAE");
        let mut other = detail("A", "71234567890123", vec![]);
        other.number_from = 9;
        assert!(unknown(answer(vec![other], vec![])), "another voucher's answer");
        let mut undated = detail("A", "71234567890123", vec![]);
        undated.cae_due = None;
        assert!(unknown(answer(vec![undated], vec![])));
        // The authority's own internal failure says nothing of the voucher.
        assert!(unknown(answer(vec![], vec![Message::new(501, "Error interno de base de datos")])));
        assert!(unknown(answer(vec![detail("R", "", vec![])], vec![Message::new(502, "Transaccion activa")])));
        // For a read it is an outage.
        let outage = answered_errors(vec![Message::new(501, "db")], Stakes::Read);
        assert!(matches!(outage, FiscalError::Unavailable(_)));
        let mixed = answered_errors(vec![Message::new(501, "db"), Message::new(10015, "doc")], Stakes::Read);
        assert_eq!(mixed.codes(), vec![501, 10015]);
        let cuit = answered_errors(vec![Message::new(601, "CUIT no representada")], Stakes::Read);
        assert!(matches!(cuit, FiscalError::NotRepresented(m) if m.contains("601")));
    }
}
