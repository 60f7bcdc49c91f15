//! The tax authority's simulator driven through the fiscal adapter over real HTTP on an ephemeral port,
//! with its memory in this test's fresh database: numbering, consults, dates, totals, letters,
//! scripted outcomes (rejections, outages, lost replies, observations) and restarts.

use std::sync::Arc;
use std::time::Duration;

use commands::fiscal::wire::{CaeRequest, CaeResponse, FeCaeReq};
use commands::fiscal::{
    AssociatedVoucher, FiscalClient, FiscalError, Issuer, Rate, StaticCredentials, VatLine, VoucherRequest,
};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::{Date, OffsetDateTime};
use url::Url;

use crate::helpers::http_client;

const ISSUER: i64 = 20267565393;
const OTHER_ISSUER: i64 = 27123456780;
const RECEIVER: i64 = 20055361682;
const POS: i32 = 3;

/// A simulator served on its own port over `pool`.
struct Simulator {
    base: Url,
    task: tokio::task::JoinHandle<()>,
}

impl Simulator {
    async fn start(pool: &PgPool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
        let base = Url::parse(&format!("http://{}", listener.local_addr().expect("address"))).expect("url");
        let pool = pool.clone();
        let task = tokio::spawn(async move {
            api::fiscal_simulator::serve(listener, pool).await.expect("the simulator serves");
        });
        Simulator { base, task }
    }

    fn client(&self) -> FiscalClient {
        self.client_waiting(Duration::from_secs(10))
    }

    fn client_waiting(&self, timeout: Duration) -> FiscalClient {
        FiscalClient::new(&self.base, timeout, Arc::new(StaticCredentials::simulator())).expect("client")
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

fn issuer() -> Issuer {
    Issuer::new(ISSUER).expect("a valid CUIT")
}

fn today() -> Date {
    events::catalogue::ar_date(OffsetDateTime::now_utc())
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
        date: today(),
        total: 12100,
        net: 10000,
        exempt: 0,
        non_taxed: 0,
        other_taxes: 0,
        vat: 2100,
        vat_lines: vec![VatLine { code: 5, base: 10000, amount: 2100 }],
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
    VoucherRequest { voucher_type: 11, net: 12100, vat: 0, vat_lines: vec![], ..invoice_b(number) }
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
    let client = simulator.client();
    client.health().await.expect("healthy");
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(0));

    let first = client.authorize(issuer(), &invoice_a(1)).await.expect("approved");
    assert_eq!(first.number, 1);
    assert_eq!(first.cae.len(), 14);
    assert!(first.cae.bytes().all(|b| b.is_ascii_digit()), "{}", first.cae);
    assert_eq!(first.cae_due, today() + days(10));
    assert!(first.observations.is_empty());
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(1));

