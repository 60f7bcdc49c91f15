//! Authorizing a sale's voucher with the tax authority, exactly once even when the network lies.
//!
//! - New sales are authorized in batches per series ([`super::batches`]); a deferred sale's retry and
//!   an invoice of an existing sale go one by one here. Either way the series (issuer, point of sale,
//!   voucher type) is locked for the whole attempt (a row of `document_numbers`), so two requests never
//!   ask for the same number; the number is the authority's last authorized + 1. The row keeps the last number the authority approved to us, so the next
//!   voucher asks for that + 1 without a round trip for the last authorized; when that number is not
//!   the next one (10016: another system issued on the point of sale, or an approved voucher's
//!   transaction rolled back), the authority has approved nothing, and the voucher asks again with
//!   the authority's own last authorized. The row is a hint, never the truth: the authority checks
//!   every number.
//! - Approved: the sale is `issued` with the number, CAE and expiry. Finally rejected: nothing is
//!   stored and the command answers 422 `PRECONDITION_FAILED` with the authority's codes.
//! - Unavailable (refused before processing): the sale is `deferred`; nothing was done at the
//!   authority. No reply (the request may have been processed): `deferred` with the number asked for
//!   kept as unconfirmed. A worker ([`retry_forever`]) retries with backoff and, when a number is
//!   unconfirmed, consults it first: if the authority holds a voucher that matches the sale's, that is
//!   its authorization, and nothing is asked twice.

use crate::aggregate::{BusinessDetail, Rejection};
use crate::engine::{ExecuteError, Services, with_services};
use crate::fiscal::{AssociatedVoucher, FiscalClient, FiscalError, Issuer, Rate, VatLine, VoucherRequest};
use events::domain::Cents;
use events::catalogue::{FiscalStatus, SaleAuthorization, SaleEvent, SaleFiscal, SaleRecorded};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::{PgConnection, PgPool};
use std::collections::BTreeMap;
use std::time::Duration;
use uuid::Uuid;

/// The tax authority of the running worker; without one, what a voucher comes to: deferred.
pub fn authority() -> Result<FiscalClient, Outcome> {
    crate::engine::fiscal()
        .ok_or_else(|| Outcome::Deferred { unconfirmed: None, reason: "no tax authority is configured".into() })
}

/// What an authorization attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Issued(SaleAuthorization),
    /// Not authorized yet; `unconfirmed` is a number the authority may have approved.
    Deferred {
        unconfirmed: Option<i64>,
        reason: String,
    },
}

impl Outcome {
    /// The sale's fiscal state after this outcome.
    pub fn fiscal(&self) -> SaleFiscal {
        match self {
            Outcome::Issued(auth) => SaleFiscal {
                status: FiscalStatus::Issued,
                authorization: Some(auth.clone()),
                unconfirmed_number: None,
                rejection: Vec::new(),
            },
            Outcome::Deferred { unconfirmed, .. } => SaleFiscal {
                status: FiscalStatus::Deferred,
                authorization: None,
                unconfirmed_number: *unconfirmed,
                rejection: Vec::new(),
            },
        }
    }

    pub fn number(&self) -> Option<i64> {
        match self {
            Outcome::Issued(auth) => Some(auth.number),
            Outcome::Deferred { .. } => None,
        }
    }
}

/// The receiver's VAT condition code for the authority, from the customer's tax category.
pub fn receiver_condition(tax_category: Option<&str>) -> i32 {
    match tax_category {
        Some("Responsable Inscripto") => 1,
        Some("Exento") => 4,
        Some("Monotributista") => 6,
        Some("IVA no alcanzado") => 15,
        _ => 5,
    }
}

