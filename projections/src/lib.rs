//! The read side: the projector runtime (durable consumers, checkpoints in the same transaction as
//! the read rows, partitioning, progress for read-your-writes, rebuilds with an atomic swap) and the
//! read models it maintains, with the queries that serve them.

pub mod documents;
pub mod progress;
pub mod rebuild;
pub mod registry;
pub mod runtime;

pub use registry::{CacheResource, Folds, StreamType};

use events::RecordedEvent;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

/// Which copy of a projection's tables to write: the live tables, or the shadow copy a rebuild fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Live,
    Shadow,
}

impl Target {
    /// The name of `table` in this copy.
    pub fn table(self, table: &str) -> String {
        match self {
            Target::Live => table.to_owned(),
            Target::Shadow => format!("{table}_next"),
        }
    }
}

/// An `ilike` pattern matching `text` anywhere, with the pattern's own wildcards taken literally.
pub fn contains_pattern(text: &str) -> String {
    format!("%{}%", text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"))
}

/// A cached read that an applied event made stale.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CacheKey {
    pub resource: CacheResource,
    pub org_id: Uuid,
    pub id: Uuid,
}

#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("event {position} cannot be folded: {reason}")]
    Undecodable { position: i64, reason: String },
}

impl ProjectionError {
    /// `event` cannot be folded, for `reason`.
    pub fn undecodable(event: &RecordedEvent, reason: impl ToString) -> Self {
        ProjectionError::Undecodable { position: event.position, reason: reason.to_string() }
    }
}

/// The whole state (`doc`) a folded document's read model holds in `table` for `event`'s stream, if it
/// has a row yet.
pub async fn current_doc<T: serde::de::DeserializeOwned>(
    conn: &mut PgConnection,
    table: &str,
    event: &RecordedEvent,
) -> Result<Option<T>, ProjectionError> {
    let sql = format!("select doc from {table} where org_id = $1 and id = $2");
    let doc: Option<serde_json::Value> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(event.org_id)
        .bind(event.stream_id)
        .fetch_optional(conn)
        .await?;
    doc.map(serde_json::from_value).transpose().map_err(|e| ProjectionError::undecodable(event, e))
}

/// A document's whole state as a read reads it back from its `doc` column.
pub fn from_doc<T: serde::de::DeserializeOwned>(doc: serde_json::Value) -> Result<T, sqlx::Error> {
    serde_json::from_value(doc).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// `event`'s payload as `E`, the payload enum of its aggregate: an event that does not decode cannot be
/// folded.
pub fn decode<E: events::EventPayload>(event: &RecordedEvent) -> Result<E, ProjectionError> {
    E::decode(&event.event_type, event.schema_version, event.data.clone())
        .map_err(|e| ProjectionError::undecodable(event, e))
}

/// A payment event of either side, read as what it says (none for another stream type): the payments,
/// treasury, sales and purchases projections all fold them.
pub fn payment_fact(event: &RecordedEvent) -> Result<Option<events::catalogue::PaymentFact>, ProjectionError> {
    use events::EventPayload;
    use events::catalogue::{CustomerPaymentEvent, SupplierPaymentEvent};
    Ok(match event.stream_type.as_str() {
        CustomerPaymentEvent::STREAM_TYPE => Some(decode::<CustomerPaymentEvent>(event)?.into()),
        SupplierPaymentEvent::STREAM_TYPE => Some(decode::<SupplierPaymentEvent>(event)?.into()),
        _ => None,
    })
}

/// What folding a batch answers: the cached reads it made stale.
pub type Folded = Result<Vec<CacheKey>, ProjectionError>;

/// What the projector knows of an event before decoding it: its organization and stream type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHead<'a> {
    pub org_id: Uuid,
    pub stream_type: &'a str,
}

/// A live batch rendered as SQL with its values written inline (see [`RenderedFold`]).
pub struct Rendered {
    /// Statements to run inside the batch's transaction, separated by semicolons.
    pub sql: String,
    /// The cached reads the batch makes stale.
    pub invalidate: Vec<CacheKey>,
}

