//! The tax authority's simulator driven through the fiscal adapter over real HTTP on an ephemeral port,
//! with its memory in this test's fresh database: SOAP, login tickets, numbering, consults, dates,
//! totals, letters, scripted outcomes (rejections, outages, lost replies, observations) and restarts.

use std::sync::Arc;
use std::time::Duration;

use commands::fiscal::wire::{CaeRequest, CaeResponse, FeCaeReq};
use commands::fiscal::{
    AssociatedVoucher, Credentials, Endpoints, FiscalClient, FiscalError, Issuer, Rate, Tickets, VatLine,
    VoucherRequest, soap,
};
use events::domain::Cents;
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use url::Url;

use crate::helpers::{FIXTURE_CERTIFICATE, FIXTURE_KEY, SIMULATOR, http_client, today_date};

const ISSUER: i64 = 20267565393;
const OTHER_ISSUER: i64 = 27123456780;
const RECEIVER: i64 = 20055361682;
const POS: i32 = 3;

const OTHER_CERTIFICATE: &str = include_str!("../../../commands/tests/fixtures/fiscal/other-issuer.crt");
const OTHER_KEY: &str = include_str!("../../../commands/tests/fixtures/fiscal/other-issuer.key");

/// A simulator served on its own port over `pool`, and two organizations that invoice there, each
/// with its certificate.
struct Simulator {
    base: Url,
    pool: PgPool,
    task: tokio::task::JoinHandle<()>,
    issuer: Issuer,
    other: Issuer,
}

/// An organization with CUIT `cuit` and that certificate and key, as `admin set-fiscal-certificate` keeps them.
pub(crate) async fn organization(pool: &PgPool, cuit: i64, certificate: &str, key: &str) -> Issuer {
    let created = commands::organization::create_organization(pool, "Emisor").await.expect("org");
    let org_id = created.organization_id;
    let change = commands::organization::SettingsChange { tax_id: Some(cuit.to_string()), ..Default::default() };
    commands::organization::update_organization(pool, org_id, change).await.expect("cuit");
    let secrets = events::secrets::SecretBox::load(pool).await.expect("secrets");
    commands::fiscal::certificate::set_certificate(pool, &secrets, org_id, certificate, key).await.expect("kept");
    Issuer::new(org_id, cuit).expect("a valid CUIT")
}

impl Simulator {
    async fn start(pool: &PgPool) -> Self {
        let issuer = organization(pool, ISSUER, FIXTURE_CERTIFICATE, FIXTURE_KEY).await;
        let other = organization(pool, OTHER_ISSUER, OTHER_CERTIFICATE, OTHER_KEY).await;
        Self::restart(pool, issuer, other).await
    }

    /// A simulator on `pool`'s memory (served anew, for a restart) for those organizations.
    async fn restart(pool: &PgPool, issuer: Issuer, other: Issuer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
        let base = Url::parse(&format!("http://{}", listener.local_addr().expect("address"))).expect("url");
        let served = pool.clone();
        let task = tokio::spawn(async move {
            api::fiscal_simulator::serve(listener, served).await.expect("the simulator serves");
        });
        Simulator { base, pool: pool.clone(), task, issuer, other }
    }

    fn endpoints(&self) -> Endpoints {
        Endpoints::under(&self.base).expect("endpoints")
    }

    /// A process's adapter: its own tickets (in memory) over the shared store.
    async fn tickets(&self, timeout: Duration) -> Tickets {
        self.tickets_of(SIMULATOR, timeout).await
    }

    /// Its tickets, as the service `service` keeps them (another environment's name, say).
    async fn tickets_of(&self, service: &str, timeout: Duration) -> Tickets {
        Tickets::new(self.pool.clone(), service.into(), self.endpoints().wsaa, timeout).await.expect("tickets")
    }

    async fn client(&self) -> FiscalClient {
        self.client_waiting(Duration::from_secs(10)).await
    }

    async fn client_waiting(&self, timeout: Duration) -> FiscalClient {
        let tickets = self.tickets(timeout).await;
        FiscalClient::new(&self.endpoints().wsfe, timeout, Arc::new(tickets)).expect("client")
    }

    fn client_with(&self, tickets: Tickets) -> FiscalClient {
        FiscalClient::new(&self.endpoints().wsfe, Duration::from_secs(10), Arc::new(tickets)).expect("client")
    }

    /// Tickets issued from now on last `seconds`.
    async fn ticket_lifetime(&self, seconds: u32) {
        let body = json!({ "lifetime_seconds": seconds });
        let response = http_client().post(self.url("/_simulator/tickets")).json(&body).send().await.expect("sent");
        assert_eq!(response.status().as_u16(), 200);
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base.as_str().trim_end_matches('/'), path)
    }

    /// Queues outcomes for `issuer` at `point_of_sale`.
    async fn script(&self, issuer: i64, point_of_sale: i32, outcomes: Value) {
        let body = json!({ "issuer_tax_id": issuer, "point_of_sale": point_of_sale, "outcomes": outcomes });
        let response = http_client().post(self.url("/_simulator/outcomes")).json(&body).send().await.expect("sent");
        assert_eq!(response.status().as_u16(), 200, "{}", response.text().await.unwrap_or_default());
    }

    /// The numbers of the approved vouchers `query` selects.
    async fn listed(&self, query: &str) -> Vec<Value> {
        let response =
            http_client().get(self.url(&format!("/_simulator/vouchers?{query}"))).send().await.expect("sent");
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.json().await.expect("json");
        body["vouchers"].as_array().expect("a list").clone()
    }

    /// Stops serving: the next simulator on the same database is a restart.
    async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