/// The voucher the authority is asked to approve for `sale` under `number`; `associated` is the voucher
/// a credit or debit note corrects. The taxed net is the subtotal less the exempt and non-taxed
/// amounts; a sale where that falls out of range (which the tax computation never records) is refused
/// rather than sent. Class C tells the authority no VAT, exempt or non-taxed amount: its whole
/// subtotal is the net.
pub fn voucher_request(
    sale: &SaleRecorded,
    number: i64,
    associated: Option<AssociatedVoucher>,
) -> Result<VoucherRequest, Rejection> {
    // The contact parser keeps a tax id to 7 to 11 digits, so it always reads as a number.
    let tax_id = sale.customer.tax_id.as_deref().map(|id| (id.len(), id.parse::<i64>()));
    let (doc_type, doc_number) = match (sale.customer.tax_id_type.as_deref(), tax_id) {
        (Some("CUIL/CUIT"), Some((11, Ok(cuit)))) => (80, cuit),
        (Some("DNI"), Some((_, Ok(dni)))) => (96, dni),
        _ => (99, 0),
    };
    let without_vat = sale.letter.as_deref() == Some("C");
    let (exempt, non_taxed) = if without_vat { (Cents::ZERO, Cents::ZERO) } else { (sale.exempt, sale.non_taxed) };
    let net = sale.subtotal.checked_sub(exempt).and_then(|rest| rest.checked_sub(non_taxed));
    let net = net.ok_or_else(|| {
        Rejection::unprocessable("SALE_AMOUNTS_INVALID", "subtotal", "the sale's taxed net is out of range")
    })?;
    let vat_lines = if without_vat {
        Vec::new()
    } else {
        sale.vat.iter().map(|v| VatLine { code: v.code.code(), base: v.base, amount: v.amount }).collect()
    };
    let services = sale.concept != 1;
    Ok(VoucherRequest {
        point_of_sale: sale.point_of_sale_number,
        voucher_type: sale.voucher_type,
        number,
        concept: sale.concept,
        doc_type,
        doc_number,
        date: sale.invoice_date,
        total: sale.total,
        net,
        exempt,
        non_taxed,
        other_taxes: Cents::ZERO,
        vat: if without_vat { Cents::ZERO } else { sale.tax_amount },
        vat_lines,
        other_tax_lines: Vec::new(),
        currency: "PES".to_owned(),
        rate: Rate::ONE,
        receiver_vat_condition: receiver_condition(sale.customer.tax_category.as_deref()),
        associated: associated.into_iter().collect(),
        service_from: services.then(|| sale.service_from.unwrap_or(sale.invoice_date)),
        service_to: services.then(|| sale.service_to.unwrap_or(sale.invoice_date)),
        payment_due: services.then(|| sale.due_date.unwrap_or(sale.invoice_date)),
    })
}

/// The row of `sale`'s voucher series in `document_numbers`.
fn series(sale: &SaleRecorded) -> String {
    crate::fiscal::series_row(sale.point_of_sale_id, sale.voucher_type)
}

/// Locks the series of `sale`'s voucher for the rest of the transaction (one statement: the upsert
/// locks the row it finds), answering the last number the authority approved to us (0: none known).
pub(super) async fn lock_series(conn: &mut PgConnection, org_id: Uuid, sale: &SaleRecorded) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "insert into document_numbers (org_id, series, last) values ($1, $2, 0)
         on conflict (org_id, series) do update set last = document_numbers.last returning last",
    )
    .bind(org_id)
    .bind(series(sale))
    .fetch_one(&mut *conn)
    .await
}

/// Remembers `number` as approved by the authority in the series (still locked by this transaction).
pub(super) async fn approved(conn: &mut PgConnection, org_id: Uuid, sale: &SaleRecorded, number: i64) -> Result<(), sqlx::Error> {
    sqlx::query("update document_numbers set last = greatest(last, $3) where org_id = $1 and series = $2")
        .bind(org_id)
        .bind(series(sale))
        .bind(number)
        .execute(conn)
        .await?;
    Ok(())
}

/// Whether a rejection says only that the number was not the next one (the authority approved nothing).
pub(super) fn not_next(error: &FiscalError) -> bool {
    matches!(error, FiscalError::Rejected { .. }) && error.codes().contains(&10016)
}

/// The authority's final refusal: 422 `PRECONDITION_FAILED`, one detail per code.
fn refused(errors: Vec<(i64, String)>) -> Rejection {
    Rejection::Unprocessable {
        code: "PRECONDITION_FAILED".into(),
        message: "the tax authority rejected the voucher; nothing was stored".into(),
        details: errors
            .into_iter()
            .map(|(code, message)| BusinessDetail {
                field: None,
                code: "FISCAL_REJECTION".into(),
                message,
                metadata: BTreeMap::from([("authority_code".to_owned(), serde_json::Value::from(code))]),
            })
            .collect(),
    }
}

