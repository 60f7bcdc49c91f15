//! Customer and supplier payments (Style A, snake_case): recorded with their lines and allocations,
//! read, listed and voided. Each is one balanced journal entry through the treasury, so its lines show
//! in the locations' movements and balances. What a credential sees: an API key, the organization; a
//! delegated token with assigned registers or safes, the payments whose every line is in one of them
//! (and it may only post to those); with `own` visibility, the payments its user recorded.

use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::routes_group::routes;
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::schema::{Blank, ExchangeRateIn, Int};
use crate::http::shared_filters::{Filters, date_schema, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::treasury::{BalanceType, Dated, recorded_by, seen_or_404, visibility};
use crate::http::{ApiTags, Style, ar_time};
use commands::payments::{PaymentCommand, PaymentOutcome, names, parse_allocation, parse_payment, parse_void};
use commands::protocol::{Command, CommandKind};
use events::catalogue::{PaymentRecorded, PaymentSide};
use events::domain::Scope;
use poem_openapi::param::Query;
use poem_openapi::Object;
use projections::ProjectionId;
use projections::payments::{self as read, PaymentFilter, PaymentRow};
use serde::{Deserialize, Serialize};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

operations! {
    PaymentsApi, INPUT_RULES;
    LIST_CUSTOMER_PAYMENTS = read("listCustomerPayments", Some(Scope::PaymentsRead));
    GET_CUSTOMER_PAYMENT = read("getCustomerPayment", Some(Scope::PaymentsRead));
    CREATE_CUSTOMER_PAYMENT = write("createCustomerPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::CustomerPayment)
        .unprocessable(RECORD_WHY);
    VOID_CUSTOMER_PAYMENT = write("voidCustomerPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::CustomerPayment)
        .unprocessable(VOID_WHY);
    ALLOCATE_CUSTOMER_PAYMENT = write("allocateCustomerPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::CustomerPayment)
        .unprocessable(ALLOCATE_WHY);
    LIST_SUPPLIER_PAYMENTS = read("listSupplierPayments", Some(Scope::PaymentsRead));
    GET_SUPPLIER_PAYMENT = read("getSupplierPayment", Some(Scope::PaymentsRead));
    CREATE_SUPPLIER_PAYMENT = write("createSupplierPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::SupplierPayment)
        .unprocessable(RECORD_WHY);
    VOID_SUPPLIER_PAYMENT = write("voidSupplierPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::SupplierPayment)
        .unprocessable(VOID_WHY);
    ALLOCATE_SUPPLIER_PAYMENT = write("allocateSupplierPayment", Scope::PaymentsWrite, Idempotency::Required, CommandKind::SupplierPayment)
        .unprocessable(ALLOCATE_WHY);
}

const RECORD_WHY: &str = "The date is after today (UTC-3) (`FUTURE_DATE`); the allocations add up to more than \
                          the payment (`ALLOCATION_EXCEEDS_PAYMENT`) or one passes what its document still owes \
                          (`ALLOCATION_EXCEEDS_BALANCE`, naming it); a customer payment's line is less than its \
                          payment method's fee (`FEE_EXCEEDS_AMOUNT`, naming it), or a payment method's fees as \
                          written cannot be applied (`PAYMENT_METHOD_FEE_INVALID`: correct the method's fees); a \
                          dollar line has no rate sent and none loaded (`EXCHANGE_RATE_NOT_FOUND`) or leaves at a \
                          carrying value that needs the missing exchange-difference account \
                          (`EXCHANGE_DIFFERENCE_ACCOUNT_MISSING`); the organization has no receivables \
                          (payables) account, a location no ledger account, or a fee no fees account \
                          (`LEDGER_NOT_CONFIGURED`); or the total, the allocations, or what a dollar location \
                          would hold after it passes the integer limit (`OUT_OF_RANGE`). Nothing was saved";

const VOID_WHY: &str = "Giving a dollar line back would take the dollars its location holds, or the pesos they are \
                        carried at, past the integer limit (`OUT_OF_RANGE`). Nothing was voided";

const ALLOCATE_WHY: &str = "The allocations add up to more than the payment has on account \
                            (`ALLOCATION_EXCEEDS_PAYMENT`) or one passes what its document still owes \
                            (`ALLOCATION_EXCEEDS_BALANCE`, naming it), or the allocations pass the integer \
                            limit (`OUT_OF_RANGE`). Nothing was saved";

const CUSTOMER_PAYMENTS: Kind =
    Kind::new("customer_payment", ProjectionId::Payments, "/api/v1/customer-payments", "customer_payments");
const SUPPLIER_PAYMENTS: Kind =
    Kind::new("supplier_payment", ProjectionId::Payments, "/api/v1/supplier-payments", "supplier_payments");

/// A line of a payment.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct PaymentLineData {
    pub payment_method_id: Uuid,
    /// Integer cents in the location's currency.
    pub amount: i64,
    pub balance_type: BalanceType,
    pub balance_id: Uuid,
    pub reference: Nullable<String>,
    /// Integer cents ARS the payment method charged on this line (a customer's location receives
    /// `amount - fee`; a supplier payment's location pays `amount + fee`; on a dollar line the fee is
    /// charged in dollars and shown here in pesos).
    pub fee: i64,
    /// Integer cents ARS: the line's amount in pesos (equal to `amount` on a peso location).
    pub functional_amount: i64,
    /// Dollar lines: pesos per dollar, exact decimal text (null on a peso location).
    pub exchange_rate: Nullable<String>,
    /// Dollar lines: `manual` (sent) or `central_bank` (null on a peso location).
    pub exchange_rate_source: Nullable<String>,
    /// Dollar lines: the date of the rate (the central bank's latest on or before `occurred_on`).
    #[serde(with = "crate::http::presence::date_nullable")]
    pub exchange_rate_date: Nullable<Date>,
}

/// A share of a payment settling one document.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct AllocationData {
    /// Customer payments: the sale settled.
    pub sale_id: Option<Uuid>,
    /// Supplier payments: the purchase settled.
    pub purchase_id: Option<Uuid>,
    /// Integer cents ARS.
    pub amount: i64,
}

/// A customer or supplier payment.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct PaymentData {
    /// `customer_payment` or `supplier_payment`.
    pub object: String,
    pub id: Uuid,
    /// Customer payments: who paid.
    pub customer_id: Option<Uuid>,
    /// Supplier payments: who was paid.
    pub supplier_id: Option<Uuid>,
    /// `posted`, or `voided` (its entry reversed and its allocations given back).
    pub status: String,
    /// The business date (Argentine calendar).
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub note: Nullable<String>,
    /// Integer cents ARS: the sum of the lines.
    pub amount: i64,
    /// Integer cents ARS the payment methods charged.
    pub fee_amount: i64,
    pub lines: Vec<PaymentLineData>,
    pub allocations: Vec<AllocationData>,
    /// Integer cents ARS left on account: the amount less the allocations (zero once voided).
    pub unallocated_amount: i64,
    /// Customer payments a sale recorded from its `paymentMethods`: that sale (the payment is allocated
    /// to it in full). Voiding the payment makes the sale owe its amount again.
    pub sale_id: Option<Uuid>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "crate::http::presence::rfc3339_nullable")]
    pub voided_at: Nullable<OffsetDateTime>,
    /// Write responses only: true when the same key and body already completed.
    pub idempotent_replay: Option<bool>,
}

fn payment_data(
    side: PaymentSide,
    id: Uuid,
    payment: &PaymentRecorded,
    created_at: OffsetDateTime,
    voided_at: Option<OffsetDateTime>,
) -> PaymentData {
    let customer = side == PaymentSide::Customer;
    let allocated: i64 = payment.allocations.iter().map(|a| a.amount.get()).sum();
    PaymentData {
        object: side.stream_type().to_owned(),
        id,
        customer_id: customer.then_some(payment.contact_id),
        supplier_id: (!customer).then_some(payment.contact_id),
        status: if voided_at.is_some() { "voided" } else { "posted" }.to_owned(),
        occurred_on: payment.occurred_on,
        note: payment.note.clone().into(),
        amount: payment.total.get(),
        fee_amount: payment.lines.iter().map(|l| l.fee.get()).sum(),
        lines: payment
            .lines
            .iter()
            .map(|l| PaymentLineData {
                payment_method_id: l.method_id,
                amount: l.amount.get(),
                balance_type: l.location.kind.into(),
                balance_id: l.location.id,
                reference: l.reference.clone().into(),
                fee: l.fee.get(),
                functional_amount: l.pesos.get(),
                exchange_rate: l.rate.map(|r| r.value.to_string()).into(),
                exchange_rate_source: l.rate.map(|r| r.source.as_str().to_owned()).into(),
                exchange_rate_date: l.rate.map(|r| r.rate_date).into(),
            })
            .collect(),
        allocations: payment
            .allocations
            .iter()
            .map(|a| AllocationData {
                sale_id: customer.then_some(a.document_id),
                purchase_id: (!customer).then_some(a.document_id),
                amount: a.amount.get(),
            })
            .collect(),
        unallocated_amount: if voided_at.is_some() { 0 } else { payment.total.get() - allocated },
        sale_id: payment.sale_id,
        created_at: ar_time(created_at),
        voided_at: voided_at.map(ar_time).into(),
        idempotent_replay: None,
    }
}

fn row_data(side: PaymentSide, row: &PaymentRow) -> PaymentData {
    payment_data(side, row.id, &row.doc.payment, row.created_at, row.doc.voided_at)
}

/// A payment line as sent.
#[derive(Debug, Object)]
pub struct PaymentLineInput {
    /// An active payment method of the organization.
    pub payment_method_id: Uuid,
    /// Integer cents in the location's currency, at least 1. A customer payment's line is at least its
    /// method's fee (422 `FEE_EXCEEDS_AMOUNT`): the location receives the line less the fee.
    pub amount: Int<1, 1_000_000_000_000>,
    /// Where the money lands (customer) or leaves from (supplier).
    pub balance_type: BalanceType,
    /// A location of the organization the credential sees.
    pub balance_id: Uuid,
    /// Required when the payment method has `requiresReference`.
    pub reference: Optional<Blank<100>>,
    /// Dollar locations only (400 on a peso location): pesos per dollar. Omitted, the central bank's rate
    /// of `occurred_on` or the latest earlier one loaded (422 `EXCHANGE_RATE_NOT_FOUND` when there is
    /// none). The line's pesos (`functional_amount`) are its dollars at the rate, half away from zero:
    /// what the contact's account moves by and what allocations spend. A customer's dollars enter at
    /// the rate; a supplier payment's dollars leave at the location's carrying value, and what that
    /// differs from their pesos at the rate is booked to the organization's exchange-difference account
    /// (422 `EXCHANGE_DIFFERENCE_ACCOUNT_MISSING` without one). A fee on a dollar line is in dollars.
    pub exchange_rate: Optional<ExchangeRateIn>,
}

/// A share of a customer payment settling one of the customer's sales.
#[derive(Debug, Object)]
pub struct SaleAllocationInput {
    pub sale_id: Uuid,
    /// Integer cents ARS, at most what the sale still owes.
    pub amount: Int<1, 1_000_000_000_000>,
}

/// A share of a supplier payment settling one of the supplier's purchases.
#[derive(Debug, Object)]
pub struct PurchaseAllocationInput {
    pub purchase_id: Uuid,
    /// Integer cents ARS, at most what the purchase still owes.
    pub amount: Int<1, 1_000_000_000_000>,
}

/// A customer payment. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct CustomerPaymentInput {
    pub customer_id: Uuid,
    /// The business date, `YYYY-MM-DD` (Argentine calendar), not after today.
    pub occurred_on: Date,
    pub note: Optional<Blank<2000>>,
    /// One to 100 lines.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub lines: Vec<PaymentLineInput>,
    /// Sales of the customer it settles (in all, at most the payment; what is left stays on account). A
    /// sale named twice takes the sum of its shares.
    #[oai(validator(max_items = 100))]
    pub allocations: Optional<Vec<SaleAllocationInput>>,
}

