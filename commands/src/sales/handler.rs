//! How the workers run sales: check every reference, compute the canonical amounts, move the stock
//! (the stock pattern), number the voucher (the authority's number for fiscal vouchers at an electronic
//! point of sale, the service's gap-free one otherwise) and record the sale, all in one transaction; and
//! invoicing an existing sale.

use super::invoicing::{self, Outcome, issuer_may_issue};
use super::{InvoiceCommand, SaleCommand, compute, fiscal, price_basis, voucher_kind};
use crate::aggregate::{BusinessDetail, Rejection};
use crate::contacts::Customer;
use crate::engine::{Conn, ExecuteError, Sink, append_together, load, reject_fields};
use crate::handler::{Batching, Commit, Handler, Job, Together};
use crate::inventory::levels;
use crate::inventory::{
    Move, NegativeStock, StockShortfall, WantedMove, apply_policy, combo_components, expand_combos, plan,
};
use crate::lookups::load_products;
use crate::records::{PaymentMethod, Warehouse};
use crate::reply::CommandReply;
use crate::validate::FieldError;
use events::catalogue::{
    FiscalStatus, SaleCustomer, SaleEvent, SaleLine, SalePayment, SaleRecorded, SaleVat, StockLine, ar_date,
};
use events::domain::Cents;
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use std::collections::{BTreeMap, HashMap};
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

/// What a sale needs of its organization.
struct OrgFacts {
    negative_stock: NegativeStock,
    prices_include_tax: bool,
    default_customer: Option<Uuid>,
}

async fn org_facts(conn: &mut PgConnection, org_id: Uuid) -> Result<OrgFacts, sqlx::Error> {
    let (policy, prices_include_tax, default_customer): (String, bool, Option<Uuid>) = sqlx::query_as(
        "select negative_stock, prices_include_tax, default_customer_id from organizations where id = $1",
    )
    .bind(org_id)
    .fetch_one(conn)
    .await?;
    Ok(OrgFacts {
        negative_stock: NegativeStock::parse(&policy).unwrap_or(NegativeStock::Allow),
        prices_include_tax,
        default_customer,
    })
}

