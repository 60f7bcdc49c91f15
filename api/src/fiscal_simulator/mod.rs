//! A faithful, scriptable simulator of the tax authority's electronic invoicing (WSFEv1) and its
//! authentication service (WSAA), served over HTTP at the authority's own paths and in its protocol:
//! SOAP 1.1 at `/wsfev1/service.asmx` (the operation's element and `SOAPAction`, fields as
//! `commands::fiscal::wire` spells them) and `loginCms` at `/ws/services/LoginCms` ([`login`]).
//!
//! Started by `backoffice fiscal-simulator` alone, and inside `backoffice all` and
//! `backoffice commands` when `FISCAL_URL` is unset, on `FISCAL_SIMULATOR_ADDR` (default
//! `127.0.0.1:8099`). Its behaviour follows `reference/fiscal-ar.md`; the rules themselves are pure
//! functions in [`rules`], its memory is Postgres ([`store`], `schema/0021_fiscal_simulator.sql`), its
//! script is in memory ([`script`]).
//!
//! # Operations
//!
//! - `loginCms`: a login ticket for the certificate that signed the request ([`login`] has the rules:
//!   the signature verified, the certificate valid, service `wsfe`, times in range, no second ticket
//!   while one is valid).
//! - `FEDummy`: `AppServer`, `DbServer` (a query to Postgres), `AuthServer`, each `OK`.
//! - `FEParamGetPtosVenta`: the points of sale enabled for the CUIT (scripted; 1 to 10 otherwise).
//! - `FECompTotXRequest`: `RegXReq`, the most vouchers one `FECAESolicitar` may carry.
//! - `FECompUltimoAutorizado`: the series' last approved number, 0 when none.
//! - `FECAESolicitar`: up to `RegXReq` (250) consecutive vouchers of one series per request, judged in
//!   order, each against the series as the ones before it left it (so a voucher after a rejected one
//!   is not the next number: 10016). Approved: `Resultado` `A`, a random 14-digit CAE and `CAEFchVto`
//!   = voucher date + 10 days, stored. Rejected: `R`; for a single voucher `Errors[]` holds the number's
//!   and the request's failures and its `Observaciones[]` the rest; in a batch each voucher's failures
//!   are in its own `Observaciones[]`; nothing stored. `FeCabResp.Resultado` is `A`, `R` or `P`.
//!   Numbering is per issuer CUIT, point of sale and voucher type; the authorizations of one series
//!   take turns (a transaction-scoped advisory lock), so concurrent requests for one number approve
//!   exactly one.
//! - `FECompConsultar`: the voucher as stored (`ResultGet`, with `CodAutorizacion` and `FchVto`), or
//!   error 602.
//!
//! Every operation but `FEDummy` checks `Auth`: the token and sign of a ticket it issued and that has
//! not expired (else 600), for the CUIT the certificate names (else 601). A request that is not the
//! operation's SOAP, or whose `SOAPAction` names another operation, answers a `soap:Client` fault
//! (HTTP 500); a Postgres failure answers HTTP 500 (error 501) with nothing stored. The authority's
//! "today" is the date in Argentina (UTC−3).
//!
//! # Codes
//!
//! Codes are WSFEv1's own: the reference names 10016, 10246 and 602, and the rest were taken from the
//! validation tables of the authority's developer manual (through a public transcription of them, not
//! checked against the manual itself) for the rules the reference states. Messages are the authority's style (Spanish, no accents) but not its literal texts, except
//! 10016's and 602's. Where the manual allows something the reference does not mention (batches,
//! `PeriodoAsoc`, other currencies' official rates, the amount above which consumers must be
//! identified), the simulator keeps to the reference.
//!
//! | code | where | when |
//! |---|---|---|
//! | 500 | `Errors` | no `Auth` |
//! | 600 | `Errors` | empty `Token` or `Sign`, `Auth.Cuit` not a valid CUIT, a token and sign it did not issue, or an expired ticket |
//! | 601 | `Errors` | `Auth.Cuit` is not the CUIT the ticket's certificate names |
//! | 501 | `Errors` (HTTP 500) | the simulator's database failed; nothing was done |
//! | 602 | `Errors` | `FECompConsultar`: no such voucher |
//! | 10001, 10002, 10003 | `Errors` | `CantReg` below 1, not the number of vouchers sent, or above 250 |
//! | 10004 | `Errors` | `PtoVta` not in 1..=99998 |
//! | 10006, 10007 | `Errors` | `CbteTipo` not positive, or not a type WSFEv1 authorizes (A 1–5, 201–203; B 6–10, 206–208; C 11–13, 15, 211–213; M 51–54) |
//! | 10008 | `Obs` | `CbteDesde` not in 1..=99999999 |
//! | 10012 | `Obs` | `CbteHasta` differs from `CbteDesde` |
//! | 10013 | `Obs` | class A or M to a receiver not identified by CUIT (`DocTipo` 80) |
//! | 10015 | `Obs` | `DocTipo` 80 with an invalid CUIT, or 99 with a number other than 0 |
//! | 10016 | `Errors` | the number is not the series' last + 1 (resending an approved voucher included), or the date is before the series' last voucher's |
//! | 10016 | `Obs` | `CbteFch` more than 5 days (concept 1) or 10 days (concepts 2, 3) from today |
//! | 10018 | `Obs` | `ImpIVA` above 0 without `Iva` |
//! | 10019 | `Obs` | an `Iva` line with an unknown rate code (known: 3, 4, 5, 6, 8, 9) |
//! | 10020, 10021 | `Obs` | a negative `BaseImp` or `Importe` in `Iva` |
//! | 10022 | `Obs` | a rate code repeated in `Iva` |
//! | 10023 | `Obs` | `ImpIVA` is not the sum of `Iva[].Importe` (±0.01) |
//! | 10024 | `Obs` | `ImpTrib` above 0 without `Tributos`, or `Tributos` with `ImpTrib` 0 |
//! | 10029 | `Obs` | `ImpTrib` is not the sum of `Tributos[].Importe` (±0.01) |
//! | 10030 | `Obs` | `Concepto` not 1, 2 or 3 |
//! | 10032 | `Obs` | `FchServDesde` after `FchServHasta` |
//! | 10036 | `Obs` | `FchVtoPago` before the voucher date |
//! | 10037 | `Obs` | `MonId` not `PES`, `DOL` or `060` |
//! | 10038 | `Obs` | a foreign currency without a positive `MonCotiz` |
//! | 10039 | `Obs` | `PES` with `MonCotiz` other than exactly 1 |
//! | 10040 | `Obs` | an associated voucher of a type this voucher may not associate (notes: their own letter's invoices, notes and receipts; invoices: remitos only) |
//! | 10043, 10044, 10047 | `Obs` | `ImpTotConc`, `ImpOpEx`, `ImpIVA` negative, or not 0 on class C |
//! | 10045, 10046, 10065 | `Obs` | `ImpNeto`, `ImpTrib`, `ImpTotal` negative |
//! | 10048 | `Obs` | `ImpTotal` ≠ `ImpTotConc` + `ImpNeto` + `ImpOpEx` + `ImpTrib` + `ImpIVA` (±0.01) |
//! | 10049 | `Obs` | concept 2 or 3 without `FchServDesde`, `FchServHasta` and `FchVtoPago` |
//! | 10051 | `Obs` | an `Iva` line whose `Importe` is not `BaseImp` × its rate (±0.01) |
//! | 10057, 10058, 10059, 10060 | `Obs` | an associated voucher with no type, a `PtoVta` out of 1..=99999, a `Nro` out of 1..=99999999, or repeated |
//! | 10061 | `Obs` | `ImpNeto` is not the sum of `Iva[].BaseImp` (±0.01), classes A, B, M |
//! | 10069 | `Obs` | the receiver's CUIT is the issuer's |
//! | 10070 | `Obs` | `ImpNeto` above 0 without `Iva` (classes A, B, M) |
//! | 10071 | `Obs` | `Iva` on a class C voucher |
//! | 10197 | `Obs` | a credit or debit note without `CbtesAsoc` |
//! | 10242 | `Obs` | `CondicionIVAReceptorId` not a known condition (1, 4, 5, 6, 7, 8, 9, 10, 13, 15, 16) |
//! | 10243 | `Obs` | `CondicionIVAReceptorId` does not fit the letter: A and M only to 1, 6, 13, 16; B to the rest; C to any |
//! | 10246 | `Obs`, approved | `CondicionIVAReceptorId` missing: approved with this observation |
//! | 10217 | `Obs`, approved | the default observation of a scripted `approve_with_observations` |
//! | 11000, 11001 | `Errors` | `FECompUltimoAutorizado`: `PtoVta` or `CbteTipo` invalid |
//! | 10200, 10201, 10202 | `Errors` | `FECompConsultar`: `PtoVta`, `CbteTipo` or `CbteNro` invalid |
//!
//! `Obs` entries reject the voucher (`Resultado` `R`) except those marked approved.
//!
//! # Scripting, for tests and demos
//!
//! - `POST /_simulator/outcomes` `{"issuer_tax_id": <CUIT>, "point_of_sale": n, "outcomes": [...]}`
//!   queues outcomes for that issuer and point of sale (any voucher type), consumed one per
//!   `FECAESolicitar` that passes the `Auth` and header checks: `{"outcome": "approve"}` (judge by
//!   the rules; the default when nothing is queued), `{"outcome": "approve_with_observations",
//!   "code"?, "message"?}` (judge, and add that observation if approved), `{"outcome": "reject",
//!   "code": n, "message": "..."}` (reject with that error whatever the voucher; nothing stored),
//!   `{"outcome": "unavailable"}` (HTTP 503 before processing anything), `{"outcome":
//!   "lost_reply"}` (judge and store as usual, then hold the request open without answering for
//!   ten minutes, longer than any client waits). Answers `{"pending": n}`. The queue is this
//!   process's memory.
//! - `GET /_simulator/vouchers?issuer_tax_id=&point_of_sale=&voucher_type=&limit=` lists the
//!   approved vouchers (every filter optional; at most `limit`, default 1000, up to 10000), in
//!   series and number order: `{"vouchers": [{"issuer_tax_id", "point_of_sale", "voucher_type",
//!   "number", "date", "cae", "cae_due", "voucher": <ResultGet>}]}`.
//! - `POST /_simulator/tickets` `{"lifetime_seconds": n}`: tickets issued from now on last `n` seconds
//!   (default twelve hours).
//! - `POST /_simulator/points-of-sale` `{"issuer_tax_id": <CUIT>, "points_of_sale": [n, ...]}`: the
//!   points of sale `FEParamGetPtosVenta` answers for that CUIT from now on.
//! - `GET /_simulator/requests`: how many WSFEv1 requests this process served, by operation.
//! - `POST /_simulator/latency` `{"milliseconds": n}`: each `FECAESolicitar` takes `n` ms more to
//!   answer from now on (the authority's processing time; default none).

