//! What a customer or supplier owes (`GET /api/v1/customers/{id}/account`,
//! `/api/v1/suppliers/{id}/account`): the balance (today, or at the end of `as_of`), the documents that
//! still owe something, what is on account unallocated, and a statement between two dates with a
//! running balance. Served from the `accounts` projection beside the sales and purchases read models.

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::operations::InputRule;
use crate::http::presence::Nullable;
use crate::http::resource::{Call, Kind};
use crate::http::shared_filters::{Filters, date_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::treasury::visibility;
use crate::http::{ApiTags, RequestId, Style};
use crate::state::AppState;
use events::catalogue::{PaymentSide, ar_date};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::{Object, OpenApi};
use projections::ProjectionId;
use projections::accounts as read;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use time::{Date, Duration, OffsetDateTime};
use uuid::Uuid;

operations! {
    AccountsApi, INPUT_RULES;
    GET_CUSTOMER_ACCOUNT = read("getCustomerAccount", Some(Scope::PaymentsRead));
    GET_SUPPLIER_ACCOUNT = read("getSupplierAccount", Some(Scope::PaymentsRead));
}

const INPUT_RULES: &[InputRule] = &[
    InputRule::Query { operation: "getCustomerAccount", parameter: "as_of", schema: date_schema },
    InputRule::Query { operation: "getCustomerAccount", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "getCustomerAccount", parameter: "date_to", schema: date_schema },
    InputRule::Query { operation: "getSupplierAccount", parameter: "as_of", schema: date_schema },
    InputRule::Query { operation: "getSupplierAccount", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "getSupplierAccount", parameter: "date_to", schema: date_schema },
];

const CUSTOMERS: Kind = Kind::new("customer", ProjectionId::Accounts, "/api/v1/customers", "customers");
const SUPPLIERS: Kind = Kind::new("supplier", ProjectionId::Accounts, "/api/v1/suppliers", "suppliers");

/// The most open documents and statement lines one answer carries.
const MAX_LINES: i64 = 1_000;
/// The longest statement, in days.
const MAX_DAYS: i64 = 366;

/// A document that still owes something.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct OpenDocumentData {
    /// Customer accounts: the sale (an invoice, debit note or another voucher owed).
    pub sale_id: Option<Uuid>,
    /// Supplier accounts: the purchase.
    pub purchase_id: Option<Uuid>,
    /// The voucher number (`A 00001-00000042`; the supplier's invoice number for a purchase), null until
    /// the authority numbers a deferred sale.
    pub number: Nullable<String>,
    /// The document's business date.
    #[serde(with = "events::catalogue::iso_date")]
    pub issued_on: Date,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub due_date: Nullable<Date>,
    /// Integer cents ARS.
    pub total: i64,
    /// Integer cents ARS still owed: the total less the payments allocated to it and the credit notes
    /// correcting it.
    pub amount_due: i64,
    /// Whether its due date has passed (Argentine calendar).
    pub overdue: bool,
}

/// One fact of a statement and the balance after it.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct StatementLineData {
    /// `sale`, `debit_note`, `credit_note`, `purchase`, `payment` or `payment_void`.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: String,
    /// The sale, purchase or payment.
    pub document_id: Uuid,
    #[serde(with = "events::catalogue::iso_date")]
    pub date: Date,
    pub description: Nullable<String>,
    /// Integer cents ARS the balance moves by: positive raises what is owed, negative lowers it.
    pub amount: i64,
    /// Integer cents ARS owed after it.
    pub balance: i64,
}

/// The statement between two dates.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct StatementData {
    #[serde(with = "events::catalogue::iso_date")]
    pub date_from: Date,
    #[serde(with = "events::catalogue::iso_date")]
    pub date_to: Date,
    /// Integer cents ARS owed at the end of the day before `date_from`.
    pub opening_balance: i64,
    /// Integer cents ARS owed at the end of `date_to` (the last line's balance, the opening one without
    /// lines; with more lines than shown, every fact through `date_to`).
    pub closing_balance: i64,
    /// Business date, then the order the facts were recorded in; at most 1,000. A delegated credential
    /// reads a payment's lines (`payment`, `payment_void`) only when it sees that payment; the balances
    /// still count every fact.
    pub lines: Vec<StatementLineData>,
    /// True when the range holds more than 1,000 lines (ask for a shorter one).
    pub has_more: bool,
}

