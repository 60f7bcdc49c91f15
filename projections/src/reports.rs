//! Reports (`report_facts`, `report_rollups`): every fact a grouped report sums, folded from sales,
//! purchases, payments and every event that moves stock, each kept with the event-store position that
//! recorded it. A fact carries the dimensions it had when it was recorded: a product's category and tags
//! are those the product and tag events had given it up to that event (`report_products`), so a later
//! edit of the product does not move past figures. Credit notes and voids are facts of their own with
//! opposite signs; a change of a sale's fiscal status moves its lines from the old status to the new one
//! with a pair of opposite facts, so nothing is ever updated and every earlier position can be
//! answered by summing the facts recorded at or below it.
//!
//! The rollups sum the same facts per business day or month and one dimension's value, per epoch of
//! positions ([`EPOCH_BITS`]): the query ([`query`]) reads them when a report is grouped by periods and
//! at most one dimension (the months when every period asked is a month or a year and the date range
//! is whole months), and otherwise the facts.

pub mod query;

use crate::{Folded, Folds, ProjectionError, StreamType, Target};
use events::catalogue::{
    CustomerPaymentEvent, PaymentFact, PaymentSide, ProductEvent, PurchaseEvent, SaleEvent, SaleRecorded, StockEffect,
    SupplierPaymentEvent, TagEvent, ar_date, iso_date, stock_effect,
};
use events::domain::{Cents, Quantity};
use events::unnest::Unnest;
use events::{EventPayload, RecordedEvent};
use query::{Group, Report};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use std::collections::{BTreeSet, HashMap};
use time::Date;
use uuid::Uuid;

pub const FACTS: &str = "report_facts";
pub const ROLLUPS: &str = "report_rollups";
pub const PRODUCTS: &str = "report_products";
pub const MARKS: &str = "report_marks";

/// A rollup row sums the facts of 2^10 consecutive positions: few enough that an answer as of a
/// position reads few facts past the rollups (at most those of 1,024 positions), many enough that an
/// organization writing steadily has about one rollup row per day and key, and a few per month.
pub const EPOCH_BITS: u32 = 10;

/// The epoch a position falls in.
pub fn epoch(position: i64) -> i64 {
    position >> EPOCH_BITS
}

pub struct ReportsProjection;

/// Everything that moves stock (the catalogue's one list), the payments of both sides, and tags (the
/// products they are applied to).
static FOLDS: std::sync::LazyLock<Vec<StreamType>> = std::sync::LazyLock::new(|| {
    let mut folds = StreamType::stock_moving().to_vec();
    folds.extend([
        StreamType::of::<CustomerPaymentEvent>(),
        StreamType::of::<SupplierPaymentEvent>(),
        StreamType::of::<TagEvent>(),
    ]);
    folds
});

/// No write waits for reports (a query answers what is folded, and says up to which position), and a
/// batch's rollup rows are the same few whatever the number of events it folds: under load the
/// projector gathers 50 ms of events into each batch.
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(50);

projection!(ReportsProjection {
    id: Reports,
    tables: &[FACTS, ROLLUPS, PRODUCTS, MARKS],
    folds: Folds::Only(FOLDS.as_slice()),
    fn linger(&self) -> std::time::Duration {
        LINGER
    }
});

/// One fact as stored (the columns of `report_facts`, read and written as JSON rows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub org_id: Uuid,
    pub report: String,
    pub position: i64,
    pub seq: i32,
    #[serde(with = "iso_date")]
    pub day: Date,
    pub status: Option<String>,
    pub document_id: Option<Uuid>,
    pub customer_id: Option<Uuid>,
    pub supplier_id: Option<Uuid>,
    pub product_id: Option<Uuid>,
    pub category_id: Option<Uuid>,
    pub tag_ids: Vec<Uuid>,
    pub warehouse_id: Option<Uuid>,
    pub point_of_sale_id: Option<Uuid>,
    pub voucher_type: Option<i32>,
    pub payment_method_id: Option<Uuid>,
    pub location_id: Option<Uuid>,
    pub side: Option<String>,
    pub currency: Option<String>,
    #[serde(flatten)]
    pub measures: Measures,
}

/// What a fact counts: the measures every report sums, signed as the report counts them (the same
/// columns in facts and rollups).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measures {
    pub count: i64,
    /// Thousandths of a unit.
    pub quantity: i64,
    pub net: i64,
    pub tax: i64,
    pub total: i64,
    pub cost: i64,
    pub amount: i64,
    pub fee: i64,
    pub value: i64,
}