/// A projection whose live fold is fixed SQL over the batch can render it, so the projector sends a
/// batch together with its transaction and checkpoints in one simple query: one round trip instead of
/// three. The statements it renders should execute ones prepared once on the projector's connection,
/// so a batch costs no planning.
pub trait RenderedFold: Send + Sync {
    /// Statements the projector runs once on its connection before the first batch (`prepare ...`).
    fn prepare(&self) -> Vec<String>;

    /// The statements folding `events` (already filtered to its stream types and to events not yet
    /// applied, in commit order) into the live tables. Values are written with [`sql_literal`].
    fn render(&self, events: &[RecordedEvent]) -> Result<Rendered, ProjectionError>;
}

/// The folds that write one table through one upsert reading the batch's rows as a JSON array from
/// `$1::json` share these: the same SQL is prepared as `<table>_fold` for rendered live batches and
/// bound as a parameter for rebuilds.
pub mod json_fold {
    use super::{
        CacheKey, CacheResource, Folded, Folds, Projection, ProjectionError, ProjectionId, Rendered, RenderedFold,
        StreamType, Target, sql_literal,
    };
    use events::{EventPayload, RecordedEvent};
    use futures::future::BoxFuture;
    use serde::Serialize;
    use sqlx::PgConnection;
    use std::marker::PhantomData;
    use uuid::Uuid;

    /// The batch's rows as the JSON array the folds read.
    pub fn rows_json<T: Serialize>(rows: &[T]) -> Result<String, ProjectionError> {
        serde_json::to_string(rows).map_err(|e| ProjectionError::Undecodable { position: 0, reason: e.to_string() })
    }

    /// The statement preparing `upsert` (on the live `table`) as `<table>_fold`.
    pub fn prepare(table: &str, upsert: &str) -> String {
        format!("prepare {table}_fold (text) as {upsert}")
    }

    /// The batch's `rows` handed to the fold [`prepare`] made, as a literal.
    pub fn render<T: Serialize>(
        table: &str,
        rows: &[T],
        invalidate: Vec<CacheKey>,
    ) -> Result<Rendered, ProjectionError> {
        Ok(Rendered { sql: execute(table, &rows_json(rows)?), invalidate })
    }

    /// The statement running the fold [`prepare`] made as `<table>_fold` on rows already written as
    /// JSON ([`rows_json`]).
    pub fn execute(table: &str, rows_json: &str) -> String {
        format!("execute {table}_fold({})", sql_literal(rows_json))
    }

    /// Runs `upsert` with the batch's `rows` bound (any target; rebuilds use it).
    pub async fn run<T: Serialize>(conn: &mut PgConnection, upsert: String, rows: &[T]) -> Result<(), ProjectionError> {
        sqlx::query(sqlx::AssertSqlSafe(upsert)).bind(rows_json(rows)?).execute(conn).await?;
        Ok(())
    }

    /// What a read model of one table, one row per stream of one aggregate, written by one upsert,
    /// states of its rows; [`Table`] is the projection that folds them.
    pub trait Rows: Send + Sync + 'static {
        /// The events of the aggregate it folds.
        type Event: EventPayload;
        type Row: Serialize + Send + Sync;

        /// A batch's rows, one per stream (later events win).
        fn fold(events: &[RecordedEvent]) -> Result<Vec<Self::Row>, ProjectionError>;

        /// The upsert of a batch of rows into `table`, read as a JSON array from `$1`.
        fn upsert_sql(table: &str) -> String;