/// The deferral an error of the authority leads to (none for a final rejection): the number whose fate
/// is unknown is `asked` when the reply to it was lost, else whatever was `outstanding` before the call.
pub(super) fn deferral(error: FiscalError, asked: Option<i64>, outstanding: Option<i64>) -> Result<Outcome, Rejection> {
    match error {
        FiscalError::Rejected { errors } => Err(refused(errors)),
        FiscalError::NoReply(reason) => Ok(Outcome::Deferred { unconfirmed: asked.or(outstanding), reason }),
        FiscalError::Unavailable(reason)
        | FiscalError::Unauthenticated(reason)
        | FiscalError::NotRepresented(reason)
        | FiscalError::Protocol(reason) => {
            Ok(Outcome::Deferred { unconfirmed: outstanding, reason })
        }
    }
}

/// `call`'s answer, or `elapsed()` when `deadline` comes first.
pub(super) async fn within<T>(
    deadline: tokio::time::Instant,
    call: impl std::future::Future<Output = Result<T, FiscalError>>,
    elapsed: impl FnOnce() -> FiscalError,
) -> Result<T, FiscalError> {
    tokio::time::timeout_at(deadline, call).await.unwrap_or_else(|_| Err(elapsed()))
}

/// Authorizes `sale`'s voucher (in the caller's transaction, holding its series): consulting an
/// unconfirmed number first, then asking for the authority's last authorized + 1.
pub async fn authorize(
    conn: &mut PgConnection,
    org_id: Uuid,
    issuer: Issuer,
    (sale_id, sale, version): (Uuid, &SaleRecorded, i32),
    associated: Option<AssociatedVoucher>,
) -> Result<Outcome, ExecuteError> {
    let client = match authority() {
        Ok(client) => client,
        Err(deferred) => return Ok(deferred),
    };
    let known = lock_series(conn, org_id, sale).await?;
    // Whoever else authorized this sale (the retry worker, or an invoice call on another worker) held
    // the series until it committed: a sale that moved since it was read is contended now, before the
    // authority is asked for a second voucher that no sale would record.
    if events::store::stream_version(conn, org_id, sale_id).await? != version {
        return Err(ExecuteError::Contended(sale_id));
    }
    // Every call for this voucher ends within the authority's share of the command.
    let deadline = tokio::time::Instant::now() + crate::fiscal::AUTHORITY_BUDGET;
    let lookup = |what: &str| FiscalError::Unavailable(format!("the command's time for the authority ran out ({what})"));
    if let Some(number) = sale.fiscal.unconfirmed_number {
        let asked = voucher_request(sale, number, associated)?;
        let consulted = client.consult(issuer, sale.point_of_sale_number, sale.voucher_type, number);
        match within(deadline, consulted, || lookup("consulting")).await {
            Ok(Some(stored)) if stored.is_approved() && stored.matches(&asked) => {
                approved(conn, org_id, sale, number).await?;
                return Ok(Outcome::Issued(SaleAuthorization {
                    number,
                    cae: stored.cae,
                    cae_due: stored.cae_due,
                    observations: stored.observations,
                }));
            }
            // Not ours (or not there): the number is free to be asked for again below.
            Ok(_) => {}
            Err(error) => return Ok(deferral(error, Some(number), Some(number))?),
        }
    }
    // The number we last had approved, + 1; or, when none is known or it proves not to be the next,
    // the authority's last authorized + 1.
    let mut last = (known > 0).then_some(known);
    loop {
        let remembered = last.is_some();
        let number = match last {
            Some(last) => last + 1,
            None => match within(
                deadline,
                client.last_authorized(issuer, sale.point_of_sale_number, sale.voucher_type),
                || lookup("the last number"),
            )
            .await
            {
                Ok(last) => last + 1,
                Err(error) => return Ok(deferral(error, None, sale.fiscal.unconfirmed_number)?),
            },
        };
        let request = voucher_request(sale, number, associated)?;
        // Cut short, the request may have reached the authority: the number is consulted before it is
        // asked for again.
        let lost = || FiscalError::NoReply("the command's time for the authority ran out".into());
        match within(deadline, client.authorize(issuer, &request), lost).await {
            Ok(auth) => {
                approved(conn, org_id, sale, auth.number).await?;
                return Ok(Outcome::Issued(auth.into()));
            }
            Err(error) if remembered && not_next(&error) => last = None,
            Err(error) => return Ok(deferral(error, Some(number), None)?),
        }
    }
}