fn days(n: i64) -> time::Duration {
    time::Duration::days(n)
}

/// Invoice A `number` for 100.00 + 21% VAT to a Responsable Inscripto, dated today.
fn invoice_a(number: i64) -> VoucherRequest {
    VoucherRequest {
        point_of_sale: POS,
        voucher_type: 1,
        number,
        concept: 1,
        doc_type: 80,
        doc_number: RECEIVER,
        date: today_date(),
        total: Cents::of(12100),
        net: Cents::of(10000),
        exempt: Cents::ZERO,
        non_taxed: Cents::ZERO,
        other_taxes: Cents::ZERO,
        vat: Cents::of(2100),
        vat_lines: vec![VatLine { code: 5, base: Cents::of(10000), amount: Cents::of(2100) }],
        other_tax_lines: vec![],
        currency: "PES".into(),
        rate: Rate::ONE,
        receiver_vat_condition: 1,
        associated: vec![],
        service_from: None,
        service_to: None,
        payment_due: None,
    }
}

/// Invoice B `number`, the same amounts, to a consumidor final.
pub(crate) fn invoice_b(number: i64) -> VoucherRequest {
    VoucherRequest { voucher_type: 6, doc_type: 99, doc_number: 0, receiver_vat_condition: 5, ..invoice_a(number) }
}

/// Invoice C `number` for 121.00, no VAT detail.
fn invoice_c(number: i64) -> VoucherRequest {
    VoucherRequest { voucher_type: 11, net: Cents::of(12100), vat: Cents::ZERO, vat_lines: vec![], ..invoice_b(number) }
}

fn codes(result: Result<commands::fiscal::Authorization, FiscalError>) -> Vec<i64> {
    match result {
        Err(error @ FiscalError::Rejected { .. }) => error.codes(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[sqlx::test(migrations = "../schema")]
async fn numbers_follow_each_series_and_a_wrong_or_repeated_number_is_10016(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    client.health().await.expect("healthy");
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));

    let first = client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");
    assert_eq!(first.number, 1);
    assert_eq!(first.cae.len(), 14);
    assert!(first.cae.bytes().all(|b| b.is_ascii_digit()), "{}", first.cae);
    assert_eq!(first.cae_due, today_date() + days(10));
    assert!(first.observations.is_empty());
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(1));

    // A gap, and the same number again (the authority is not idempotent).
    assert_eq!(codes(client.authorize(simulator.issuer, &invoice_a(3)).await), vec![10016]);
    assert_eq!(codes(client.authorize(simulator.issuer, &invoice_a(1)).await), vec![10016]);
    let second = client.authorize(simulator.issuer, &invoice_a(2)).await.expect("approved");
    assert_ne!(second.cae, first.cae);
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(2));

    // Another voucher type, point of sale or issuer is another series.
    client.authorize(simulator.issuer, &invoice_b(1)).await.expect("B starts at 1");
    client.authorize(simulator.issuer, &VoucherRequest { point_of_sale: 4, ..invoice_a(1) }).await.expect("pos 4 starts at 1");
    let other = simulator.other;
    assert_eq!(client.last_authorized(other, POS, 1).await, Ok(0));
    client.authorize(other, &invoice_a(1)).await.expect("another issuer starts at 1");
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(2));

    let listed = simulator.listed(&format!("issuer_tax_id={ISSUER}&point_of_sale={POS}&voucher_type=1")).await;
    let numbers: Vec<i64> = listed.iter().map(|v| v["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert_eq!(listed[0]["cae"], first.cae.as_str());
    assert_eq!(listed[0]["date"], today_date().to_string());
    assert_eq!(listed[0]["voucher"]["ImpTotal"], json!("121.00"));
    assert_eq!(simulator.listed("").await.len(), 5);
}

#[sqlx::test(migrations = "../schema")]
async fn a_consult_finds_an_approved_voucher_and_602_otherwise(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    let request = invoice_a(1);
    let authorization = client.authorize(simulator.issuer, &request).await.expect("approved");

    let stored = client.consult(simulator.issuer, POS, 1, 1).await.expect("answered").expect("found");
    assert!(stored.is_approved());
    assert!(stored.matches(&request));
    assert_eq!(stored.cae, authorization.cae);
    assert_eq!(stored.cae_due, authorization.cae_due);
    assert_eq!((stored.total.get(), stored.net.get(), stored.vat.get(), stored.date), (12100, 10000, 2100, today_date()));
    assert!(!stored.matches(&VoucherRequest { total: Cents::of(12101), ..request.clone() }));

    assert_eq!(client.consult(simulator.issuer, POS, 1, 2).await, Ok(None));
    assert_eq!(client.consult(simulator.issuer, POS, 6, 1).await, Ok(None));
    assert_eq!(client.consult(simulator.issuer, POS + 1, 1, 1).await, Ok(None));
}

#[sqlx::test(migrations = "../schema")]
async fn dates_stay_near_today_and_never_before_the_series_last(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    // Products: five days either way (the margins here survive midnight passing mid-test).
    let early = VoucherRequest { date: today_date() - days(8), ..invoice_a(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &early).await), vec![10016]);
    let late = VoucherRequest { date: today_date() + days(8), ..invoice_a(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &late).await), vec![10016]);
    client
        .authorize(simulator.issuer, &VoucherRequest { date: today_date() + days(3), ..invoice_a(1) })
        .await
        .expect("within 5 days");
    // The next voucher may not be dated before the last one.
    assert_eq!(codes(client.authorize(simulator.issuer, &invoice_a(2)).await), vec![10016]);
    client.authorize(simulator.issuer, &VoucherRequest { date: today_date() + days(3), ..invoice_a(2) }).await.expect("same day");

    // Services: ten days, with their period and due date.
    let services = VoucherRequest {
        concept: 2,
        date: today_date() - days(8),
        service_from: Some(today_date() - days(40)),
        service_to: Some(today_date() - days(10)),
        payment_due: Some(today_date()),
        ..invoice_b(1)
    };
    assert_eq!(
        codes(client.authorize(simulator.issuer, &VoucherRequest { payment_due: None, ..services.clone() }).await),
        vec![10049]
    );
    let backwards = VoucherRequest { service_from: Some(today_date()), ..services.clone() };
    assert_eq!(codes(client.authorize(simulator.issuer, &backwards).await), vec![10032]);
    let due_before = VoucherRequest { payment_due: Some(today_date() - days(9)), ..services.clone() };
    assert_eq!(codes(client.authorize(simulator.issuer, &due_before).await), vec![10036]);
    let approved = client.authorize(simulator.issuer, &services).await.expect("services within 10 days");
    assert_eq!(approved.cae_due, today_date() - days(8) + days(10));
}

