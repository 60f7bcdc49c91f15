//! How the workers run payments: the document shape ([`crate::document`]) with the facts loaded from
//! the write model (the contact, the payment methods, the locations with their ledger accounts, the
//! documents allocated to, locked in id order, and the organization's accounts) and the decision
//! appended as one event carrying its balanced entry, with the documents' open balances moved in the
//! same transaction.

use super::{LineInput, MethodFacts, PaymentCommand, PaymentFacts, PaymentInput, PaymentOutcome};
use crate::aggregate::Rejection;
use crate::document::Document;
use crate::engine::{Committed, ExecuteError, append_typed};
use crate::handler::handler;
use crate::records::PaymentMethod;
use crate::reply::CommandReply;
use crate::treasury::{OrgAccount, org_account};
use events::catalogue::{
    Allocation, Currency, CustomerPaymentEvent, LocationRef, PaymentFact, PaymentRecorded, PaymentSide,
    SaleRecorded, SupplierPaymentEvent, ar_date, sale_payment_id,
};
use events::domain::{Cents, Percentage};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// Opens a document's row of what is still owed on it (`kind`: `sale` or `purchase`), in the
/// transaction that records the document.
#[allow(clippy::too_many_arguments, reason = "one row's columns")]
pub async fn open_document(
    conn: &mut PgConnection,
    org_id: Uuid,
    kind: &str,
    id: Uuid,
    contact_id: Uuid,
    total: Cents,
    due: Cents,
    due_date: Option<Date>,
) -> Result<(), ExecuteError> {
    sqlx::query(
        "insert into open_documents (org_id, kind, id, contact_id, total, due, due_date)
         values ($1, $2, $3, $4, $5, $6, $7) on conflict do nothing",
    )
    .bind(org_id)
    .bind(kind)
    .bind(id)
    .bind(contact_id)
    .bind(total)
    .bind(due.max(Cents::ZERO))
    .bind(due_date)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Lowers what a sale owes by a credit note correcting it. What passes what the sale still owed takes
/// it below zero, so after a payment voided later the sale owes its total less its credits and the
/// payments that remain; payments read what is owed as never below zero ([`lock_documents`]).
pub async fn credit_sale(
    conn: &mut PgConnection,
    org_id: Uuid,
    sale_id: Uuid,
    amount: Cents,
) -> Result<(), ExecuteError> {
    sqlx::query(
        "update open_documents set due = due - $3 where org_id = $1 and kind = 'sale' and id = $2",
    )
    .bind(org_id)
    .bind(sale_id)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The customer payment a sale's `paymentMethods` record, in the sale's transaction and before it is
/// numbered or authorized: one line per payment method into the register, safe or bank account it
/// names, posted like any customer payment and allocated to the sale (already counted in its
/// `balance`). Rejections name the sale's fields. None when the sale received nothing.
pub async fn with_sale(
    conn: &mut PgConnection,
    org_id: Uuid,
    sale_id: Uuid,
    sale: &SaleRecorded,
    created_by: Option<String>,
    metadata: &Metadata,
) -> Result<Option<AppendRequest>, ExecuteError> {
    if sale.payments.is_empty() {
        return Ok(None);
    }
    let mut lines = Vec::with_capacity(sale.payments.len());
    for (i, paid) in sale.payments.iter().enumerate() {
        let location = match paid.location() {
            Some((_, location)) => location,
            None => {
                let field = format!("paymentMethods[{i}].registerId");
                return Err(Rejection::Invalid {
                    errors: vec![crate::validate::FieldError::new(field, "required", "name where the payment lands")],
                }
                .into());
            }
        };
        let (method_id, amount, reference) = (paid.method_id, paid.amount, paid.reference.clone());
        lines.push(LineInput { method_id, amount, location, reference, exchange_rate: None });
    }
    let input = PaymentInput {
        contact_id: sale.customer.id,
        occurred_on: sale.invoice_date,
        note: None,
        lines,
        allocations: Vec::new(),
    };
    let id = sale_payment_id(sale_id);
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id, input, created_by: created_by.clone() };
    let PaymentCommand::Record { input, .. } = &command else { unreachable!("built as a record above") };
    let mut facts = load(&command, conn, org_id).await?;
    // The sale checked its customer (the organization's default one included).
    facts.contact_known = true;
    // A sale's payments are in its pesos.
    if let Some(i) = input.lines.iter().position(|l| facts.locations.get(&l.location).is_some_and(|at| at.currency != Currency::Pes)) {
        return Err(sale_fields(
            Rejection::unprocessable(
                "UNSUPPORTED_CURRENCY",
                &format!("lines[{i}].balance_id"),
                "a sale's payments land in peso locations",
            ),
            sale,
        ));
    }
    let mut payment =
        super::record(PaymentSide::Customer, id, input, &facts, created_by).map_err(|r| sale_fields(r, sale))?;
    payment.allocations = vec![Allocation { document_id: sale_id, amount: payment.total }];
    payment.sale_id = Some(sale_id);
    let stored = PaymentFact::Recorded(Box::new(payment)).stored(PaymentSide::Customer);
    let stream =
        StreamRef { org_id, stream_type: CustomerPaymentEvent::STREAM_TYPE, stream_id: id, expected_version: 0 };
    Ok(Some(AppendRequest { stream, events: vec![stored.to_new_event()?], metadata: metadata.clone() }))
}

/// A payment's rejection, its fields named as the sale that recorded it spells them.
fn sale_fields(rejection: Rejection, sale: &SaleRecorded) -> ExecuteError {
    let rename = |field: &str| -> String {
        let Some(rest) = field.strip_prefix("lines[") else {
            return if field == "customer_id" { "customerId".to_owned() } else { field.replace("lines", "paymentMethods") };
        };
        let (index, name) = rest.split_once("].").unwrap_or((rest, ""));
        let paid = index.parse::<usize>().ok().and_then(|i| sale.payments.get(i));
        let name = match name {
            "payment_method_id" => "methodId",
            "balance_id" | "exchange_rate" => paid.and_then(|p| p.location()).map_or("bankAccountId", |(field, _)| field),
            other => other,
        };
        format!("paymentMethods[{index}].{name}")
    };
    let renamed = match rejection {
        Rejection::Invalid { mut errors } => {
            errors.iter_mut().for_each(|e| e.field = rename(&e.field));
            Rejection::Invalid { errors }
        }
        Rejection::Unprocessable { code, message, mut details } => {
            details.iter_mut().for_each(|d| d.field = d.field.as_deref().map(rename));
            Rejection::Unprocessable { code, message, details }
        }
        Rejection::StateConflict { message, mut details } => {
            details.iter_mut().for_each(|d| d.field = d.field.as_deref().map(rename));
            Rejection::StateConflict { message, details }
        }
        other => other,
    };
    renamed.into()
}

/// A payment's stream as it stands: the payment (none when new), whether it is voided, and its version.
async fn load_payment(
    conn: &mut PgConnection,
    org_id: Uuid,
    side: PaymentSide,
    id: Uuid,
) -> Result<(Option<PaymentRecorded>, bool, i32), ExecuteError> {
    let (mut current, mut voided, mut version) = (None, false, 0);
    for event in events::store::load_stream(conn, org_id, id).await? {
        let fact: PaymentFact = match (side, event.stream_type.as_str()) {
            (PaymentSide::Customer, CustomerPaymentEvent::STREAM_TYPE) => {
                CustomerPaymentEvent::decode(&event.event_type, event.schema_version, event.data)
                    .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?
                    .into()
            }
            (PaymentSide::Supplier, SupplierPaymentEvent::STREAM_TYPE) => {
                SupplierPaymentEvent::decode(&event.event_type, event.schema_version, event.data)
                    .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?
                    .into()
            }
            _ => return Err(Rejection::not_found("payment").into()),
        };
        match fact {
            PaymentFact::Recorded(payment) => current = Some(*payment),
            PaymentFact::Voided(_) => voided = true,
            PaymentFact::Allocated(allocated) => {
                if let Some(payment) = current.as_mut() {
                    payment.allocations.extend(allocated.allocations);
                }
            }
        }
        version = event.version;
    }
    Ok((current, voided, version))
}

/// A payment method as a payment reads it (none when it is not the organization's). The method stores
/// its fees as sent: a percentage with more than two decimals is rounded to hundredths, a fixed fee with
/// a fraction of a cent to the cent; a fee that cannot be applied at all refuses the payment.
async fn method(conn: &mut PgConnection, org_id: Uuid, id: Uuid) -> Result<Option<MethodFacts>, ExecuteError> {
    let (state, _) = crate::engine::load::<PaymentMethod>(conn, org_id, id).await?;
    let Some(m) = state else { return Ok(None) };
    let refused = |why: String| {
        let message = format!("payment method {id}: {why}; correct the method's fees");
        ExecuteError::from(Rejection::unprocessable("PAYMENT_METHOD_FEE_INVALID", "lines", &message))
    };
    let fee_percentage = match m.fields.fee_percentage.as_deref() {
        None => None,
        Some(text) => {
            Some(Percentage::parse_rounded(text).map_err(|e| refused(format!("its feePercentage {e}")))?)
        }
    };
    let fee_fixed = match m.fields.fee_fixed.as_ref() {
        None => Cents::ZERO,
        // The cast saturates, so a fee past the range stays past it and is refused.
        Some(number) => number
            .as_f64()
            .and_then(|cents| Cents::new_non_negative(cents.round() as i64).ok())
            .ok_or_else(|| refused(format!("its feeFixed {number} is out of range")))?,
    };
    Ok(Some(MethodFacts {
        active: m.fields.is_active,
        requires_reference: m.fields.requires_reference,
        fee_percentage,
        fee_fixed,
    }))
}

async fn load(command: &PaymentCommand, conn: &mut PgConnection, org_id: Uuid) -> Result<PaymentFacts, ExecuteError> {
    let side = command.side();
    let (current, voided, version) = load_payment(conn, org_id, side, command.payment_id()).await?;
    let today = Some(ar_date(OffsetDateTime::now_utc()));
    let mut facts = PaymentFacts { current, voided, version, today, ..Default::default() };
    let (input, allocations) = match command {
        PaymentCommand::Record { input, .. } => (input, &input.allocations),
        PaymentCommand::Allocate { allocations, .. } => {
            facts.documents = lock_documents(conn, org_id, side, allocations).await?;
            return Ok(facts);
        }
        PaymentCommand::Void { .. } => {
            // A void moves back what recording moved: it takes the same locks in the same order (the
            // dollar holdings in the treasury's one order, then the documents by id), so a void and a
            // payment settling the same documents or holding at the same locations queue instead of
            // deadlocking.
            if let Some(payment) = &facts.current {
                let dollars = crate::treasury::held_locations(&[&payment.entry]);
                facts.holdings = crate::treasury::lock_holdings(conn, org_id, dollars).await?;
                let allocations = payment.allocations.clone();
                facts.documents = lock_documents(conn, org_id, side, &allocations).await?;
            }
            return Ok(facts);
        }
    };
    let contact_type = if side == PaymentSide::Customer { "customer" } else { "supplier" };
    facts.contact_known = sqlx::query_scalar(
        "select exists(select 1 from events where stream_id = $1 and org_id = $2 and stream_type = $3)",
    )
    .bind(input.contact_id)
    .bind(org_id)
    .bind(contact_type)
    .fetch_one(&mut *conn)
    .await?;
    for line in &input.lines {
        if !facts.methods.contains_key(&line.method_id)
            && let Some(found) = method(conn, org_id, line.method_id).await?
        {
            facts.methods.insert(line.method_id, found);
        }
        if !facts.locations.contains_key(&line.location)
            && let Some(found) = crate::treasury::load_location(conn, org_id, line.location).await?
        {
            facts.locations.insert(line.location, found);
        }
    }
    // Dollar locations: their holdings locked (in the treasury's one order, so payments, voids and
    // manual movements queue instead of deadlocking), the central bank's rate of the date, and where
    // exchange differences go.
    let dollars: Vec<LocationRef> =
        facts.locations.iter().filter(|(_, l)| l.currency != Currency::Pes).map(|(at, _)| *at).collect();
    facts.holdings = crate::treasury::lock_holdings(conn, org_id, dollars).await?;
    if !facts.holdings.is_empty() {
        facts.central_rate = crate::treasury::central_rate(conn, input.occurred_on).await?;
        facts.exchange_account = org_account(conn, org_id, OrgAccount::ExchangeDifference).await?;
    }
    facts.documents = lock_documents(conn, org_id, side, allocations).await?;
    let account = if side == PaymentSide::Customer { OrgAccount::Receivables } else { OrgAccount::Payables };
    facts.contact_account = org_account(conn, org_id, account).await?;
    facts.fees_account = org_account(conn, org_id, OrgAccount::PaymentFees).await?;
    Ok(facts)
}

/// The documents `allocations` name, each with its contact and what it owes, locked in id order so
/// payments settling the same documents queue instead of deadlocking.
async fn lock_documents(
    conn: &mut PgConnection,
    org_id: Uuid,
    side: PaymentSide,
    allocations: &[Allocation],
) -> Result<BTreeMap<Uuid, (Uuid, Cents)>, ExecuteError> {
    let mut ids: Vec<Uuid> = allocations.iter().map(|a| a.document_id).collect();
    ids.sort();
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(Uuid, Uuid, Cents)> = sqlx::query_as(
        "select id, contact_id, greatest(due, 0) from open_documents where org_id = $1 and kind = $2 and id = any($3)
         order by id for update",
    )
    .bind(org_id)
    .bind(side.document_kind())
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(id, contact, due)| (id, (contact, due))).collect())
}