impl Measures {
    /// The measures' columns, the same in `report_facts` and `report_rollups`, in the order of
    /// [`Measures::values`].
    const COLUMNS: [&'static str; 9] = ["count", "quantity", "net", "tax", "total", "cost", "amount", "fee", "value"];

    fn values(self) -> [i64; 9] {
        let Measures { count, quantity, net, tax, total, cost, amount, fee, value } = self;
        [count, quantity, net, tax, total, cost, amount, fee, value]
    }

    /// The measures' columns of `rows`, added to `unnest`.
    fn columns<'r, R>(mut unnest: Unnest<'r, R>, measures: impl Fn(&'r R) -> Measures) -> Unnest<'r, R> {
        for (i, column) in Measures::COLUMNS.into_iter().enumerate() {
            unnest = unnest.column(column, |row| measures(row).values()[i]);
        }
        unnest
    }

    /// Every measure's sign turned (a void, or a move out of a status).
    fn negated(self) -> Measures {
        let Measures { count, quantity, net, tax, total, cost, amount, fee, value } = self;
        Measures {
            count: -count,
            quantity: -quantity,
            net: -net,
            tax: -tax,
            total: -total,
            cost: -cost,
            amount: -amount,
            fee: -fee,
            value: -value,
        }
    }

    fn add(&mut self, other: Measures) {
        self.count += other.count;
        self.quantity += other.quantity;
        self.net += other.net;
        self.tax += other.tax;
        self.total += other.total;
        self.cost += other.cost;
        self.amount += other.amount;
        self.fee += other.fee;
        self.value += other.value;
    }
}

impl Fact {
    /// A fact of `report` with no dimension and nothing counted yet.
    pub fn new(org_id: Uuid, report: Report, position: i64, seq: i32, day: Date) -> Fact {
        Fact {
            org_id,
            report: report.as_str().to_owned(),
            position,
            seq,
            day,
            status: None,
            document_id: None,
            customer_id: None,
            supplier_id: None,
            product_id: None,
            category_id: None,
            tag_ids: Vec::new(),
            warehouse_id: None,
            point_of_sale_id: None,
            voucher_type: None,
            payment_method_id: None,
            location_id: None,
            side: None,
            currency: None,
            measures: Measures::default(),
        }
    }

    /// The same fact with every measure's sign turned (a void, or a move out of a status).
    fn negated(&self) -> Fact {
        Fact { measures: self.measures.negated(), ..self.clone() }
    }

    /// The keys of `group` this fact counts under (a fact counts under each of its tags, and under none
    /// when it has no tag; every other dimension has one key, empty when the fact has none).
    pub fn keys(&self, group: Group) -> Vec<String> {
        let text = |id: Option<Uuid>| id.map(|id| id.to_string()).unwrap_or_default();
        match group {
            Group::Day | Group::Week | Group::Month | Group::Year => vec![group.period_of(self.day)],
            Group::Customer => vec![text(self.customer_id)],
            Group::Supplier => vec![text(self.supplier_id)],
            Group::Product => vec![text(self.product_id)],
            Group::Category => vec![text(self.category_id)],
            Group::Tag if self.tag_ids.is_empty() => vec![String::new()],
            Group::Tag => self.tag_ids.iter().map(|id| id.to_string()).collect(),
            Group::Warehouse => vec![text(self.warehouse_id)],
            Group::PointOfSale => vec![text(self.point_of_sale_id)],
            Group::VoucherType => vec![self.voucher_type.map(|v| v.to_string()).unwrap_or_default()],
            Group::PaymentMethod => vec![text(self.payment_method_id)],
            Group::Location => vec![text(self.location_id)],
            Group::Currency => vec![self.currency.clone().unwrap_or_default()],
            Group::Side => vec![self.side.clone().unwrap_or_default()],
        }
    }
}

/// One rollup row's key (the key columns of `report_rollups`), its report and key borrowed from the
/// facts it sums and their keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Rollup<'f, K> {
    org_id: Uuid,
    report: &'f str,
    period: &'static str,
    dimension: &'static str,
    key: K,
    day: Date,
    epoch: i64,
}

/// The dimension name of the rollup rows that sum every fact of a day.
pub const ALL: &str = "all";
/// Rollup rows of one business day, and of a whole month (dated its first day).
pub const DAY: &str = "day";
pub const MONTH: &str = "month";

/// The rollup rows `facts` add to, with what they add to each.
fn rollups(facts: &[Fact]) -> Result<Vec<(Rollup<'_, String>, Measures)>, ProjectionError> {
    // Every fact's keys first (the empty key of `all`, then one or more per dimension), so the rows
    // below borrow them instead of copying a key per row: a fact adds to a day row and a month row per key.
    let mut keyed = Vec::with_capacity(facts.len());
    for fact in facts {
        let undecodable = |reason: String| ProjectionError::Undecodable { position: fact.position, reason };
        let report: Report = fact.report.parse().map_err(|e| undecodable(format!("{e}")))?;
        let month = fact.day.replace_day(1).map_err(|e| undecodable(e.to_string()))?;
        let dimensions = report.groups().iter().filter(|g| !g.is_period());
        let keys: Vec<(&'static str, String)> = std::iter::once((ALL, String::new()))
            .chain(dimensions.flat_map(|g| fact.keys(*g).into_iter().map(|key| (g.as_str(), key))))
            .collect();
        keyed.push((fact, month, keys));
    }
    let mut rows: HashMap<Rollup<'_, &str>, Measures> = HashMap::new();
    for (fact, month, keys) in &keyed {
        for (dimension, key) in keys {
            for (period, day) in [(DAY, fact.day), (MONTH, *month)] {
                let row = Rollup {
                    org_id: fact.org_id,
                    report: &fact.report,
                    period,
                    dimension,
                    key: key.as_str(),
                    day,
                    epoch: epoch(fact.position),
                };
                rows.entry(row).or_default().add(fact.measures);
            }
        }
    }
    Ok(rows
        .into_iter()
        .map(|(Rollup { org_id, report, period, dimension, key, day, epoch }, measures)| {
            (Rollup { org_id, report, period, dimension, key: key.to_owned(), day, epoch }, measures)
        })
        .collect())
}

/// What the projection knows of a variant (a row of `report_products`).
#[derive(Debug, Clone, Default)]
struct ProductState {
    org_id: Uuid,
    variant_id: Uuid,
    category_id: Option<Uuid>,
    tag_ids: Vec<Uuid>,
    cost: Cents,
}

/// A batch being folded: the variants' states it read and changed, and the facts it made.
struct Batch<'a> {
    conn: &'a mut PgConnection,
    target: Target,
    products: HashMap<(Uuid, Uuid), ProductState>,
    /// The variants whose state the batch changed.
    changed: BTreeSet<(Uuid, Uuid)>,
    facts: Vec<Fact>,
    /// How many of `facts` are already written (before a read of earlier facts).
    written: usize,
}

impl Batch<'_> {
    /// What the batch knows of a variant (nothing yet for one never seen).
    fn product(&self, org_id: Uuid, variant_id: Uuid) -> ProductState {
        self.products.get(&(org_id, variant_id)).cloned().unwrap_or(ProductState {
            org_id,
            variant_id,
            ..ProductState::default()
        })
    }