fn not_found(field: impl Into<String>, what: &str) -> FieldError {
    FieldError::new(field, "not_found", format!("no active {what} of this organization has this id"))
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

/// Creates sales (`POST /api/v1/sales`).
pub struct Sales;

impl Handler for Sales {
    type Command = SaleCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[super::invoicing::RETRY_INVOICES];

    fn stream_id(command: &SaleCommand) -> Uuid {
        command.id
    }

    /// Checked in `run`, where the references' facts are needed anyway.
    async fn check_references(_: &SaleCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &SaleCommand,
        conn: &mut Conn<'_>,
        _: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        run_sale(conn.get().await?, org_id, command, metadata).await
    }
}

async fn run_sale(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &SaleCommand,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let input = &command.input;
    let (kind, letter) = voucher_kind(input.voucher_type).unwrap_or(("invoice", None));
    let org = org_facts(conn, org_id).await?;
    let mut errors = Vec::new();

    // The point of sale, and whether the authority numbers its vouchers.
    let point: Option<(i32, String)> =
        sqlx::query_as("select number, kind from points_of_sale where org_id = $1 and id = $2")
            .bind(org_id)
            .bind(input.point_of_sale_id)
            .fetch_optional(&mut *conn)
            .await?;
    if point.is_none() {
        errors.push(not_found("pointOfSaleId", "point of sale"));
    }
    let electronic = point.as_ref().is_none_or(|(_, kind)| kind == "electronic");

    // The customer (the organization's default one when none is named).
    let customer_id = input.customer_id.or(org.default_customer);
    let customer = match customer_id {
        Some(id) => load::<Customer>(conn, org_id, id).await?.0.filter(|c| c.is_active),
        None => None,
    };
    if customer.is_none() {
        errors.push(not_found("customerId", "customer"));
    }

    // Products, their warehouses (the default one when a line names none) and payment methods.
    let variants: Vec<Uuid> = input.items.iter().filter_map(|i| i.variant_id).collect();
    let (facts, groups) = load_products(conn, org_id, &variants).await?;
    let default_warehouse = crate::records::current_defaults(conn, org_id, "warehouse").await?.first().copied();
    let mut checked_warehouses: HashMap<Uuid, bool> = HashMap::new();
    let mut lines = Vec::with_capacity(input.items.len());
    let mut codes = Vec::with_capacity(input.items.len());
    for (i, item) in input.items.iter().enumerate() {
        let fact = item.variant_id.and_then(|v| facts.get(&v));
        if item.variant_id.is_some() && fact.is_none_or(|f| !f.is_active) {
            errors.push(not_found(format!("items[{i}].productId"), "product"));
        }
        let stocked = fact.is_some_and(|f| f.product_type != "service");
        let warehouse = if stocked { item.warehouse_id.or(default_warehouse) } else { item.warehouse_id };
        if let Some(w) = warehouse {
            let usable = match checked_warehouses.get(&w) {
                Some(ok) => *ok,
                None => {
                    let ok = load::<Warehouse>(conn, org_id, w).await?.0.is_some_and(|w| w.fields.is_active);
                    checked_warehouses.insert(w, ok);
                    ok
                }
            };
            if !usable {
                errors.push(not_found(format!("items[{i}].warehouseId"), "warehouse"));
            }
        } else if stocked {
            errors.push(FieldError::new(
                format!("items[{i}].warehouseId"),
                "required",
                "the organization has no default warehouse: name one",
            ));
        }
        let group = fact.and_then(|f| groups.get(&f.group_id)).map(|(_, g)| g);
        let variant = item.variant_id.and_then(|v| group.and_then(|g| g.variants.iter().find(|x| x.id == v)));
        let code = item.tax_rate_id.or(fact.map(|f| f.tax_rate_id)).unwrap_or(5);
        codes.push(code);
        lines.push((
            item,
            warehouse.filter(|_| stocked),
            group.map(|g| g.shared.name.clone()),
            variant.map(|v| v.sku.clone()),
        ));
    }
    for (i, payment) in input.payments.iter().enumerate() {
        if load::<PaymentMethod>(conn, org_id, payment.method_id).await?.0.is_none_or(|m| !m.fields.is_active) {
            errors.push(not_found(format!("paymentMethods[{i}].methodId"), "payment method"));
        }
    }
    let associated = match input.associated_sale_id {
        Some(id) => {
            let found = invoicing::load_sale(conn, org_id, id).await?;
            if found.is_none() {
                errors.push(FieldError::new(
                    "associatedSaleId",
                    "not_found",
                    "no sale of this organization has this id",
                ));
            }
            found
        }
        None => None,
    };
    reject_fields(errors)?;

    // Canonical amounts; the dated contract's total must match them.
    let basis = price_basis(input, org.prices_include_tax);
    let computed = compute(input, basis, &codes).map_err(|errors| Rejection::Invalid { errors })?;
    if input.is_dated()
        && let Some(total) = input.total
        && total != computed.total.get()
    {
        return Err(Rejection::Unprocessable {
            code: "TOTAL_MISMATCH".into(),
            message: format!(
                "total is {total} but the canonical total is {}; nothing was recorded",
                computed.total.get()
            ),
            details: vec![BusinessDetail {
                field: Some("total".into()),
                code: "TOTAL_MISMATCH".into(),
                message: "the total differs from the canonical calculation".into(),
                metadata: BTreeMap::from([
                    ("expected_total".to_owned(), serde_json::Value::from(computed.total.get())),
                    ("sent_total".to_owned(), serde_json::Value::from(total)),
                ]),
            }],
        }
        .into());
    }
    // Payments whose sum leaves the range exceed any total.
    let balance = Cents::checked_sum(input.payments.iter().map(|p| p.amount))
        .and_then(|paid| computed.total.checked_sub(paid))
        .filter(|balance| !balance.is_negative());
    let Some(balance) = balance else {
        return Err(Rejection::Invalid {
            errors: vec![FieldError::new(
                "paymentMethods",
                "exceeds_total",
                "the payments add up to more than the total",
            )],
        }
        .into());
    };

    // Stock: product lines leave their warehouse (a credit note brings them back); combos move their
    // components, services nothing.
    let today = ar_date(OffsetDateTime::now_utc());
    let returns = kind == "credit_note";
    let mut wanted: BTreeMap<Uuid, Vec<StockLine>> = BTreeMap::new();
    let mut fields: HashMap<(Uuid, Uuid), String> = HashMap::new();
    for (i, (item, warehouse, _, _)) in lines.iter().enumerate() {
        if let (Some(warehouse), Some(variant)) = (warehouse, item.variant_id) {
            wanted.entry(*warehouse).or_default().push(StockLine { variant_id: variant, quantity: item.quantity });
            fields.entry((variant, *warehouse)).or_insert_with(|| format!("items[{i}].quantity"));
        }
    }
    let mut moves = Vec::new();
    for (warehouse, stock_lines) in &wanted {
        let combos: Vec<Uuid> = stock_lines
            .iter()
            .filter(|l| facts.get(&l.variant_id).is_some_and(|f| f.product_type == "combo"))
            .map(|l| l.variant_id)
            .collect();
        let components =
            if combos.is_empty() { BTreeMap::new() } else { combo_components(conn, org_id, &combos).await? };
        let expanded =
            expand_combos(stock_lines, &components, "items").map_err(|errors| Rejection::Invalid { errors })?;
        for line in expanded {
            let field = fields.get(&(line.variant_id, *warehouse)).cloned().unwrap_or_else(|| "items".to_owned());
            let action = if returns { Move::Add(line.quantity) } else { Move::Take(line.quantity) };
            moves.push(WantedMove { key: (line.variant_id, *warehouse), action, field });
        }
    }
    let mut locked = levels::lock(conn, org_id, moves.iter().map(|m| m.key), today).await?;
    let (changes, shortfalls) = plan(&mut locked, &moves)?;
    let warnings = apply_policy(org.negative_stock, shortfalls)?;
    levels::write(conn, org_id, &changes).await?;

    let customer = customer.map(|c| SaleCustomer {
        id: c.id,
        name: c.fields.name,
        email: c.fields.email,
        phone: c.fields.phone,
        tax_id: c.fields.tax_id,
        tax_id_type: c.fields.tax_id_type,
        tax_category: c.fields.tax_category,
        address: c.fields.address,
        apartment: c.fields.apartment,
        city: c.fields.city,
        province: c.fields.province,
    });
    let point = point.ok_or_else(|| Rejection::not_found("point of sale"))?;
    let sale_lines = lines
        .iter()
        .zip(&computed.lines)
        .zip(&codes)
        .map(|(((item, warehouse, name, sku), amounts), code)| SaleLine {
            id: Uuid::now_v7(),
            variant_id: item.variant_id,
            name: item.name.clone().or_else(|| name.clone()).unwrap_or_default(),
            sku: sku.clone(),
            quantity: item.quantity,
            unit_price: item.unit_price,
            unit_cost: item.unit_cost,
            tax_rate_id: *code,
            discount_hundredths: item.discount_hundredths,
            warehouse_id: *warehouse,
            amount: amounts.amount,
            discount: amounts.discount,
            global_discount: amounts.global_discount,
            net: amounts.net,
            vat: amounts.vat,
            total: amounts.total,
        })
        .collect();
    let concept = input.concept.unwrap_or_else(|| {
        let services = input
            .items
            .iter()
            .filter(|i| i.variant_id.and_then(|v| facts.get(&v)).is_some_and(|f| f.product_type == "service"))
            .count();
        if services == 0 {
            1
        } else if services == input.items.len() {
            2
        } else {
            3
        }
    });
    let mut sale = SaleRecorded {
        contract: input.contract.clone(),
        voucher_type: input.voucher_type,
        document_kind: kind.to_owned(),
        letter: letter.map(str::to_owned),
        point_of_sale_id: input.point_of_sale_id,
        point_of_sale_number: point.0,
        number: None,
        invoice_date: input.invoice_date,
        due_date: input.due_date,
        service_from: input.service_from,
        service_to: input.service_to,
        concept,
        currency: "PES".into(),
        customer: customer.unwrap_or_default(),
        prices_include_tax: org.prices_include_tax,
        lines: sale_lines,
        discount_type: input.discount.map(|d| match d {
            super::GlobalDiscount::Percentage(_) => "percentage".to_owned(),
            super::GlobalDiscount::Fixed(_) => "fixed".to_owned(),
        }),
        discount_value: input.discount.map(|d| match d {
            super::GlobalDiscount::Percentage(v) | super::GlobalDiscount::Fixed(v) => v,
        }),
        exempt: computed.exempt,
        non_taxed: computed.non_taxed,
        subtotal: computed.subtotal,
        tax_amount: computed.tax_amount,
        discount_amount: computed.discount_amount,
        total: computed.total,
        vat: computed.breakdown.iter().map(|v| SaleVat { code: v.code, base: v.base, amount: v.amount }).collect(),
        payments: input
            .payments
            .iter()
            .map(|p| SalePayment {
                method_id: p.method_id,
                amount: p.amount,
                description: p.description.clone(),
                reference: p.reference.clone(),
                register_id: p.register_id,
                safe_id: p.safe_id,
            })
            .collect(),
        balance,
        notes: input.notes.clone(),
        fiscal_notes: input.fiscal_notes.clone(),
        integration_source: input.integration_source.clone(),
        integration_id: input.integration_id.clone(),
        associated_sale_id: input.associated_sale_id,
        changes,
        fiscal: fiscal(FiscalStatus::NotInvoiced),
    };

    // Numbering and authorization.
    let fiscal_voucher = letter.is_some() && electronic;
    if !fiscal_voucher {
        let series = format!("sale:{}:{}", input.point_of_sale_id, input.voucher_type);
        let number: i64 = sqlx::query_scalar(
            "insert into document_numbers (org_id, series, last) values ($1, $2, 1)
             on conflict (org_id, series) do update set last = document_numbers.last + 1 returning last",
        )
        .bind(org_id)
        .bind(&series)
        .fetch_one(&mut *conn)
        .await?;
        sale.number = Some(number);
        sale.fiscal = fiscal(FiscalStatus::Internal);
    } else if input.invoice {
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
                Some("voucherType"),
                format!("an issuer that is {category} does not issue {letter} vouchers"),
            )
            .into());
        }
        let associated = match &associated {
            Some((note_of, _)) => note_of.number.map(|number| crate::fiscal::AssociatedVoucher {
                voucher_type: note_of.voucher_type,
                point_of_sale: note_of.point_of_sale_number,
                number,
                issuer_cuit: Some(issuer.cuit()),
                date: Some(note_of.invoice_date),
            }),
            None => None,
        };
        let outcome = invoicing::authorize(conn, org_id, issuer, &sale, associated).await?;
        sale.number = outcome.number();
        sale.fiscal = outcome.fiscal();
        invoicing::track(conn, org_id, command.id, matches!(outcome, Outcome::Deferred { .. })).await?;
    }

    let event = SaleEvent::SaleRecorded(Box::new(sale.clone()));
    let stream = StreamRef { org_id, stream_type: SaleEvent::STREAM_TYPE, stream_id: command.id, expected_version: 0 };
    let request = AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() };
    let key = append_together(conn, &[request], command.id).await?;
    let outcome = SaleOutcome { id: command.id, sale, warnings, created_at: OffsetDateTime::now_utc() };
    let state = serde_json::to_value(outcome).unwrap_or_default();
    Ok(CommandReply::Accepted { commit: key, created: true, state, replayed: false, keys: Vec::new() })
}