#[sqlx::test(migrations = "../schema")]
async fn totals_and_vat_must_add_up(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    let mismatch = VoucherRequest { total: Cents::of(12200), ..invoice_a(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &mismatch).await), vec![10048]);
    // A cent off is within tolerance.
    client.authorize(simulator.issuer, &VoucherRequest { total: Cents::of(12101), ..invoice_a(1) }).await.expect("one cent off");
    let wrong_rate = VoucherRequest {
        vat: Cents::of(2000),
        total: Cents::of(12000),
        vat_lines: vec![VatLine { code: 5, base: Cents::of(10000), amount: Cents::of(2000) }],
        ..invoice_a(2)
    };
    assert_eq!(codes(client.authorize(simulator.issuer, &wrong_rate).await), vec![10051]);
    let unknown_rate =
        VoucherRequest { vat_lines: vec![VatLine { code: 7, base: Cents::of(10000), amount: Cents::of(2100) }], ..invoice_a(2) };
    assert_eq!(codes(client.authorize(simulator.issuer, &unknown_rate).await), vec![10019]);
    let pesos = VoucherRequest { rate: Rate::from_units(2_000_000), ..invoice_a(2) };
    assert_eq!(codes(client.authorize(simulator.issuer, &pesos).await), vec![10039]);
    // Two rates, in cents: 1000.00 at 21% and 333.33 at 10.5% (34.99965, sent as 35.00).
    let two_rates = VoucherRequest {
        net: Cents::of(133333),
        vat: Cents::of(21000 + 3500),
        total: Cents::of(133333 + 24500),
        vat_lines: vec![
            VatLine { code: 5, base: Cents::of(100000), amount: Cents::of(21000) },
            VatLine { code: 4, base: Cents::of(33333), amount: Cents::of(3500) },
        ],
        ..invoice_a(2)
    };
    client.authorize(simulator.issuer, &two_rates).await.expect("two rates");
    let stored = client.consult(simulator.issuer, POS, 1, 2).await.expect("answered").expect("found");
    assert_eq!((stored.net.get(), stored.vat.get(), stored.total.get()), (133333, 24500, 157833));
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(2));
}

#[sqlx::test(migrations = "../schema")]
async fn the_receivers_vat_condition_must_fit_the_letter(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    let a_to_consumer = VoucherRequest { receiver_vat_condition: 5, ..invoice_a(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &a_to_consumer).await), vec![10243]);
    let b_to_registered = VoucherRequest { receiver_vat_condition: 1, ..invoice_b(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &b_to_registered).await), vec![10243]);
    client.authorize(simulator.issuer, &VoucherRequest { receiver_vat_condition: 6, ..invoice_a(1) }).await.expect("A to 6");
    client.authorize(simulator.issuer, &VoucherRequest { receiver_vat_condition: 4, ..invoice_b(1) }).await.expect("B to 4");
    let a_to_dni = VoucherRequest { doc_type: 96, doc_number: 30123456, ..invoice_a(2) };
    assert_eq!(codes(client.authorize(simulator.issuer, &a_to_dni).await), vec![10013]);
}