    /// Changes what the batch knows of a variant.
    fn change_product(&mut self, org_id: Uuid, variant_id: Uuid, change: impl FnOnce(&mut ProductState)) {
        let mut state = self.product(org_id, variant_id);
        change(&mut state);
        self.products.insert((org_id, variant_id), state);
        self.changed.insert((org_id, variant_id));
    }

    /// The number of `event`'s next fact.
    fn next_seq(&self, event: &RecordedEvent) -> i32 {
        self.facts.iter().rev().take_while(|f| f.position == event.position).count() as i32
    }

    /// A new fact of `event`, numbered after the ones it already made.
    fn fact(&self, event: &RecordedEvent, report: Report, day: Date) -> Fact {
        Fact::new(event.org_id, report, event.position, self.next_seq(event), day)
    }

    /// A fact about `variant` (its category and tags as they are now).
    fn product_fact(&mut self, event: &RecordedEvent, report: Report, day: Date, variant: Option<Uuid>) -> Fact {
        let mut fact = self.fact(event, report, day);
        if let Some(variant) = variant {
            let state = self.product(event.org_id, variant);
            fact.product_id = Some(variant);
            fact.category_id = state.category_id;
            fact.tag_ids = state.tag_ids.clone();
        }
        fact
    }

    async fn write_facts(&mut self) -> Result<(), ProjectionError> {
        if self.written < self.facts.len() {
            let facts = Unnest::new(&self.facts[self.written..])
                .column("org_id", |f| f.org_id)
                .column("report", |f| f.report.as_str())
                .column("position", |f| f.position)
                .column("seq", |f| f.seq)
                .column("day", |f| f.day)
                .column("status", |f| f.status.as_deref())
                .column("document_id", |f| f.document_id)
                .column("customer_id", |f| f.customer_id)
                .column("supplier_id", |f| f.supplier_id)
                .column("product_id", |f| f.product_id)
                .column("category_id", |f| f.category_id)
                .cast("tag_ids", "::uuid[]", |f| uuid_array(&f.tag_ids))
                .column("warehouse_id", |f| f.warehouse_id)
                .column("point_of_sale_id", |f| f.point_of_sale_id)
                .column("voucher_type", |f| f.voucher_type)
                .column("payment_method_id", |f| f.payment_method_id)
                .column("location_id", |f| f.location_id)
                .column("side", |f| f.side.as_deref())
                .column("currency", |f| f.currency.as_deref());
            let insert = format!("insert into {}", self.target.table(FACTS));
            Measures::columns(facts, |f| f.measures)
                .execute(&mut *self.conn, &insert, "on conflict (org_id, position, seq) do nothing")
                .await?;
            self.written = self.facts.len();
        }
        Ok(())
    }

