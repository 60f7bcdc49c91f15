//! Sales (Style B, camelCase; the snake_case spellings are accepted): creation under the historical
//! contract or the dated one (`Service-Version: 2026-08-20`), reads, invoicing an existing sale, and
//! the signed download of its PDF.

use crate::http::Key;
use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::documents::link;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::routes_group::routes;
use crate::http::schema::{Blank, Cents, Int, NonNegative, Percent, QuantityIn, QuantityText, VatCode};
use crate::http::shared_filters::{Filters, date_schema, search, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_pages::tagged;
use crate::http::shared_responses::responses;
use crate::http::tags::TagData;
use crate::http::treasury::{recorded_by, seen_or_404, visibility};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::protocol::{Command, CommandKind};
use commands::sales::{InvoiceCommand, SaleCommand, SaleOutcome, formatted_number, parse_sale};
use commands::tags::Taggable;
use events::catalogue::{FiscalStatus, PaymentSide, SaleRecorded, ar_date, sale_payment_id};
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::{ApiResponse, Enum, Object};
use projections::ProjectionId;
use projections::documents::{DocumentState, OwnerKind, store};
use projections::sales::{self as read, SaleFilter, SaleRow};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY_CREATE: &str = "The dated contract's `total` differs from the canonical total (`TOTAL_MISMATCH`, the expected \
                          total in the detail's `metadata.expected_total`); the organization blocks negative stock \
                          and a line asks for more than is available (`INSUFFICIENT_STOCK`); or the tax authority \
                          rejected the voucher for good, or the organization has no fiscal profile \
                          (`PRECONDITION_FAILED`, the authority's codes in `metadata.authority_code`), or a credit \
                          or debit note names another customer than the sale it corrects (`PRECONDITION_FAILED`, \
                          `ASSOCIATED_SALE_CUSTOMER`), or a credit note un-bills of an order what the sale it \
                          corrects did not bill (`PRECONDITION_FAILED`, `ASSOCIATED_SALE_ORDER`, naming `orderId` \
                          or the item). Nothing was recorded: no sale, no number, no stock, no event";
const WHY_INVOICE: &str = "The tax authority rejected the voucher for good, or the organization has no fiscal profile \
                           (`PRECONDITION_FAILED`); the sale stays as it was";

operations! {
    SalesApi, INPUT_RULES;
    LIST_SALES = read("listSales", Some(Scope::SalesRead));
    CREATE_SALE =
        write("createSale", Scope::SalesWrite, Idempotency::Required, CommandKind::Sale).unprocessable(WHY_CREATE);
    GET_SALE = read("getSale", Some(Scope::SalesRead));
    INVOICE_SALE =
        write("invoiceSale", Scope::SalesWrite, Idempotency::Optional, CommandKind::InvoiceSale)
            .unprocessable(WHY_INVOICE);
    GET_SALE_DOCUMENT = read("getSaleDocument", Some(Scope::SalesRead));
}

const SALES: Kind = Kind::new("sale", ProjectionId::Sales, "/api/v1/sales", "sales");

/// The customer as the sale recorded them.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SaleCustomerData {
    pub id: Uuid,
    pub name: String,
    pub email: Nullable<String>,
    pub phone: Nullable<String>,
    pub tax_id: Nullable<String>,
    pub address: Nullable<String>,
    pub apartment: Nullable<String>,
    pub city: Nullable<String>,
    pub province: Nullable<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SaleProductRef {
    pub id: Uuid,
    pub name: String,
    pub sku: Nullable<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SaleWarehouseRef {
    pub id: Uuid,
    pub name: Nullable<String>,
}

/// A line of a sale with its canonical amounts (cents).
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SaleItemData {
    pub id: Uuid,
    /// The line's description (the product's name, or the free text).
    pub name: String,
    pub quantity: QuantityText,
    pub unit_price: i64,
    pub unit_cost: Nullable<i64>,
    pub tax_rate_id: i32,
    /// Decimal text (`"10"`, `"12.5"`); null without a line discount.
    pub discount_percentage: Nullable<String>,
    pub product: Nullable<SaleProductRef>,
    pub warehouse: Nullable<SaleWarehouseRef>,
    pub net: i64,
    pub vat: i64,
    pub total: i64,
    /// The order line it bills (null otherwise).
    pub order_line_id: Nullable<Uuid>,
}

/// VAT by rate code.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SaleVatData {
    pub code: i32,
    pub base: i64,
    pub amount: i64,
}

/// A payment received with the sale.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SalePaymentData {
    pub method_id: Uuid,
    pub amount: i64,
    pub description: Nullable<String>,
    pub reference: Nullable<String>,
    /// Where it landed: one of the three (all null in sales recorded before payments reached the
    /// treasury).
    pub register_id: Nullable<Uuid>,
    pub safe_id: Nullable<Uuid>,
    pub bank_account_id: Nullable<Uuid>,
}