#[sqlx::test(migrations = "../schema")]
async fn class_c_carries_no_vat(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    let with_vat = VoucherRequest { net: Cents::of(10000), vat: Cents::of(2100), vat_lines: invoice_a(1).vat_lines, ..invoice_c(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &with_vat).await), vec![10047, 10071]);
    client.authorize(simulator.issuer, &invoice_c(1)).await.expect("C without VAT");
    let stored = client.consult(simulator.issuer, POS, 11, 1).await.expect("answered").expect("found");
    assert_eq!((stored.total.get(), stored.net.get(), stored.vat.get()), (12100, 12100, 0));

    // Its credit note names the invoice it corrects.
    let credit = VoucherRequest { voucher_type: 13, ..invoice_c(1) };
    assert_eq!(codes(client.authorize(simulator.issuer, &credit).await), vec![10197]);
    let associated =
        AssociatedVoucher { voucher_type: 11, point_of_sale: POS, number: 1, issuer_cuit: None, date: Some(today_date()) };
    client.authorize(simulator.issuer, &VoucherRequest { associated: vec![associated], ..credit }).await.expect("credit C");
}

#[sqlx::test(migrations = "../schema")]
async fn a_scripted_rejection_is_final_and_stores_nothing(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    simulator
        .script(ISSUER, POS, json!([{"outcome": "reject", "code": 10015, "message": "receptor no encontrado"}]))
        .await;
    let rejected = client.authorize(simulator.issuer, &invoice_a(1)).await;
    assert_eq!(rejected, Err(FiscalError::Rejected { errors: vec![(10015, "receptor no encontrado".into())] }));
    assert!(!rejected.is_err_and(|e| e.is_retryable()));
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    assert_eq!(client.consult(simulator.issuer, POS, 1, 1).await, Ok(None));
    assert!(simulator.listed("").await.is_empty());
    // The queue is spent: the same voucher is judged by the rules again.
    client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");

    // A point of sale's script applies to any voucher type there, and to nothing elsewhere.
    simulator.script(ISSUER, POS, json!([{"outcome": "reject", "code": 10048, "message": "totales"}])).await;
    client.authorize(simulator.issuer, &VoucherRequest { point_of_sale: 4, ..invoice_b(1) }).await.expect("another pos");
    assert_eq!(codes(client.authorize(simulator.issuer, &invoice_b(1)).await), vec![10048]);
}

#[sqlx::test(migrations = "../schema")]
async fn an_unavailable_authority_does_nothing(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    simulator.script(ISSUER, POS, json!([{"outcome": "unavailable"}])).await;
    let refused = client.authorize(simulator.issuer, &invoice_a(1)).await;
    assert!(matches!(&refused, Err(FiscalError::Unavailable(_))), "{refused:?}");
    assert!(refused.is_err_and(|e| e.is_retryable() && !e.outcome_unknown()));
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    assert_eq!(client.consult(simulator.issuer, POS, 1, 1).await, Ok(None));
    client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved on the retry");

    // Nobody listening at all: refused before anything was sent.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
    let nowhere = Url::parse(&format!("http://{}", closed.local_addr().expect("address"))).expect("url");
    drop(closed);
    let wsfe = Endpoints::under(&nowhere).expect("endpoints").wsfe;
    let tickets = simulator.tickets(Duration::from_secs(5)).await;
    let client = FiscalClient::new(&wsfe, Duration::from_secs(5), Arc::new(tickets)).expect("client");
    assert!(matches!(client.health().await, Err(FiscalError::Unavailable(_))));
    assert!(matches!(client.authorize(simulator.issuer, &invoice_a(2)).await, Err(FiscalError::Unavailable(_))));
}

#[sqlx::test(migrations = "../schema")]
async fn a_lost_reply_is_approved_and_found_by_consulting_before_asking_again(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    simulator.script(ISSUER, POS, json!([{"outcome": "lost_reply"}])).await;
    let impatient = simulator.client_waiting(Duration::from_millis(1500)).await;
    let request = invoice_a(1);
    let lost = impatient.authorize(simulator.issuer, &request).await;
    assert!(matches!(&lost, Err(FiscalError::NoReply(_))), "{lost:?}");
    assert!(lost.is_err_and(|e| e.outcome_unknown()));

    // The held request blocks nothing: the consult is answered while it is still open.
    let client = simulator.client().await;
    let stored = client.consult(simulator.issuer, POS, 1, 1).await.expect("answered").expect("approved all the same");
    assert!(stored.is_approved() && stored.matches(&request));
    assert_eq!(stored.cae.len(), 14);
    // Asking again for the number is refused: what the consult is for.
    assert_eq!(codes(client.authorize(simulator.issuer, &request).await), vec![10016]);
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(1));
    client.authorize(simulator.issuer, &invoice_a(2)).await.expect("the series goes on");
    assert_eq!(simulator.listed(&format!("issuer_tax_id={ISSUER}")).await.len(), 2);
}