/// Keeps the retry row of a deferred sale (or drops it once the sale is settled). The wait counts from
/// now, when the attempt has ended (`clock_timestamp()`), not from the start of its transaction, which
/// held the authority's round trip: otherwise a slow refusal left the next attempt already due.
pub async fn track(conn: &mut PgConnection, org_id: Uuid, sale_id: Uuid, deferred: bool) -> Result<(), sqlx::Error> {
    if deferred {
        sqlx::query(
            "insert into fiscal_pending (org_id, sale_id, attempts, next_attempt_at) values ($1, $2, 0, clock_timestamp() + interval '1 second')
             on conflict (org_id, sale_id) do update set attempts = fiscal_pending.attempts + 1,
                 next_attempt_at = clock_timestamp() + least(interval '1 second' * power(2, least(fiscal_pending.attempts + 1, 9)), interval '5 minutes')",
        )
        .bind(org_id)
        .bind(sale_id)
        .execute(conn)
        .await?;
    } else {
        sqlx::query("delete from fiscal_pending where org_id = $1 and sale_id = $2")
            .bind(org_id)
            .bind(sale_id)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Waits for whoever holds `sale_id`'s `fiscal_pending` row (the retry worker authorizing it), and holds
/// it for the caller's transaction; nothing when the sale has none.
pub async fn hold_pending(conn: &mut PgConnection, org_id: Uuid, sale_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("select 1 from fiscal_pending where org_id = $1 and sale_id = $2 for update")
        .bind(org_id)
        .bind(sale_id)
        .fetch_optional(conn)
        .await?;
    Ok(())
}

/// The state of a sale, folded from its stream, with the stream's version.
pub async fn load_sale(
    conn: &mut PgConnection,
    org_id: Uuid,
    sale_id: Uuid,
) -> Result<Option<(SaleRecorded, i32)>, ExecuteError> {
    let stored = events::store::load_stream(conn, org_id, sale_id).await?;
    let mut state = None;
    let mut version = 0;
    for event in stored {
        if event.stream_type != SaleEvent::STREAM_TYPE {
            return Ok(None);
        }
        let decoded = SaleEvent::decode(&event.event_type, event.schema_version, event.data)
            .map_err(|e| ExecuteError::Corrupt(sale_id, e.to_string()))?;
        state = events::catalogue::fold_sale(state, &decoded);
        version = event.version;
    }
    Ok(state.map(|s| (s, version)))
}

/// The issuer (the organization's CUIT), if its fiscal profile names one.
pub async fn issuer(conn: &mut PgConnection, org_id: Uuid) -> Result<Option<(Issuer, Option<String>)>, sqlx::Error> {
    let row: Option<(Option<String>, Option<String>)> =
        sqlx::query_as("select tax_id, tax_category from organizations where id = $1")
            .bind(org_id)
            .fetch_optional(conn)
            .await?;
    Ok(row.and_then(|(tax_id, category)| {
        let issuer = Issuer::new(org_id, tax_id?.parse().ok()?).ok()?;
        Some((issuer, category))
    }))
}

/// The voucher a note corrects, as the authority knows it (issued sales only).
pub async fn associated_voucher(
    conn: &mut PgConnection,
    org_id: Uuid,
    issuer: Issuer,
    associated: Option<Uuid>,
) -> Result<Option<AssociatedVoucher>, ExecuteError> {
    let Some(id) = associated else { return Ok(None) };
    let Some((sale, _)) = load_sale(conn, org_id, id).await? else { return Ok(None) };
    Ok(sale.number.map(|number| AssociatedVoucher {
        voucher_type: sale.voucher_type,
        point_of_sale: sale.point_of_sale_number,
        number,
        issuer_cuit: Some(issuer.cuit()),
        date: Some(sale.invoice_date),
    }))
}

/// The event recording a new fiscal outcome of an existing sale (with the sale's state after it).
pub fn fiscal_change(
    org_id: Uuid,
    sale_id: Uuid,
    version: i32,
    sale: &SaleRecorded,
    outcome: &Outcome,
    metadata: &Metadata,
) -> Result<AppendRequest, serde_json::Error> {
    let mut after = sale.clone();
    after.number = outcome.number().or(sale.number);
    after.fiscal = outcome.fiscal();
    let event = SaleEvent::SaleFiscalChanged(Box::new(after));
    let stream =
        StreamRef { org_id, stream_type: SaleEvent::STREAM_TYPE, stream_id: sale_id, expected_version: version };
    Ok(AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() })
}

/// The sales' background job: [`retry_forever`].
pub const RETRY_INVOICES: crate::handler::Job =
    crate::handler::Job { name: "invoice_retry", run: |pool, services| Box::pin(retry_forever(pool, services)) };

/// Retries deferred sales for ever: every second, the due ones (several workers may run; rows another
/// holds are skipped), each in a transaction of its own.
pub async fn retry_forever(pool: PgPool, services: Services) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(error) = with_services(services.clone(), retry_due(&pool)).await {
            tracing::warn!(%error, "could not retry deferred invoices");
        }
    }
}