    // A gap, and the same number again (the authority is not idempotent).
    assert_eq!(codes(client.authorize(issuer(), &invoice_a(3)).await), vec![10016]);
    assert_eq!(codes(client.authorize(issuer(), &invoice_a(1)).await), vec![10016]);
    let second = client.authorize(issuer(), &invoice_a(2)).await.expect("approved");
    assert_ne!(second.cae, first.cae);
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(2));

    // Another voucher type, point of sale or issuer is another series.
    client.authorize(issuer(), &invoice_b(1)).await.expect("B starts at 1");
    client.authorize(issuer(), &VoucherRequest { point_of_sale: 4, ..invoice_a(1) }).await.expect("pos 4 starts at 1");
    let other = Issuer::new(OTHER_ISSUER).expect("a valid CUIT");
    assert_eq!(client.last_authorized(other, POS, 1).await, Ok(0));
    client.authorize(other, &invoice_a(1)).await.expect("another issuer starts at 1");
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(2));

    let listed = simulator.listed(&format!("issuer_tax_id={ISSUER}&point_of_sale={POS}&voucher_type=1")).await;
    let numbers: Vec<i64> = listed.iter().map(|v| v["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert_eq!(listed[0]["cae"], first.cae.as_str());
    assert_eq!(listed[0]["date"], today().to_string());
    assert_eq!(listed[0]["voucher"]["ImpTotal"], json!(121.0));
    assert_eq!(simulator.listed("").await.len(), 5);
}

#[sqlx::test(migrations = "../schema")]
async fn a_consult_finds_an_approved_voucher_and_602_otherwise(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    let request = invoice_a(1);
    let authorization = client.authorize(issuer(), &request).await.expect("approved");

    let stored = client.consult(issuer(), POS, 1, 1).await.expect("answered").expect("found");
    assert!(stored.is_approved());
    assert!(stored.matches(&request));
    assert_eq!(stored.cae, authorization.cae);
    assert_eq!(stored.cae_due, authorization.cae_due);
    assert_eq!((stored.total, stored.net, stored.vat, stored.date), (12100, 10000, 2100, today()));
    assert!(!stored.matches(&VoucherRequest { total: 12101, ..request.clone() }));

    assert_eq!(client.consult(issuer(), POS, 1, 2).await, Ok(None));
    assert_eq!(client.consult(issuer(), POS, 6, 1).await, Ok(None));
    assert_eq!(client.consult(issuer(), POS + 1, 1, 1).await, Ok(None));
}

#[sqlx::test(migrations = "../schema")]
async fn dates_stay_near_today_and_never_before_the_series_last(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    // Products: five days either way (the margins here survive midnight passing mid-test).
    let early = VoucherRequest { date: today() - days(8), ..invoice_a(1) };
    assert_eq!(codes(client.authorize(issuer(), &early).await), vec![10016]);
    let late = VoucherRequest { date: today() + days(8), ..invoice_a(1) };
    assert_eq!(codes(client.authorize(issuer(), &late).await), vec![10016]);
    client
        .authorize(issuer(), &VoucherRequest { date: today() + days(3), ..invoice_a(1) })
        .await
        .expect("within 5 days");
    // The next voucher may not be dated before the last one.
    assert_eq!(codes(client.authorize(issuer(), &invoice_a(2)).await), vec![10016]);
    client.authorize(issuer(), &VoucherRequest { date: today() + days(3), ..invoice_a(2) }).await.expect("same day");

    // Services: ten days, with their period and due date.
    let services = VoucherRequest {
        concept: 2,
        date: today() - days(8),
        service_from: Some(today() - days(40)),
        service_to: Some(today() - days(10)),
        payment_due: Some(today()),
        ..invoice_b(1)
    };
    assert_eq!(
        codes(client.authorize(issuer(), &VoucherRequest { payment_due: None, ..services.clone() }).await),
        vec![10049]
    );
    let backwards = VoucherRequest { service_from: Some(today()), ..services.clone() };
    assert_eq!(codes(client.authorize(issuer(), &backwards).await), vec![10032]);
    let due_before = VoucherRequest { payment_due: Some(today() - days(9)), ..services.clone() };
    assert_eq!(codes(client.authorize(issuer(), &due_before).await), vec![10036]);
    let approved = client.authorize(issuer(), &services).await.expect("services within 10 days");
    assert_eq!(approved.cae_due, today() - days(8) + days(10));
}

#[sqlx::test(migrations = "../schema")]
async fn totals_and_vat_must_add_up(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    let mismatch = VoucherRequest { total: 12200, ..invoice_a(1) };
    assert_eq!(codes(client.authorize(issuer(), &mismatch).await), vec![10048]);
    // A cent off is within tolerance.
    client.authorize(issuer(), &VoucherRequest { total: 12101, ..invoice_a(1) }).await.expect("one cent off");
    let wrong_rate = VoucherRequest {
        vat: 2000,
        total: 12000,
        vat_lines: vec![VatLine { code: 5, base: 10000, amount: 2000 }],
        ..invoice_a(2)
    };
    assert_eq!(codes(client.authorize(issuer(), &wrong_rate).await), vec![10051]);
    let unknown_rate =
        VoucherRequest { vat_lines: vec![VatLine { code: 7, base: 10000, amount: 2100 }], ..invoice_a(2) };
    assert_eq!(codes(client.authorize(issuer(), &unknown_rate).await), vec![10019]);
    let pesos = VoucherRequest { rate: Rate::from_units(2_000_000), ..invoice_a(2) };
    assert_eq!(codes(client.authorize(issuer(), &pesos).await), vec![10039]);
    // Two rates, in cents: 1000.00 at 21% and 333.33 at 10.5% (34.99965, sent as 35.00).
    let two_rates = VoucherRequest {
        net: 133333,
        vat: 21000 + 3500,
        total: 133333 + 24500,
        vat_lines: vec![
            VatLine { code: 5, base: 100000, amount: 21000 },
            VatLine { code: 4, base: 33333, amount: 3500 },
        ],
        ..invoice_a(2)
    };
    client.authorize(issuer(), &two_rates).await.expect("two rates");
    let stored = client.consult(issuer(), POS, 1, 2).await.expect("answered").expect("found");
    assert_eq!((stored.net, stored.vat, stored.total), (133333, 24500, 157833));
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(2));
}