#[sqlx::test(migrations = "../schema")]
async fn observations_come_with_an_approval(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    simulator
        .script(
            ISSUER,
            POS,
            json!([
                {"outcome": "approve_with_observations"},
                {"outcome": "approve_with_observations", "code": 10063, "message": "receptor inactivo"}
            ]),
        )
        .await;
    let first = client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");
    assert_eq!(first.observations.iter().map(|(code, _)| *code).collect::<Vec<_>>(), vec![10217]);
    let second = client.authorize(simulator.issuer, &invoice_a(2)).await.expect("approved");
    assert_eq!(second.observations, vec![(10063, "receptor inactivo".to_owned())]);
    let stored = client.consult(simulator.issuer, POS, 1, 2).await.expect("answered").expect("found");
    assert_eq!(stored.observations, second.observations);

    // A receiver condition left out is approved with observation 10246 (RG 5616). The adapter always
    // sends one, so this goes by hand.
    let (header, mut detail) = invoice_a(3).to_wire();
    detail.receiver_vat_condition = None;
    let Credentials { token, sign } = simulator.tickets(Duration::from_secs(5)).await.ticket(simulator.issuer).await.expect("ticket");
    let auth = commands::fiscal::wire::Auth { token, sign, cuit: ISSUER };
    let request = CaeRequest { auth: Some(auth), request: FeCaeReq { header, details: vec![detail] } };
    let response = http_client()
        .post(simulator.endpoints().wsfe)
        .header("SOAPAction", soap::action("FECAESolicitar"))
        .body(soap::request("FECAESolicitar", &request).expect("xml"))
        .send()
        .await
        .expect("sent");
    let answer: CaeResponse =
        soap::read_response(&response.bytes().await.expect("body"), "FECAESolicitar").expect("an answer");
    assert_eq!(answer.header.expect("header").result, "A");
    assert_eq!(answer.details[0].observations.iter().map(|o| o.code).collect::<Vec<_>>(), vec![10246]);
    assert_eq!(answer.details[0].cae.len(), 14);
}

#[sqlx::test(migrations = "../schema")]
async fn the_simulator_remembers_its_vouchers_across_a_restart(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");
    let second = client.authorize(simulator.issuer, &invoice_a(2)).await.expect("approved");
    let (issuer, other) = (simulator.issuer, simulator.other);
    simulator.stop().await;

    let simulator = Simulator::restart(&pool, issuer, other).await;
    let client = simulator.client().await;
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(2));
    let stored = client.consult(simulator.issuer, POS, 1, 2).await.expect("answered").expect("remembered");
    assert_eq!((stored.cae, stored.cae_due), (second.cae, second.cae_due));
    assert_eq!(codes(client.authorize(simulator.issuer, &invoice_a(2)).await), vec![10016]);
    client.authorize(simulator.issuer, &invoice_a(3)).await.expect("the series goes on");
}

#[sqlx::test(migrations = "../schema")]
async fn concurrent_requests_for_one_number_approve_exactly_one(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    let request = invoice_a(1);
    let attempts = futures::future::join_all((0..8).map(|_| client.authorize(simulator.issuer, &request))).await;
    let approved = attempts.iter().filter(|a| a.is_ok()).count();
    assert_eq!(approved, 1, "{attempts:?}");
    assert!(attempts.into_iter().filter(Result::is_err).all(|a| codes(a) == vec![10016]));
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(1));
}

#[sqlx::test(migrations = "../schema")]
async fn requests_without_credentials_are_refused(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    // Credentials the authority never issued.
    let anonymous = FiscalClient::new(&simulator.endpoints().wsfe, Duration::from_secs(5), Arc::new(Forged)).expect("client");
    let refused = anonymous.last_authorized(simulator.issuer, POS, 1).await;
    assert!(matches!(&refused, Err(FiscalError::Unauthenticated(m)) if m.starts_with("600 ")), "{refused:?}");
    let refused = anonymous.authorize(simulator.issuer, &invoice_a(1)).await;
    assert!(matches!(&refused, Err(FiscalError::Unauthenticated(m)) if m.starts_with("600 ")), "{refused:?}");
    assert!(refused.is_err_and(|e| e.is_retryable() && !e.outcome_unknown()));
    // A voucher type the service does not authorize.
    let client = simulator.client().await;
    assert_eq!(client.last_authorized(simulator.issuer, POS, 90).await.map_err(|e| e.codes()), Err(vec![11001]));
    assert_eq!(
        codes(client.authorize(simulator.issuer, &VoucherRequest { voucher_type: 90, ..invoice_a(1) }).await),
        vec![10007]
    );
}

/// A token and sign the simulator never issued.
struct Forged;

impl commands::fiscal::Authenticator for Forged {
    fn credentials(&self, _issuer: Issuer) -> futures::future::BoxFuture<'_, Result<Credentials, FiscalError>> {
        Box::pin(std::future::ready(Ok(Credentials { token: "PD94bWwg".into(), sign: "Zm9yZ2Vk".into() })))
    }

    fn rejected(&self, _issuer: Issuer, _credentials: &Credentials) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// How many tickets the simulator issued, and how many the service keeps.
async fn tickets_issued(pool: &PgPool) -> (i64, i64) {
    let issued: i64 = sqlx::query_scalar("select count(*) from fiscal_simulator_tickets").fetch_one(pool).await.expect("count");
    let kept: i64 = sqlx::query_scalar("select count(*) from fiscal_tickets").fetch_one(pool).await.expect("count");
    (issued, kept)
}

