//! Answering a grouped report from the `reports` projection: what may be asked ([`Report`], [`Group`],
//! [`Metric`] and which apply to which report), and the SQL that sums the facts, or the rollups when a
//! report is grouped by periods and at most one dimension, as the history stood at a position.

use super::{ALL, DAY, EPOCH_BITS, FACTS, MARKS, MONTH, ROLLUPS};
use crate::registry::names;
use crate::treasury::Visibility;
use futures::TryStreamExt;
use sqlx::{PgConnection, Row as _};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

names! {
    /// A report: what its facts are.
    Report ("report") {
        /// Lines of sales (credit notes subtract), at each sale's business date.
        Sales = "sales",
        /// Lines of purchases, at each supplier invoice's date.
        Purchases = "purchases",
        /// Lines of customer and supplier payments (voids subtract, at the void's date).
        Payments = "payments",
        /// Changes of stock, at each movement's date.
        Inventory = "inventory",
    }
}

names! {
    /// What a report may be grouped and filtered by.
    Group ("group") {
        Day = "day",
        Week = "week",
        Month = "month",
        Year = "year",
        Customer = "customer",
        Supplier = "supplier",
        Product = "product",
        Category = "category",
        Tag = "tag",
        Warehouse = "warehouse",
        PointOfSale = "point_of_sale",
        VoucherType = "voucher_type",
        PaymentMethod = "payment_method",
        Location = "location",
        Currency = "currency",
        Side = "side",
    }
}

names! {
    /// What a report sums.
    Metric ("metric") {
        Count = "count",
        Quantity = "quantity",
        Net = "net",
        Tax = "tax",
        Total = "total",
        Cost = "cost",
        Margin = "margin",
        Amount = "amount",
        Fee = "fee",
        OnHand = "on_hand",
        Value = "value",
    }
}

const PERIODS: [Group; 4] = [Group::Day, Group::Week, Group::Month, Group::Year];

impl Report {
    /// The groups (and filters) that apply to the report.
    pub fn groups(self) -> &'static [Group] {
        use Group::*;
        match self {
            Report::Sales => {
                &[Day, Week, Month, Year, Customer, Product, Category, Tag, Warehouse, PointOfSale, VoucherType, Currency]
            }
            Report::Purchases => &[Day, Week, Month, Year, Supplier, Product, Category, Tag, Warehouse, VoucherType, Currency],
            Report::Payments => &[Day, Week, Month, Year, Customer, Supplier, PaymentMethod, Location, Currency, Side],
            Report::Inventory => &[Day, Week, Month, Year, Product, Category, Tag, Warehouse],
        }
    }

    /// The metrics that apply to the report.
    pub fn metrics(self) -> &'static [Metric] {
        use Metric::*;
        match self {
            Report::Sales => &[Count, Quantity, Net, Tax, Total, Cost, Margin],
            Report::Purchases => &[Count, Quantity, Net, Tax, Total],
            Report::Payments => &[Count, Amount, Fee],
            Report::Inventory => &[Count, Quantity, OnHand, Value],
        }
    }

    /// The statuses its facts count under (none: the report takes no status filter).
    pub fn statuses(self) -> &'static [&'static str] {
        match self {
            Report::Sales => events::catalogue::FiscalStatus::NAMES,
            Report::Payments => &["recorded", "voided"],
            Report::Purchases | Report::Inventory => &[],
        }
    }
}

impl Group {
    /// A period of business dates rather than a dimension.
    pub fn is_period(self) -> bool {
        PERIODS.contains(&self)
    }

    /// The period's key of `day`: `2026-11-28`, `2026-W48` (ISO week), `2026-11`, `2026`.
    pub fn period_of(self, day: Date) -> String {
        match self {
            Group::Week => {
                let (year, week, _) = day.to_iso_week_date();
                format!("{year}-W{week:02}")
            }
            Group::Month => format!("{}-{:02}", day.year(), u8::from(day.month())),
            Group::Year => day.year().to_string(),
            _ => format!("{}-{:02}-{:02}", day.year(), u8::from(day.month()), day.day()),
        }
    }