        /// The organization and id of the resource a row is: its cached read goes stale.
        fn key(row: &Self::Row) -> (Uuid, Uuid);
    }

    /// The projection of one table whose rows `R` states, with its id and cached resource.
    pub struct Table<R> {
        pub id: ProjectionId,
        /// The read table (a one-element list, as [`Projection::tables`] wants).
        pub table: &'static [&'static str],
        pub resource: CacheResource,
        rows: PhantomData<fn() -> R>,
    }

    impl<R: Rows> Table<R> {
        pub const fn new(id: ProjectionId, table: &'static [&'static str], resource: CacheResource) -> Self {
            Table { id, table, resource, rows: PhantomData }
        }

        pub fn table_name(&self) -> &'static str {
            self.table[0]
        }

        fn stale(&self, rows: &[R::Row]) -> Vec<CacheKey> {
            let resource = self.resource;
            rows.iter().map(R::key).map(|(org_id, id)| CacheKey { resource, org_id, id }).collect()
        }

        async fn apply_batch(&self, conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
            let rows = R::fold(events)?;
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            run(conn, R::upsert_sql(&target.table(self.table_name())), &rows).await?;
            Ok(self.stale(&rows))
        }
    }

    impl<R: Rows> Projection for Table<R> {
        fn id(&self) -> ProjectionId {
            self.id
        }

        fn tables(&self) -> &'static [&'static str] {
            self.table
        }

        fn folds(&self) -> Folds {
            Folds::Only(const { &[StreamType::of::<R::Event>()] })
        }

        fn apply<'a>(
            &'a self,
            conn: &'a mut PgConnection,
            target: Target,
            events: &'a [RecordedEvent],
        ) -> BoxFuture<'a, Folded> {
            Box::pin(self.apply_batch(conn, target, events))
        }

        fn rendered(&self) -> Option<&dyn RenderedFold> {
            Some(self)
        }
    }

    impl<R: Rows> RenderedFold for Table<R> {
        fn prepare(&self) -> Vec<String> {
            vec![prepare(self.table_name(), &R::upsert_sql(self.table_name()))]
        }

        fn render(&self, events: &[RecordedEvent]) -> Result<Rendered, ProjectionError> {
            let rows = R::fold(events)?;
            render(self.table_name(), &rows, self.stale(&rows))
        }
    }
}

/// A read model's numbered pages (from 1) of an organization's rows matching a search: `select` (a
/// query up to its `where`) where `filter` holds, `$1` being the organization and `$2` the search as a
/// [`contains_pattern`] (null without one), in `order`; counted over `counted` (the tables it reads).
pub struct SearchPages<'a> {
    pub select: &'a str,
    pub counted: &'a str,
    pub filter: &'a str,
    pub order: &'a str,
}

impl SearchPages<'_> {
    /// Page `page` of `limit` rows matching `query`, and how many match in all.
    pub async fn fetch<R>(
        &self,
        pool: &sqlx::PgPool,
        org_id: Uuid,
        query: Option<&str>,
        page: i64,
        limit: i64,
    ) -> Result<(Vec<R>, i64), sqlx::Error>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
    {
        let Self { select, counted, filter, order } = self;
        let pattern = query.map(contains_pattern);
        let sql = format!("{select} where {filter} order by {order} limit $3 offset $4");
        let rows = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(org_id)
            .bind(&pattern)
            .bind(limit)
            .bind((page - 1).saturating_mul(limit))
            .fetch_all(pool)
            .await?;
        let sql = format!("select count(*) from {counted} where {filter}");
        let total: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(&pattern).fetch_one(pool).await?;
        Ok((rows, total))
    }
}

/// One row of an organization's read table by its id: `columns` of `table`, as `R`.
pub async fn row_by_id<R>(
    pool: &sqlx::PgPool,
    table: &str,
    columns: &str,
    org_id: Uuid,
    id: Uuid,
) -> Result<Option<R>, sqlx::Error>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let sql = format!("select {columns} from {table} where org_id = $1 and id = $2");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
}

