//! Document downloads through a real server: a document requested in the store is rendered by the
//! projections role's worker, and its signed link serves the PDF without a bearer credential for five
//! minutes; expired or altered links are refused with the error envelope and nothing else.

use crate::helpers::{TestApp, error, eventually};
use api::http::documents::{DocumentKey, signed_path};
use projections::documents::store::{self, DocumentState};
use projections::documents::{
    Authorization, DocumentLine, ExchangeRate, OwnerKind, Party, QrData, VatLine, VoucherDocument,
};
use sqlx::PgPool;
use std::time::Duration;
use time::OffsetDateTime;
use time::macros::date;
use uuid::Uuid;

fn voucher() -> VoucherDocument {
    VoucherDocument {
        title: "FACTURA".into(),
        letter: Some("A".into()),
        voucher_code: Some(1),
        point_of_sale: 3,
        number: 1207,
        date: date!(2026 - 08 - 20),
        issuer: Party {
            name: "Almacén de Prueba".into(),
            tax_id: Some("30712345678".into()),
            tax_category: Some("IVA Responsable Inscripto".into()),
            address: None,
            ..Party::default()
        },
        receiver: Party {
            name: "Ñandú Logística S.A.".into(),
            tax_id: Some("30698765432".into()),
            tax_category: Some("IVA Responsable Inscripto".into()),
            address: Some("Ruta 9 km 12, Tucumán".into()),
            ..Party::default()
        },
        lines: vec![DocumentLine {
            description: "Cajón de manzanas".into(),
            quantity: "2".into(),
            unit_price_cents: events::domain::Cents::of(1_000_000),
            discount: None,
            vat_label: Some("21%".into()),
            amount_cents: events::domain::Cents::of(2_000_000),
        }],
        vat_breakdown: vec![VatLine { label: "21%".into(), base_cents: events::domain::Cents::of(2_000_000), amount_cents: events::domain::Cents::of(420_000) }],
        subtotal_cents: events::domain::Cents::of(2_000_000),
        tax_cents: events::domain::Cents::of(420_000),
        total_cents: events::domain::Cents::of(2_420_000),
        currency: "PES".into(),
        exchange_rate: None,
        authorization: Some(Authorization {
            cae: "76543210987654".into(),
            cae_due: date!(2026 - 08 - 30),
            qr: QrData {
                ver: 1,
                fecha: date!(2026 - 08 - 20),
                cuit: 30_712_345_678,
                pto_vta: 3,
                tipo_cmp: 1,
                nro_cmp: 1207,
                importe_cents: 2_420_000,
                moneda: "PES".into(),
                ctz: ExchangeRate::ONE,
                tipo_doc_rec: Some(80),
                nro_doc_rec: Some(30_698_765_432),
                tipo_cod_aut: "E".into(),
                cod_aut: 76_543_210_987_654,
            },
        }),
        notes: None,
        reference: None,
    }
}

/// Requests `document` for a new sale of the test's organization and waits for its state to be `until`.
async fn requested(app: &TestApp, document: &VoucherDocument, until: DocumentState) -> Uuid {
    let id = Uuid::now_v7();
    let mut conn = app.pool.acquire().await.expect("connection");
    store::request(&mut conn, app.org_id, OwnerKind::Sale, id, document).await.expect("requested");
    eventually(Duration::from_secs(30), "the document worker", || async {
        let state = store::state(&app.pool, app.org_id, OwnerKind::Sale, id).await.expect("state");
        (state == until).then_some(())
    })
    .await;
    id
}

async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    app.client.get(format!("{}{path}", app.base)).send().await.expect("sent")
}