/// Waits until `at` has passed.
async fn until(at: OffsetDateTime) {
    while OffsetDateTime::now_utc() <= at {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrations = "../schema")]
async fn one_ticket_is_obtained_once_and_shared_by_two_processes(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    // Two processes, each with its own memory, asking at the same moment.
    let (first, second) = (simulator.tickets(Duration::from_secs(5)).await, simulator.tickets(Duration::from_secs(5)).await);
    let (a, b) = tokio::join!(first.ticket(simulator.issuer), second.ticket(simulator.issuer));
    assert_eq!(a.expect("a ticket"), b.expect("the same ticket"));
    assert_eq!(tickets_issued(&pool).await, (1, 1), "one login for both");

    // Both invoice with it, and so does a third process started later.
    let (one, two) = (simulator.client_with(first), simulator.client_with(second));
    one.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");
    assert_eq!(two.last_authorized(simulator.issuer, POS, 1).await, Ok(1));
    simulator.client().await.authorize(simulator.issuer, &invoice_a(2)).await.expect("approved");
    // Another organization's certificate has a ticket of its own.
    assert_eq!(two.last_authorized(simulator.other, POS, 1).await, Ok(0));
    assert_eq!(tickets_issued(&pool).await, (2, 2));
}

#[sqlx::test(migrations = "../schema")]
async fn a_ticket_is_renewed_at_its_end_and_an_early_renewal_the_authority_refuses_is_handled(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    // Lifetimes long enough that a loaded machine's slow calls still fall inside each window.
    simulator.ticket_lifetime(10).await;
    let tickets = simulator.tickets(Duration::from_secs(10)).await.renewing_before(Duration::from_secs(8));
    let client = simulator.client_with(tickets.clone());
    let first = tickets.ticket(simulator.issuer).await.expect("a ticket");
    let expiration: OffsetDateTime = sqlx::query_scalar("select expiration from fiscal_tickets").fetch_one(&pool).await.expect("kept");
    assert!(expiration <= OffsetDateTime::now_utc() + time::Duration::seconds(10));

    // Inside the renewal window the service asks for a new ticket; the authority refuses while the
    // current one is valid, and calls go on with it.
    until(expiration - time::Duration::milliseconds(7900)).await;
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    assert_eq!(tickets.ticket(simulator.issuer).await.expect("kept"), first);
    assert_eq!(tickets_issued(&pool).await, (1, 1));

    // Once it has expired, the next call logs in anew: no call is made with an expired ticket.
    until(expiration).await;
    client.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved with a new ticket");
    assert_ne!(tickets.ticket(simulator.issuer).await.expect("renewed"), first);
    assert_eq!(tickets_issued(&pool).await, (2, 1));
}

#[sqlx::test(migrations = "../schema")]
async fn a_second_login_while_a_ticket_is_valid_is_refused_and_reported(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    simulator.client().await.last_authorized(simulator.issuer, POS, 1).await.expect("answered");
    // The service loses its ticket (a restored backup, say): the authority still holds it valid.
    sqlx::query("delete from fiscal_tickets").execute(&pool).await.expect("lost");
    let refused = simulator.client().await.last_authorized(simulator.issuer, POS, 1).await;
    match refused {
        Err(FiscalError::Unauthenticated(message)) => {
            assert!(message.contains("coe.alreadyAuthenticated"), "{message}");
            assert!(message.contains("once that ticket expires"), "{message}");
        }
        other => panic!("expected the refusal, got {other:?}"),
    }
    assert_eq!(tickets_issued(&pool).await, (1, 0));
}

#[sqlx::test(migrations = "../schema")]
async fn a_ticket_belongs_to_its_service_and_another_environment_neither_uses_nor_replaces_it(pool: PgPool) {
    let production = Simulator::start(&pool).await;
    // Another environment on the same database (a `fiscal check` against homologation, say): a simulator
    // at another address, its tickets kept under another service's name. Both keep their tickets in this database, so underneath they are one
    // authority, which refuses a second login while a ticket is valid.
    let homologation = Simulator::restart(&pool, production.issuer, production.other).await;
    let taken = production.tickets(Duration::from_secs(5)).await.ticket(production.issuer).await.expect("a ticket");
    assert_eq!(tickets_issued(&pool).await, (1, 1));

    // The other environment's process does not take the production ticket: it asks its own service
    // (here refused, as that ticket is valid).
    let check = homologation.tickets_of("homologation", Duration::from_secs(5)).await;
    match check.ticket(production.issuer).await {
        Err(FiscalError::Unauthenticated(message)) => {
            assert!(message.contains("coe.alreadyAuthenticated"), "{message}");
        }
        other => panic!("expected its own service's refusal, got {other:?}"),
    }
    assert_eq!(tickets_issued(&pool).await, (1, 1));

    // Once its service lets it log in, its ticket is kept beside the production one, not over it.
    sqlx::query("update fiscal_simulator_tickets set expiration = now() - interval '1 second'")
        .execute(&pool)
        .await
        .expect("expired at the authority");
    let own = check.ticket(production.issuer).await.expect("its own ticket");
    assert_ne!(own, taken);
    assert_eq!(tickets_issued(&pool).await, (2, 2), "one ticket for each service");
    // A production process started now reads the production ticket; the other keeps its own.
    let restarted = production.tickets(Duration::from_secs(5)).await;
    assert_eq!(restarted.ticket(production.issuer).await.expect("the production ticket"), taken);
    assert_eq!(check.ticket(production.issuer).await.expect("its own ticket"), own);
    assert_eq!(tickets_issued(&pool).await, (2, 2));
}

