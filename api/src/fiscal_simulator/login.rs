//! The simulator's authentication service (WSAA `loginCms`) and its check of the `Auth` of every
//! invoicing call, against the tickets it issued (`fiscal_simulator_tickets`, schema/0035).
//!
//! A login's CMS must verify against the certificate it carries; that certificate must be valid now
//! and name a CUIT; the request must ask for service `wsfe`, have been generated no later than now
//! (give or take [`CLOCK_TOLERANCE`]) and expire after now, within 24 hours of its generation. While a
//! ticket of the same certificate and service is valid, another login is refused with
//! `coe.alreadyAuthenticated`. A ticket lasts twelve hours (or what the script says), never past the
//! request's own expiration. Refusals are SOAP faults with the authority's codes.

use base64::Engine as _;
use commands::fiscal::wire::{Auth, Message};
use commands::fiscal::wsaa::{self, Ticket};
use commands::fiscal::{certificate, soap};
use poem::Response;
use poem::http::StatusCode;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use time::OffsetDateTime;

use super::Simulator;

/// How far ahead of the simulator's clock a request's generation time may be.
pub const CLOCK_TOLERANCE: time::Duration = time::Duration::minutes(2);
/// The longest a login ticket request may ask to last.
const LONGEST_REQUEST: time::Duration = time::Duration::hours(24);
/// Who signs the tickets, as the authority's homologation service names itself.
const SOURCE: &str = "CN=wsaahomo, O=AFIP, C=AR, SERIALNUMBER=CUIT 33693450239";

/// A refusal: the fault code (after the `ns1:` prefix) and message.
struct Refusal(&'static str, String);

/// `loginCms`.
pub async fn login(simulator: &Simulator, body: &[u8]) -> Response {
    match issue(simulator, body).await {
        Ok(answer) => Response::builder().content_type(soap::CONTENT_TYPE).body(answer),
        Err(Refusal(code, message)) => fault(&format!("ns1:{code}"), &message),
    }
}

async fn issue(simulator: &Simulator, body: &[u8]) -> Result<Vec<u8>, Refusal> {
    // Whole seconds, as the ticket states its times.
    let now = OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    let cms = wsaa::signed_request_of(body).map_err(|e| Refusal("cms.bad", format!("No se pudo leer el CMS: {e}")))?;
    let signed = wsaa::verify(&cms)
        .map_err(|e| Refusal("cms.sign.invalid", format!("Firma invalida o algoritmo no soportado: {e}")))?;
    let described = certificate::describe(&signed.certificate)
        .map_err(|e| Refusal("cms.cert.invalid", format!("Certificado invalido: {e}")))?;
    if now > described.not_after {
        return Err(Refusal("cms.cert.expired", format!("Certificado expirado el {}", described.not_after)));
    }
    if now < described.not_before {
        return Err(Refusal("cms.cert.invalid", "Certificado todavia no valido".into()));
    }
    let cuit: i64 =
        described.cuit.parse().map_err(|_| Refusal("cms.cert.invalid", "CUIT invalida en el certificado".into()))?;
    let request = wsaa::parse_login_ticket_request(&signed.content)
        .map_err(|e| Refusal("xml.bad", format!("No se pudo interpretar el XML: {e}")))?;
    if request.service != wsaa::SERVICE {
        return Err(Refusal(
            "coe.notAuthorized",
            format!("Computador no autorizado a acceder al servicio {}", request.service),
        ));
    }
    if request.generation > now + CLOCK_TOLERANCE {
        return Err(Refusal("xml.generationTime.invalid", "generationTime posee formato o dato inválido".into()));
    }
    if request.expiration <= now || request.expiration - request.generation > LONGEST_REQUEST {
        return Err(Refusal("xml.expirationTime.invalid", "expirationTime posee formato o dato inválido".into()));
    }
    let fingerprint = Sha256::digest(&signed.certificate).to_vec();
    let storage = |error: sqlx::Error| {
        tracing::error!(%error, "fiscal simulator: the ticket store failed");
        Refusal("cms.internal", "Error interno".into())
    };
    let mut tx = simulator.pool.begin().await.map_err(storage)?;
    sqlx::query("select pg_advisory_xact_lock(hashtextextended('fiscal-simulator-login ' || encode($1, 'hex'), 0))")
        .bind(&fingerprint)
        .execute(&mut *tx)
        .await
        .map_err(storage)?;
    let valid: Option<OffsetDateTime> = sqlx::query_scalar(
        "select max(expiration) from fiscal_simulator_tickets where fingerprint = $1 and service = $2 and expiration > $3",
    )
    .bind(&fingerprint)
    .bind(&request.service)
    .bind(now)
    .fetch_one(&mut *tx)
    .await
    .map_err(storage)?;
    if valid.is_some() {
        return Err(Refusal(
            "coe.alreadyAuthenticated",
            "El CEE ya posee un TA valido para el acceso al WSN solicitado".into(),
        ));
    }
    let lifetime = simulator.script.ticket_lifetime();
    let ticket = Ticket {
        token: random_text(96),
        sign: random_text(48),
        generation: now,
        expiration: request.expiration.min(now + lifetime),
    };
    sqlx::query(
        "insert into fiscal_simulator_tickets (token, sign, fingerprint, service, cuit, generation, expiration)
         values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&ticket.token)
    .bind(&ticket.sign)
    .bind(&fingerprint)
    .bind(&request.service)
    .bind(cuit)
    .bind(ticket.generation)
    .bind(ticket.expiration)
    .execute(&mut *tx)
    .await
    .map_err(storage)?;
    tx.commit().await.map_err(storage)?;
    Ok(wsaa::login_response(&ticket, request.unique_id, SOURCE, &described.subject))
}

/// A SOAP fault, HTTP 500 as the authority answers it.
pub fn fault(code: &str, message: &str) -> Response {
    Response::builder()
        .status(StatusCode::INTERNAL_SERVER_ERROR)
        .content_type(soap::CONTENT_TYPE)
        .body(soap::fault(code, message))
}

/// `bytes` random bytes in Base64.
fn random_text(bytes: usize) -> String {
    let random: Vec<u8> = (0..bytes).map(|_| rand::random::<u8>()).collect();
    base64::engine::general_purpose::STANDARD.encode(random)
}

/// The CUIT `auth` may invoice for, or the authority's errors: 500 without `Auth`; 600 for a token and
/// sign it did not issue or that expired; 601 for a CUIT the ticket does not represent.
pub async fn authenticate(pool: &PgPool, auth: Option<&Auth>) -> Result<Result<i64, Vec<Message>>, sqlx::Error> {
    let errors = super::rules::check_auth(auth);
    let Some(auth) = auth.filter(|_| errors.is_empty()) else { return Ok(Err(errors)) };
    let ticket: Option<(i64, OffsetDateTime)> =
        sqlx::query_as("select cuit, expiration from fiscal_simulator_tickets where token = $1 and sign = $2")
            .bind(&auth.token)
            .bind(&auth.sign)
            .fetch_optional(pool)
            .await?;
    Ok(match ticket {
        None => Err(vec![Message::new(600, "ValidacionDeToken: No validaron las firmas digitales")]),
        Some((_, expiration)) if expiration <= OffsetDateTime::now_utc() => {
            Err(vec![Message::new(600, "ValidacionDeToken: Token vencido")])
        }
        Some((cuit, _)) if cuit != auth.cuit => Err(vec![Message::new(
            601,
            format!(
                "CUIT representada no incluida en Token: {} no figura entre las CUIT que representa el certificado",
                auth.cuit
            ),
        )]),
        Some((cuit, _)) => Ok(cuit),
    })
}