/// Invoices an existing sale (`POST /api/v1/sales/{sale_id}/invoice`).
pub struct InvoiceSales;

impl Handler for InvoiceSales {
    type Command = InvoiceCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[super::invoicing::RETRY_INVOICES];

    fn stream_id(command: &InvoiceCommand) -> Uuid {
        command.sale_id
    }

    async fn check_references(_: &InvoiceCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &InvoiceCommand,
        conn: &mut Conn<'_>,
        _: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let conn = conn.get().await?;
        let Some((mut sale, version)) = invoicing::load_sale(conn, org_id, command.sale_id).await? else {
            return Err(Rejection::not_found("sale").into());
        };
        match sale.fiscal.status {
            FiscalStatus::Issued => {
                return Err(Rejection::conflict(
                    "ALREADY_INVOICED",
                    "the sale is already invoiced: read it for its CAE",
                )
                .into());
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
        let Some((issuer, category)) = invoicing::issuer(conn, org_id).await? else {
            return Err(precondition(
                "FISCAL_CONFIGURATION",
                None,
                "the organization has no fiscal profile (tax id and category): an operator sets it with admin update-org",
            )
            .into());
        };
        if let (Some(category), Some(letter)) = (category.as_deref(), sale.letter.as_deref())
            && !issuer_may_issue(category, letter)
        {
            return Err(precondition(
                "VOUCHER_LETTER",
                None,
                format!("an issuer that is {category} does not issue {letter} vouchers"),
            )
            .into());
        }
        let associated = invoicing::associated_voucher(conn, org_id, issuer, sale.associated_sale_id).await?;
        let outcome = invoicing::authorize(conn, org_id, issuer, &sale, associated).await?;
        invoicing::track(conn, org_id, command.sale_id, matches!(outcome, Outcome::Deferred { .. })).await?;
        let request = invoicing::fiscal_change(org_id, command.sale_id, version, &sale, &outcome, metadata);
        let key = append_together(conn, &[request], command.sale_id).await?;
        sale.number = outcome.number().or(sale.number);
        sale.fiscal = outcome.fiscal();
        let created_at = OffsetDateTime::now_utc();
        let state = serde_json::to_value(SaleOutcome { id: command.sale_id, sale, warnings: Vec::new(), created_at })
            .unwrap_or_default();
        Ok(CommandReply::Accepted { commit: key, created: false, state, replayed: false, keys: Vec::new() })
    }
}