/// `not_invoiced`, `issued`, `deferred`, `rejected` or `internal`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum SaleFiscalStatus {
    NotInvoiced,
    Issued,
    Deferred,
    Rejected,
    Internal,
}

impl From<FiscalStatus> for SaleFiscalStatus {
    fn from(s: FiscalStatus) -> Self {
        match s {
            FiscalStatus::NotInvoiced => Self::NotInvoiced,
            FiscalStatus::Issued => Self::Issued,
            FiscalStatus::Deferred => Self::Deferred,
            FiscalStatus::Rejected => Self::Rejected,
            FiscalStatus::Internal => Self::Internal,
        }
    }
}

/// The sale's standing with the tax authority.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SaleFiscalData {
    /// `issued`: authorized (CAE and expiry below); `deferred`: not yet (retried in the background,
    /// read the sale again later); `not_invoiced`: recorded without authorization; `rejected`: refused
    /// for good while deferred; `internal`: numbered by the service (no authority involved).
    pub status: SaleFiscalStatus,
    pub cae: Nullable<String>,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub cae_due_date: Nullable<Date>,
    /// The authority's codes and messages of a final rejection.
    pub rejection: Vec<String>,
}

/// `ready`, `pending`, `failed` or `missing`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "lowercase")]
#[oai(rename_all = "lowercase")]
pub enum FileState {
    Ready,
    Pending,
    Failed,
    Missing,
}

/// The sale's PDF: `url` (the authenticated document route) only when `ready`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct FileData {
    pub state: FileState,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SaleDocumentData {
    pub file: FileData,
}

/// A sale.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SaleData {
    pub id: Uuid,
    pub voucher_type: i32,
    /// `invoice`, `credit_note`, `debit_note`, `cash_sale_note` or `quote`.
    pub document_kind: String,
    pub letter: Nullable<String>,
    pub point_of_sale: SalePointOfSale,
    /// The voucher number (the authority's for issued vouchers); null until numbered.
    pub invoice_number: Nullable<i64>,
    /// `B 00001-00000042`; null until numbered.
    pub formatted_invoice_number: Nullable<String>,
    #[serde(with = "events::catalogue::iso_date")]
    pub invoice_date: Date,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub due_date: Nullable<Date>,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub service_from: Nullable<Date>,
    #[serde(with = "crate::http::presence::date_nullable")]
    pub service_to: Nullable<Date>,
    /// Always `PES`.
    pub currency: String,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub discount_amount: i64,
    pub exempt_amount: i64,
    pub non_taxed_amount: i64,
    pub total: i64,
    /// What is still owed: the total minus the payments.
    pub balance: i64,
    /// What the sale still owes: its balance less the credit notes correcting it and the customer
    /// payments allocated to it (a credit note owes nothing).
    pub amount_due: i64,
    /// `pending` (owes its whole total), `partially_paid` or `paid` (owes nothing).
    pub payment_status: String,
    /// 1 products, 2 services, 3 both.
    pub concept: i32,
    pub notes: Nullable<String>,
    pub fiscal_notes: Nullable<String>,
    pub integration_source: Nullable<String>,
    pub integration_id: Nullable<String>,
    pub customer: SaleCustomerData,
    pub items: Vec<SaleItemData>,
    pub vat_breakdown: Vec<SaleVatData>,
    /// The payment methods the sale was paid with (its customer payment). A delegated credential reads
    /// them as it reads that payment: only when it sees every register or safe they landed in and, with
    /// `own` visibility, when its user took them; else the list is empty.
    pub payments: Vec<SalePaymentData>,
    pub fiscal: SaleFiscalData,
    /// The sale a credit or debit note corrects.
    pub associated_sale_id: Nullable<Uuid>,
    /// The order it bills (null otherwise).
    pub order_id: Nullable<Uuid>,
    pub document: SaleDocumentData,
    pub tags: Vec<TagData>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SalePointOfSale {
    pub id: Uuid,
    pub number: i32,
}