#[sqlx::test(migrations = "../schema")]
async fn a_ticket_stored_before_tickets_named_their_service_is_used_by_the_service_that_holds_it(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let taken = simulator.tickets(Duration::from_secs(5)).await.ticket(simulator.issuer).await.expect("a ticket");
    // As schema/0044 leaves a ticket stored before it: the service that issued it unknown.
    sqlx::query("update fiscal_tickets set service = null").execute(&pool).await.expect("stored before");

    // A process started after the upgrade asks its service for a ticket; the service refuses, holding
    // a valid one for the certificate, which shows the old ticket to be its own: it is used to its end,
    // with no new login, and stored as that service's (the old row stays, should another service hold it).
    let upgraded = simulator.tickets(Duration::from_secs(5)).await;
    assert_eq!(upgraded.ticket(simulator.issuer).await.expect("the old ticket"), taken);
    assert_eq!(tickets_issued(&pool).await, (1, 2));
    // Every later process of that service reads it, and invoices with it.
    simulator.client().await.authorize(simulator.issuer, &invoice_a(1)).await.expect("approved");
    assert_eq!(tickets_issued(&pool).await, (1, 2), "no login since the upgrade");
}

#[sqlx::test(migrations = "../schema")]
async fn a_cuit_the_ticket_does_not_represent_is_refused_with_601_and_the_ticket_is_kept(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    // The organization's certificate asking for a CUIT it has not been authorized to represent (in the
    // authority's portal): the login succeeds, every call for that CUIT is refused with 601.
    let represented = Issuer::new(simulator.issuer.org_id(), 20123456786).expect("a valid CUIT");
    let client = simulator.client().await;
    for _ in 0..2 {
        match client.last_authorized(represented, POS, 1).await {
            Err(error @ FiscalError::NotRepresented(_)) => {
                assert!(error.to_string().contains("601"), "{error}");
                assert!(error.is_retryable(), "nothing was done");
            }
            other => panic!("expected 601, got {other:?}"),
        }
    }
    // The ticket stays: dropping it would have the authority refuse the next login while it is valid,
    // and the certificate's own CUIT goes on invoicing with it.
    assert_eq!(tickets_issued(&pool).await, (1, 1), "one login, its ticket kept");
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    assert_eq!(tickets_issued(&pool).await, (1, 1));
}

#[sqlx::test(migrations = "../schema")]
async fn after_a_601_the_organizations_certificate_is_read_again_and_a_new_one_used_at_once(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    // The organization's CUIT is corrected: the ticket this process holds, of the certificate of the
    // old CUIT, does not represent it.
    let org_id = simulator.issuer.org_id();
    let corrected =
        commands::organization::SettingsChange { tax_id: Some(OTHER_ISSUER.to_string()), ..Default::default() };
    commands::organization::update_organization(&pool, org_id, corrected).await.expect("corrected");
    let issuer = Issuer::new(org_id, OTHER_ISSUER).expect("a valid CUIT");
    assert!(matches!(client.last_authorized(issuer, POS, 1).await, Err(FiscalError::NotRepresented(_))));
    // Then the certificate of the corrected CUIT is set: the next call logs in with it, instead of
    // sending the old certificate's ticket (and being refused) until that ticket expires.
    let secrets = events::secrets::SecretBox::load(&pool).await.expect("secrets");
    commands::fiscal::certificate::set_certificate(&pool, &secrets, org_id, OTHER_CERTIFICATE, OTHER_KEY)
        .await
        .expect("kept");
    assert_eq!(client.last_authorized(issuer, POS, 1).await, Ok(0));
    assert_eq!(tickets_issued(&pool).await, (2, 2), "one ticket for each certificate");
}

#[sqlx::test(migrations = "../schema")]
async fn an_expired_ticket_is_refused_with_600_and_the_next_call_logs_in_again(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    client.last_authorized(simulator.issuer, POS, 1).await.expect("answered");
    // The authority's ticket has expired while the service's clock, behind the authority's,
    // still holds it good.
    sqlx::query("update fiscal_simulator_tickets set expiration = now() - interval '1 second'")
        .execute(&pool)
        .await
        .expect("expired at the authority");
    sqlx::query("update fiscal_tickets set expiration = now() + interval '1 hour'").execute(&pool).await.expect("moved");
    let late = simulator.client().await;
    let refused = late.last_authorized(simulator.issuer, POS, 1).await;
    assert_eq!(refused, Err(FiscalError::Unauthenticated("600 ValidacionDeToken: Token vencido".into())));
    assert!(refused.expect_err("refused").to_string().contains("did not accept the organization's credentials"));
    // The refused ticket was dropped: the next call logs in and is answered.
    assert_eq!(late.last_authorized(simulator.issuer, POS, 1).await, Ok(0));
    assert_eq!(tickets_issued(&pool).await, (2, 1));
}