/// Up to `limit` rows of an organization's read table in id order (ids are time-ordered: oldest
/// first), after the row `after` when given: `columns` of `table`, as `R`.
pub async fn rows_after_id<R>(
    pool: &sqlx::PgPool,
    table: &str,
    columns: &str,
    org_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<R>, sqlx::Error>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let sql = format!(
        "select {columns} from {table} where org_id = $1 and ($2::uuid is null or id > $2) order by id limit $3"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(after).bind(limit).fetch_all(pool).await
}

/// The rows of a batch, one per resource (by organization and id) in order of first appearance; a
/// later row of the same resource takes the earlier one's place through `replace(earlier, later)`.
pub fn latest_rows<R>(rows: Vec<R>, id: impl Fn(&R) -> (Uuid, Uuid), replace: impl Fn(&R, R) -> R) -> Vec<R> {
    let mut latest: Vec<R> = Vec::with_capacity(rows.len());
    let mut index: std::collections::HashMap<(Uuid, Uuid), usize> = std::collections::HashMap::new();
    for row in rows {
        match index.get(&id(&row)) {
            Some(&i) => latest[i] = replace(&latest[i], row),
            None => {
                index.insert(id(&row), latest.len());
                latest.push(row);
            }
        }
    }
    latest
}

/// `text` as an SQL string literal. Only valid with `standard_conforming_strings` on (the default,
/// and set by the projector on its connection), where a backslash is an ordinary character.
pub fn sql_literal(text: &str) -> String {
    let mut literal = String::with_capacity(text.len() + 2);
    literal.push('\'');
    for c in text.chars() {
        if c == '\'' {
            literal.push('\'');
        }
        literal.push(c);
    }
    literal.push('\'');
    literal
}

/// A read model folded from the event stream.
pub trait Projection: Send + Sync + 'static {
    /// Which projection this is: its durable consumer, checkpoints, progress and CLI name.
    fn id(&self) -> ProjectionId;

    /// The tables it owns (all swapped together by a rebuild).
    fn tables(&self) -> &'static [&'static str];

    /// The aggregates whose events it folds; its consumer asks for those only (see
    /// [`runtime::consumer_filter`]) and any other event is passed over undecoded.
    fn folds(&self) -> Folds;

    /// Folds a batch of events (already filtered to its stream types, in commit order) into `target`,
    /// inside the caller's transaction. Returns the cached reads the batch made stale.
    fn apply<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        target: Target,
        events: &'a [RecordedEvent],
    ) -> BoxFuture<'a, Folded>;

    /// Whether the live projector may pass over a batch of events without a transaction, because
    /// they change nothing: neither its tables nor anything it produces. It sees each event's
    /// organization and stream type only (read off the bus subject), so a batch passed over is never
    /// decoded. Their checkpoints then stay behind, which is harmless: a redelivery only ever repeats
    /// events that still change nothing, and a rebuild folds them to the same tables. None are passed
    /// over unless a projection says so.
    fn passes_over<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        events: &'a [EventHead<'a>],
    ) -> BoxFuture<'a, Result<bool, ProjectionError>> {
        let _ = (conn, events);
        Box::pin(async { Ok(false) })
    }

    /// The one-round-trip fold of live batches, when the projection has one; otherwise the projector
    /// runs [`Projection::apply`] between statements of its own (three round trips per batch).
    fn rendered(&self) -> Option<&dyn RenderedFold> {
        None
    }

    /// How long the live projector may wait, once an event arrives, for more to fold in the same batch.
    /// A batch costs its transaction and statements however many events it holds, so a projection that
    /// no write waits for (nothing reads it back through read-your-writes) folds cheaper in larger
    /// batches, at the price of being that much behind. None by default: a batch is what has arrived.
    fn linger(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl dyn Projection {
    /// The projection's stable name ([`ProjectionId::as_str`]), for logs, SQL and subjects.
    pub fn name(&self) -> &'static str {
        self.id().as_str()
    }
}

/// Writes `impl Projection` for a read model whose batches its module's
/// `async fn apply(conn, target, events)` folds: its id, the tables it owns, the aggregates it folds
/// (`[SomeEvent, ...]`, or any [`Folds`] expression), then any further items of the trait
/// (`rendered`, `passes_over`) as written.
macro_rules! projection {
    ($projection:ty { id: $id:ident, tables: $tables:expr, folds: [$($event:ty),+ $(,)?] $(, $($item:tt)*)? }) => {
        projection!($projection {
            id: $id,
            tables: $tables,
            folds: $crate::Folds::Only(const { &[$($crate::StreamType::of::<$event>()),+] }),
            $($($item)*)?
        });
    };
    ($projection:ty { id: $id:ident, tables: $tables:expr, folds: $folds:expr $(, $($item:tt)*)? }) => {
        impl $crate::Projection for $projection {
            fn id(&self) -> $crate::ProjectionId {
                $crate::ProjectionId::$id
            }

            fn tables(&self) -> &'static [&'static str] {
                $tables
            }

            fn folds(&self) -> $crate::Folds {
                $folds
            }

            fn apply<'a>(
                &'a self,
                conn: &'a mut ::sqlx::PgConnection,
                target: $crate::Target,
                events: &'a [::events::RecordedEvent],
            ) -> ::futures::future::BoxFuture<'a, $crate::Folded> {
                Box::pin(apply(conn, target, events))
            }

            $($($item)*)?
        }
    };
}