    /// The SQL of its key (text) over a row with a `day` column, for periods.
    fn period_sql(self, day: &str) -> String {
        match self {
            Group::Week => format!("to_char({day}, 'IYYY-\"W\"IW')"),
            Group::Month => format!("to_char({day}, 'YYYY-MM')"),
            Group::Year => format!("to_char({day}, 'YYYY')"),
            _ => format!("to_char({day}, 'YYYY-MM-DD')"),
        }
    }

    /// The fact column it reads (dimensions other than tags).
    fn column(self) -> &'static str {
        match self {
            Group::Customer => "customer_id",
            Group::Supplier => "supplier_id",
            Group::Product => "product_id",
            Group::Category => "category_id",
            Group::Tag => "tag_id",
            Group::Warehouse => "warehouse_id",
            Group::PointOfSale => "point_of_sale_id",
            Group::VoucherType => "voucher_type",
            Group::PaymentMethod => "payment_method_id",
            Group::Location => "location_id",
            Group::Currency => "currency",
            Group::Side => "side",
            Group::Day | Group::Week | Group::Month | Group::Year => "day",
        }
    }

    /// The SQL type its keys are compared as.
    fn sql_type(self) -> &'static str {
        match self {
            Group::VoucherType => "int",
            Group::Currency | Group::Side => "text",
            _ => "uuid",
        }
    }

    /// The SQL its key `key` (text) is ordered by: voucher codes as the numbers they are (6 before 11),
    /// every other key as its text (ids, and periods written so that their text sorts by date).
    fn order_sql(self, key: &str) -> String {
        match self {
            Group::VoucherType => format!("({key})::int"),
            Group::Day | Group::Week | Group::Month | Group::Year => key.to_owned(),
            Group::Customer | Group::Supplier | Group::Product | Group::Category | Group::Tag => key.to_owned(),
            Group::Warehouse | Group::PointOfSale | Group::PaymentMethod | Group::Location => key.to_owned(),
            Group::Currency | Group::Side => key.to_owned(),
        }
    }

    /// Its key (text, null for none) over facts aliased `f` (tags unnested as `t.tag_id`).
    fn fact_key(self) -> String {
        match self {
            Group::Tag => "t.tag_id::text".to_owned(),
            g if g.is_period() => g.period_sql("f.day"),
            g => format!("f.{}::text", g.column()),
        }
    }

    /// The SQL naming key `key` (a text column), joined as `n{index}`, when it names something:
    /// (join, name expression).
    fn names(self, key: &str, index: usize, voucher_types: &[(i32, &str)]) -> Option<(String, String)> {
        let n = format!("n{index}");
        let table = |table: &str, name: &str| {
            Some((
                format!("left join {table} {n} on {n}.org_id = $1 and {n}.id = ({key})::uuid"),
                format!("{n}.{name}"),
            ))
        };
        let values = |rows: Vec<(String, String)>| {
            let rows: Vec<String> = rows
                .iter()
                .map(|(value, name)| format!("({}, {})", crate::sql_literal(value), crate::sql_literal(name)))
                .collect();
            Some((
                format!("left join (values {}) {n} (key, name) on {n}.key = {key}", rows.join(", ")),
                format!("{n}.name"),
            ))
        };
        match self {
            Group::Day | Group::Week | Group::Month | Group::Year => None,
            Group::Customer => table(crate::customers::TABLE, "name"),
            Group::Supplier => table(crate::customers::SUPPLIERS_TABLE, "name"),
            Group::Product => table("products_view", "name"),
            Group::Category => table("categories_view", "name"),
            Group::Tag => table("tags_view", "name"),
            Group::Warehouse => table("warehouses_view", "name"),
            Group::PointOfSale => table("points_of_sale_view", "name"),
            Group::PaymentMethod => table("payment_methods_view", "name"),
            Group::Location => Some((
                format!("left join treasury_locations_view {n} on {n}.org_id = $1 and {n}.id = ({key})::uuid"),
                format!("{n}.doc->>'name'"),
            )),
            Group::VoucherType => {
                values(voucher_types.iter().map(|(code, name)| (code.to_string(), (*name).to_owned())).collect())
            }
            Group::Currency => values(vec![
                ("PES".to_owned(), "Peso argentino".to_owned()),
                ("DOL".to_owned(), "Dólar estadounidense".to_owned()),
            ]),
            Group::Side => values(vec![
                ("customer".to_owned(), "Clientes".to_owned()),
                ("supplier".to_owned(), "Proveedores".to_owned()),
            ]),
        }
    }
}