impl SaleData {
    pub fn from_sale(id: Uuid, sale: &SaleRecorded, created_at: OffsetDateTime, updated_at: OffsetDateTime) -> Self {
        let auth = sale.fiscal.authorization.as_ref();
        Self {
            id,
            voucher_type: sale.voucher_type,
            document_kind: sale.document_kind.clone(),
            letter: sale.letter.clone().into(),
            point_of_sale: SalePointOfSale { id: sale.point_of_sale_id, number: sale.point_of_sale_number },
            invoice_number: sale.number.into(),
            formatted_invoice_number: formatted_number(sale.letter.as_deref(), sale.point_of_sale_number, sale.number)
                .into(),
            invoice_date: sale.invoice_date,
            due_date: sale.due_date.into(),
            service_from: sale.service_from.into(),
            service_to: sale.service_to.into(),
            currency: sale.currency.clone(),
            subtotal: sale.subtotal.get(),
            tax_amount: sale.tax_amount.get(),
            discount_amount: sale.discount_amount.get(),
            exempt_amount: sale.exempt.get(),
            non_taxed_amount: sale.non_taxed.get(),
            total: sale.total.get(),
            balance: sale.balance.get(),
            amount_due: projections::sales::opening_due(sale).get(),
            payment_status: projections::sales::payment_status(sale.total, projections::sales::opening_due(sale)).to_owned(),
            concept: sale.concept,
            notes: sale.notes.clone().into(),
            fiscal_notes: sale.fiscal_notes.clone().into(),
            integration_source: sale.integration_source.clone().into(),
            integration_id: sale.integration_id.clone().into(),
            customer: SaleCustomerData {
                id: sale.customer.id,
                name: sale.customer.name.clone(),
                email: sale.customer.email.clone().into(),
                phone: sale.customer.phone.clone().into(),
                tax_id: sale.customer.tax_id.clone().into(),
                address: sale.customer.address.clone().into(),
                apartment: sale.customer.apartment.clone().into(),
                city: sale.customer.city.clone().into(),
                province: sale.customer.province.clone().into(),
            },
            items: sale
                .lines
                .iter()
                .map(|l| SaleItemData {
                    id: l.id,
                    name: l.name.clone(),
                    quantity: l.quantity.into(),
                    unit_price: l.unit_price.get(),
                    unit_cost: l.unit_cost.map(events::domain::Cents::get).into(),
                    tax_rate_id: l.tax_rate_id.code(),
                    discount_percentage: l.discount_hundredths.map(|p| p.to_string()).into(),
                    product: l
                        .variant_id
                        .map(|id| SaleProductRef { id, name: l.name.clone(), sku: l.sku.clone().into() })
                        .into(),
                    warehouse: l.warehouse_id.map(|id| SaleWarehouseRef { id, name: None.into() }).into(),
                    net: l.net.get(),
                    vat: l.vat.get(),
                    total: l.total.get(),
                    order_line_id: l.order_line_id.into(),
                })
                .collect(),
            vat_breakdown: sale
                .vat
                .iter()
                .map(|v| SaleVatData { code: v.code.code(), base: v.base.get(), amount: v.amount.get() })
                .collect(),
            payments: sale
                .payments
                .iter()
                .map(|p| SalePaymentData {
                    method_id: p.method_id,
                    amount: p.amount.get(),
                    description: p.description.clone().into(),
                    reference: p.reference.clone().into(),
                    register_id: p.register_id.into(),
                    safe_id: p.safe_id.into(),
                    bank_account_id: p.bank_account_id.into(),
                })
                .collect(),
            fiscal: SaleFiscalData {
                status: sale.fiscal.status.into(),
                cae: auth.map(|a| a.cae.clone()).into(),
                cae_due_date: auth.map(|a| a.cae_due).into(),
                rejection: sale.fiscal.rejection.iter().map(|(code, message)| format!("{code}: {message}")).collect(),
            },
            associated_sale_id: sale.associated_sale_id.into(),
            order_id: sale.order_id.into(),
            document: SaleDocumentData { file: FileData { state: FileState::Missing, url: None } },
            tags: Vec::new(),
            created_at: ar_time(created_at),
            updated_at: ar_time(updated_at),
        }
    }
}

/// The document descriptor of a sale, from the documents store.
async fn document_of(state: &AppState, org_id: Uuid, id: Uuid) -> Result<SaleDocumentData, ApiError> {
    Ok(sale_document(id, store::state(&state.pool, org_id, OwnerKind::Sale, id).await?))
}