pub mod login;
pub mod rules;
pub mod script;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use commands::fiscal::soap::{self, FEV1_NAMESPACE};
use commands::fiscal::wire::{
    AuthOnly, BatchLimitResponse, CabRequest, CabResponse, CaeRequest, CaeResponse, ConsultRequest, ConsultResponse,
    DetRequest, DetResponse, DummyResponse, LastAuthorizedRequest, LastAuthorizedResponse, Message, PointOfSale,
    PointsOfSaleResponse, StoredAuthorization, StoredDetail,
};
use commands::fiscal::{WSAA_PATH, WSFE_PATH};
use events::catalogue::AR_OFFSET;
use poem::http::{HeaderMap, StatusCode};
use poem::web::{Data, Query};
use poem::{Endpoint, EndpointExt, Response, Route, get, handler, post};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use sqlx::PgPool;
use time::{Date, OffsetDateTime};

use rules::Verdict;
use script::{DEFAULT_OBSERVATION, EnabledPoints, Latency, Outcome, Queued, Script, TicketLifetime};
use store::SeriesKey;

/// How long a `lost_reply` request is held before the connection is answered 504 and closed.
pub const LOST_REPLY_HOLD: Duration = Duration::from_secs(600);

/// The days a CAE lasts past its voucher's date.
const CAE_DAYS: i64 = 10;