impl Metric {
    /// Its value over summed columns (`sum(net)` and so on) of rows aliased `r`.
    fn sql(self) -> &'static str {
        match self {
            Metric::Count => "sum(r.count)",
            Metric::Quantity | Metric::OnHand => "sum(r.quantity)",
            Metric::Net => "sum(r.net)",
            Metric::Tax => "sum(r.tax)",
            Metric::Total => "sum(r.total)",
            Metric::Cost => "sum(r.cost)",
            Metric::Margin => "sum(r.net) - sum(r.cost)",
            Metric::Amount => "sum(r.amount)",
            Metric::Fee => "sum(r.fee)",
            Metric::Value => "sum(r.value)",
        }
    }

    /// Whether it is a quantity (exact decimal text) rather than integer cents or a count.
    pub fn is_quantity(self) -> bool {
        matches!(self, Metric::Quantity | Metric::OnHand)
    }

    /// A level at the end of the range (the sum of every change up to it), not a flow within it.
    pub fn is_level(self) -> bool {
        matches!(self, Metric::OnHand | Metric::Value)
    }
}

/// The point of the history a report is answered at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// Everything folded so far.
    Now,
    /// Every event at or below this position of the event store.
    Position(i64),
    /// Every event at or below the last position recorded at or before this instant.
    Instant(OffsetDateTime),
}

/// What to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Group(Group),
    Metric(Metric),
}

/// A checked report query (the gateway's parser states the rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub report: Report,
    pub group_by: Vec<Group>,
    pub metrics: Vec<Metric>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
    /// Dimensions and the keys (ids, voucher codes, currencies, sides) a fact must have one of.
    pub filters: Vec<(Group, Vec<String>)>,
    pub statuses: Vec<String>,
    /// `(key, descending)`; the groups' keys ascending follow, so the order is total.
    pub sort: Vec<(SortKey, bool)>,
    pub as_of: AsOf,
    /// What the reader sees of the treasury: a delegated credential with assigned registers or safes,
    /// or `own` visibility, sums only the payments it reads (every one by default).
    pub visibility: Visibility,
}

impl Query {
    /// Whether it counts only some payments: those its reader sees (never the rollups, which sum all).
    fn restricted(&self) -> bool {
        self.report == Report::Payments && self.visibility != Visibility::default()
    }
}

/// A metric's value: integer cents or a count, or a quantity as exact decimal text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Integer(i64),
    Decimal(String),
}

impl Value {
    fn of(metric: Metric, sum: i64) -> Value {
        if metric.is_quantity() {
            Value::Decimal(events::domain::Quantity::from_thousandths(sum).map(|q| q.to_string()).unwrap_or_else(
                |_| {
                    let sign = if sum < 0 { "-" } else { "" };
                    let (units, fraction) = (sum.unsigned_abs() / 1000, sum.unsigned_abs() % 1000);
                    format!("{sign}{units}.{fraction:03}")
                },
            ))
        } else {
            Value::Integer(sum)
        }
    }
}

/// One group of an answer: its keys (null for facts without one) with the names of what they identify,
/// in `group_by` order, and its metrics in `metrics` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub keys: Vec<(Option<String>, Option<String>)>,
    pub metrics: Vec<Value>,
}