/// Every projection, listed once, by the module that holds its read model: its name (part of the
/// product's contract: the CLI's `--only`, progress subjects and messages, checkpoint rows; never rename
/// one) and the value that runs it. The list declares the modules and makes [`ProjectionId`] and
/// [`projection`], so a projection cannot be named without being run; a new read model is one entry.
macro_rules! projections {
    ($(mod $module:ident { $($variant:ident = $text:literal => $make:expr,)+ })+) => {
        $(pub mod $module;)+

        registry::names! {
            /// A projection: its durable consumers, checkpoint rows, progress subject and CLI name. The
            /// runtime starts (and `rebuild --all` rebuilds) them in this order.
            ProjectionId ("projection") {
                $($($variant = $text,)+)+
            }
        }

        /// The projection `id` names.
        pub fn projection(id: ProjectionId) -> std::sync::Arc<dyn Projection> {
            match id {
                $($(ProjectionId::$variant => {
                    use $module::*;
                    std::sync::Arc::new($make)
                })+)+
            }
        }
    };
}

projections! {
    mod organizations { Organizations = "organizations" => OrganizationsProjection, }
    mod price_lists { PriceLists = "price_lists" => PriceListsProjection, }
    mod customers {
        Customers = "customers" => CUSTOMERS,
        Suppliers = "suppliers" => SUPPLIERS,
    }
    mod products { Products = "products" => ProductsProjection, }
    mod records {
        PaymentMethods = "payment_methods" => PAYMENT_METHODS,
        Warehouses = "warehouses" => WAREHOUSES,
        Categories = "categories" => CATEGORIES,
        PointsOfSale = "points_of_sale" => POINTS_OF_SALE,
        MetafieldDefinitions = "metafield_definitions" => METAFIELD_DEFINITIONS,
    }
    mod tags { Tags = "tags" => TagsProjection, }
    mod inventory { Inventory = "inventory" => InventoryProjection, }
    mod purchases { Purchases = "purchases" => PurchasesProjection, }
    mod sales { Sales = "sales" => SalesProjection, }
    mod quotes { Quotes = "quotes" => QuotesProjection, }
    mod orders { Orders = "orders" => OrdersProjection, }
    mod delivery_notes { DeliveryNotes = "delivery_notes" => DeliveryNotesProjection, }
    mod treasury { Treasury = "treasury" => TreasuryProjection, }
    mod payments { Payments = "payments" => PaymentsProjection, }
    mod accounts { Accounts = "accounts" => AccountsProjection, }
    mod reports { Reports = "reports" => ReportsProjection, }
    mod webhooks { Webhooks = "webhooks" => WebhooksProjection::default(), }
}

/// Every projection this build knows, in [`ProjectionId::ALL`] order: what `backoffice all` and
/// `backoffice projections` start and `projections rebuild --all` rebuilds.
pub fn all() -> Vec<std::sync::Arc<dyn Projection>> {
    ProjectionId::ALL.iter().map(|id| projection(*id)).collect()
}

/// Looks up projections by name (the CLI's `--only` and `rebuild <name>`).
pub fn by_names(names: &[String]) -> Result<Vec<std::sync::Arc<dyn Projection>>, String> {
    names.iter().map(|name| name.parse().map(projection).map_err(|e: registry::UnknownName| e.to_string())).collect()
}