/// The simulator's state: its memory and its script.
pub struct Simulator {
    pool: PgPool,
    script: Script,
}

/// How many connections the simulator keeps of its own.
const CONNECTIONS: u32 = 4;

/// Serves the simulator on `listener` until the server stops, on connections of its own to `pool`'s
/// database: an authority is another system, and must not wait for connections the commands that
/// await its answers hold.
pub async fn serve(listener: tokio::net::TcpListener, pool: PgPool) -> std::io::Result<()> {
    let options = pool.connect_options().as_ref().clone();
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(CONNECTIONS).connect_lazy_with(options);
    let app = routes(Arc::new(Simulator { pool, script: Script::default() }));
    let acceptor = poem::listener::TcpAcceptor::from_std(listener.into_std()?)?;
    poem::Server::new_with_acceptor(acceptor).run(app).await
}

fn routes(simulator: Arc<Simulator>) -> impl Endpoint {
    Route::new()
        .at(WSFE_PATH, post(wsfe))
        .at(WSAA_PATH, post(wsaa))
        .at("/_simulator/outcomes", post(queue_outcomes))
        .at("/_simulator/vouchers", get(list_vouchers))
        .at("/_simulator/tickets", post(set_ticket_lifetime))
        .at("/_simulator/points-of-sale", post(enable_points_of_sale))
        .at("/_simulator/requests", get(requests_served))
        .at("/_simulator/latency", post(set_latency))
        .data(simulator)
}