/// Where an answer stands in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reflects {
    /// The event-store position the answer reflects: every event at or below it (for an answer of
    /// now, the last position the projection folded for the organization).
    pub position: i64,
}

/// The SQL of one query: the grouped rows and their totals.
struct Plan {
    sql: String,
    binds: Vec<Bind>,
}

enum Bind {
    Int(i64),
    Date(Date),
    Text(String),
    Texts(Vec<String>),
}

impl Plan {
    fn bind(&mut self, value: Bind) -> String {
        self.binds.push(value);
        format!("${}", self.binds.len() + 1)
    }

    fn query<'q>(
        &'q self,
        org_id: Uuid,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(self.sql.as_str())).bind(org_id);
        for bind in &self.binds {
            query = match bind {
                Bind::Int(value) => query.bind(*value),
                Bind::Date(date) => query.bind(*date),
                Bind::Text(text) => query.bind(text.as_str()),
                Bind::Texts(texts) => query.bind(texts.as_slice()),
            };
        }
        query
    }
}

/// The position `as_of` stands for (none: everything folded).
pub async fn position_of(conn: &mut PgConnection, org_id: Uuid, as_of: AsOf) -> Result<Option<i64>, sqlx::Error> {
    Ok(match as_of {
        AsOf::Now => None,
        AsOf::Position(position) => Some(position),
        AsOf::Instant(at) => Some(
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "select coalesce((select position from {MARKS} where org_id = $1 and recorded_at <= $2
                                  order by position desc limit 1), 0)"
            )))
            .bind(org_id)
            .bind(at)
            .fetch_one(conn)
            .await?,
        ),
    })
}

/// The last position the projection folded for `org_id` (a rebuild's floor when that is later).
pub async fn folded_position(conn: &mut PgConnection, org_id: Uuid) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "select coalesce(max(position), 0) from projection_checkpoints
         where projection = 'reports' and org_id in ($1, '00000000-0000-0000-0000-000000000000')",
    )
    .bind(org_id)
    .fetch_one(conn)
    .await
}

/// Whether the rollups can answer: no status filter, every payment counted, at most one dimension
/// grouped, and filters on that dimension only (or on one dimension when none is grouped), a tag filter
/// naming one tag.
fn rollup_dimension(query: &Query) -> Option<Group> {
    if !query.statuses.is_empty() || query.restricted() {
        return None;
    }
    let mut dimensions: Vec<Group> = query.group_by.iter().copied().filter(|g| !g.is_period()).collect();
    for (group, keys) in &query.filters {
        if *group == Group::Tag && keys.len() > 1 {
            return None;
        }
        if !dimensions.contains(group) {
            dimensions.push(*group);
        }
    }
    match dimensions.as_slice() {
        [] => Some(Group::Day),
        [one] => Some(*one),
        _ => None,
    }
}

/// Whether the month rollups can answer: every period grouped is a month or a year, and the date range
/// is whole months.
fn whole_months(query: &Query) -> bool {
    query.group_by.iter().filter(|g| g.is_period()).all(|g| matches!(g, Group::Month | Group::Year))
        && query.date_from.is_none_or(|from| from.day() == 1)
        && query.date_to.is_none_or(|to| to.next_day().is_some_and(|next| next.day() == 1))
}