    /// The facts `document` was first recorded with in `report`.
    async fn recorded_facts(
        &mut self,
        org_id: Uuid,
        report: ByDocument,
        document: Uuid,
    ) -> Result<Vec<Fact>, ProjectionError> {
        self.write_facts().await?;
        let table = self.target.table(FACTS);
        let report = report.as_str();
        let sql = format!(
            "select row_to_json(f)::text from {table} f
             where org_id = $1 and document_id = $2 and report = '{report}'
               and position = (select min(position) from {table}
                               where org_id = $1 and document_id = $2 and report = '{report}')
             order by seq"
        );
        let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(org_id)
            .bind(document)
            .fetch_all(&mut *self.conn)
            .await?;
        rows.iter()
            .map(|row| {
                serde_json::from_str(row).map_err(|e| ProjectionError::Database(sqlx::Error::Decode(Box::new(e))))
            })
            .collect()
    }

    /// The status `document`'s facts in `report` count under now.
    async fn status(&mut self, org_id: Uuid, report: ByDocument, document: Uuid) -> Result<Option<String>, ProjectionError> {
        self.write_facts().await?;
        let sql = format!(
            "select status from {} where org_id = $1 and document_id = $2 and report = '{}'
             order by position desc, seq desc limit 1",
            self.target.table(FACTS),
            report.as_str()
        );
        Ok(sqlx::query_scalar::<_, Option<String>>(sqlx::AssertSqlSafe(sql))
            .bind(org_id)
            .bind(document)
            .fetch_optional(&mut *self.conn)
            .await?
            .flatten())
    }

    /// Adds `facts` renumbered as facts of `event`.
    fn push_as(&mut self, event: &RecordedEvent, facts: Vec<Fact>) {
        for mut fact in facts {
            fact.seq = self.next_seq(event);
            fact.position = event.position;
            self.facts.push(fact);
        }
    }
}

/// The reports whose facts are looked up by document: a sale's change of fiscal status, a payment's
/// void. `report_facts_by_document` (`schema/0039`) indexes those alone, so a lookup names its report in
/// the statement, where the planner sees it matches the index.
#[derive(Debug, Clone, Copy)]
enum ByDocument {
    Sales,
    Payments,
}

impl ByDocument {
    fn as_str(self) -> &'static str {
        match self {
            ByDocument::Sales => Report::Sales.as_str(),
            ByDocument::Payments => Report::Payments.as_str(),
        }
    }
}

/// A uuid array's text form (`{a,b}`), for a column of arrays bound as text.
fn uuid_array(ids: &[Uuid]) -> String {
    let mut text = String::with_capacity(2 + ids.len() * 37);
    text.push('{');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(id.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()));
    }
    text.push('}');
    text
}

fn cents(event: &RecordedEvent, value: Option<Cents>) -> Result<i64, ProjectionError> {
    value.map(Cents::get).ok_or_else(|| ProjectionError::undecodable(event, "an amount is out of range"))
}

