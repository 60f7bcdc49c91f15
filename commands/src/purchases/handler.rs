//! How the workers run purchases and purchase orders. A purchase is assessed (supplier, products,
//! warehouse, currency, a repeated supplier invoice), then, when committed, recorded in one transaction
//! with the stock it raises (levels locked as every stock command does) and the products' new costs
//! (`ProductUpdated` on each product's stream, with optimistic concurrency: a conflict starts the whole
//! command over).

use super::checks::{
    add_stock, blocked, cost_appends, product_blockers, stocked_lines, supplier_blocker, warehouse_blocker,
};
use super::orders::{self, OrderCommand, PurchaseOrder};
use super::{
    Blocker, Mode, NormalizedPurchase, ProjectedEffects, PurchaseAmountOwed, PurchaseCommand, PurchaseOutcome,
    PurchaseWarning, cost_updates, currency_rate, price_lines, stock_entries,
};
use crate::aggregate::Rejection;
use crate::engine::{Conn, ExecuteError, Sink, append_typed, load};
use crate::handler::{Batching, Commit, Handler, Job, Together};
use crate::lookups::load_products;
use crate::reply::CommandReply;
use events::catalogue::{PurchaseEvent, PurchaseRecorded};
use events::domain::Cents;
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// Records a purchase, or (preview) answers what it would record.
pub struct Purchases;

impl Handler for Purchases {
    type Command = PurchaseCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[];

    fn stream_id(command: &PurchaseCommand) -> Uuid {
        command.id
    }

    /// Assessed in `run`, where a preview turns what is wrong into blocking issues.
    async fn check_references(_: &PurchaseCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &PurchaseCommand,
        conn: &mut Conn<'_>,
        _: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        run_purchase(conn.get().await?, org_id, command, metadata).await
    }
}

