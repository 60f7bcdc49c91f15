//! What each customer and supplier owes (`contact_ledger`): one row per fact that moves a contact's
//! account, signed as the balance moves (documents owed up, payments and credit notes down, a void
//! back up), dated by its business date. Balances (today or `as_of` a past date) and statements with a
//! running balance are sums over these rows; the open documents come from the sales and purchases read
//! models, which keep what each document still owes.
//!
//! A sale's `paymentMethods` count here from the sale itself (its `payments`), so sales recorded before
//! payments reached the treasury count them too; the customer payment such a sale records (its
//! `sale_id` set) is therefore not counted again, while its void is.

use crate::{Folded, ProjectionError, Target};
use events::catalogue::{
    CustomerPaymentEvent, PaymentFact, PaymentSide, PurchaseEvent, SaleEvent, SaleRecorded, SupplierPaymentEvent,
    sale_payment_id,
};
use events::domain::Cents;
use events::{EventPayload, RecordedEvent};
use sqlx::{PgConnection, PgPool};
use time::Date;
use uuid::Uuid;

pub const LEDGER: &str = "contact_ledger";

pub struct AccountsProjection;

projection!(AccountsProjection {
    id: Accounts,
    tables: &[LEDGER],
    folds: [SaleEvent, PurchaseEvent, CustomerPaymentEvent, SupplierPaymentEvent]
});

/// One row of a contact's account as folded.
struct Row<'a> {
    side: PaymentSide,
    contact_id: Uuid,
    entry_id: Uuid,
    kind: &'a str,
    document_id: Uuid,
    occurred_on: Date,
    amount: Cents,
    description: Option<String>,
    /// The row's place among those its event writes: a sale's payment follows the sale.
    line_no: i16,
}

async fn insert(conn: &mut PgConnection, target: Target, event: &RecordedEvent, row: Row<'_>) -> Folded {
    let sql = format!(
        "insert into {} (org_id, side, contact_id, entry_id, kind, document_id, occurred_on, position, amount,
                         description, line_no)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) on conflict (org_id, entry_id) do nothing",
        target.table(LEDGER)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(row.side.as_str())
        .bind(row.contact_id)
        .bind(row.entry_id)
        .bind(row.kind)
        .bind(row.document_id)
        .bind(row.occurred_on)
        .bind(event.position)
        .bind(row.amount)
        .bind(row.description)
        .bind(row.line_no)
        .execute(&mut *conn)
        .await?;
    Ok(Vec::new())
}

/// How a statement names a sale: its kind and voucher number when it has one.
fn sale_description(sale: &SaleRecorded) -> String {
    let kind = match sale.document_kind.as_str() {
        "credit_note" => "Nota de crédito",
        "debit_note" => "Nota de débito",
        "invoice" => "Factura",
        _ => "Comprobante",
    };
    match sale.number {
        Some(n) => format!("{kind} {} {:05}-{n:08}", sale.letter.as_deref().unwrap_or("X"), sale.point_of_sale_number),
        None => kind.to_owned(),
    }
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    for event in events {
        if let Some(fact) = crate::payment_fact(event)? {
            let side = if event.stream_type == SupplierPaymentEvent::STREAM_TYPE {
                PaymentSide::Supplier
            } else {
                PaymentSide::Customer
            };
            match fact {
                // Counted from the sale that took it.
                PaymentFact::Recorded(payment) if payment.sale_id.is_some() => {}
                PaymentFact::Recorded(payment) => {
                    let row = Row {
                        side,
                        contact_id: payment.contact_id,
                        entry_id: event.stream_id,
                        kind: "payment",
                        document_id: event.stream_id,
                        occurred_on: payment.occurred_on,
                        amount: -payment.total,
                        description: payment.note.clone(),
                        line_no: 0,
                    };
                    insert(conn, target, event, row).await?;
                }
                PaymentFact::Voided(void) => {
                    let Some((contact_id, total)) = paid(conn, target, event.org_id, event.stream_id).await? else {
                        continue;
                    };
                    let row = Row {
                        side,
                        contact_id,
                        entry_id: void.reversal.id,
                        kind: "payment_void",
                        document_id: event.stream_id,
                        occurred_on: void.reversal.occurred_on,
                        amount: total,
                        description: None,
                        line_no: 0,
                    };
                    insert(conn, target, event, row).await?;
                }
                PaymentFact::Allocated(_) => {}
            }
            continue;
        }
        if event.stream_type == PurchaseEvent::STREAM_TYPE {
            let PurchaseEvent::PurchaseRecorded(purchase) = crate::decode(event)?;
            let row = Row {
                side: PaymentSide::Supplier,
                contact_id: purchase.supplier_id,
                entry_id: event.stream_id,
                kind: "purchase",
                document_id: event.stream_id,
                occurred_on: purchase.invoice_date,
                amount: purchase.amounts.total_ars,
                description: Some(purchase.supplier_invoice_number.clone()),
                line_no: 0,
            };
            insert(conn, target, event, row).await?;
            continue;
        }
        // A sale counts once, when it is recorded; its fiscal outcomes move no money.
        let SaleEvent::SaleRecorded(sale) = crate::decode(event)? else { continue };
        let (kind, amount) = match sale.document_kind.as_str() {
            "credit_note" => ("credit_note", -sale.total),
            "debit_note" => ("debit_note", sale.total),
            _ => ("sale", sale.total),
        };
        let row = Row {
            side: PaymentSide::Customer,
            contact_id: sale.customer.id,
            entry_id: event.stream_id,
            kind,
            document_id: event.stream_id,
            occurred_on: sale.invoice_date,
            amount,
            description: Some(sale_description(&sale)),
            line_no: 0,
        };
        insert(conn, target, event, row).await?;
        let taken = Cents::checked_sum(sale.payments.iter().map(|p| p.amount))
            .ok_or_else(|| ProjectionError::undecodable(event, "the sale's payments sum beyond the range of cents"))?;
        if taken > Cents::ZERO {
            let row = Row {
                side: PaymentSide::Customer,
                contact_id: sale.customer.id,
                entry_id: sale_payment_id(event.stream_id),
                kind: "payment",
                document_id: sale_payment_id(event.stream_id),
                occurred_on: sale.invoice_date,
                amount: -taken,
                description: Some(sale_description(&sale)),
                line_no: 1,
            };
            insert(conn, target, event, row).await?;
        }
    }
    // Account reads are not cached.
    Ok(Vec::new())
}