/// The rows (`r`: day, each grouped key, the summed columns) a query sums, before grouping.
fn source(plan: &mut Plan, query: &Query, position: i64, grouped: &[Group]) -> (String, Vec<String>) {
    // The report and the rollups' dimension are written as literals (names from enums, never input):
    // the planner then knows from its statistics how few rows one dimension has, where a parameter
    // would make a generic plan guess and scan the whole table.
    let report = crate::sql_literal(query.report.as_str());
    let mut dates = String::new();
    if let Some(from) = query.date_from {
        dates.push_str(&format!(" and day >= {}", plan.bind(Bind::Date(from))));
    }
    if let Some(to) = query.date_to {
        dates.push_str(&format!(" and day <= {}", plan.bind(Bind::Date(to))));
    }
    const SUMS: &str = "count, quantity, net, tax, total, cost, amount, fee, value";
    let mut facts_where = format!("f.org_id = $1 and f.report = {report}{}", dates.replace(" day", " f.day"));
    let key_sql = |g: &Group| match g {
        g if g.is_period() => g.period_sql("r.day"),
        _ => "r.key".to_owned(),
    };
    if let Some(dimension) = rollup_dimension(query) {
        // Rollups: the dimension's rows (all of a day when none), before this position's epoch, and
        // the facts from that epoch up to the position.
        let (name, fact_key) = if dimension.is_period() {
            (ALL.to_owned(), "''".to_owned())
        } else {
            (dimension.as_str().to_owned(), format!("coalesce({}, '')", dimension.fact_key()))
        };
        let name = crate::sql_literal(&name);
        let period = crate::sql_literal(if whole_months(query) { MONTH } else { DAY });
        let mut keys = String::new();
        let mut fact_keys = String::new();
        if let Some((_, filter)) = query.filters.iter().find(|(g, _)| *g == dimension) {
            let keys_bind = plan.bind(Bind::Texts(filter.clone()));
            keys = format!(" and key = any({keys_bind})");
            fact_keys = format!(" and {fact_key} = any({keys_bind})");
        }
        let tags = if dimension == Group::Tag { TAGS } else { "" };
        let mut sql = format!(
            "select day, nullif(key, '') as key, {SUMS} from {ROLLUPS}
             where org_id = $1 and report = {report} and period = {period} and dimension = {name}{dates}{keys}"
        );
        let epoch_start = plan.bind(Bind::Int((position >> EPOCH_BITS) << EPOCH_BITS));
        let position = plan.bind(Bind::Int(position));
        sql.push_str(&format!(
            " and epoch < ({epoch_start} >> {EPOCH_BITS})
             union all
             select f.day, nullif({fact_key}, '') as key, f.count, f.quantity, f.net, f.tax, f.total, f.cost,
                    f.amount, f.fee, f.value
             from {FACTS} f{tags}
             where {facts_where} and f.position >= {epoch_start} and f.position <= {position}{fact_keys}"
        ));
        let keys = grouped.iter().map(key_sql).collect();
        return (sql, keys);
    }
    // Facts: every filter, grouped dimensions read off each fact (tags unnested when grouped by them).
    facts_where.push_str(&format!(" and f.position <= {}", plan.bind(Bind::Int(position))));
    if !query.statuses.is_empty() {
        facts_where.push_str(&format!(" and f.status = any({})", plan.bind(Bind::Texts(query.statuses.clone()))));
    }
    if query.restricted() {
        // The payments its reader sees, as a payment's read decides (`payments::VISIBLE`): every
        // location of its lines assigned and, with `own` visibility, taken by its user.
        let mut seen = String::new();
        if let Some(locations) = crate::payments::seen(&query.visibility) {
            seen.push_str(&format!(" and p.locations <@ {}::text[]", plan.bind(Bind::Texts(locations))));
        }
        if let Some(user) = &query.visibility.own {
            seen.push_str(&format!(" and p.created_by = {}", plan.bind(Bind::Text(user.clone()))));
        }
        facts_where.push_str(&format!(
            " and exists (select 1 from {} p where p.org_id = f.org_id and p.id = f.document_id{seen})",
            crate::payments::PAYMENTS
        ));
    }
    let by_tag = grouped.contains(&Group::Tag);
    for (group, keys) in &query.filters {
        let keys_bind = plan.bind(Bind::Texts(keys.clone()));
        let cast = group.sql_type();
        if *group == Group::Tag && !by_tag {
            facts_where.push_str(&format!(" and f.tag_ids && {keys_bind}::text[]::uuid[]"));
        } else if *group == Group::Tag {
            facts_where.push_str(&format!(" and t.tag_id = any({keys_bind}::text[]::uuid[])"));
        } else {
            facts_where.push_str(&format!(" and f.{} = any({keys_bind}::text[]::{cast}[])", group.column()));
        }
    }
    let tags = if by_tag { TAGS } else { "" };
    let columns: Vec<String> =
        grouped.iter().enumerate().map(|(i, g)| format!("{} as k{i}", g.fact_key())).collect();
    let mut select = vec!["f.day".to_owned()];
    select.extend(columns);
    let sums = SUMS.split(", ").map(|c| format!("f.{c}")).collect::<Vec<_>>().join(", ");
    let sql = format!("select {}, {sums} from {FACTS} f{tags} where {facts_where}", select.join(", "));
    let keys = (0..grouped.len())
        .map(|i| if grouped[i].is_period() { grouped[i].period_sql("r.day") } else { format!("r.k{i}") })
        .collect();
    (sql, keys)
}