/// Moves the open balances of the documents `allocations` settle (`sign` -1: settled; 1: given back).
async fn settle(
    conn: &mut PgConnection,
    org_id: Uuid,
    side: PaymentSide,
    allocations: &[Allocation],
    sign: i64,
) -> Result<(), ExecuteError> {
    for share in allocations {
        sqlx::query("update open_documents set due = due + $4 where org_id = $1 and kind = $2 and id = $3")
            .bind(org_id)
            .bind(side.document_kind())
            .bind(share.document_id)
            .bind(share.amount.get() * sign)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn write(
    command: &PaymentCommand,
    facts: PaymentFacts,
    fact: PaymentFact,
    conn: &mut PgConnection,
    org_id: Uuid,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let (id, side) = (command.payment_id(), command.side());
    let (allocations, sign) = fact.settlements();
    settle(conn, org_id, side, allocations, sign).await?;
    // Dollar lines move their locations' holdings (a void gives them back).
    match &fact {
        PaymentFact::Recorded(payment) => crate::treasury::hold(conn, org_id, &[&payment.entry]).await?,
        PaymentFact::Voided(void) => crate::treasury::hold(conn, org_id, &[&void.reversal]).await?,
        PaymentFact::Allocated(_) => {}
    }
    let existing = || facts.current.clone().ok_or_else(|| ExecuteError::from(Rejection::not_found("payment")));
    let (payment, voided) = match &fact {
        PaymentFact::Recorded(payment) => ((**payment).clone(), false),
        PaymentFact::Voided(_) => (existing()?, true),
        PaymentFact::Allocated(allocated) => {
            let mut payment = existing()?;
            payment.allocations.extend(allocated.allocations.iter().cloned());
            (payment, false)
        }
    };
    let version = facts.version;
    let created = matches!(fact, PaymentFact::Recorded(_));
    let stored = fact.stored(side);
    let stream = StreamRef { org_id, stream_type: side.stream_type(), stream_id: id, expected_version: version };
    let request = AppendRequest { stream, events: vec![stored.to_new_event()?], metadata: metadata.clone() };
    let Committed { key, keys, recorded_at } = append_typed(conn, &[request], id).await?;
    let outcome = PaymentOutcome { id, side, payment, voided, at: recorded_at };
    Ok(CommandReply::accepted(key, created, &outcome, keys)?)
}

macro_rules! payment_handler {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        pub struct $name;

        handler! {
            impl Handler for $name as Document {
                type Command = PaymentCommand;
                JOBS: &[];

                stream_id(command) {
                    command.payment_id()
                }
            }
        }

        impl Document for $name {
            type Command = PaymentCommand;
            type Facts = PaymentFacts;
            type Decision = PaymentFact;

            async fn load(
                command: &PaymentCommand,
                conn: &mut PgConnection,
                org_id: Uuid,
            ) -> Result<PaymentFacts, ExecuteError> {
                load(command, conn, org_id).await
            }

            fn decide(command: &PaymentCommand, facts: &PaymentFacts) -> Result<PaymentFact, Rejection> {
                super::decide(command, facts)
            }

            async fn write(
                command: &PaymentCommand,
                facts: PaymentFacts,
                fact: PaymentFact,
                conn: &mut PgConnection,
                org_id: Uuid,
                metadata: &Metadata,
            ) -> Result<CommandReply, ExecuteError> {
                write(command, facts, fact, conn, org_id, metadata).await
            }
        }
    };
}

payment_handler!(CustomerPayments, "Customer payments (`/api/v1/customer-payments`).");
payment_handler!(SupplierPayments, "Supplier payments (`/api/v1/supplier-payments`).");