/// The sign of a sale: credit notes subtract.
fn sale_sign(sale: &SaleRecorded) -> i64 {
    if sale.document_kind == "credit_note" { -1 } else { 1 }
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let products = load_products(conn, target, events).await?;
    let mut batch = Batch { conn, target, products, changed: BTreeSet::new(), facts: Vec::new(), written: 0 };
    for event in events {
        fold(&mut batch, event).await?;
    }
    batch.write_facts().await?;
    let rollups = rollups(&batch.facts)?;
    let conn = batch.conn;
    let insert = format!("insert into {} as t", target.table(ROLLUPS));
    let sums: Vec<String> = Measures::COLUMNS.iter().map(|c| format!("{c} = t.{c} + excluded.{c}")).collect();
    let suffix = format!("on conflict (org_id, report, period, dimension, day, key, epoch) do update set {}", sums.join(", "));
    let rows = Unnest::new(&rollups)
        .column("org_id", |(r, _)| r.org_id)
        .column("report", |(r, _)| r.report)
        .column("period", |(r, _)| r.period)
        .column("dimension", |(r, _)| r.dimension)
        .column("key", |(r, _)| r.key.as_str())
        .column("day", |(r, _)| r.day)
        .column("epoch", |(r, _)| r.epoch);
    Measures::columns(rows, |(_, measures)| *measures).execute(&mut *conn, &insert, &suffix).await?;
    let states: Vec<&ProductState> = batch.changed.iter().filter_map(|id| batch.products.get(id)).collect();
    let insert = format!("insert into {}", target.table(PRODUCTS));
    Unnest::new(&states)
        .column("org_id", |p| p.org_id)
        .column("variant_id", |p| p.variant_id)
        .column("category_id", |p| p.category_id)
        .cast("tag_ids", "::uuid[]", |p| uuid_array(&p.tag_ids))
        .column("cost", |p| p.cost.get())
        .execute(
            &mut *conn,
            &insert,
            "on conflict (org_id, variant_id) do update set
             category_id = excluded.category_id, tag_ids = excluded.tag_ids, cost = excluded.cost",
        )
        .await?;
    let insert = format!("insert into {}", target.table(MARKS));
    Unnest::new(events)
        .column("org_id", |e| e.org_id)
        .column("position", |e| e.position)
        .column("recorded_at", |e| e.recorded_at)
        .execute(&mut *conn, &insert, "on conflict (org_id, position) do nothing")
        .await?;
    Ok(Vec::new())
}

/// The states of every variant the batch's events name, as earlier batches left them.
async fn load_products(
    conn: &mut PgConnection,
    target: Target,
    events: &[RecordedEvent],
) -> Result<HashMap<(Uuid, Uuid), ProductState>, ProjectionError> {
    let mut orgs: BTreeSet<Uuid> = BTreeSet::new();
    for event in events {
        orgs.insert(event.org_id);
    }
    let mut variants: BTreeSet<Uuid> = BTreeSet::new();
    for event in events {
        variant_ids(None, &event.data, &mut variants);
    }
    let orgs: Vec<Uuid> = orgs.into_iter().collect();
    let variants: Vec<Uuid> = variants.into_iter().collect();
    let sql = format!(
        "select org_id, variant_id, category_id, tag_ids, cost from {} where org_id = any($1) and variant_id = any($2)",
        target.table(PRODUCTS)
    );
    type Row = (Uuid, Uuid, Option<Uuid>, Vec<Uuid>, Cents);
    let rows: Vec<Row> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(&orgs).bind(&variants).fetch_all(&mut *conn).await?;
    Ok(rows
        .into_iter()
        .map(|(org_id, variant_id, category_id, tag_ids, cost)| {
            ((org_id, variant_id), ProductState { org_id, variant_id, category_id, tag_ids, cost })
        })
        .collect())
}

/// Every variant a payload names, wherever it nests: `variant_id` fields (lines, stock changes, opening
/// stock), a tag's `resource_ids` (other kinds of resource read nothing), a product's `variants`.
fn variant_ids(key: Option<&str>, value: &serde_json::Value, into: &mut BTreeSet<Uuid>) {
    use serde_json::Value;
    let id = |value: &Value| value.as_str().and_then(|text| Uuid::parse_str(text).ok());
    match (key, value) {
        (Some("variant_id"), value) => into.extend(id(value)),
        (Some("resource_ids"), Value::Array(items)) => into.extend(items.iter().filter_map(id)),
        (Some("variants"), Value::Array(items)) => into.extend(items.iter().filter_map(|v| id(&v["id"]))),
        (_, Value::Array(items)) => items.iter().for_each(|v| variant_ids(None, v, into)),
        (_, Value::Object(fields)) => fields.iter().for_each(|(k, v)| variant_ids(Some(k), v, into)),
        _ => {}
    }
}