/// Tags unnested, one row per tag of a fact and one (null) for a fact without tags.
const TAGS: &str = " cross join lateral unnest(case when cardinality(f.tag_ids) = 0 then array[null::uuid]
                    else f.tag_ids end) as t(tag_id)";

/// The SQL of the grouped rows of `query`, named and sorted, from `offset` (at most `limit`).
fn grouped_plan(query: &Query, position: i64, voucher_types: &[(i32, &str)], page: Option<(i64, i64)>) -> Plan {
    let mut plan = Plan { sql: String::new(), binds: Vec::new() };
    let (source, keys) = source(&mut plan, query, position, &query.group_by);
    let key_columns: Vec<String> = keys.iter().enumerate().map(|(i, k)| format!("{k} as k{i}")).collect();
    let metrics: Vec<String> =
        query.metrics.iter().enumerate().map(|(i, m)| format!("({})::int8 as m{i}", m.sql())).collect();
    let group_by: Vec<String> = (1..=keys.len()).map(|i| i.to_string()).collect();
    let mut inner = format!("select {} from ({source}) r", [key_columns, metrics].concat().join(", "));
    if !group_by.is_empty() {
        inner.push_str(&format!(" group by {}", group_by.join(", ")));
    }
    let mut joins = Vec::new();
    let mut names = Vec::new();
    for (i, group) in query.group_by.iter().enumerate() {
        match group.names(&format!("g.k{i}"), i, voucher_types) {
            Some((join, name)) => {
                joins.push(join);
                names.push(format!("{name} as n{i}"));
            }
            None => names.push(format!("null::text as n{i}")),
        }
    }
    let mut order: Vec<String> = query
        .sort
        .iter()
        .map(|(key, descending)| {
            let column = match key {
                SortKey::Group(g) => {
                    let i = query.group_by.iter().position(|x| x == g).unwrap_or(0);
                    g.order_sql(&format!("g.k{i}"))
                }
                SortKey::Metric(m) => format!("g.m{}", query.metrics.iter().position(|x| x == m).unwrap_or(0)),
            };
            format!("{column} {} nulls last", if *descending { "desc" } else { "asc" })
        })
        .collect();
    let tie_breaks = query.group_by.iter().enumerate();
    order.extend(tie_breaks.map(|(i, g)| format!("{} asc nulls last", g.order_sql(&format!("g.k{i}")))));
    let mut sql = format!(
        "with g as ({inner}) select g.*{}{} from g {}",
        if names.is_empty() { "" } else { ", " },
        names.join(", "),
        joins.join(" ")
    );
    if !order.is_empty() {
        sql.push_str(&format!(" order by {}", order.join(", ")));
    }
    if let Some((offset, limit)) = page {
        let limit = plan.bind(Bind::Int(limit));
        let offset = plan.bind(Bind::Int(offset));
        sql.push_str(&format!(" limit {limit} offset {offset}"));
    }
    plan.sql = sql;
    plan
}

