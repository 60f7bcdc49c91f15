//! How the workers run purchases and purchase orders. A purchase is assessed (supplier, products,
//! warehouse, currency, a repeated supplier invoice), then, when committed, recorded in one transaction
//! with the stock it raises (levels locked as every stock command does) and the products' new costs
//! (`ProductUpdated` on each product's stream, with optimistic concurrency: a conflict starts the whole
//! command over).

use super::orders::{self, OrderCommand, PurchaseOrder};
use super::{
    Blocker, Mode, NormalizedPurchase, ProjectedEffects, PurchaseAmountOwed, PurchaseCommand, PurchaseOutcome,
    PurchaseWarning, VariantFacts, cost_updates, currency_rate, price_lines, stock_entries,
};
use crate::aggregate::{BusinessDetail, Rejection};
use crate::contacts::Supplier;
use crate::engine::{Conn, ExecuteError, Sink, append_typed, load};
use crate::handler::{Batching, Commit, Handler};
use crate::inventory::levels::{self, Key, Level};
use crate::inventory::{Move, WantedMove, combo_components, expand_combos, plan};
use crate::protocol::CommandReply;
use crate::records::Warehouse;
use events::catalogue::{
    CostUpdate, ProductEvent, ProductGroup, ProductUpdated, PurchaseEvent, PurchaseRecorded, StockChange, StockLine,
    ar_date,
};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// The latest state of each product group, by group id, with its stream version.
pub(crate) type Groups = BTreeMap<Uuid, (i32, ProductGroup)>;

/// The facts of each of `variants` that is a product variant of the organization, and the latest state
/// of their groups (every product event carries its group's whole state, so the latest one is it).
pub(crate) async fn load_products(
    conn: &mut PgConnection,
    org_id: Uuid,
    variants: &[Uuid],
) -> Result<(BTreeMap<Uuid, VariantFacts>, Groups), ExecuteError> {
    let rows: Vec<(Uuid, Uuid)> =
        sqlx::query_as("select variant_id, group_id from product_variants where org_id = $1 and variant_id = any($2)")
            .bind(org_id)
            .bind(variants)
            .fetch_all(&mut *conn)
            .await?;
    let group_ids: Vec<Uuid> = rows.iter().map(|r| r.1).collect();
    let latest: Vec<(Uuid, i32, serde_json::Value)> = sqlx::query_as(
        "select distinct on (stream_id) stream_id, version, data from events
         where org_id = $1 and stream_type = 'product' and stream_id = any($2)
         order by stream_id, version desc",
    )
    .bind(org_id)
    .bind(&group_ids)
    .fetch_all(&mut *conn)
    .await?;
    let mut groups = Groups::new();
    for (id, version, data) in latest {
        let group: ProductGroup = serde_json::from_value(data).map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        groups.insert(id, (version, group));
    }
    let facts = rows
        .iter()
        .filter_map(|(variant, group)| {
            let (_, state) = groups.get(group)?;
            VariantFacts::of(*group, state, *variant).map(|f| (*variant, f))
        })
        .collect();
    Ok((facts, groups))
}

/// Where a warehouse stands for a document that moves stock there.
pub(crate) async fn warehouse_blocker(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    path: &str,
) -> Result<Option<Blocker>, ExecuteError> {
    Ok(match load::<Warehouse>(conn, org_id, id).await?.0 {
        None => Some(Blocker::new(path, "INVENTORY", "not_found", "no warehouse of this organization has this id")),
        Some(w) if !w.fields.is_active => {
            Some(Blocker::new(path, "INVENTORY", "inactive", "the warehouse is inactive"))
        }
        Some(_) => None,
    })
}