/// Which share of the organizations a projector process serves: organizations are split over `count`
/// partitions by a stable hash of their id, so each organization's events stay in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Partition {
    pub index: u32,
    pub count: u32,
}

impl Partition {
    pub const WHOLE: Partition = Partition { index: 0, count: 1 };

    pub fn owns(self, org: Uuid) -> bool {
        Self::of(org, self.count) == self.index
    }

    /// The partition an organization falls in when there are `count` of them.
    pub fn of(org: Uuid, count: u32) -> u32 {
        let bytes = org.as_bytes();
        // The last eight bytes of a v7 id are random, so they spread organizations evenly.
        let tail =
            u64::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]]);
        (tail % u64::from(count.max(1))) as u32
    }
}

impl std::str::FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (index, count) = text.split_once('/').ok_or("a partition is written i/N, for example 0/2")?;
        let index: u32 = index.trim().parse().map_err(|_| "the partition index must be a number")?;
        let count: u32 = count.trim().parse().map_err(|_| "the partition count must be a number")?;
        if count == 0 || index >= count {
            return Err(format!(
                "partition {index}/{count} does not exist: use 0/{count} to {}/{count}",
                count.max(1) - 1
            ));
        }
        Ok(Partition { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_projection_id_is_registered_once_under_its_own_id() {
        let started: Vec<ProjectionId> = all().iter().map(|p| p.id()).collect();
        assert_eq!(started, ProjectionId::ALL, "the runtime starts each projection once, in order");
        for id in ProjectionId::ALL {
            let by_name = by_names(&[id.as_str().to_owned()]).expect("known name");
            assert_eq!(by_name.iter().map(|p| p.id()).collect::<Vec<_>>(), [id]);
        }
        assert!(by_names(&["customer".to_owned()]).is_err());
        let mut tables: Vec<&str> = all().iter().flat_map(|p| p.tables().iter().copied()).collect();
        let count = tables.len();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), count, "no table is owned by two projections");
    }

    #[test]
    fn every_projection_folds_each_declared_aggregate_once() {
        // A stream type can only be made from a payload enum of the catalogue (`StreamType::of`), so
        // every declared one is an aggregate events are written for.
        for projection in all() {
            match projection.folds() {
                Folds::Every => {}
                Folds::Only(types) => {
                    assert!(!types.is_empty(), "{} folds nothing: say Folds::Every for all", projection.name());
                    for (i, stream_type) in types.iter().enumerate() {
                        assert!(
                            !types[..i].contains(stream_type),
                            "{} declares {stream_type:?} twice",
                            projection.name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn partitions_parse_and_cover_every_org_exactly_once() {
        assert_eq!("1/3".parse::<Partition>(), Ok(Partition { index: 1, count: 3 }));
        assert!("3/3".parse::<Partition>().is_err());
        assert!("x".parse::<Partition>().is_err());
        for _ in 0..100 {
            let org = Uuid::now_v7();
            let owners = (0..3).filter(|i| Partition { index: *i, count: 3 }.owns(org)).count();
            assert_eq!(owners, 1);
        }
    }

    #[test]
    fn latest_rows_keep_first_appearance_order_and_merge_later_rows() {
        let (org, a, b) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let rows = vec![(org, a, "a1", 1), (org, b, "b1", 2), (org, a, "a2", 3)];
        let latest = latest_rows(rows, |r| (r.0, r.1), |earlier, later| (later.0, later.1, later.2, earlier.3));
        assert_eq!(latest, vec![(org, a, "a2", 1), (org, b, "b1", 2)]);
    }

    #[test]
    fn sql_literals_double_quotes_and_keep_everything_else() {
        assert_eq!(sql_literal("plain"), "'plain'");
        assert_eq!(sql_literal("O'Brien ''x"), "'O''Brien ''''x'");
        assert_eq!(sql_literal(r#"{"a":"b\"c\\"}"#), r#"'{"a":"b\"c\\"}'"#);
        assert_eq!(sql_literal("ñ; drop table x; --"), "'ñ; drop table x; --'");
        assert_eq!(sql_literal(""), "''");
    }
}