/// The contact and amount of a payment as counted (a sale's payment: the row the sale wrote).
async fn paid(
    conn: &mut PgConnection,
    target: Target,
    org_id: Uuid,
    payment: Uuid,
) -> Result<Option<(Uuid, Cents)>, sqlx::Error> {
    let sql = format!(
        "select contact_id, -amount from {} where org_id = $1 and entry_id = $2 and kind = 'payment'",
        target.table(LEDGER)
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(payment).fetch_optional(&mut *conn).await
}

/// One line of a statement: a fact and the balance after it. A balance is a sum over any number of
/// facts, so it is kept in plain integer cents rather than in the range of one amount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementLine {
    pub kind: String,
    pub document_id: Uuid,
    pub occurred_on: Date,
    pub amount: Cents,
    pub description: Option<String>,
    pub balance: i64,
}

/// A contact's balance at the end of `as_of` (every fact when none).
pub async fn balance(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    contact: Uuid,
    as_of: Option<Date>,
) -> Result<i64, sqlx::Error> {
    let sql = format!(
        "select coalesce(sum(amount), 0)::bigint from {LEDGER}
         where org_id = $1 and side = $2 and contact_id = $3 and ($4::date is null or occurred_on <= $4)"
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(side.as_str())
        .bind(contact)
        .bind(as_of)
        .fetch_one(pool)
        .await
}

/// The facts from `from` to `to` (inclusive), at most `limit`, in business-date then log order (a sale
/// before the payment it took), each
/// with the running balance after it; the first is the balance before `from`.
pub async fn statement(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    contact: Uuid,
    (from, to): (Date, Date),
    limit: i64,
) -> Result<(i64, Vec<StatementLine>), sqlx::Error> {
    let opening = match from.previous_day() {
        Some(before) => balance(pool, org_id, side, contact, Some(before)).await?,
        None => 0,
    };
    let sql = format!(
        "select kind, document_id, occurred_on, amount, description from {LEDGER}
         where org_id = $1 and side = $2 and contact_id = $3 and occurred_on between $4 and $5
         order by occurred_on, position, line_no limit $6"
    );
    let rows: Vec<(String, Uuid, Date, Cents, Option<String>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(side.as_str())
        .bind(contact)
        .bind(from)
        .bind(to)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    let mut running = opening;
    let lines = rows
        .into_iter()
        .map(|(kind, document_id, occurred_on, amount, description)| {
            running += amount.get();
            StatementLine { kind, document_id, occurred_on, amount, description, balance: running }
        })
        .collect();
    Ok((opening, lines))
}

/// A document that still owes something.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OpenDocument {
    pub id: Uuid,
    pub number: Option<String>,
    pub issued_on: Date,
    pub due_date: Option<Date>,
    pub total: Cents,
    pub amount_due: Cents,
}

/// The contact's documents that still owe something, oldest first (at most `limit`), and what all its
/// documents owe together.
pub async fn open_documents(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    contact: Uuid,
    limit: i64,
) -> Result<(Vec<OpenDocument>, i64), sqlx::Error> {
    let (table, number, contact_column, total) = match side {
        PaymentSide::Customer => (crate::sales::TABLE, "formatted_number", "customer_id", "total"),
        PaymentSide::Supplier => (crate::purchases::PURCHASES, "supplier_invoice_number", "supplier_id", "total_ars"),
    };
    let sql = format!(
        "select id, {number} as number, invoice_date as issued_on, (doc->>'due_date')::date as due_date,
                {total} as total, amount_due from {table}
         where org_id = $1 and {contact_column} = $2 and amount_due > 0
         order by invoice_date, id limit $3"
    );
    let documents: Vec<OpenDocument> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(contact).bind(limit).fetch_all(pool).await?;
    let sum = format!(
        "select coalesce(sum(greatest(amount_due, 0)), 0)::bigint from {table} where org_id = $1 and {contact_column} = $2"
    );
    let owed: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sum)).bind(org_id).bind(contact).fetch_one(pool).await?;
    Ok((documents, owed))
}