#[sqlx::test(migrations = "../schema")]
async fn the_receivers_vat_condition_must_fit_the_letter(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    let a_to_consumer = VoucherRequest { receiver_vat_condition: 5, ..invoice_a(1) };
    assert_eq!(codes(client.authorize(issuer(), &a_to_consumer).await), vec![10243]);
    let b_to_registered = VoucherRequest { receiver_vat_condition: 1, ..invoice_b(1) };
    assert_eq!(codes(client.authorize(issuer(), &b_to_registered).await), vec![10243]);
    client.authorize(issuer(), &VoucherRequest { receiver_vat_condition: 6, ..invoice_a(1) }).await.expect("A to 6");
    client.authorize(issuer(), &VoucherRequest { receiver_vat_condition: 4, ..invoice_b(1) }).await.expect("B to 4");
    let a_to_dni = VoucherRequest { doc_type: 96, doc_number: 30123456, ..invoice_a(2) };
    assert_eq!(codes(client.authorize(issuer(), &a_to_dni).await), vec![10013]);
}

#[sqlx::test(migrations = "../schema")]
async fn class_c_carries_no_vat(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    let with_vat = VoucherRequest { net: 10000, vat: 2100, vat_lines: invoice_a(1).vat_lines, ..invoice_c(1) };
    assert_eq!(codes(client.authorize(issuer(), &with_vat).await), vec![10047, 10071]);
    client.authorize(issuer(), &invoice_c(1)).await.expect("C without VAT");
    let stored = client.consult(issuer(), POS, 11, 1).await.expect("answered").expect("found");
    assert_eq!((stored.total, stored.net, stored.vat), (12100, 12100, 0));

    // Its credit note names the invoice it corrects.
    let credit = VoucherRequest { voucher_type: 13, ..invoice_c(1) };
    assert_eq!(codes(client.authorize(issuer(), &credit).await), vec![10197]);
    let associated =
        AssociatedVoucher { voucher_type: 11, point_of_sale: POS, number: 1, issuer_cuit: None, date: Some(today()) };
    client.authorize(issuer(), &VoucherRequest { associated: vec![associated], ..credit }).await.expect("credit C");
}

#[sqlx::test(migrations = "../schema")]
async fn a_scripted_rejection_is_final_and_stores_nothing(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    simulator
        .script(ISSUER, POS, json!([{"outcome": "reject", "code": 10015, "message": "receptor no encontrado"}]))
        .await;
    let rejected = client.authorize(issuer(), &invoice_a(1)).await;
    assert_eq!(rejected, Err(FiscalError::Rejected { errors: vec![(10015, "receptor no encontrado".into())] }));
    assert!(!rejected.is_err_and(|e| e.is_retryable()));
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(0));
    assert_eq!(client.consult(issuer(), POS, 1, 1).await, Ok(None));
    assert!(simulator.listed("").await.is_empty());
    // The queue is spent: the same voucher is judged by the rules again.
    client.authorize(issuer(), &invoice_a(1)).await.expect("approved");

    // A point of sale's script applies to any voucher type there, and to nothing elsewhere.
    simulator.script(ISSUER, POS, json!([{"outcome": "reject", "code": 10048, "message": "totales"}])).await;
    client.authorize(issuer(), &VoucherRequest { point_of_sale: 4, ..invoice_b(1) }).await.expect("another pos");
    assert_eq!(codes(client.authorize(issuer(), &invoice_b(1)).await), vec![10048]);
}

#[sqlx::test(migrations = "../schema")]
async fn an_unavailable_authority_does_nothing(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    simulator.script(ISSUER, POS, json!([{"outcome": "unavailable"}])).await;
    let refused = client.authorize(issuer(), &invoice_a(1)).await;
    assert!(matches!(&refused, Err(FiscalError::Unavailable(_))), "{refused:?}");
    assert!(refused.is_err_and(|e| e.is_retryable() && !e.outcome_unknown()));
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(0));
    assert_eq!(client.consult(issuer(), POS, 1, 1).await, Ok(None));
    client.authorize(issuer(), &invoice_a(1)).await.expect("approved on the retry");

    // Nobody listening at all: refused before anything was sent.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
    let nowhere = Url::parse(&format!("http://{}", closed.local_addr().expect("address"))).expect("url");
    drop(closed);
    let client =
        FiscalClient::new(&nowhere, Duration::from_secs(5), Arc::new(StaticCredentials::simulator())).expect("client");
    assert!(matches!(client.health().await, Err(FiscalError::Unavailable(_))));
    assert!(matches!(client.authorize(issuer(), &invoice_a(2)).await, Err(FiscalError::Unavailable(_))));
}