/// The document descriptor of sale `id` whose document stands at `current`.
fn sale_document(id: Uuid, current: DocumentState) -> SaleDocumentData {
    let (file_state, url) = match current {
        DocumentState::Ready => (FileState::Ready, Some(format!("/api/v1/sales/{id}/document"))),
        DocumentState::Pending => (FileState::Pending, None),
        DocumentState::Failed => (FileState::Failed, None),
        DocumentState::Missing => (FileState::Missing, None),
    };
    SaleDocumentData { file: FileData { state: file_state, url } }
}

/// Sales as read by `call`'s credential. A sale's payment methods are its customer payment, shown as the
/// payment reads show it: a delegated credential sees them when it sees every location they landed in
/// (and, with `own` visibility, when its user took them), and reads the sale without them otherwise.
/// Their documents' states and the payments a delegated credential sees are read for all of them at once.
async fn render_rows(call: &Call<'_>, rows: Vec<SaleRow>) -> Result<Vec<SaleData>, ApiError> {
    let (state, org_id) = (call.state, call.org_id());
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut documents = store::states(&state.pool, org_id, OwnerKind::Sale, &ids).await?;
    let paid: Vec<Uuid> = rows.iter().filter(|r| !r.sale.payments.is_empty()).map(|r| sale_payment_id(r.id)).collect();
    let seen = visibility(call.principal);
    let hidden_payments = projections::payments::hidden(&state.pool, org_id, PaymentSide::Customer, &paid, &seen).await?;
    let rows = tagged(state, org_id, Taggable::Sale, rows, |r| r.id).await?;
    let mut out = Vec::with_capacity(rows.len());
    for (row, tags) in rows {
        let mut data = SaleData::from_sale(row.id, &row.sale, row.created_at, row.updated_at);
        if hidden_payments.contains(&sale_payment_id(row.id)) {
            data.payments.clear();
        }
        data.amount_due = row.amount_due.get();
        data.payment_status = projections::sales::payment_status(row.sale.total, row.amount_due).to_owned();
        data.tags = tags;
        data.document = sale_document(row.id, documents.remove(&row.id).unwrap_or(DocumentState::Missing));
        out.push(data);
    }
    Ok(out)
}

/// The voucher types a sale can be (`commands::sales::voucher_kind`): invoices, debit and credit notes
/// and cash sale notes of letters A, B, C and M, and the quote-type voucher 90. Not the export vouchers
/// (E, 19 to 21): WSFEv1 does not authorize them, so the parser refuses them (400).
pub struct SaleVoucherType;
crate::http::schema::documented_enum!(SaleVoucherType, [1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 51, 52, 53, 90]);

/// A line of a sale body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SaleItemInput {
    /// A product variant of the organization; omitted for a free-text line (then `name` is required).
    pub product_id: Optional<Uuid>,
    /// Where the product's stock leaves from: the organization's default warehouse when omitted.
    pub warehouse_id: Optional<Uuid>,
    /// A free-text line's description (at most 200 characters).
    pub name: Optional<Blank<200>>,
    pub quantity: QuantityIn<true>,
    /// Cents: net of VAT on A vouchers, VAT included on B, C and 90 (the dated contract); the
    /// historical contract follows the organization's tax-inclusive setting.
    pub unit_price: Cents,
    /// The product's rate when omitted (21% for free-text lines).
    pub tax_rate_id: Optional<VatCode>,
    pub unit_cost: Optional<Cents>,
    /// 0 to 100, two decimals at most.
    pub discount_percentage: Optional<Percent<0, 100>>,
    /// With the sale's `orderId`: the order line it bills (`order_line_id` is read too), naming the
    /// line's own product (none for a free-text line; anything else is 409 naming `productId`). Its billed
    /// quantity rises (a credit note lowers it, by at most what the sale it corrects billed of the line:
    /// 422 `ASSOCIATED_SALE_ORDER`) and never passes the ordered quantity (422 naming the item); the
    /// stock moves only for what the order's deliveries have not moved already, consuming the order's
    /// reservation.
    pub order_line_id: Optional<Uuid>,
}