#[handler]
async fn wsaa(Data(simulator): Data<&Arc<Simulator>>, body: Vec<u8>) -> Response {
    login::login(simulator, &body).await
}

/// Every WSFEv1 operation: the body's element names it, and `SOAPAction` must agree.
#[handler]
async fn wsfe(Data(simulator): Data<&Arc<Simulator>>, headers: &HeaderMap, body: Vec<u8>) -> Response {
    let operation = match soap::requested_operation(&body) {
        Ok(operation) => operation,
        Err(error) => return login::fault("soap:Client", &format!("Unable to handle request: {error}")),
    };
    if let Some(action) = headers.get("SOAPAction") {
        let action = action.to_str().unwrap_or_default();
        if action.trim().trim_matches('"') != format!("{FEV1_NAMESPACE}{operation}") {
            return login::fault(
                "soap:Client",
                &format!("Server did not recognize the value of HTTP Header SOAPAction: {action}."),
            );
        }
    }
    simulator.script.count(&operation);
    match operation.as_str() {
        "FEDummy" => fe_dummy(simulator).await,
        "FECompUltimoAutorizado" => {
            with_request(&body, &operation, |request| fe_comp_ultimo_autorizado(simulator, request)).await
        }
        "FECAESolicitar" => with_request(&body, &operation, |request| fe_cae_solicitar(simulator, request)).await,
        "FECompConsultar" => with_request(&body, &operation, |request| fe_comp_consultar(simulator, request)).await,
        "FEParamGetPtosVenta" => {
            with_request(&body, &operation, |request| fe_param_get_ptos_venta(simulator, request)).await
        }
        "FECompTotXRequest" => {
            with_request(&body, &operation, |request| fe_comp_tot_x_request(simulator, request)).await
        }
        other => login::fault("soap:Client", &format!("Unknown operation {other}")),
    }
}

/// `handle`'s answer to the operation's fields, or the fault a malformed request gets.
async fn with_request<T: DeserializeOwned, F: Future<Output = Response>>(
    body: &[u8],
    operation: &str,
    handle: impl FnOnce(T) -> F,
) -> Response {
    match soap::read_request(body, operation) {
        Ok(request) => handle(request).await,
        Err(error) => login::fault("soap:Client", &format!("Server was unable to read request: {error}")),
    }
}

async fn fe_dummy(simulator: &Simulator) -> Response {
    let database = sqlx::query("select 1").execute(&simulator.pool).await;
    let db_server = if database.is_ok() { "OK" } else { "ERROR" };
    answer("FEDummy", &DummyResponse { app_server: "OK".into(), db_server: db_server.into(), auth_server: "OK".into() })
}

/// Who asks, or the answer refusing them (`refuse` writes the operation's answer with those errors).
async fn authenticated(
    simulator: &Simulator,
    operation: &str,
    auth: Option<&commands::fiscal::wire::Auth>,
    refuse: impl FnOnce(Vec<Message>) -> Response,
) -> Result<i64, Response> {
    match login::authenticate(&simulator.pool, auth).await {
        Ok(Ok(cuit)) => Ok(cuit),
        Ok(Err(errors)) => Err(refuse(errors)),
        Err(error) => Err(storage_failed(operation, &error)),
    }
}