/// A supplier payment. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct SupplierPaymentInput {
    pub supplier_id: Uuid,
    /// The business date, `YYYY-MM-DD` (Argentine calendar), not after today.
    pub occurred_on: Date,
    pub note: Optional<Blank<2000>>,
    /// One to 100 lines.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub lines: Vec<PaymentLineInput>,
    /// Purchases from the supplier it settles (in all, at most the payment).
    #[oai(validator(max_items = 100))]
    pub allocations: Optional<Vec<PurchaseAllocationInput>>,
}

/// Allocations of what a customer payment has on account. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct CustomerAllocationInput {
    /// One to 100 sales of the payment's customer; a sale named twice takes the sum of its shares.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub allocations: Vec<SaleAllocationInput>,
}

/// Allocations of what a supplier payment has on account. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct SupplierAllocationInput {
    /// One to 100 purchases from the payment's supplier; a purchase named twice takes the sum.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub allocations: Vec<PurchaseAllocationInput>,
}

/// A void's body: an empty object (a field in it is refused).
#[derive(Debug, Object)]
pub struct PaymentVoidInput {}

#[derive(Debug, Serialize, Object)]
pub struct PaymentEnvelope {
    pub request_id: String,
    pub data: PaymentData,
}

responses! {
    Payments: Ok(RawJson<ListEnvelope<PaymentData>>) = 200, "A page of payments, newest first.";
    Payment: Ok(RawJson<PaymentEnvelope>) = 200, "The payment.";
    PaymentCreated: Created(RawJson<PaymentEnvelope>) = 201, "The payment as recorded.";
    PaymentVoided: Ok(RawJson<PaymentEnvelope>) = 200, "The payment, voided.";
    PaymentAllocated: Ok(RawJson<PaymentEnvelope>) = 200, "The payment with its new allocations.";
}