#[sqlx::test(migrations = "../schema")]
async fn a_signed_link_serves_the_rendered_pdf_without_a_credential(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let id = requested(&app, &voucher(), DocumentState::Ready).await;
    let key = DocumentKey::load(&app.pool).await.expect("the database's key");
    let path = signed_path(&key, app.org_id, OwnerKind::Sale, id, OffsetDateTime::now_utc());
    assert!(path.starts_with("/documents/"), "{path}");

    let response = get(&app, &path).await;
    assert_eq!(response.status().as_u16(), 200);
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("content-type").as_deref(), Some("application/pdf"));
    assert_eq!(header("content-disposition").as_deref(), Some("inline; filename=\"factura-a-00003-00001207.pdf\""));
    assert!(header("service-request-id").is_some());
    let bytes = response.bytes().await.expect("the PDF");
    assert!(bytes.starts_with(b"%PDF-"), "a PDF");
    let stored = store::content(&app.pool, app.org_id, OwnerKind::Sale, id).await.expect("content");
    assert_eq!(stored.as_deref(), Some(&bytes[..]));
    let text = pdf_text(&bytes);
    for expected in ["CAE Nº: 76543210987654", "$ 24.200,00", "Ñandú Logística S.A.", "Nº 00003-00001207"] {
        assert!(text.contains(expected), "{expected:?} is missing from: {text}");
    }

    // A credential is neither needed nor harmful.
    let with_key = app.client.get(format!("{}{path}", app.base)).bearer_auth(&app.api_key).send().await.expect("sent");
    assert_eq!(with_key.status().as_u16(), 200);
}

#[sqlx::test(migrations = "../schema")]
async fn expired_or_altered_links_answer_403_and_nothing_else(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let id = requested(&app, &voucher(), DocumentState::Ready).await;
    let key = DocumentKey::load(&app.pool).await.expect("the database's key");

    let six_minutes_ago = OffsetDateTime::now_utc() - time::Duration::minutes(6);
    let expired = signed_path(&key, app.org_id, OwnerKind::Sale, id, six_minutes_ago);
    let body = error(get(&app, &expired).await, 403, "authorization_error").await;
    assert_eq!(body["error"]["code"], "INVALID_DOCUMENT_LINK");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "only request_id and error: {body}");

    let valid = signed_path(&key, app.org_id, OwnerKind::Sale, id, OffsetDateTime::now_utc());
    let (payload, signature) = valid.split_once('.').expect("payload and signature");
    let flip = |text: &str, at: usize| {
        let mut chars: Vec<char> = text.chars().collect();
        chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
        chars.into_iter().collect::<String>()
    };
    let altered = [
        format!("{}.{signature}", flip(payload, payload.len() - 3)),
        format!("{payload}.{}", flip(signature, 5)),
        format!("{payload}.{}", &signature[..20]),
        payload.to_owned(),
        "/documents/not-a-token".to_owned(),
    ];
    for path in &altered {
        let response = get(&app, path).await;
        assert_ne!(
            response.headers().get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/pdf"),
            "{path}"
        );
        let body = error(response, 403, "authorization_error").await;
        assert_eq!(body["error"]["code"], "INVALID_DOCUMENT_LINK", "{path}");
    }

    // Signed by another database's key: refused too.
    let foreign =
        signed_path(&DocumentKey::new(vec![1; 32]), app.org_id, OwnerKind::Sale, id, OffsetDateTime::now_utc());
    error(get(&app, &foreign).await, 403, "authorization_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn a_valid_link_to_a_document_that_is_not_ready_answers_404(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let key = DocumentKey::load(&app.pool).await.expect("the database's key");
    let now = OffsetDateTime::now_utc();

    let never_requested = signed_path(&key, app.org_id, OwnerKind::Purchase, Uuid::now_v7(), now);
    let body = error(get(&app, &never_requested).await, 404, "invalid_request_error").await;
    assert_eq!(body["error"]["code"], "DOCUMENT_NOT_READY");
    assert_eq!(body["error"]["details"][0]["code"], "missing");

    // A voucher number the renderer refuses to print keeps its document from becoming ready.
    let mut unprintable = voucher();
    unprintable.number = 1_000_000_000;
    let id = requested(&app, &unprintable, DocumentState::Pending).await;
    eventually(Duration::from_secs(30), "a failed attempt", || async {
        let attempts: i32 = sqlx::query_scalar("select attempts from documents where owner_id = $1")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .expect("row");
        (attempts > 0).then_some(())
    })
    .await;
    let path = signed_path(&key, app.org_id, OwnerKind::Sale, id, OffsetDateTime::now_utc());
    let body = error(get(&app, &path).await, 404, "invalid_request_error").await;
    assert_eq!(body["error"]["code"], "DOCUMENT_NOT_READY");
    assert_eq!(body["error"]["details"][0]["code"], "pending");
}

/// The PDF's text as a reader extracts it, whitespace runs made single spaces.
fn pdf_text(pdf: &[u8]) -> String {
    let text = pdf_extract::extract_text_from_mem(pdf).expect("the PDF's text reads back");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
