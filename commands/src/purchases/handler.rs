//! How the workers run purchases and purchase orders. A purchase is assessed (supplier, products,
//! warehouse, currency, a repeated supplier invoice), then, when committed, recorded in one transaction
//! with the stock it raises (levels locked as every stock command does) and the products' new costs
//! (`ProductUpdated` on each product's stream, with optimistic concurrency: a conflict starts the whole
//! command over).

use super::blocked;
use super::checks::{add_stock, cost_appends, stocked_lines, supplier_blocker, warehouse_blocker};
use super::orders::{self, OrderCommand, PurchaseOrder};
use super::{
    Mode, ProjectedEffects, PurchaseAmountOwed, PurchaseCommand, PurchaseDecision, PurchaseFacts, PurchaseOutcome,
    duplicate_blocker, stock_entries,
};
use crate::aggregate::Rejection;
use crate::document::Document;
use crate::engine::{Committed, ExecuteError, append_typed, load};
use crate::handler::{Batching, Commit, handler};
use crate::lookups::load_products;
use crate::reply::CommandReply;
use events::catalogue::{PurchaseEvent, PurchaseRecorded};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// Records a purchase, or (preview) answers what it would record.
pub struct Purchases;

handler! {
    impl Handler for Purchases as Document {
        type Command = PurchaseCommand;
        JOBS: &[];

        stream_id(command) {
            command.id
        }
    }
}

impl Document for Purchases {
    type Command = PurchaseCommand;
    type Facts = PurchaseFacts;
    type Decision = PurchaseDecision;

    async fn load(
        command: &PurchaseCommand,
        conn: &mut PgConnection,
        org_id: Uuid,
    ) -> Result<PurchaseFacts, ExecuteError> {
        let input = &command.input;
        let variants: Vec<Uuid> = input.items.iter().map(|i| i.variant_id).collect();
        let (products, groups) = load_products(conn, org_id, &variants).await?;
        let supplier = supplier_blocker(conn, org_id, input.supplier_id).await?;
        // A warehouse named is checked even when nothing was received: the purchase records it.
        let warehouse = match input.warehouse_id {
            Some(id) => Some(warehouse_blocker(conn, org_id, id, "warehouseId").await?),
            None => None,
        };
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
        Ok(PurchaseFacts { products, groups, supplier, warehouse, duplicate })
    }

    fn decide(command: &PurchaseCommand, facts: &PurchaseFacts) -> Result<PurchaseDecision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &PurchaseCommand,
        facts: PurchaseFacts,
        decision: PurchaseDecision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let input = &command.input;
        let commit = command.mode == Mode::Commit;
        let PurchaseDecision { normalized, warnings, blockers, updates, stock_warehouse } = decision;
        let changes = match stock_warehouse {
            Some(warehouse) => {
                let items = input.items.iter().map(|i| (i.variant_id, i.quantity));
                let stocked = stocked_lines(conn, org_id, items, &facts.products).await?;
                add_stock(conn, org_id, warehouse, &stocked, commit).await?
            }
            None => Vec::new(),
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
            let outcome = PurchaseOutcome {
                id: None,
                normalized,
                effects,
                warnings,
                blocking_issues: blockers,
                created_at: None,
            };
            return Ok(CommandReply::accepted(None, false, &outcome, Vec::new())?);
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
            // Another purchase took the number since the facts were read.
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
        let mut requests =
            vec![AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() }];
        requests.extend(cost_appends(org_id, &updates, &facts.products, &facts.groups, metadata)?);
        let Committed { key, keys, .. } = append_typed(conn, &requests, command.id).await?;
        // What the purchase leaves owed, in pesos, for supplier payments to settle.
        let owed = normalized.amounts.total_ars;
        let supplier = normalized.supplier_id;
        crate::payments::open_document(conn, org_id, "purchase", command.id, supplier, owed, owed, normalized.due_date)
            .await?;
        let outcome = PurchaseOutcome {
            id: Some(command.id),
            normalized,
            effects,
            warnings,
            blocking_issues: Vec::new(),
            created_at: Some(OffsetDateTime::now_utc()),
        };
        Ok(CommandReply::accepted(key, true, &outcome, keys)?)
    }
}

/// Purchase orders: created (gap-free numbers), confirmed, received in receipts, closed and reopened.
pub struct PurchaseOrders;

handler! {
    impl Handler for PurchaseOrders {
        type Command = OrderCommand;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.order_id()
        }

        /// Assessed in `run`, after the order's own state is loaded.
        check_references in run;

        run_on(command, conn, org_id, metadata) {
            let (state, version) = load::<PurchaseOrder>(conn, org_id, command.order_id()).await?;
            orders::run(conn, org_id, command, state, version, metadata).await
        }
    }
}