pub struct PaymentsApi;

fn status_schema() -> serde_json::Value {
    serde_json::json!({ "type": "string", "enum": ["posted", "voided"] })
}

const INPUT_RULES: &[InputRule] = &[
    InputRule::Closed { schema: "CustomerPaymentInput" },
    InputRule::Closed { schema: "SupplierPaymentInput" },
    InputRule::Closed { schema: "PaymentLineInput" },
    InputRule::Closed { schema: "SaleAllocationInput" },
    InputRule::Closed { schema: "PurchaseAllocationInput" },
    InputRule::Closed { schema: "PaymentVoidInput" },
    InputRule::Closed { schema: "CustomerAllocationInput" },
    InputRule::Closed { schema: "SupplierAllocationInput" },
    InputRule::Query { operation: "listCustomerPayments", parameter: "customer_id", schema: uuid_schema },
    InputRule::Query { operation: "listCustomerPayments", parameter: "status", schema: status_schema },
    InputRule::Query { operation: "listCustomerPayments", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listCustomerPayments", parameter: "date_to", schema: date_schema },
    InputRule::Query { operation: "listSupplierPayments", parameter: "supplier_id", schema: uuid_schema },
    InputRule::Query { operation: "listSupplierPayments", parameter: "status", schema: status_schema },
    InputRule::Query { operation: "listSupplierPayments", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listSupplierPayments", parameter: "date_to", schema: date_schema },
];

fn kind(side: PaymentSide) -> &'static Kind {
    match side {
        PaymentSide::Customer => &CUSTOMER_PAYMENTS,
        PaymentSide::Supplier => &SUPPLIER_PAYMENTS,
    }
}

#[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
async fn list(
    call: &Call<'_>,
    side: PaymentSide,
    contact_id: Option<String>,
    status: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    params: PageParams,
) -> Result<bytes::Bytes, ApiError> {
    let mut filters = Filters::default();
    let (contact_field, _) = names(side);
    let filter = PaymentFilter {
        contact_id: filters.id(contact_id, contact_field),
        status: filters.one_of(status, "status", &["posted", "voided"]),
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
    };
    filters.check()?;
    let seen = visibility(call.principal);
    let bound = format!("{}{filter:?}{seen:?}", side.stream_type());
    call.cursor_list(
        params,
        kind(side).list.bound(&bound),
        async |after: Option<Dated>, n| {
            Ok(read::payments(&call.state.pool, call.org_id(), side, &filter, &seen, after.map(|a| a.0), n).await?)
        },
        |row: &PaymentRow| Dated((row.occurred_on, row.created_at, row.id)),
        async |rows| Ok(rows.iter().map(|row| row_data(side, row)).collect()),
    )
    .await
}

async fn customer_payment(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    payment(call, PaymentSide::Customer, id).await
}

async fn supplier_payment(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    payment(call, PaymentSide::Supplier, id).await
}

/// One payment of a side that the caller sees, in its envelope.
async fn payment(call: &Call<'_>, side: PaymentSide, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let seen = visibility(call.principal);
    let Some(row) = read::payment(&call.state.pool, call.org_id(), side, id, &seen).await? else { return Ok(None) };
    Ok(Some(Style::a(&PaymentEnvelope { request_id: call.request_id.to_owned(), data: row_data(side, &row) })?))
}

/// Sends a payment command, waits until reads show it, and answers the payment as the command left it.
async fn write(
    call: &Call<'_>,
    write: Write<'_>,
    command: PaymentCommand,
) -> Result<bytes::Bytes, ApiError> {
    let side = command.side();
    let accepted = call.dispatch(write, command_of(command)).await?;
    // The payment, its lines in the locations' movements and balances, what its documents still owe and
    // the contact's account are read back at once.
    let documents = if side == PaymentSide::Customer { ProjectionId::Sales } else { ProjectionId::Purchases };
    call.await_reads(&accepted, [ProjectionId::Payments, ProjectionId::Treasury, documents, ProjectionId::Accounts]).await?;
    let replayed = accepted.replayed;
    let outcome: PaymentOutcome = decode_state(accepted.state, side.stream_type())?;
    let seen = projections::treasury::Visibility::default();
    let row = read::payment(&call.state.pool, call.org_id(), side, outcome.id, &seen).await?;
    let created_at = row.as_ref().map_or(outcome.at, |r| r.created_at);
    let voided_at = outcome.voided.then(|| row.as_ref().and_then(|r| r.doc.voided_at).unwrap_or(outcome.at));
    let mut data = payment_data(side, outcome.id, &outcome.payment, created_at, voided_at);
    data.idempotent_replay = Some(replayed);
    Style::a(&PaymentEnvelope { request_id: call.request_id.to_owned(), data })
}

fn command_of(command: PaymentCommand) -> Command {
    match command.side() {
        PaymentSide::Customer => Command::CustomerPayment(command),
        PaymentSide::Supplier => Command::SupplierPayment(command),
    }
}

/// Records a payment: the body parsed, every line's location seen by the credential.
async fn record(
    call: &Call<'_>,
    side: PaymentSide,
    body: &serde_json::Value,
    write_of: Write<'_>,
) -> Result<bytes::Bytes, ApiError> {
    let input = parse_payment(body, side).map_err(ApiError::validation)?;
    let seen = visibility(call.principal);
    let locations = input.lines.iter().enumerate().map(|(i, line)| (line.location, format!("lines[{i}].balance_id")));
    seen_or_404(&seen, locations)?;
    let created_by = recorded_by(call.principal);
    let command = PaymentCommand::Record { side, id: Uuid::now_v7(), input, created_by };
    write(call, write_of, command).await
}

/// Allocates what a payment the credential sees has on account.
async fn allocate(
    call: &Call<'_>,
    side: PaymentSide,
    id: &str,
    body: &serde_json::Value,
    write_of: Write<'_>,
) -> Result<bytes::Bytes, ApiError> {
    let allocations = parse_allocation(body, side).map_err(ApiError::validation)?;
    let id = seen_payment(call, side, id).await?;
    write(call, write_of, PaymentCommand::Allocate { side, id, allocations }).await
}

/// A payment id the credential may act on: one it sees, or one not projected yet (the command decides,
/// and answers 404 for another organization's).
async fn seen_payment(call: &Call<'_>, side: PaymentSide, id: &str) -> Result<Uuid, ApiError> {
    let resource = side.stream_type();
    let id = Uuid::parse_str(id).map_err(|_| ApiError::not_found(resource))?;
    let seen = visibility(call.principal);
    if read::payment(&call.state.pool, call.org_id(), side, id, &seen).await?.is_none()
        && read::payment(&call.state.pool, call.org_id(), side, id, &Default::default()).await?.is_some()
    {
        return Err(ApiError::not_found(resource));
    }
    Ok(id)
}

/// Voids a payment the credential sees; its body is empty.
async fn void(
    call: &Call<'_>,
    side: PaymentSide,
    id: &str,
    body: &serde_json::Value,
    write_of: Write<'_>,
) -> Result<bytes::Bytes, ApiError> {
    parse_void(body).map_err(ApiError::validation)?;
    let id = seen_payment(call, side, id).await?;
    write(call, write_of, PaymentCommand::Void { side, id }).await
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Payments")]
    PaymentsApi {}
    writes: {
        /// Record a customer payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Money a customer paid: one or more `lines`,
        /// each a payment method, an amount and the register, safe or bank account it lands in (with a
        /// `reference` when the method requires one), and `allocations` to the customer's sales (in all at
        /// most the payment, each at most what its sale still owes; the rest stays on account). One balanced
        /// ledger entry: each location receives its line less the method's fee (`feePercentage` of the
        /// amount, half away from zero, plus `feeFixed` cents), the fees go to the organization's fees
        /// account, and the customer's receivables are credited with the whole amount. A missing, hidden or
        /// foreign customer, sale of another customer, location, or missing or inactive payment method is
        /// 404; an inactive location or linked account 409.
        create_customer_payment("/customer-payments", "createCustomerPayment", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> PaymentCreated::Created = CREATE_CUSTOMER_PAYMENT, |call, write, body: CustomerPaymentInput| {
                record(&call, PaymentSide::Customer, &body.value, write).await?
            }

        /// Void a customer payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Posts the entry reversing the payment and
        /// gives its allocations back to the sales; the payment stays, `voided`. Voiding a voided payment is
        /// 409 `STATE_CONFLICT`.
        void_customer_payment("/customer-payments/:payment_id/void", "voidCustomerPayment", "post")
            ("Required: a retry with the same key returns the first outcome.", payment_id)
            -> PaymentVoided::Ok = VOID_CUSTOMER_PAYMENT, |call, write, body: PaymentVoidInput| {
                void(&call, PaymentSide::Customer, &payment_id.0, &body.value, write).await?
            }

        /// Allocate a customer payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Allocates what the payment has on account
        /// (`unallocated_amount`) to sales of its customer: in all at most that, each at most what its
        /// sale still owes. No money moves. A voided payment is 409 `STATE_CONFLICT`; a sale of another
        /// customer is 404.
        allocate_customer_payment("/customer-payments/:payment_id/allocations", "allocateCustomerPayment", "post")
            ("Required: a retry with the same key and body returns the first outcome.", payment_id)
            -> PaymentAllocated::Ok = ALLOCATE_CUSTOMER_PAYMENT, |call, write, body: CustomerAllocationInput| {
                allocate(&call, PaymentSide::Customer, &payment_id.0, &body.value, write).await?
            }

        /// Record a supplier payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Money paid to a supplier: one or more
        /// `lines`, each a payment method, an amount and the register, safe or bank account it leaves from,
        /// and `allocations` to the supplier's purchases (in all at most the payment, each at most what its
        /// purchase still owes). One balanced ledger entry: each location pays its line plus the method's
        /// fee, the fees go to the fees account, and the supplier's payables are debited with the amount.
        /// A missing, hidden or foreign supplier, purchase of another supplier, location, or missing or
        /// inactive payment method is 404; an inactive location or linked account 409.
        create_supplier_payment("/supplier-payments", "createSupplierPayment", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> PaymentCreated::Created = CREATE_SUPPLIER_PAYMENT, |call, write, body: SupplierPaymentInput| {
                record(&call, PaymentSide::Supplier, &body.value, write).await?
            }

        /// Void a supplier payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Posts the entry reversing the payment and
        /// gives its allocations back to the purchases; voiding a voided payment is 409 `STATE_CONFLICT`.
        void_supplier_payment("/supplier-payments/:payment_id/void", "voidSupplierPayment", "post")
            ("Required: a retry with the same key returns the first outcome.", payment_id)
            -> PaymentVoided::Ok = VOID_SUPPLIER_PAYMENT, |call, write, body: PaymentVoidInput| {
                void(&call, PaymentSide::Supplier, &payment_id.0, &body.value, write).await?
            }

        /// Allocate a supplier payment
        ///
        /// Scope `payments:write`; `Idempotency-Key` required. Allocates what the payment has on account
        /// (`unallocated_amount`) to purchases of its supplier: in all at most that, each at most what its
        /// purchase still owes. No money moves. A voided payment is 409 `STATE_CONFLICT`; a purchase of another
        /// supplier is 404.
        allocate_supplier_payment("/supplier-payments/:payment_id/allocations", "allocateSupplierPayment", "post")
            ("Required: a retry with the same key and body returns the first outcome.", payment_id)
            -> PaymentAllocated::Ok = ALLOCATE_SUPPLIER_PAYMENT, |call, write, body: SupplierAllocationInput| {
                allocate(&call, PaymentSide::Supplier, &payment_id.0, &body.value, write).await?
            }
    }
    cursor_lists: {
        /// List customer payments
        ///
        /// Scope `payments:read`. Newest first (`occurred_on`, `created_at`, `id`, all descending);
        /// `customer_id`, `status` (`posted`, `voided`) and `date_from`/`date_to` (inclusive) filter.
        list_customer_payments("/customer-payments", "listCustomerPayments")
            -> Payments = LIST_CUSTOMER_PAYMENTS, customer_payments {
            customer_id: Query<Option<String>>,
            status: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
        };

        /// List supplier payments
        ///
        /// Scope `payments:read`. Newest first (`occurred_on`, `created_at`, `id`, all descending);
        /// `supplier_id`, `status` (`posted`, `voided`) and `date_from`/`date_to` (inclusive) filter.
        list_supplier_payments("/supplier-payments", "listSupplierPayments")
            -> Payments = LIST_SUPPLIER_PAYMENTS, supplier_payments {
            supplier_id: Query<Option<String>>,
            status: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a customer payment
        ///
        /// Scope `payments:read`.
        get_customer_payment("/customer-payments/:payment_id", "getCustomerPayment")
            -> Payment = GET_CUSTOMER_PAYMENT, CUSTOMER_PAYMENTS, payment_id => customer_payment;

        /// Get a supplier payment
        ///
        /// Scope `payments:read`.
        get_supplier_payment("/supplier-payments/:payment_id", "getSupplierPayment")
            -> Payment = GET_SUPPLIER_PAYMENT, SUPPLIER_PAYMENTS, payment_id => supplier_payment;
    }
}

/// A page of customer payments, newest first.
async fn customer_payments(
    call: &Call<'_>,
    params: PageParams,
    customer_id: Option<String>,
    status: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    list(call, PaymentSide::Customer, customer_id, status, date_from, date_to, params).await
}

/// A page of supplier payments, newest first.
async fn supplier_payments(
    call: &Call<'_>,
    params: PageParams,
    supplier_id: Option<String>,
    status: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    list(call, PaymentSide::Supplier, supplier_id, status, date_from, date_to, params).await
}