async fn fe_comp_ultimo_autorizado(simulator: &Simulator, request: LastAuthorizedRequest) -> Response {
    const OPERATION: &str = "FECompUltimoAutorizado";
    let refuse = |errors: Vec<Message>| {
        answer(
            OPERATION,
            &LastAuthorizedResponse { point_of_sale: 0, voucher_type: 0, number: 0, errors, events: vec![] },
        )
    };
    let cuit = match authenticated(simulator, OPERATION, request.auth.as_ref(), refuse).await {
        Ok(cuit) => cuit,
        Err(refused) => return refused,
    };
    let mut errors = Vec::new();
    if !(1..=99_998).contains(&request.point_of_sale) {
        errors.push(Message::new(11000, "El PtoVta debe ser valido comprendido entre 1 y 99998."));
    }
    if rules::class_of(request.voucher_type).is_none() {
        errors.push(Message::new(
            11001,
            "El CbteTipo debe ser alguno de los habilitados. Consultar metodo FEParamGetTiposCbte.",
        ));
    }
    if !errors.is_empty() {
        return refuse(errors);
    }
    let key = SeriesKey { issuer: cuit, point_of_sale: request.point_of_sale, voucher_type: request.voucher_type };
    match store::last_number(&simulator.pool, key).await {
        Ok(number) => answer(
            OPERATION,
            &LastAuthorizedResponse {
                point_of_sale: request.point_of_sale,
                voucher_type: request.voucher_type,
                number,
                errors: vec![],
                events: vec![],
            },
        ),
        Err(error) => storage_failed(OPERATION, &error),
    }
}

async fn fe_param_get_ptos_venta(simulator: &Simulator, request: AuthOnly) -> Response {
    const OPERATION: &str = "FEParamGetPtosVenta";
    let refuse =
        |errors: Vec<Message>| answer(OPERATION, &PointsOfSaleResponse { points: vec![], errors, events: vec![] });
    let cuit = match authenticated(simulator, OPERATION, request.auth.as_ref(), refuse).await {
        Ok(cuit) => cuit,
        Err(refused) => return refused,
    };
    let points: Vec<PointOfSale> = simulator
        .script
        .points_of_sale(cuit)
        .into_iter()
        .map(|number| PointOfSale {
            number,
            emission_type: "CAE - RECE".into(),
            blocked: "N".into(),
            withdrawn: "NULL".into(),
        })
        .collect();
    let errors = if points.is_empty() { vec![Message::new(602, "Sin Resultados: ")] } else { vec![] };
    answer(OPERATION, &PointsOfSaleResponse { points, errors, events: vec![] })
}

async fn fe_comp_tot_x_request(simulator: &Simulator, request: AuthOnly) -> Response {
    const OPERATION: &str = "FECompTotXRequest";
    let refuse =
        |errors: Vec<Message>| answer(OPERATION, &BatchLimitResponse { per_request: 0, errors, events: vec![] });
    if let Err(refused) = authenticated(simulator, OPERATION, request.auth.as_ref(), refuse).await {
        return refused;
    }
    answer(OPERATION, &BatchLimitResponse { per_request: rules::MAX_BATCH, errors: vec![], events: vec![] })
}

async fn fe_comp_consultar(simulator: &Simulator, request: ConsultRequest) -> Response {
    const OPERATION: &str = "FECompConsultar";
    let refuse = |errors: Vec<Message>| answer(OPERATION, &ConsultResponse { result: None, errors, events: vec![] });
    let cuit = match authenticated(simulator, OPERATION, request.auth.as_ref(), refuse).await {
        Ok(cuit) => cuit,
        Err(refused) => return refused,
    };
    let query = request.request;
    let mut errors = Vec::new();
    if !(1..=99_998).contains(&query.point_of_sale) {
        errors.push(Message::new(10200, "No ingreso el Punto de Venta o el formato es invalido."));
    }
    if rules::class_of(query.voucher_type).is_none() {
        errors.push(Message::new(10201, "No ingreso el Tipo de Comprobante, o el tipo de comprobante es invalido."));
    }
    if !(1..=rules::MAX_NUMBER).contains(&query.number) {
        errors.push(Message::new(10202, "No ingreso el numero de comprobante o el formato es invalido."));
    }
    if !errors.is_empty() {
        return refuse(errors);
    }
    let key = SeriesKey { issuer: cuit, point_of_sale: query.point_of_sale, voucher_type: query.voucher_type };
    match store::find(&simulator.pool, key, query.number).await {
        Ok(Some(text)) => match serde_json::from_str::<StoredDetail>(&text) {
            Ok(stored) => answer(OPERATION, &ConsultResponse { result: Some(stored), errors: vec![], events: vec![] }),
            Err(error) => {
                tracing::error!(%error, "fiscal simulator: a stored voucher does not read back");
                internal_error(OPERATION)
            }
        },
        Ok(None) => {
            refuse(vec![Message::new(602, "No existen datos en nuestros registros para los parametros ingresados.")])
        }
        Err(error) => storage_failed(OPERATION, &error),
    }
}

