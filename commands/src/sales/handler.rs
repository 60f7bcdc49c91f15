//! How the workers run sales: check every reference, compute the canonical amounts, move the stock
//! (the stock pattern), number the voucher (the authority's number for fiscal vouchers at an electronic
//! point of sale, the service's gap-free one otherwise) and record the sale, all in one transaction; and
//! invoicing an existing sale.

use super::invoicing::{self, Outcome};
use crate::fiscal::issuer_may_issue;
use super::{InvoiceCommand, OrgFacts, SaleCommand, SaleDecision, SaleFacts, fiscal};
use crate::aggregate::{BusinessDetail, Rejection};
use crate::contacts::Customer;
use crate::document::{Document, next_number};
use crate::engine::{Committed, ExecuteError, append_together, append_typed, load};
use crate::fiscal::Issuer;
use crate::handler::{Batching, Commit, handler};
use crate::inventory::{NegativeStock, StockShortfall, apply_policy, combos_and_retired, plan};
use crate::inventory::{levels, reservations};
use crate::lookups::{active, load_products};
use crate::payments;
use crate::records::{PaymentMethod, Warehouse};
use crate::reply::CommandReply;
use events::catalogue::{FiscalStatus, OrderEvent, ReservationOwner, SaleEvent, SaleRecorded, ar_date};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// What the workers answer for a sale: the sale, its id, and the stock shortfalls the policy let
/// through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleOutcome {
    pub id: Uuid,
    pub sale: SaleRecorded,
    pub warnings: Vec<StockShortfall>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

async fn org_facts(conn: &mut PgConnection, org_id: Uuid) -> Result<OrgFacts, sqlx::Error> {
    let (negative_stock, prices_include_tax, default_customer): (NegativeStock, bool, Option<Uuid>) = sqlx::query_as(
        "select negative_stock, prices_include_tax, default_customer_id from organizations where id = $1",
    )
    .bind(org_id)
    .fetch_one(conn)
    .await?;
    Ok(OrgFacts { negative_stock, prices_include_tax, default_customer })
}

fn precondition(code: &str, field: Option<&str>, message: impl Into<String>) -> Rejection {
    let message = message.into();
    Rejection::Unprocessable {
        code: "PRECONDITION_FAILED".into(),
        message: message.clone(),
        details: vec![BusinessDetail {
            field: field.map(str::to_owned),
            code: code.to_owned(),
            message,
            metadata: BTreeMap::new(),
        }],
    }
}

/// The organization as the issuer of a fiscal voucher of `letter`: it must have a fiscal profile, and
/// its tax category must issue that letter (else a precondition failure, on `field`).
async fn fiscal_issuer(
    conn: &mut PgConnection,
    org_id: Uuid,
    letter: Option<&str>,
    field: Option<&str>,
) -> Result<Issuer, ExecuteError> {
    let Some((issuer, category)) = invoicing::issuer(conn, org_id).await? else {
        return Err(precondition(
            "FISCAL_CONFIGURATION",
            None,
            "the organization has no fiscal profile (tax id and category): an operator sets it with admin update-org",
        )
        .into());
    };
    if let (Some(category), Some(letter)) = (category.as_deref(), letter)
        && !issuer_may_issue(category, letter)
    {
        return Err(precondition(
            "VOUCHER_LETTER",
            field,
            format!("an issuer that is {category} does not issue {letter} vouchers"),
        )
        .into());
    }
    Ok(issuer)
}

/// Creates sales (`POST /api/v1/sales`).
pub struct Sales;

handler! {
    impl Handler for Sales as Document {
        type Command = SaleCommand;
        JOBS: &[super::invoicing::RETRY_INVOICES];

        stream_id(command) {
            command.id
        }
    }
}

impl Document for Sales {
    type Command = SaleCommand;
    type Facts = SaleFacts;
    type Decision = SaleDecision;