#[sqlx::test(migrations = "../schema")]
async fn a_certificate_that_does_not_represent_the_cuit_or_does_not_verify_is_refused(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    // An organization with its own CUIT but another's certificate: the authority answers 601.
    let impostor = commands::organization::create_organization(&pool, "Impostor").await.expect("org").organization_id;
    sqlx::query(
        "insert into fiscal_certificates (org_id, certificate, sealed_key, subject, cuit, not_before, not_after, updated_at)
         select $1, certificate, sealed_key, subject, cuit, not_before, not_after, now() from fiscal_certificates where org_id = $2",
    )
    .bind(impostor)
    .bind(simulator.issuer.org_id())
    .execute(&pool)
    .await
    .expect("copied");
    let issuer = Issuer::new(impostor, OTHER_ISSUER).expect("cuit");
    let refused = simulator.client().await.authorize(issuer, &invoice_a(1)).await;
    assert!(matches!(&refused, Err(FiscalError::NotRepresented(m)) if m.starts_with("601 ")), "{refused:?}");
    assert!(simulator.listed("").await.is_empty());

    // Without a certificate nothing is sent, and the reason says what to do.
    let bare = commands::organization::create_organization(&pool, "Sin certificado").await.expect("org").organization_id;
    let refused = simulator.client().await.last_authorized(Issuer::new(bare, OTHER_ISSUER).expect("cuit"), POS, 1).await;
    assert!(matches!(&refused, Err(FiscalError::Unauthenticated(m)) if m.contains("set-fiscal-certificate")), "{refused:?}");

    // A signed request altered on the way does not verify: the authority's fault, read as a refusal.
    let signer = commands::fiscal::wsaa::Signer::from_pem(FIXTURE_CERTIFICATE, FIXTURE_KEY).expect("signer");
    let now = OffsetDateTime::now_utc();
    let request =
        commands::fiscal::wsaa::login_ticket_request(7, now - time::Duration::minutes(5), now + time::Duration::hours(1), "wsfe");
    let mut cms = signer.sign(&request, now).expect("signed");
    let last = cms.len() - 1;
    cms[last] ^= 0x55;
    let answer = http_client()
        .post(simulator.endpoints().wsaa)
        .header("SOAPAction", "\"\"")
        .body(commands::fiscal::wsaa::login_envelope(&cms))
        .send()
        .await
        .expect("sent");
    assert_eq!(answer.status().as_u16(), 500);
    let refused = commands::fiscal::wsaa::parse_login_response(&answer.bytes().await.expect("body"));
    assert!(
        matches!(&refused, Err(commands::fiscal::wsaa::LoginRefused::Fault { code, .. }) if code == "ns1:cms.sign.invalid"),
        "{refused:?}"
    );
    // A request for another service is refused too.
    let other_service =
        commands::fiscal::wsaa::login_ticket_request(8, now - time::Duration::minutes(5), now + time::Duration::hours(1), "wsmtxca");
    let cms = signer.sign(&other_service, now).expect("signed");
    let answer = http_client()
        .post(simulator.endpoints().wsaa)
        .body(commands::fiscal::wsaa::login_envelope(&cms))
        .send()
        .await
        .expect("sent");
    let refused = commands::fiscal::wsaa::parse_login_response(&answer.bytes().await.expect("body"));
    assert!(
        matches!(&refused, Err(commands::fiscal::wsaa::LoginRefused::Fault { code, .. }) if code == "ns1:coe.notAuthorized"),
        "{refused:?}"
    );
}

#[sqlx::test(migrations = "../schema")]
async fn a_batch_is_judged_voucher_by_voucher_in_one_request(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client().await;
    assert_eq!(client.batch_limit(simulator.issuer).await, Ok(250));
    let batch: Vec<VoucherRequest> = (1..=5).map(invoice_a).collect();
    let verdicts = client.authorize_batch(simulator.issuer, &batch).await;
    let numbers: Vec<i64> = verdicts.iter().map(|v| v.as_ref().expect("approved").number).collect();
    assert_eq!(numbers, vec![1, 2, 3, 4, 5]);
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(5));

    // A voucher whose totals do not add up is rejected on its own; those after it are no longer the
    // next number.
    let mixed = vec![invoice_a(6), VoucherRequest { total: Cents::of(99_900), ..invoice_a(7) }, invoice_a(8)];
    let verdicts = client.authorize_batch(simulator.issuer, &mixed).await;
    assert_eq!(verdicts[0].as_ref().map(|a| a.number), Ok(6));
    assert_eq!(verdicts[1].clone().map_err(|e| e.codes()), Err(vec![10048]));
    assert_eq!(verdicts[2].clone().map_err(|e| e.codes()), Err(vec![10016]));
    assert_eq!(client.last_authorized(simulator.issuer, POS, 1).await, Ok(6));
}