async fn fold(batch: &mut Batch<'_>, event: &RecordedEvent) -> Result<(), ProjectionError> {
    match event.stream_type.as_str() {
        ProductEvent::STREAM_TYPE => {
            let product: ProductEvent = crate::decode(event)?;
            let group = product.group();
            for variant in &group.variants {
                batch.change_product(event.org_id, variant.id, |state| {
                    state.category_id = group.shared.category_id;
                    state.cost = variant.cost;
                });
            }
        }
        TagEvent::STREAM_TYPE => match crate::decode::<TagEvent>(event)? {
            TagEvent::TagApplied(targets) if targets.resource_type == "product" => {
                for id in targets.resource_ids {
                    batch.change_product(event.org_id, id, |state| {
                        if !state.tag_ids.contains(&event.stream_id) {
                            state.tag_ids.push(event.stream_id);
                            state.tag_ids.sort_unstable();
                        }
                    });
                }
            }
            TagEvent::TagRemoved(targets) if targets.resource_type == "product" => {
                for id in targets.resource_ids {
                    batch.change_product(event.org_id, id, |state| state.tag_ids.retain(|t| *t != event.stream_id));
                }
            }
            _ => {}
        },
        SaleEvent::STREAM_TYPE => fold_sale(batch, event).await?,
        PurchaseEvent::STREAM_TYPE => {
            let PurchaseEvent::PurchaseRecorded(purchase) = crate::decode(event)?;
            for line in &purchase.lines {
                let mut fact =
                    batch.product_fact(event, Report::Purchases, purchase.invoice_date, Some(line.variant_id));
                fact.document_id = Some(event.stream_id);
                fact.supplier_id = Some(purchase.supplier_id);
                fact.warehouse_id = purchase.warehouse_id;
                fact.voucher_type = Some(purchase.voucher_type);
                fact.currency = Some(purchase.currency.clone());
                fact.measures.count = 1;
                fact.measures.quantity = line.quantity.thousandths();
                fact.measures.net = line.net_ars.get();
                fact.measures.tax = line.vat_ars.get();
                fact.measures.total = line.total_ars.get();
                batch.facts.push(fact);
            }
            // The stock it received (folded below, at this position) is valued at the cost it sets: the
            // products' own events that record those costs come after it in the same commit.
            for update in &purchase.cost_updates {
                batch.change_product(event.org_id, update.variant_id, |state| state.cost = update.current);
            }
        }
        CustomerPaymentEvent::STREAM_TYPE | SupplierPaymentEvent::STREAM_TYPE => fold_payment(batch, event).await?,
        _ => {}
    }
    fold_stock(batch, event)
}

async fn fold_sale(batch: &mut Batch<'_>, event: &RecordedEvent) -> Result<(), ProjectionError> {
    match crate::decode::<SaleEvent>(event)? {
        SaleEvent::SaleRecorded(sale) => {
            let sign = sale_sign(&sale);
            let sale_fact = |batch: &mut Batch<'_>, variant: Option<Uuid>| {
                let mut fact = batch.product_fact(event, Report::Sales, sale.invoice_date, variant);
                fact.status = Some(sale.fiscal.status.as_str().to_owned());
                fact.document_id = Some(event.stream_id);
                fact.customer_id = Some(sale.customer.id).filter(|id| !id.is_nil());
                fact.point_of_sale_id = Some(sale.point_of_sale_id);
                fact.voucher_type = Some(sale.voucher_type);
                fact.currency = Some(sale.currency.clone());
                fact
            };
            // The exempt and non-taxed amounts belong to no line: one fact of the sale's own, with no
            // product and no count, so that `net` and `total` add up to the sale's subtotal and total.
            let extras = sale.exempt.checked_add(sale.non_taxed);
            if extras != Some(Cents::ZERO) {
                let extras = cents(event, extras)?;
                let mut fact = sale_fact(batch, None);
                fact.measures.net = sign * extras;
                fact.measures.total = sign * extras;
                batch.facts.push(fact);
            }
            for line in &sale.lines {
                let mut fact = sale_fact(batch, line.variant_id);
                fact.warehouse_id = line.warehouse_id;
                let cost = match line.unit_cost {
                    Some(unit) => cents(event, line.quantity.checked_mul_cents(unit))?,
                    None => 0,
                };
                fact.measures.count = sign;
                fact.measures.quantity = sign * line.quantity.thousandths();
                fact.measures.net = sign * line.net.get();
                fact.measures.tax = sign * line.vat.get();
                fact.measures.total = sign * line.total.get();
                fact.measures.cost = sign * cost;
                batch.facts.push(fact);
            }
        }
        SaleEvent::SaleFiscalChanged(sale) => {
            let status = sale.fiscal.status.as_str();
            let before = batch.status(event.org_id, ByDocument::Sales, event.stream_id).await?;
            if before.as_deref() == Some(status) {
                return Ok(());
            }
            let recorded = batch.recorded_facts(event.org_id, ByDocument::Sales, event.stream_id).await?;
            let out: Vec<Fact> =
                recorded.iter().map(|f| Fact { status: before.clone(), ..f.negated() }).collect();
            let moved: Vec<Fact> =
                recorded.into_iter().map(|f| Fact { status: Some(status.to_owned()), ..f }).collect();
            batch.push_as(event, out);
            batch.push_as(event, moved);
        }
    }
    Ok(())
}