async fn run_purchase(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &PurchaseCommand,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let input = &command.input;
    let commit = command.mode == Mode::Commit;
    let variants: Vec<Uuid> = input.items.iter().map(|i| i.variant_id).collect();
    let (facts, groups) = load_products(conn, org_id, &variants).await?;
    let mut blockers: Vec<Blocker> = supplier_blocker(conn, org_id, input.supplier_id).await?.into_iter().collect();
    blockers.extend(product_blockers(variants.iter().copied(), &facts));
    let warehouse = match (input.products_received, input.warehouse_id) {
        (true, None) => {
            blockers.push(Blocker::new(
                "warehouseId",
                "INVENTORY",
                "required",
                "a purchase whose products were received names the warehouse",
            ));
            None
        }
        (true, Some(id)) => {
            let blocker = warehouse_blocker(conn, org_id, id, "warehouseId").await?;
            let usable = blocker.is_none();
            blockers.extend(blocker);
            usable.then_some(id)
        }
        (false, _) => None,
    };
    let rate = currency_rate(&input.currency, input.exchange_rate, &mut blockers);
    let duplicate: bool = sqlx::query_scalar(
        "select exists(select 1 from purchase_invoices where org_id = $1 and supplier_id = $2 and voucher_type = $3
                       and lower(invoice_number) = lower($4))",
    )
    .bind(org_id)
    .bind(input.supplier_id)
    .bind(input.voucher_type)
    .bind(&input.supplier_invoice_number)
    .fetch_one(&mut *conn)
    .await?;
    if duplicate {
        blockers.push(duplicate_blocker());
    }
    let (lines, amounts) =
        price_lines(input.voucher_type, rate, &input.items, &facts).map_err(|errors| Rejection::Invalid { errors })?;
    let mut warnings: Vec<PurchaseWarning> = input
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.unit_cost == Cents::ZERO)
        .map(|(i, _)| PurchaseWarning {
            path: format!("items[{i}].unitCost"),
            code: "ZERO_COST".into(),
            message: "the unit cost is zero; the product's last cost becomes zero".into(),
        })
        .collect();
    if input.products_received {
        for (i, item) in input.items.iter().enumerate() {
            if facts.get(&item.variant_id).is_some_and(|f| f.product_type == "service") {
                warnings.push(PurchaseWarning {
                    path: format!("items[{i}].productId"),
                    code: "NOT_STOCKED".into(),
                    message: "a service holds no stock: receiving it raises none".into(),
                });
            }
        }
    }
    if commit && !blockers.is_empty() {
        return Err(blocked(blockers).into());
    }
    let normalized = NormalizedPurchase {
        supplier_id: input.supplier_id,
        voucher_type: input.voucher_type,
        supplier_invoice_number: input.supplier_invoice_number.clone(),
        invoice_date: input.invoice_date,
        due_date: input.due_date,
        currency: input.currency.clone(),
        exchange_rate: rate,
        products_received: input.products_received,
        warehouse_id: input.warehouse_id,
        notes: input.notes.clone(),
        lines,
        amounts,
    };
    let updates = cost_updates(&normalized.lines, &facts).map_err(|errors| Rejection::Invalid { errors })?;
    let changes = match warehouse {
        Some(warehouse) if blockers.iter().all(|b| b.code != "INVENTORY") => {
            let stocked =
                stocked_lines(conn, org_id, input.items.iter().map(|i| (i.variant_id, i.quantity)), &facts).await?;
            add_stock(conn, org_id, warehouse, &stocked, commit).await?
        }
        _ => Vec::new(),
    };
    let effects = ProjectedEffects {
        stock_entries: stock_entries(&changes),
        cost_updates: updates.clone(),
        supplier_balance: PurchaseAmountOwed {
            currency: normalized.currency.clone(),
            amount: normalized.amounts.total,
            amount_ars: normalized.amounts.total_ars,
        },
    };
    if !commit {
        let outcome =
            PurchaseOutcome { id: None, normalized, effects, warnings, blocking_issues: blockers, created_at: None };
        let state = serde_json::to_value(outcome).unwrap_or_default();
        return Ok(CommandReply::Accepted { commit: None, created: false, state, replayed: false, keys: Vec::new() });
    }
    let claimed = sqlx::query(
        "insert into purchase_invoices (org_id, supplier_id, voucher_type, invoice_number, purchase_id)
         values ($1, $2, $3, $4, $5) on conflict do nothing",
    )
    .bind(org_id)
    .bind(input.supplier_id)
    .bind(input.voucher_type)
    .bind(&input.supplier_invoice_number)
    .bind(command.id)
    .execute(&mut *conn)
    .await?;
    if claimed.rows_affected() == 0 {
        // Another purchase took the number since the assessment read it.
        return Err(blocked(vec![duplicate_blocker()]).into());
    }
    let event = PurchaseEvent::PurchaseRecorded(Box::new(PurchaseRecorded {
        supplier_id: normalized.supplier_id,
        voucher_type: normalized.voucher_type,
        supplier_invoice_number: normalized.supplier_invoice_number.clone(),
        invoice_date: normalized.invoice_date,
        due_date: normalized.due_date,
        currency: normalized.currency.clone(),
        exchange_rate: normalized.exchange_rate,
        products_received: normalized.products_received,
        warehouse_id: normalized.warehouse_id,
        notes: normalized.notes.clone(),
        lines: normalized.lines.clone(),
        amounts: normalized.amounts.clone(),
        changes,
        cost_updates: updates.clone(),
    }));
    let stream =
        StreamRef { org_id, stream_type: PurchaseEvent::STREAM_TYPE, stream_id: command.id, expected_version: 0 };
    let mut requests = vec![AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() }];
    requests.extend(cost_appends(org_id, &updates, &facts, &groups, metadata));
    let (key, keys) = append_typed(conn, &requests, command.id).await?;
    let outcome = PurchaseOutcome {
        id: Some(command.id),
        normalized,
        effects,
        warnings,
        blocking_issues: Vec::new(),
        created_at: Some(OffsetDateTime::now_utc()),
    };
    let state = serde_json::to_value(outcome).unwrap_or_default();
    Ok(CommandReply::Accepted { commit: key, created: true, state, replayed: false, keys })
}

fn duplicate_blocker() -> Blocker {
    Blocker::new(
        "supplierInvoiceNumber",
        "DUPLICATE",
        "already_exists",
        "this supplier's invoice of this voucher type is already recorded",
    )
}

/// Purchase orders: created (gap-free numbers), confirmed, received in receipts, closed and reopened.
pub struct PurchaseOrders;

impl Handler for PurchaseOrders {
    type Command = OrderCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[];

    fn stream_id(command: &OrderCommand) -> Uuid {
        command.order_id()
    }

    /// Assessed in `run`, after the order's own state is loaded.
    async fn check_references(_: &OrderCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &OrderCommand,
        conn: &mut Conn<'_>,
        _: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let conn = conn.get().await?;
        let (state, version) = load::<PurchaseOrder>(conn, org_id, command.order_id()).await?;
        orders::run(conn, org_id, command, state, version, metadata).await
    }
}