/// What a customer or supplier owes.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct AccountData {
    /// `customer_account` or `supplier_account`.
    pub object: String,
    pub customer_id: Option<Uuid>,
    pub supplier_id: Option<Uuid>,
    /// Always `ARS`: amounts are integer cents of pesos.
    pub currency: String,
    /// The date the balance is at (its end, Argentine calendar): `as_of`, or today.
    #[serde(with = "events::catalogue::iso_date")]
    pub as_of: Date,
    /// Integer cents ARS: the documents less the credit notes and payments up to `as_of` (a customer
    /// owes the business; the business owes a supplier). Negative: credit in the contact's favour.
    pub balance: i64,
    /// The documents that still owe something today, oldest first (at most 1,000).
    pub open_documents: Vec<OpenDocumentData>,
    /// Integer cents ARS on account today: payments not allocated to documents and credit notes beyond
    /// what the sale they correct owed (what the documents owe, less the balance).
    pub unallocated_credit: i64,
    pub statement: StatementData,
}

#[derive(Debug, Serialize, Deserialize, Object)]
pub struct AccountEnvelope {
    pub request_id: String,
    pub data: AccountData,
}

responses! {
    Account: Ok(RawJson<AccountEnvelope>) = 200, "The contact's account.";
}

pub struct AccountsApi;

/// The dates an account is read at, checked together: every bad one named at once.
fn dates(
    as_of: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
) -> Result<(Date, Date, Date), ApiError> {
    let mut filters = Filters::default();
    let today = ar_date(OffsetDateTime::now_utc());
    let as_of = filters.date(as_of, "as_of");
    let from = filters.date(date_from, "date_from");
    let to = filters.date(date_to, "date_to");
    filters.check()?;
    let as_of = as_of.unwrap_or(today);
    let to = to.unwrap_or(as_of);
    let from = from.unwrap_or(to - Duration::days(30));
    let bad = |parameter: &str, code: &str, message: &str| {
        Err(ApiError::invalid_request("INVALID_PARAMETERS", message.to_owned()).with_detail(
            Some(parameter),
            code,
            message,
        ))
    };
    if as_of > today {
        return bad("as_of", "future_date", "as_of cannot be after today (UTC-3)");
    }
    if from > to {
        return bad("date_from", "invalid_range", "date_from is after date_to");
    }
    if (to - from).whole_days() >= MAX_DAYS {
        return bad("date_to", "range_too_long", "a statement covers at most 366 days");
    }
    Ok((as_of, from, to))
}