/// Retries the deferred sales that are due now; how many were settled (issued or rejected).
pub async fn retry_due(pool: &PgPool) -> Result<usize, ExecuteError> {
    let mut settled = 0;
    for _ in 0..20 {
        let mut tx = pool.begin().await?;
        let due: Option<(Uuid, Uuid)> = sqlx::query_as(
            "select org_id, sale_id from fiscal_pending where next_attempt_at <= now()
             order by next_attempt_at limit 1 for update skip locked",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some((org_id, sale_id)) = due else { break };
        let metadata = Metadata::system("fiscal_worker");
        let Some((sale, version)) = load_sale(&mut tx, org_id, sale_id).await? else {
            track(&mut tx, org_id, sale_id, false).await?;
            tx.commit().await?;
            continue;
        };
        if sale.fiscal.status != FiscalStatus::Deferred {
            track(&mut tx, org_id, sale_id, false).await?;
            tx.commit().await?;
            continue;
        }
        let Some((issuer, _)) = issuer(&mut tx, org_id).await? else {
            track(&mut tx, org_id, sale_id, true).await?;
            tx.commit().await?;
            continue;
        };
        let associated = associated_voucher(&mut tx, org_id, issuer, sale.associated_sale_id).await?;
        let request = match authorize(&mut tx, org_id, issuer, (sale_id, &sale, version), associated).await {
            Ok(outcome) => {
                let deferred = matches!(outcome, Outcome::Deferred { .. });
                track(&mut tx, org_id, sale_id, deferred).await?;
                if deferred && outcome.fiscal() == sale.fiscal {
                    // Nothing new to record: only the next attempt moves.
                    tx.commit().await?;
                    continue;
                }
                settled += usize::from(!deferred);
                fiscal_change(org_id, sale_id, version, &sale, &outcome, &metadata)?
            }
            Err(ExecuteError::Rejected(Rejection::Unprocessable { details, .. })) => {
                // A final rejection of a deferred sale: it stays recorded, marked rejected.
                track(&mut tx, org_id, sale_id, false).await?;
                settled += 1;
                let rejection = details
                    .into_iter()
                    .map(|d| {
                        (d.metadata.get("authority_code").and_then(serde_json::Value::as_i64).unwrap_or(0), d.message)
                    })
                    .collect();
                let fiscal = SaleFiscal {
                    status: FiscalStatus::Rejected,
                    authorization: None,
                    unconfirmed_number: None,
                    rejection,
                };
                let mut after = sale.clone();
                after.fiscal = fiscal;
                let event = SaleEvent::SaleFiscalChanged(Box::new(after));
                let stream = StreamRef {
                    org_id,
                    stream_type: SaleEvent::STREAM_TYPE,
                    stream_id: sale_id,
                    expected_version: version,
                };
                AppendRequest { stream, events: vec![event.to_new_event()?], metadata }
            }
            Err(other) => return Err(other),
        };
        crate::engine::append_together(&mut tx, &[request], sale_id).await?;
        tx.commit().await?;
    }
    Ok(settled)
}