/// The supplier must be one of the organization's, and active.
pub(crate) async fn supplier_blocker(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<Option<Blocker>, ExecuteError> {
    Ok(match load::<Supplier>(conn, org_id, id).await?.0 {
        None => {
            Some(Blocker::new("supplierId", "SUPPLIER", "not_found", "no supplier of this organization has this id"))
        }
        Some(s) if !s.is_active => Some(Blocker::new("supplierId", "SUPPLIER", "inactive", "the supplier is inactive")),
        Some(_) => None,
    })
}

/// Each line's product must be an active product variant of the organization.
pub(crate) fn product_blockers(
    variants: impl Iterator<Item = Uuid>,
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Vec<Blocker> {
    variants
        .enumerate()
        .filter_map(|(i, variant)| {
            let path = format!("items[{i}].productId");
            match facts.get(&variant) {
                None => {
                    Some(Blocker::new(path, "INVENTORY", "not_found", "no product of this organization has this id"))
                }
                Some(f) if !f.is_active => Some(Blocker::new(path, "INVENTORY", "inactive", "the product is inactive")),
                Some(_) => None,
            }
        })
        .collect()
}

/// The refusal of a command with blockers: 422 `PRECONDITION_FAILED`, one detail per blocker (its
/// `code` the blocker's, `metadata.reason` why), as the v2 commit answers; the v1 gateway words it as
/// 404, 409 or 400 by the reasons.
pub(crate) fn blocked(blockers: Vec<Blocker>) -> Rejection {
    Rejection::Unprocessable {
        code: "PRECONDITION_FAILED".into(),
        message: "the purchase cannot be recorded; see details (a preview lists the same blocking issues)".into(),
        details: blockers
            .into_iter()
            .map(|b| BusinessDetail {
                field: Some(b.path),
                code: b.code,
                message: b.message,
                metadata: BTreeMap::from([("reason".to_owned(), serde_json::Value::String(b.reason))]),
            })
            .collect(),
    }
}

/// The stock a document raises in `warehouse`: products as they are, combos as their components (whole
/// units), services not at all.
pub(crate) async fn stocked_lines(
    conn: &mut PgConnection,
    org_id: Uuid,
    lines: impl Iterator<Item = (Uuid, events::domain::Quantity)>,
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Result<Vec<StockLine>, ExecuteError> {
    let lines: Vec<StockLine> = lines
        .filter(|(variant, _)| facts.get(variant).is_some_and(|f| f.product_type != "service"))
        .map(|(variant_id, quantity)| StockLine { variant_id, quantity })
        .collect();
    let combos: Vec<Uuid> = lines
        .iter()
        .filter(|l| facts.get(&l.variant_id).is_some_and(|f| f.product_type == "combo"))
        .map(|l| l.variant_id)
        .collect();
    let components = if combos.is_empty() { BTreeMap::new() } else { combo_components(conn, org_id, &combos).await? };
    expand_combos(&lines, &components, "items").map_err(|errors| Rejection::Invalid { errors }.into())
}

/// Adds `lines` to the levels of `warehouse`: locked and written when `commit`, otherwise only read
/// (a preview takes no lock and writes nothing). The changes, each with the on-hand it leaves.
pub(crate) async fn add_stock(
    conn: &mut PgConnection,
    org_id: Uuid,
    warehouse: Uuid,
    lines: &[StockLine],
    commit: bool,
) -> Result<Vec<StockChange>, ExecuteError> {
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let today = ar_date(OffsetDateTime::now_utc());
    let keys = lines.iter().map(|l| (l.variant_id, warehouse));
    let mut current: BTreeMap<Key, Level> = if commit {
        levels::lock(conn, org_id, keys, today).await?
    } else {
        levels::peek(conn, org_id, keys, today).await?
    };
    let moves: Vec<WantedMove> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| WantedMove {
            key: (l.variant_id, warehouse),
            action: Move::Add(l.quantity),
            field: format!("items[{i}].quantity"),
        })
        .collect();
    let (changes, _) = plan(&mut current, &moves)?;
    if commit {
        levels::write(conn, org_id, &changes).await?;
    }
    Ok(changes)
}

/// The `ProductUpdated` of every group whose costs a document moves (prices under automatic margin
/// pricing follow), each expecting the version it was read at.
pub(crate) fn cost_appends(
    org_id: Uuid,
    updates: &[CostUpdate],
    facts: &BTreeMap<Uuid, VariantFacts>,
    groups: &Groups,
    metadata: &Metadata,
) -> Vec<AppendRequest> {
    let mut by_group: BTreeMap<Uuid, Vec<&CostUpdate>> = BTreeMap::new();
    for update in updates {
        if let Some(fact) = facts.get(&update.variant_id) {
            by_group.entry(fact.group_id).or_default().push(update);
        }
    }
    by_group
        .into_iter()
        .filter_map(|(group_id, updates)| {
            let (version, group) = groups.get(&group_id)?;
            let mut next = group.clone();
            for update in updates {
                if let Some(variant) = next.variants.iter_mut().find(|v| v.id == update.variant_id) {
                    variant.cost = update.current;
                }
            }
            next.reprice();
            if next == *group {
                return None;
            }
            let changes = crate::products::variant_changes(group_id, group, &next);
            let event = ProductEvent::ProductUpdated(ProductUpdated { group: next, changes });
            let stream = StreamRef {
                org_id,
                stream_type: ProductEvent::STREAM_TYPE,
                stream_id: group_id,
                expected_version: *version,
            };
            Some(AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() })
        })
        .collect()
}

/// Records a purchase, or (preview) answers what it would record.
pub struct Purchases;

impl Handler for Purchases {
    type Command = PurchaseCommand;
    const COMMIT: Commit = Commit::OwnTransaction;
    const BATCHING: Batching = Batching::Shared;

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
        .filter(|(_, item)| item.unit_cost == 0)
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
    let updates = cost_updates(&normalized.lines, &facts);
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