async fn account(
    call: &Call<'_>,
    state: &AppState,
    side: PaymentSide,
    id: &str,
    (as_of, date_from, date_to): (Option<String>, Option<String>, Option<String>),
    request_id: &str,
) -> Result<AccountEnvelope, ApiError> {
    let (kind, table) = match side {
        PaymentSide::Customer => (&CUSTOMERS, projections::customers::TABLE),
        PaymentSide::Supplier => (&SUPPLIERS, projections::customers::SUPPLIERS_TABLE),
    };
    let id = call.id(kind, id)?;
    let org_id = call.org_id();
    if projections::customers::get(&state.pool, table, org_id, id).await?.is_none() {
        return Err(ApiError::not_found(kind.label));
    }
    let (as_of, from, to) = dates(as_of, date_from, date_to)?;
    let pool = &state.pool;
    let balance = read::balance(pool, org_id, side, id, Some(as_of)).await?;
    let now = read::balance(pool, org_id, side, id, None).await?;
    let (documents, owed) = read::open_documents(pool, org_id, side, id, MAX_LINES).await?;
    let (opening, mut lines) = read::statement(pool, org_id, side, id, (from, to), MAX_LINES + 1).await?;
    let has_more = lines.len() as i64 > MAX_LINES;
    lines.truncate(MAX_LINES as usize);
    // A truncated statement's last line is not the end of `date_to`.
    let closing = match (has_more, lines.last()) {
        (true, _) => read::balance(pool, org_id, side, id, Some(to)).await?,
        (false, last) => last.map_or(opening, |l| l.balance),
    };
    // A delegated credential reads a payment's lines as it reads the payment: only when it sees every
    // location the payment landed in and, with `own` visibility, when its user took it. The balances
    // still count every fact, as a sale's `amount_due` does.
    let paid = |l: &read::StatementLine| matches!(l.kind.as_str(), "payment" | "payment_void");
    let ids: Vec<Uuid> = lines.iter().filter(|&l| paid(l)).map(|l| l.document_id).collect();
    let hidden = projections::payments::hidden(pool, org_id, side, &ids, &visibility(call.principal)).await?;
    lines.retain(|l| !paid(l) || !hidden.contains(&l.document_id));
    let today = ar_date(OffsetDateTime::now_utc());
    let customer = side == PaymentSide::Customer;
    let data = AccountData {
        object: format!("{}_account", if customer { "customer" } else { "supplier" }),
        customer_id: customer.then_some(id),
        supplier_id: (!customer).then_some(id),
        currency: "ARS".to_owned(),
        as_of,
        balance,
        open_documents: documents
            .into_iter()
            .map(|d| OpenDocumentData {
                sale_id: customer.then_some(d.id),
                purchase_id: (!customer).then_some(d.id),
                number: d.number.into(),
                issued_on: d.issued_on,
                due_date: d.due_date.into(),
                total: d.total.get(),
                amount_due: d.amount_due.get(),
                overdue: d.due_date.is_some_and(|due| due < today),
            })
            .collect(),
        unallocated_credit: (owed - now).max(0),
        statement: StatementData {
            date_from: from,
            date_to: to,
            opening_balance: opening,
            closing_balance: closing,
            lines: lines
                .into_iter()
                .map(|l| StatementLineData {
                    kind: l.kind,
                    document_id: l.document_id,
                    date: l.occurred_on,
                    description: l.description.into(),
                    amount: l.amount.get(),
                    balance: l.balance,
                })
                .collect(),
            has_more,
        },
    };
    Ok(AccountEnvelope { request_id: request_id.to_owned(), data })
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Payments")]
impl AccountsApi {
    /// What a customer owes
    ///
    /// Scope `payments:read` (an extension of the spec). The customer's `balance` at the end of `as_of`
    /// (default today; not in the future): its sales and debit notes less its credit notes and payments
    /// (a voided payment counts again from its void's date); its `open_documents` and
    /// `unallocated_credit` as they stand today; and a `statement` of every fact from `date_from` to
    /// `date_to` (inclusive; default the 30 days up to `as_of`; at most 366 days) with the balance after
    /// each. Dates are business dates in the Argentine calendar (UTC-3). A customer of another
    /// organization, or none, is 404.
    #[oai(path = "/customers/:customer_id/account", method = "get", operation_id = "getCustomerAccount")]
    #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
    async fn get_customer_account(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: &RequestId,
        customer_id: Path<IdText>,
        /// `YYYY-MM-DD`: the balance at the end of this day.
        as_of: Query<Option<String>>,
        /// `YYYY-MM-DD`: the statement's first day.
        date_from: Query<Option<String>>,
        /// `YYYY-MM-DD`: the statement's last day.
        date_to: Query<Option<String>>,
    ) -> Result<Account, ApiError> {
        let call = Call::new(GET_CUSTOMER_ACCOUNT, &state, &auth, request_id)?;
        let dates = (as_of.0, date_from.0, date_to.0);
        let envelope = account(&call, &state, PaymentSide::Customer, &customer_id.0, dates, &request_id.0).await?;
        Ok(Account::Ok(RawJson::new(Style::a(&envelope)?)))
    }

    /// What the business owes a supplier
    ///
    /// Scope `payments:read` (an extension of the spec). As for customers: the supplier's `balance` (its
    /// purchases less the supplier payments) at the end of `as_of`, its purchases still owed, what was
    /// paid on account, and a statement with a running balance.
    #[oai(path = "/suppliers/:supplier_id/account", method = "get", operation_id = "getSupplierAccount")]
    #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
    async fn get_supplier_account(
        &self,
        auth: Auth,
        state: Data<&Arc<AppState>>,
        request_id: &RequestId,
        supplier_id: Path<IdText>,
        /// `YYYY-MM-DD`: the balance at the end of this day.
        as_of: Query<Option<String>>,
        /// `YYYY-MM-DD`: the statement's first day.
        date_from: Query<Option<String>>,
        /// `YYYY-MM-DD`: the statement's last day.
        date_to: Query<Option<String>>,
    ) -> Result<Account, ApiError> {
        let call = Call::new(GET_SUPPLIER_ACCOUNT, &state, &auth, request_id)?;
        let dates = (as_of.0, date_from.0, date_to.0);
        let envelope = account(&call, &state, PaymentSide::Supplier, &supplier_id.0, dates, &request_id.0).await?;
        Ok(Account::Ok(RawJson::new(Style::a(&envelope)?)))
    }
}