/// A payment received with the sale.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SalePaymentInput {
    /// An active payment method of the organization.
    pub method_id: Uuid,
    pub amount: Cents,
    pub description: Optional<Blank<200>>,
    pub reference: Optional<Blank<100>>,
    /// Exactly one of `registerId`, `safeId` and `bankAccountId` names the active peso location of the
    /// organization the payment lands in (400 `required` when none is sent, `conflict` when several).
    pub register_id: Optional<Uuid>,
    pub safe_id: Optional<Uuid>,
    pub bank_account_id: Optional<Uuid>,
}

/// `percentage` or `fixed`.
#[derive(Debug, Enum)]
#[oai(rename_all = "lowercase")]
pub enum DiscountKind {
    Percentage,
    Fixed,
}

/// A sale. Without `Service-Version` the historical contract applies (client totals accepted for
/// compatibility, never stored; the response carries `Deprecation`); with `Service-Version: 2026-08-20`
/// the dated contract: `total` required and checked, `subtotal`, `taxAmount`, `exemptAmount`,
/// `nonTaxedAmount`, `tributesAmount`, `discountAmount`, `taxIncludedOverride` and `roundingAdjustment`
/// refused, unknown fields refused. Both spellings (camelCase, snake_case) are accepted.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct SaleInput {
    /// A voucher type of the reference that a sale can be (not a receipt, nor an export voucher, 19 to 21,
    /// which the tax authority does not authorize through WSFEv1; see `/api/v1/voucher-types`).
    pub voucher_type: SaleVoucherType,
    pub point_of_sale_id: Uuid,
    /// Not in the future.
    pub invoice_date: Date,
    /// At least one line, at most 200.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub items: Vec<SaleItemInput>,
    /// The organization's default customer when omitted (a credit or debit note's: its sale's; a sale
    /// billing an order: the order's). A sale naming `orderId`, a note too, is that order's customer's: another
    /// one is 409 `CONFLICT` naming `customerId` (`not_in_order`).
    pub customer_id: Optional<Uuid>,
    pub due_date: Optional<Date>,
    /// Services' period (concepts 2 and 3).
    pub service_from: Optional<Date>,
    pub service_to: Optional<Date>,
    /// 1 products, 2 services, 3 both; by default from the lines' products.
    pub concept: Optional<Int<1, 3>>,
    pub discount_type: Optional<DiscountKind>,
    /// A percentage (0 to 100, two decimals at most) or whole cents, as `discountType` says.
    pub discount_value: Optional<NonNegative>,
    pub notes: Optional<Blank<1000>>,
    pub fiscal_notes: Optional<Blank<1000>>,
    /// Omitted: the sale stays pending payment (`balance` = `total`). Sent: in the sale's transaction,
    /// before the voucher is numbered or authorized, they are recorded as one customer payment
    /// (`/api/v1/customer-payments`, its `sale_id` this sale) posted to the treasury like any other
    /// (fees included) and allocated to the sale; the sale's `balance` is `total` less them. Every
    /// payment rule applies, its fields named here (`paymentMethods[i].registerId`...): the location
    /// must exist and be one the credential sees (404: a delegated token posts to its assigned registers
    /// and safes only, and the payment is its user's), be active (409) and be in pesos (422), each line
    /// must cover its method's fee (422 `FEE_EXCEEDS_AMOUNT`), and the organization needs its
    /// receivables account (422 `LEDGER_NOT_CONFIGURED`). A credit note takes no payments (400).
    pub payment_methods: Optional<Vec<SalePaymentInput>>,
    pub integration_source: Optional<Blank<50>>,
    pub integration_id: Optional<Blank<100>>,
    /// The expected final total: required by the dated contract (a different canonical total is 422
    /// `TOTAL_MISMATCH`; one beyond 1000000000000, the money a sale holds, is 400); compatibility only
    /// in the historical one.
    pub total: Optional<Int<0, 9_007_199_254_740_991>>,
    /// Historical contract only (compatibility, never stored).
    pub subtotal: Optional<Int<0, 9_007_199_254_740_991>>,
    /// Historical contract only (compatibility, never stored).
    pub tax_amount: Optional<Int<0, 9_007_199_254_740_991>>,
    /// Historical contract only. Recorded on the sale, so at most 1000000000000 (the money a sale
    /// holds, with its lines and other amounts: more is 400).
    pub exempt_amount: Optional<Int<0, 9_007_199_254_740_991>>,
    /// Historical contract only. Recorded on the sale, so at most 1000000000000 (the money a sale
    /// holds, with its lines and other amounts: more is 400).
    pub non_taxed_amount: Optional<Int<0, 9_007_199_254_740_991>>,
    /// Historical contract only (compatibility, never stored).
    pub discount_amount: Optional<Int<0, 9_007_199_254_740_991>>,
    /// An extension: false records the sale without asking the tax authority (as imported sales are);
    /// invoice it later with `POST /api/v1/sales/{sale_id}/invoice`. Default true.
    pub invoice: Optional<bool>,
    /// Required for credit and debit notes (3, 8, 13...): the sale they correct. The note is that
    /// sale's customer's: without `customerId` it takes it, with another one it is 422.
    pub associated_sale_id: Optional<Uuid>,
    /// An order of the organization the sale bills (`order_id` is read too): open, unless the sale is a
    /// credit note, which lowers what its lines billed: only what the sale it corrects billed of that
    /// order (else 422 `ASSOCIATED_SALE_ORDER`), opening again an order its lines completed. Its items
    /// name the lines by `orderLineId`.
    pub order_id: Optional<Uuid>,
}