fn row(query: &Query, row: &sqlx::postgres::PgRow) -> Result<Row, sqlx::Error> {
    let mut keys = Vec::with_capacity(query.group_by.len());
    for (i, group) in query.group_by.iter().enumerate() {
        let key: Option<String> = row.try_get(format!("k{i}").as_str())?;
        let name: Option<String> = row.try_get(format!("n{i}").as_str())?;
        let name = if group.is_period() { key.clone() } else { name };
        keys.push((key, name));
    }
    let mut metrics = Vec::with_capacity(query.metrics.len());
    for (i, metric) in query.metrics.iter().enumerate() {
        let sum: Option<i64> = row.try_get(format!("m{i}").as_str())?;
        metrics.push(Value::of(*metric, sum.unwrap_or(0)));
    }
    Ok(Row { keys, metrics })
}

/// A page of an answer.
pub struct Page {
    pub reflects: Reflects,
    pub rows: Vec<Row>,
    /// Whether more groups follow this page.
    pub has_more: bool,
    /// Every metric over every fact the query counts (a fact under several tags counted once).
    pub totals: Vec<Value>,
}

/// The position an answer at `as_of` reflects, which its facts are cut at: `as_of`'s, no later than
/// what the projection folded (none: what it folded). An answer of now is cut there too: the
/// checkpoint is the last event folded in commit order, which is not position order, so facts above
/// it may already be folded (an earlier commit's later positions), and an uncut answer would count them.
pub async fn reflects(conn: &mut PgConnection, org_id: Uuid, as_of: AsOf) -> Result<Reflects, sqlx::Error> {
    let folded = folded_position(&mut *conn, org_id).await?;
    let position = match position_of(conn, org_id, as_of).await? {
        Some(position) => position.min(folded),
        None => folded,
    };
    Ok(Reflects { position })
}

/// `limit` groups of `query` from `offset`, with the totals, as the history stood at `reflects` (from
/// [`reflects`]). Read in the snapshot `reflects` read in, the groups, the totals and the position
/// agree (the projector moves its checkpoint in the transaction that folds).
pub async fn page(
    conn: &mut PgConnection,
    org_id: Uuid,
    query: &Query,
    reflects: Reflects,
    voucher_types: &[(i32, &str)],
    (offset, limit): (i64, i64),
) -> Result<Page, sqlx::Error> {
    let plan = grouped_plan(query, reflects.position, voucher_types, Some((offset, limit + 1)));
    let mut rows = plan
        .query(org_id)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| row(query, r))
        .collect::<Result<Vec<Row>, _>>()?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let totals = totals(conn, org_id, query, reflects.position).await?;
    Ok(Page { reflects, rows, has_more, totals })
}

/// The totals of `query` (its metrics over every fact it counts, without grouping).
async fn totals(
    conn: &mut PgConnection,
    org_id: Uuid,
    query: &Query,
    cut: i64,
) -> Result<Vec<Value>, sqlx::Error> {
    let ungrouped = Query { group_by: Vec::new(), sort: Vec::new(), ..query.clone() };
    let plan = grouped_plan(&ungrouped, cut, &[], None);
    let found = plan.query(org_id).fetch_one(conn).await?;
    Ok(row(&ungrouped, &found)?.metrics)
}

/// Every group of `query` as the history stood at `reflects` (from [`reflects`]), in order, handed to
/// `each` as the server sends them, so a long answer is never held whole.
/// `each` answers whether to go on.
pub async fn each_row<F, Next>(
    conn: &mut PgConnection,
    org_id: Uuid,
    query: &Query,
    reflects: Reflects,
    voucher_types: &[(i32, &str)],
    mut each: F,
) -> Result<(), sqlx::Error>
where
    F: FnMut(Row) -> Next,
    Next: std::future::Future<Output = bool>,
{
    let plan = grouped_plan(query, reflects.position, voucher_types, None);
    let mut rows = plan.query(org_id).fetch(&mut *conn);
    while let Some(found) = rows.try_next().await? {
        if !each(row(query, &found)?).await {
            break;
        }
    }
    Ok(())
}