    async fn load(command: &SaleCommand, conn: &mut PgConnection, org_id: Uuid) -> Result<SaleFacts, ExecuteError> {
        let input = &command.input;
        let org = org_facts(conn, org_id).await?;
        let point: Option<(i32, String)> =
            sqlx::query_as("select number, kind from points_of_sale where org_id = $1 and id = $2")
                .bind(org_id)
                .bind(input.point_of_sale_id)
                .fetch_optional(&mut *conn)
                .await?;
        let associated = match input.associated_sale_id {
            Some(id) => invoicing::load_sale(conn, org_id, id).await?,
            None => None,
        };
        let order = match input.order_id {
            Some(id) => {
                let (order, version, _) = crate::orders::load_order(conn, org_id, id).await?;
                order.map(|o| (o, version))
            }
            None => None,
        };
        // A credit or debit note is the corrected sale's customer's unless it names one, and a sale of an
        // order the order's customer's (`decide` refuses any other).
        let corrected = associated.as_ref().map(|(sale, _)| sale.customer.id);
        let ordered_by = order.as_ref().map(|(order, _)| order.customer_id);
        let customer = match input.customer_id.or(corrected).or(ordered_by).or(org.default_customer) {
            Some(id) => load::<Customer>(conn, org_id, id).await?.0,
            None => None,
        };
        let variants: Vec<Uuid> = input.items.iter().filter_map(|i| i.variant_id).collect();
        let (products, groups) = load_products(conn, org_id, &variants).await?;
        let default_warehouse = crate::records::current_defaults(conn, org_id, "warehouse").await?.first().copied();
        // A billed order line leaves from its own warehouse (see `decide`): checked like any other.
        let of_order =
            order.iter().flat_map(|(o, _)| o.lines.iter().filter_map(|l| l.warehouse_id.or(o.assigned_warehouse_id)));
        let named: Vec<Uuid> =
            input.items.iter().filter_map(|i| i.warehouse_id).chain(of_order).chain(default_warehouse).collect();
        let warehouses = active::<Warehouse>(conn, org_id, &named, |w| w.fields.is_active).await?;
        let methods: Vec<Uuid> = input.payments.iter().map(|p| p.method_id).collect();
        let payment_methods = active::<PaymentMethod>(conn, org_id, &methods, |m| m.fields.is_active).await?;
        // The billed order's reservation is set again from all its lines: its combos' components too.
        let sold: Vec<Uuid> = products.iter().filter(|(_, f)| f.product_type.is_combo()).map(|(id, _)| *id).collect();
        let ordered: Vec<Uuid> = order.iter().flat_map(|(o, _)| o.lines.iter().filter_map(|l| l.variant_id)).collect();
        let combos: Vec<Uuid> = sold.iter().copied().chain(ordered).collect();
        let (components, mut retired_components) = combos_and_retired(conn, org_id, &combos).await?;
        // Only the sale's own lines are refused for a retired component.
        retired_components.retain(|combo, _| sold.contains(combo));
        Ok(SaleFacts {
            org,
            point,
            customer,
            products,
            groups,
            default_warehouse,
            warehouses,
            payment_methods,
            associated,
            components,
            retired_components,
            order,
        })
    }

    fn decide(command: &SaleCommand, facts: &SaleFacts) -> Result<SaleDecision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &SaleCommand,
        facts: SaleFacts,
        decision: SaleDecision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let input = &command.input;
        let SaleDecision { mut sale, moves, fiscal_voucher, letter, order } = decision;
        let today = ar_date(OffsetDateTime::now_utc());
        // The billed order's reservation first: the units it held are the ones that leave.
        let mut requests = Vec::new();
        if let (Some((events, reservation)), Some(order_id), Some((_, version))) =
            (&order, input.order_id, &facts.order)
        {
            let owner = ReservationOwner { kind: "order".into(), id: order_id };
            let decided =
                reservations::change(conn, org_id, &owner, reservation, today, NegativeStock::Allow, metadata).await?;
            let stream = StreamRef {
                org_id,
                stream_type: OrderEvent::STREAM_TYPE,
                stream_id: order_id,
                expected_version: *version,
            };
            let events = events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
            requests.push(AppendRequest { stream, events, metadata: metadata.clone() });
            requests.extend(decided.append);
        }
        let mut locked = levels::lock(conn, org_id, moves.iter().map(|m| m.key), today).await?;
        let (changes, shortfalls) = plan(&mut locked, &moves)?;
        let warnings = apply_policy(facts.org.negative_stock, shortfalls)?;
        levels::write(conn, org_id, &changes).await?;
        sale.changes = changes;
        // The billed order's and its reservation's events go in before the voucher is authorized: a
        // concurrent change of the order is a conflict now, before the authority approves a voucher that
        // the command's retry would ask for again, and one that comes later waits for this transaction.
        let early = append_typed(conn, &requests, command.id).await?.keys;
        // What the customer paid lands in the treasury before the voucher is numbered or authorized.
        let mut requests = Vec::from_iter(payments::with_sale(conn, org_id, command.id, &sale, command.created_by.clone(), metadata).await?);