#[derive(Debug, Serialize, Object)]
pub struct SaleEnvelope {
    /// Always true.
    pub success: bool,
    pub data: SaleData,
}

/// A created sale, with the stock shortfalls the organization's policy let through.
#[derive(Debug, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct SaleCreatedData {
    #[serde(flatten)]
    #[oai(flatten)]
    pub sale: SaleData,
    pub warnings: Vec<crate::http::inventory::StockWarning>,
    /// True when this is the stored outcome of an earlier request with the same key, body and contract.
    pub idempotent_replay: bool,
}

#[derive(Debug, Serialize, Object)]
pub struct SaleCreatedEnvelope {
    /// Always true.
    pub success: bool,
    pub data: SaleCreatedData,
}

responses! {
    SaleCreated: Created(RawJson<SaleCreatedEnvelope>, #[oai(header = "Deprecation")] Option<String>) =
        201, "The sale (under the historical contract with `Deprecation: true`).";
    SaleRead: Ok(RawJson<SaleEnvelope>) = 200, "The sale.";
    SaleList: Ok(RawJson<ListEnvelope<SaleData>>) = 200, "A page of sales, oldest first.";
}

#[derive(ApiResponse)]
enum Invoiced {
    /// `issued`: authorized now (number, CAE and expiry on the sale).
    #[oai(status = 200)]
    Issued(RawJson<SaleEnvelope>),
    /// `deferred`: not yet invoiced (the authority is unavailable or its answer was lost); it is retried
    /// in the background: read the sale before retrying.
    #[oai(status = 202)]
    Deferred(RawJson<SaleEnvelope>),
}

responses! {
    DocumentRedirect: Found(#[oai(header = "Location")] String) =
        302, "A signed link to the PDF, valid five minutes (see the description).";
}

/// A credit or debit note names the sale it corrects; a global discount is a percentage up to 100 or
/// whole cents, and comes with its type.
fn sale_shapes() -> serde_json::Value {
    serde_json::json!({ "allOf": [
        { "anyOf": [
            { "not": { "required": ["voucherType"], "properties": { "voucherType": { "enum": [2, 3, 7, 8, 12, 13, 52, 53] } } } },
            { "required": ["associatedSaleId"], "properties": { "associatedSaleId": { "type": "string", "format": "uuid" } } },
        ] },
        { "properties": { "items": { "items": { "anyOf": [
            { "required": ["productId"], "properties": { "productId": { "type": "string", "format": "uuid" } } },
            { "required": ["name"], "properties": { "name": { "type": "string", "pattern": crate::http::schema::not_blank() } } },
        ] } } } },
        { "anyOf": [
            { "not": { "anyOf": [{ "required": ["discountType"] }, { "required": ["discountValue"] }] } },
            { "required": ["discountType", "discountValue"], "properties": {
                "discountType": { "enum": ["percentage"] },
                "discountValue": { "type": "number", "minimum": 0, "maximum": 100, "multipleOf": 0.01 } } },
            { "required": ["discountType", "discountValue"], "properties": {
                "discountType": { "enum": ["fixed"] },
                "discountValue": { "type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991_i64 } } },
        ] },
    ] })
}

pub struct SalesApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "SaleInput", rule: sale_shapes },
    InputRule::Query { operation: "listSales", parameter: "customer_id", schema: uuid_schema },
    InputRule::Query { operation: "listSales", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listSales", parameter: "date_to", schema: date_schema },
    InputRule::Query {
        operation: "listSales",
        parameter: "status",
        schema: || serde_json::json!({ "type": "string", "enum": FiscalStatus::NAMES }),
    },
    InputRule::Query {
        operation: "listSales",
        parameter: "payment_status",
        schema: || serde_json::json!({ "type": "string", "enum": projections::sales::PAYMENT_STATUSES }),
    },
];

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Sales")]
    SalesApi {
        /// Invoice a sale
        ///
        /// Scope `sales:write`; `Idempotency-Key` optional. Authorizes an existing sale that is not
        /// invoiced yet (recorded with `invoice: false`, imported, or deferred): 200 `issued`; 202
        /// `deferred` (not yet: it is retried in the background; read the sale before retrying); 409 when it
        /// is already invoiced (and the key is not a replay); 422 `PRECONDITION_FAILED` for a final
        /// rejection or a missing fiscal profile. Invoicing never creates another sale.
        #[oai(path = "/sales/:sale_id/invoice", method = "post", operation_id = "invoiceSale")]
        async fn invoice(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            version: ServiceVersion,
            sale_id: Path<IdText>,
            /// Optional: a retry with the same key returns the first outcome.
            #[oai(name = "Idempotency-Key")]
            key: Key,
        ) -> Result<Invoiced, ApiError> {
            let call = Call::new(INVOICE_SALE, &state, &auth, request_id)?;
            let id = call.id(&SALES, &sale_id.0)?;
            let path = [sale_id.0.as_str()];
            let accepted = call
                .dispatch(Write::bare(key.0, &version, &path), Command::InvoiceSale(InvoiceCommand { sale_id: id }))
                .await?;
            call.await_reads(&accepted, [ProjectionId::Sales]).await?;
            let outcome: SaleOutcome = decode_state(accepted.state, "sale")?;
            let row = read::get(&state.pool, call.org_id(), id).await?.ok_or_else(|| ApiError::not_found("sale"))?;
            let data = render_rows(&call, vec![row]).await?.remove(0);
            let body = Style::b(&SaleEnvelope { success: true, data })?;
            Ok(match outcome.sale.fiscal.status {
                FiscalStatus::Issued => Invoiced::Issued(RawJson::new(body)),
                _ => Invoiced::Deferred(RawJson::new(body)),
            })
        }

        /// Download a sale's PDF
        ///
        /// Scope `sales:read`. The stable, authenticated path to the sale's PDF: 302 to a signed link,
        /// `/documents/{token}`, valid five minutes and served without a credential (do not store it; an
        /// expired or altered link answers 403); 404 while the document is not ready.
        #[oai(path = "/sales/:sale_id/document", method = "get", operation_id = "getSaleDocument")]
        async fn document(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            sale_id: Path<IdText>,
        ) -> Result<DocumentRedirect, ApiError> {
            let call = Call::new(GET_SALE_DOCUMENT, &state, &auth, request_id)?;
            let id = call.id(&SALES, &sale_id.0)?;
            if read::get(&state.pool, call.org_id(), id).await?.is_none() {
                return Err(ApiError::not_found("sale"));
            }
            Ok(DocumentRedirect::Found(link(&state, call.org_id(), OwnerKind::Sale, id).await?))
        }
    }
    writes: {
        /// Create a sale
        ///
        /// Scope `sales:write`; `Idempotency-Key` required (the contract version is part of the claim: one
        /// key used across the historical and dated contracts is 409 `IDEMPOTENCY_CONFLICT`; a retry returns
        /// the stored sale without recomputing it). The amounts are the canonical ones (the tax engine's).
        /// Lines with a product move its stock (combos their components; a credit note brings it back, a
        /// debit note, charging more for goods already sold, moves none) under the organization's
        /// negative-stock policy; free-text lines move nothing. A fiscal voucher at an electronic point of
        /// sale is authorized by the tax authority now (unless `invoice` is false): approved, the sale is
        /// `issued` with the authority's number and CAE; refused for good, 422 and nothing is recorded;
        /// unavailable or unanswered, the sale is created `deferred` and authorized in the background.
        /// Quote-type vouchers (90) and manual points of sale get the service's gap-free numbers.
        create("/sales", "createSale", "post")
            ("Required: a retry with the same key, body and `Service-Version` returns the first outcome.")
            -> SaleCreated = CREATE_SALE, |call, write, body: SaleInput| {
                let today = ar_date(OffsetDateTime::now_utc());
                let input = parse_sale(&body.value, write.version.0.as_deref(), today).map_err(ApiError::validation)?;
                let historical = !input.is_dated();
                // A delegated credential posts a sale's payments where it may post a payment, as its user.
                let seen = visibility(call.principal);
                let locations = input.payments.iter().enumerate().filter_map(|(i, paid)| {
                    paid.location().map(|(field, at)| (at, format!("paymentMethods[{i}].{field}")))
                });
                seen_or_404(&seen, locations)?;
                let created_by = recorded_by(call.principal);
                let command = Command::Sale(SaleCommand { id: Uuid::now_v7(), input, created_by });
                let mut accepted = call.dispatch(write, command).await?;
                let outcome: SaleOutcome = decode_state(std::mem::take(&mut accepted.state), "sale")?;
                // A sale paid with its own payment methods also wrote a customer payment to the treasury.
                let paid = !outcome.sale.payments.is_empty();
                let payments = [ProjectionId::Payments, ProjectionId::Treasury].into_iter().filter(|_| paid);
                // A sale that bills an order moved the order too: it reads billed (and completed) right after.
                let order = outcome.sale.order_id.map(|_| ProjectionId::Orders);
                let read_by = [ProjectionId::Sales, ProjectionId::Inventory].into_iter().chain(payments).chain(order);
                call.await_reads(&accepted, read_by).await?;
                let mut sale = SaleData::from_sale(outcome.id, &outcome.sale, outcome.created_at, outcome.created_at);
                sale.document = document_of(call.state, call.org_id(), outcome.id).await?;
                let data = SaleCreatedData {
                    sale,
                    warnings: outcome.warnings.into_iter().map(Into::into).collect(),
                    idempotent_replay: accepted.replayed,
                };
                let body = Style::b(&SaleCreatedEnvelope { success: true, data })?;
                SaleCreated::Created(RawJson::new(body), historical.then(|| "true".to_owned()))
            }
    }
    cursor_lists: {
        /// List sales
        ///
        /// Scope `sales:read`. A cursor list, oldest first. `date_from`/`date_to` (inclusive) filter on the
        /// invoice date; `status` on the fiscal status; `payment_status` on what the sale still owes
        /// (`pending`, `partially_paid`, `paid`); `query` matches the customer's name, the formatted
        /// number or the integration id. Imported sales are found here (by `integration_source` and
        /// `query`) and invoiced with `POST /api/v1/sales/{sale_id}/invoice`.
        list("/sales", "listSales") -> SaleList = LIST_SALES, sales {
            customer_id: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
            status: Query<Option<String>>,
            integration_source: Query<Option<String>>,
            query: Query<Option<String>>,
            payment_status: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a sale
        ///
        /// Scope `sales:read`. `document.file` tells whether its PDF can be downloaded (`url` only when
        /// `ready`).
        get("/sales/:sale_id", "getSale") -> SaleRead = GET_SALE, SALES, sale_id => sale;
    }
}

/// One sale, in its envelope.
async fn sale(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::get(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let data = render_rows(call, vec![row]).await?.remove(0);
    Ok(Some(Style::b(&SaleEnvelope { success: true, data })?))
}

/// A page of sales, oldest first.
#[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
async fn sales(
    call: &Call<'_>,
    params: PageParams,
    customer_id: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    status: Option<String>,
    integration_source: Option<String>,
    query: Option<String>,
    payment_status: Option<String>,
) -> Result<Bytes, ApiError> {
    let mut filters = Filters::default();
    let filter = SaleFilter {
        customer_id: filters.id(customer_id, "customer_id"),
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
        status: filters.one_of(status, "status", FiscalStatus::NAMES),
        integration_source: search(integration_source),
        query: search(query),
        payment_status: filters.one_of(payment_status, "payment_status", projections::sales::PAYMENT_STATUSES),
    };
    filters.check()?;
    let bound = format!(
        "sales{:?}",
        (
            &filter.customer_id,
            &filter.date_from,
            &filter.date_to,
            &filter.status,
            &filter.integration_source,
            &filter.query,
            &filter.payment_status
        )
    );
    call.cursor_list(
        params,
        SALES.list.bound(&bound),
        async |after, n| Ok(read::list(&call.state.pool, call.org_id(), &filter, after, n).await?),
        |row: &SaleRow| row.id,
        async |rows| render_rows(call, rows).await,
    )
    .await
}