async fn fe_cae_solicitar(simulator: &Simulator, request: CaeRequest) -> Response {
    const OPERATION: &str = "FECAESolicitar";
    let now = OffsetDateTime::now_utc().to_offset(AR_OFFSET);
    let header = request.request.header;
    let refuse = |errors: Vec<Message>| {
        answer(OPERATION, &CaeResponse { header: None, details: vec![], errors, events: vec![] })
    };
    let cuit = match authenticated(simulator, OPERATION, request.auth.as_ref(), refuse).await {
        Ok(cuit) => cuit,
        Err(refused) => return refused,
    };
    let head = |result: &str| CabResponse {
        cuit,
        point_of_sale: header.point_of_sale,
        voucher_type: header.voucher_type,
        processed_at: processed_at(now),
        count: header.count,
        result: result.to_owned(),
        reprocessed: "N".to_owned(),
    };
    // The authority's own processing time, as scripted; no connection or lock is held meanwhile.
    let latency = simulator.script.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let details = request.request.details;
    let header_errors = rules::check_header(&header, details.len());
    if !header_errors.is_empty() {
        return answer(
            OPERATION,
            &CaeResponse { header: Some(head("R")), details: vec![], errors: header_errors, events: vec![] },
        );
    }
    let key = SeriesKey { issuer: cuit, point_of_sale: header.point_of_sale, voucher_type: header.voucher_type };
    let outcome = simulator.script.next(cuit, header.point_of_sale);
    let decided = match &outcome {
        Outcome::Unavailable => {
            return Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .content_type("text/plain")
                .body("Servicio no disponible (simulado)");
        }
        Outcome::Reject { code, message } => Ok(details
            .iter()
            .map(|_| Decided {
                verdict: Verdict::Rejected { errors: vec![Message::new(*code, message.clone())], observations: vec![] },
                authorization: None,
            })
            .collect()),
        Outcome::ApproveWithObservations { code, message } => {
            let observation = Message::new(
                code.unwrap_or(DEFAULT_OBSERVATION.0),
                message.clone().unwrap_or_else(|| DEFAULT_OBSERVATION.1.to_owned()),
            );
            simulator.decide(key, &header, &details, now, Some(observation)).await
        }
        Outcome::Approve | Outcome::LostReply => simulator.decide(key, &header, &details, now, None).await,
    };
    let decided = match decided {
        Ok(decided) => decided,
        Err(Failure::Storage(error)) => return storage_failed(OPERATION, &error),
        Err(Failure::Encoding(error)) => {
            tracing::error!(%error, "fiscal simulator: cannot encode a voucher");
            return internal_error(OPERATION);
        }
    };
    let approved = decided.iter().filter(|d| d.authorization.is_some()).count();
    let result = match approved {
        n if n == decided.len() => "A",
        0 => "R",
        _ => "P",
    };
    // One voucher's errors answer in `Errors`; in a batch each voucher's own go in its `Observaciones`.
    let single = decided.len() == 1;
    let mut errors = Vec::new();
    let mut outcomes = Vec::with_capacity(decided.len());
    for (detail, decided) in details.iter().zip(decided) {
        let (voucher_result, observations) = match decided.verdict {
            Verdict::Approved { observations } => ("A", observations),
            Verdict::Rejected { errors: own, observations } if single => {
                errors = own;
                ("R", observations)
            }
            Verdict::Rejected { errors: own, observations } => ("R", own.into_iter().chain(observations).collect()),
        };
        let (cae, cae_due) = decided.authorization.map_or((String::new(), None), |(cae, due)| (cae, Some(due)));
        outcomes.push(DetResponse {
            concept: detail.concept,
            doc_type: detail.doc_type,
            doc_number: detail.doc_number,
            number_from: detail.number_from,
            number_to: detail.number_to,
            date: Some(detail.date.unwrap_or(now.date())),
            result: voucher_result.to_owned(),
            observations,
            cae,
            cae_due,
        });
    }
    let response = CaeResponse { header: Some(head(result)), details: outcomes, errors, events: vec![] };
    if outcome == Outcome::LostReply {
        // The voucher is decided and committed; the answer never leaves. The wait holds no
        // connection to Postgres and no lock, and other requests are served meanwhile.
        tokio::time::sleep(LOST_REPLY_HOLD).await;
        return Response::builder().status(StatusCode::GATEWAY_TIMEOUT).finish();
    }
    answer(OPERATION, &response)
}