#[sqlx::test(migrations = "../schema")]
async fn a_lost_reply_is_approved_and_found_by_consulting_before_asking_again(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    simulator.script(ISSUER, POS, json!([{"outcome": "lost_reply"}])).await;
    let impatient = simulator.client_waiting(Duration::from_millis(1500));
    let request = invoice_a(1);
    let lost = impatient.authorize(issuer(), &request).await;
    assert!(matches!(&lost, Err(FiscalError::NoReply(_))), "{lost:?}");
    assert!(lost.is_err_and(|e| e.outcome_unknown()));

    // The held request blocks nothing: the consult is answered while it is still open.
    let client = simulator.client();
    let stored = client.consult(issuer(), POS, 1, 1).await.expect("answered").expect("approved all the same");
    assert!(stored.is_approved() && stored.matches(&request));
    assert_eq!(stored.cae.len(), 14);
    // Asking again for the number is refused: what the consult is for.
    assert_eq!(codes(client.authorize(issuer(), &request).await), vec![10016]);
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(1));
    client.authorize(issuer(), &invoice_a(2)).await.expect("the series goes on");
    assert_eq!(simulator.listed(&format!("issuer_tax_id={ISSUER}")).await.len(), 2);
}

#[sqlx::test(migrations = "../schema")]
async fn observations_come_with_an_approval(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
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
    let first = client.authorize(issuer(), &invoice_a(1)).await.expect("approved");
    assert_eq!(first.observations.iter().map(|(code, _)| *code).collect::<Vec<_>>(), vec![10217]);
    let second = client.authorize(issuer(), &invoice_a(2)).await.expect("approved");
    assert_eq!(second.observations, vec![(10063, "receptor inactivo".to_owned())]);
    let stored = client.consult(issuer(), POS, 1, 2).await.expect("answered").expect("found");
    assert_eq!(stored.observations, second.observations);

    // A receiver condition left out is approved with observation 10246 (RG 5616). The adapter always
    // sends one, so this goes by hand.
    let (header, mut detail) = invoice_a(3).to_wire();
    detail.receiver_vat_condition = None;
    let auth = commands::fiscal::wire::Auth { token: "t".into(), sign: "s".into(), cuit: ISSUER };
    let request = CaeRequest { auth: Some(auth), request: FeCaeReq { header, details: vec![detail] } };
    let response = http_client()
        .post(simulator.url("/wsfev1/FECAESolicitar"))
        .body(serde_json::to_vec(&request).expect("json"))
        .send()
        .await
        .expect("sent");
    let answer: CaeResponse = serde_json::from_slice(&response.bytes().await.expect("body")).expect("an answer");
    assert_eq!(answer.header.expect("header").result, "A");
    assert_eq!(answer.details[0].observations.iter().map(|o| o.code).collect::<Vec<_>>(), vec![10246]);
    assert_eq!(answer.details[0].cae.len(), 14);
}

#[sqlx::test(migrations = "../schema")]
async fn the_simulator_remembers_its_vouchers_across_a_restart(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    client.authorize(issuer(), &invoice_a(1)).await.expect("approved");
    let second = client.authorize(issuer(), &invoice_a(2)).await.expect("approved");
    simulator.stop().await;

    let restarted = Simulator::start(&pool).await;
    let client = restarted.client();
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(2));
    let stored = client.consult(issuer(), POS, 1, 2).await.expect("answered").expect("remembered");
    assert_eq!((stored.cae, stored.cae_due), (second.cae, second.cae_due));
    assert_eq!(codes(client.authorize(issuer(), &invoice_a(2)).await), vec![10016]);
    client.authorize(issuer(), &invoice_a(3)).await.expect("the series goes on");
}

#[sqlx::test(migrations = "../schema")]
async fn concurrent_requests_for_one_number_approve_exactly_one(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let client = simulator.client();
    let request = invoice_a(1);
    let attempts = futures::future::join_all((0..8).map(|_| client.authorize(issuer(), &request))).await;
    let approved = attempts.iter().filter(|a| a.is_ok()).count();
    assert_eq!(approved, 1, "{attempts:?}");
    assert!(attempts.into_iter().filter(Result::is_err).all(|a| codes(a) == vec![10016]));
    assert_eq!(client.last_authorized(issuer(), POS, 1).await, Ok(1));
}

#[sqlx::test(migrations = "../schema")]
async fn requests_without_credentials_are_refused(pool: PgPool) {
    let simulator = Simulator::start(&pool).await;
    let anonymous =
        FiscalClient::new(&simulator.base, Duration::from_secs(5), Arc::new(StaticCredentials::new("", "")))
            .expect("client");
    let refused = anonymous.last_authorized(issuer(), POS, 1).await;
    assert_eq!(refused.map_err(|e| e.codes()), Err(vec![600]));
    assert_eq!(codes(anonymous.authorize(issuer(), &invoice_a(1)).await), vec![600]);
    // A voucher type the service does not authorize.
    let client = simulator.client();
    assert_eq!(client.last_authorized(issuer(), POS, 90).await.map_err(|e| e.codes()), Err(vec![11001]));
    assert_eq!(
        codes(client.authorize(issuer(), &VoucherRequest { voucher_type: 90, ..invoice_a(1) }).await),
        vec![10007]
    );
}