async fn fold_payment(batch: &mut Batch<'_>, event: &RecordedEvent) -> Result<(), ProjectionError> {
    let Some(payment) = crate::payment_fact(event)? else { return Ok(()) };
    let side =
        if event.stream_type == SupplierPaymentEvent::STREAM_TYPE { PaymentSide::Supplier } else { PaymentSide::Customer };
    match payment {
        PaymentFact::Recorded(payment) => {
            for line in &payment.lines {
                let mut fact = batch.fact(event, Report::Payments, payment.occurred_on);
                fact.status = Some("recorded".to_owned());
                fact.document_id = Some(event.stream_id);
                match side {
                    PaymentSide::Customer => fact.customer_id = Some(payment.contact_id),
                    PaymentSide::Supplier => fact.supplier_id = Some(payment.contact_id),
                }
                fact.side = Some(side.as_str().to_owned());
                fact.payment_method_id = Some(line.method_id);
                fact.location_id = Some(line.location.id);
                fact.currency = Some(if line.rate.is_some() { "DOL" } else { "PES" }.to_owned());
                fact.measures.count = 1;
                fact.measures.amount = line.pesos.get();
                fact.measures.fee = line.fee.get();
                batch.facts.push(fact);
            }
        }
        PaymentFact::Voided(void) => {
            let recorded = batch.recorded_facts(event.org_id, ByDocument::Payments, event.stream_id).await?;
            let day = void.reversal.occurred_on;
            let voids =
                recorded.iter().map(|f| Fact { status: Some("voided".to_owned()), day, ..f.negated() }).collect();
            batch.push_as(event, voids);
        }
        PaymentFact::Allocated(_) => {}
    }
    Ok(())
}


/// The stock an event moved, valued at each variant's cost as it stood (for a purchase, the cost it set).
fn fold_stock(batch: &mut Batch<'_>, event: &RecordedEvent) -> Result<(), ProjectionError> {
    let effect = stock_effect(&event.stream_type, &event.event_type, event.schema_version, &event.data)
        .map_err(|e| ProjectionError::undecodable(event, e))?;
    let changes: Vec<(Uuid, Uuid, Quantity, Date)> = match effect {
        None | Some(StockEffect::Reservation(_)) => return Ok(()),
        Some(StockEffect::Opening(opening)) => {
            let day = ar_date(event.recorded_at);
            opening.into_iter().map(|o| (o.variant_id, o.warehouse_id, o.quantity, day)).collect()
        }
        Some(StockEffect::Changes { occurred_on, changes, .. }) => {
            changes.into_iter().map(|c| (c.variant_id, c.warehouse_id, c.quantity, occurred_on)).collect()
        }
    };
    for (variant, warehouse, quantity, day) in changes {
        let cost = batch.product(event.org_id, variant).cost;
        let mut fact = batch.product_fact(event, Report::Inventory, day, Some(variant));
        fact.document_id = Some(event.stream_id);
        fact.warehouse_id = Some(warehouse);
        fact.measures.count = 1;
        fact.measures.quantity = quantity.thousandths();
        fact.measures.value = cents(event, quantity.checked_mul_cents(cost))?;
        batch.facts.push(fact);
    }
    Ok(())
}