/// The verdict on a voucher and, when approved, its CAE and expiry.
struct Decided {
    verdict: Verdict,
    authorization: Option<(String, Date)>,
}

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Storage(#[from] sqlx::Error),
    #[error(transparent)]
    Encoding(#[from] serde_json::Error),
}

impl Simulator {
    /// Judges `details` in order against their series under the series lock (each against the series
    /// as the ones before it left it), and stores those approved (with `observation` added).
    async fn decide(
        &self,
        key: SeriesKey,
        header: &CabRequest,
        details: &[DetRequest],
        now: OffsetDateTime,
        observation: Option<Message>,
    ) -> Result<Vec<Decided>, Failure> {
        let today = now.date();
        let mut tx = self.pool.begin().await?;
        store::lock_series(&mut tx, key).await?;
        let mut series = store::series(&mut tx, key).await?;
        let mut decided = Vec::with_capacity(details.len());
        for detail in details {
            let verdict = rules::check_voucher(key.issuer, header, detail, &series, today);
            let Verdict::Approved { mut observations } = verdict else {
                decided.push(Decided { verdict, authorization: None });
                continue;
            };
            observations.extend(observation.clone());
            let date = detail.date.unwrap_or(today);
            let cae = new_cae();
            let cae_due = date.saturating_add(time::Duration::days(CAE_DAYS));
            let stored = StoredDetail::of(
                DetRequest { date: Some(date), ..detail.clone() },
                header,
                StoredAuthorization {
                    result: "A".to_owned(),
                    code: cae.clone(),
                    due: cae_due,
                    processed_at: processed_at(now),
                    observations: observations.clone(),
                },
            );
            let stored = serde_json::to_string(&stored)?;
            let approved = store::Approved { number: detail.number_from, date, cae: &cae, cae_due, stored: &stored };
            store::insert(&mut tx, key, approved).await?;
            series = rules::Series { last_number: detail.number_from, last_date: Some(date) };
            decided.push(Decided { verdict: Verdict::Approved { observations }, authorization: Some((cae, cae_due)) });
        }
        tx.commit().await?;
        Ok(decided)
    }
}

/// A CAE: 14 digits.
fn new_cae() -> String {
    rand::random_range(10_000_000_000_000_i64..100_000_000_000_000).to_string()
}

/// `yyyymmddhhmmss`.
fn processed_at(now: OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

#[handler]
async fn queue_outcomes(Data(simulator): Data<&Arc<Simulator>>, body: Vec<u8>) -> Response {
    match serde_json::from_slice::<Queued>(&body) {
        Ok(queued) => {
            let pending = simulator.script.queue(queued.issuer_tax_id, queued.point_of_sale, queued.outcomes);
            json(&serde_json::json!({ "pending": pending }))
        }
        Err(error) => malformed(&error),
    }
}

#[handler]
async fn set_latency(Data(simulator): Data<&Arc<Simulator>>, body: Vec<u8>) -> Response {
    match serde_json::from_slice::<Latency>(&body) {
        Ok(set) => {
            simulator.script.set_latency(Duration::from_millis(u64::from(set.milliseconds)));
            json(&serde_json::json!({ "milliseconds": set.milliseconds }))
        }
        Err(error) => malformed(&error),
    }
}

#[handler]
async fn requests_served(Data(simulator): Data<&Arc<Simulator>>) -> Response {
    json(&simulator.script.requests())
}

#[handler]
async fn set_ticket_lifetime(Data(simulator): Data<&Arc<Simulator>>, body: Vec<u8>) -> Response {
    match serde_json::from_slice::<TicketLifetime>(&body) {
        Ok(set) => {
            simulator.script.set_ticket_lifetime(time::Duration::seconds(i64::from(set.lifetime_seconds)));
            json(&serde_json::json!({ "lifetime_seconds": set.lifetime_seconds }))
        }
        Err(error) => malformed(&error),
    }
}

#[handler]
async fn enable_points_of_sale(Data(simulator): Data<&Arc<Simulator>>, body: Vec<u8>) -> Response {
    match serde_json::from_slice::<EnabledPoints>(&body) {
        Ok(enabled) => {
            simulator.script.enable_points_of_sale(enabled.issuer_tax_id, enabled.points_of_sale);
            json(&serde_json::json!({ "points_of_sale": simulator.script.points_of_sale(enabled.issuer_tax_id) }))
        }
        Err(error) => malformed(&error),
    }
}

/// One voucher of `GET /_simulator/vouchers`.
#[derive(Serialize)]
struct ListedVoucher {
    issuer_tax_id: i64,
    point_of_sale: i32,
    voucher_type: i32,
    number: i64,
    date: String,
    cae: String,
    cae_due: String,
    voucher: Box<RawValue>,
}

#[handler]
async fn list_vouchers(Data(simulator): Data<&Arc<Simulator>>, Query(filter): Query<store::Filter>) -> Response {
    let listed = match store::list(&simulator.pool, filter).await {
        Ok(listed) => listed,
        Err(error) => return storage_failed("vouchers", &error),
    };
    let mut vouchers = Vec::with_capacity(listed.len());
    for voucher in listed {
        let Ok(stored) = RawValue::from_string(voucher.stored) else { return internal_error("vouchers") };
        vouchers.push(ListedVoucher {
            issuer_tax_id: voucher.key.issuer,
            point_of_sale: voucher.key.point_of_sale,
            voucher_type: voucher.key.voucher_type,
            number: voucher.number,
            date: voucher.date.to_string(),
            cae: voucher.cae,
            cae_due: voucher.cae_due.to_string(),
            voucher: stored,
        });
    }
    #[derive(Serialize)]
    struct Listing {
        vouchers: Vec<ListedVoucher>,
    }
    json(&Listing { vouchers })
}

/// A 200 with `result` as the operation's SOAP answer.
fn answer<T: Serialize>(operation: &str, result: &T) -> Response {
    match soap::response(operation, result) {
        Ok(body) => Response::builder().content_type(soap::CONTENT_TYPE).body(body),
        Err(error) => {
            tracing::error!(%error, "fiscal simulator: cannot encode an answer");
            internal_error(operation)
        }
    }
}

/// A 200 with `value` as JSON (the scripting routes).
fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => Response::builder().content_type("application/json").body(body),
        Err(error) => {
            tracing::error!(%error, "fiscal simulator: cannot encode an answer");
            Response::builder().status(StatusCode::INTERNAL_SERVER_ERROR).finish()
        }
    }
}

/// A scripting body that is not the route's JSON.
fn malformed(error: &serde_json::Error) -> Response {
    let body = serde_json::json!({ "error": format!("malformed request: {error}") });
    Response::builder().status(StatusCode::BAD_REQUEST).content_type("application/json").body(body.to_string())
}

fn storage_failed(operation: &str, error: &sqlx::Error) -> Response {
    tracing::error!(%error, operation, "fiscal simulator: the database failed");
    internal_error(operation)
}

/// `Errors` alone, for an answer that has nothing else.
#[derive(Serialize)]
struct ErrorsOnly {
    #[serde(rename = "Errors", with = "commands::fiscal::wire::wrapped::err")]
    errors: Vec<Message>,
}

/// HTTP 500 with the authority's database error: nothing was done.
fn internal_error(operation: &str) -> Response {
    let errors = ErrorsOnly { errors: vec![Message::new(501, "Error interno de base de datos")] };
    let body = soap::response(operation, &errors).unwrap_or_default();
    Response::builder().status(StatusCode::INTERNAL_SERVER_ERROR).content_type(soap::CONTENT_TYPE).body(body)
}