        // Numbering and authorization.
        if !fiscal_voucher {
            let series = format!("sale:{}:{}", input.point_of_sale_id, input.voucher_type);
            let number = next_number(conn, org_id, &series).await?;
            sale.number = Some(number);
            sale.fiscal = fiscal(FiscalStatus::Internal);
        } else if input.invoice {
            let issuer = fiscal_issuer(conn, org_id, letter, Some("voucherType")).await?;
            let associated = match &facts.associated {
                Some((note_of, _)) => note_of.number.map(|number| crate::fiscal::AssociatedVoucher {
                    voucher_type: note_of.voucher_type,
                    point_of_sale: note_of.point_of_sale_number,
                    number,
                    issuer_cuit: Some(issuer.cuit()),
                    date: Some(note_of.invoice_date),
                }),
                None => None,
            };
            let outcome = super::batches::authorize(conn, org_id, issuer, &sale, associated).await?;
            sale.number = outcome.number();
            sale.fiscal = outcome.fiscal();
            invoicing::track(conn, org_id, command.id, matches!(outcome, Outcome::Deferred { .. })).await?;
        }

        let event = SaleEvent::SaleRecorded(Box::new(sale.clone()));
        let stream =
            StreamRef { org_id, stream_type: SaleEvent::STREAM_TYPE, stream_id: command.id, expected_version: 0 };
        requests.insert(0, AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
        // A sale billing an order writes three stream types: the reply names each one's last key (the
        // sale's, appended last in the transaction, is the highest).
        let Committed { key, mut keys, recorded_at } = append_typed(conn, &requests, command.id).await?;
        keys.extend(early);
        // What the sale leaves owed, for payments to settle; a credit note lowers the sale it corrects.
        match (sale.document_kind.as_str(), sale.associated_sale_id) {
            ("credit_note", Some(corrected)) => payments::credit_sale(conn, org_id, corrected, sale.total).await?,
            ("credit_note", None) => {}
            _ => {
                let (customer, due_date) = (sale.customer.id, sale.due_date);
                payments::open_document(conn, org_id, "sale", command.id, customer, sale.total, sale.balance, due_date)
                    .await?;
            }
        }
        let outcome = SaleOutcome { id: command.id, sale, warnings, created_at: recorded_at };
        Ok(CommandReply::accepted(key, true, &outcome, keys)?)
    }
}

/// Invoices an existing sale (`POST /api/v1/sales/{sale_id}/invoice`).
pub struct InvoiceSales;

handler! {
    impl Handler for InvoiceSales {
        type Command = InvoiceCommand;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[super::invoicing::RETRY_INVOICES];

        stream_id(command) {
            command.sale_id
        }

        /// The sale is read in `run`, and it names nothing else to check.
        check_references in run;

        run_on(command, conn, org_id, metadata) {
            invoice_sale(command, conn, org_id, metadata).await
        }
    }
}

/// Asks the authority for an existing sale's authorization and records what it answered.
async fn invoice_sale(
    command: &InvoiceCommand,
    conn: &mut PgConnection,
    org_id: Uuid,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    // The retry worker holds a deferred sale's pending row while it authorizes it, and takes it before
    // the series: waiting for it here first reads what the worker recorded, in the same lock order.
    invoicing::hold_pending(conn, org_id, command.sale_id).await?;
    let Some((mut sale, version)) = invoicing::load_sale(conn, org_id, command.sale_id).await? else {
        return Err(Rejection::not_found("sale").into());
    };
    match sale.fiscal.status {
        FiscalStatus::Issued => {
            return Err(
                Rejection::conflict("ALREADY_INVOICED", "the sale is already invoiced: read it for its CAE").into()
            );
        }
        FiscalStatus::Internal => {
            return Err(Rejection::conflict(
                "NOT_A_FISCAL_VOUCHER",
                "the sale is numbered by the service (a manual point of sale or a voucher the authority never sees)",
            )
            .into());
        }
        FiscalStatus::NotInvoiced | FiscalStatus::Deferred | FiscalStatus::Rejected => {}
    }
    let issuer = fiscal_issuer(conn, org_id, sale.letter.as_deref(), None).await?;
    let associated = invoicing::associated_voucher(conn, org_id, issuer, sale.associated_sale_id).await?;
    let outcome = invoicing::authorize(conn, org_id, issuer, (command.sale_id, &sale, version), associated).await?;
    invoicing::track(conn, org_id, command.sale_id, matches!(outcome, Outcome::Deferred { .. })).await?;
    let request = invoicing::fiscal_change(org_id, command.sale_id, version, &sale, &outcome, metadata)?;
    let key = append_together(conn, &[request], command.sale_id).await?;
    sale.number = outcome.number().or(sale.number);
    sale.fiscal = outcome.fiscal();
    let created_at = OffsetDateTime::now_utc();
    let outcome = SaleOutcome { id: command.sale_id, sale, warnings: Vec::new(), created_at };
    Ok(CommandReply::accepted(key, false, &outcome, Vec::new())?)
}
