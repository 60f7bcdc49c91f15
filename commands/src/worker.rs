//! The command worker: takes commands from the NATS queue group, runs each in one Postgres transaction
//! (load state, pure decide, append with optimistic concurrency, write-model rows, commit) and replies.

use crate::aggregate::{Aggregate, Rejection};
use crate::customer::{Customer, Supplier};
use crate::products::{BulkAdjustment, Product, ProductCommand, adjust_group, variant_changes};
use crate::protocol::{
    Command, CommandBatch, CommandBatchReply, CommandReply, CommandRequest, FailureCause, Idempotency, QUEUE_GROUP,
};
use crate::records::{
    Category, MetafieldDefinition, PaymentMethod, PriceList, Record, RecordCommand, Warehouse, metafield_violation,
};
use crate::tags::{ApplyTags, Tag};
use crate::validate::FieldError;
use crate::webhooks::{WebhookCommand, WebhookEndpoint};
use events::bus::Bus;
use events::catalogue::RecordEvent;
use events::store::{self, AppendError, AppendRequest, Appended, StreamRef};
use events::{CommitKey, EventPayload, Metadata};
use futures::StreamExt;
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use std::sync::Arc;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// How many times a command is re-decided after losing an optimistic-concurrency race.
const CONFLICT_RETRIES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error("the outcome could not be stored: {0}")]
    Storage(#[from] sqlx::Error),
    #[error("stored events of stream {0} could not be decoded: {1}")]
    Corrupt(Uuid, String),
    #[error("gave up after repeated concurrent updates of stream {0}")]
    Contended(Uuid),
}

/// The result of a command that was accepted.
#[derive(Debug, Clone)]
pub struct Executed<A> {
    pub state: A,
    pub commit: Option<CommitKey>,
    pub created: bool,
}

/// Where decided events go: the group appender (each command its own statement, committed at once), or
/// the caller's open transaction (committed with whatever else the caller writes).
pub enum Sink<'a> {
    Group(&'a Appender),
    Transaction,
}

/// The connection a command runs on: the caller's open transaction, or one taken from the pool only
/// when the command first needs it. A creation that checks nothing goes straight to the group appender
/// and never holds a pool connection (whose every release costs a round trip to the server).
pub enum Conn<'a> {
    Lazy(&'a PgPool, Option<sqlx::pool::PoolConnection<sqlx::Postgres>>),
    Open(&'a mut PgConnection),
}

impl Conn<'_> {
    pub async fn get(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        match self {
            Conn::Open(conn) => Ok(conn),
            Conn::Lazy(pool, slot) => {
                if slot.is_none() {
                    *slot = Some(pool.acquire().await?);
                }
                slot.as_deref_mut().ok_or(sqlx::Error::PoolClosed)
            }
        }
    }
}

/// Loads one aggregate instance of this organization (a foreign or unknown id loads as `None`).
pub async fn load<A>(conn: &mut PgConnection, org_id: Uuid, stream_id: Uuid) -> Result<(Option<A>, i32), ExecuteError>
where
    A: Aggregate + WithId,
{
    let stored = store::load_stream(conn, org_id, stream_id).await?;
    let version = stored.last().map(|e| e.version).unwrap_or(0);
    let mut state: Option<A> = None;
    for event in &stored {
        if event.stream_type != A::Event::STREAM_TYPE {
            return Ok((None, version));
        }
        let decoded = A::Event::decode(&event.event_type, event.schema_version, event.data.clone())
            .map_err(|e| ExecuteError::Corrupt(stream_id, e.to_string()))?;
        state = A::evolve(state, &decoded, event.recorded_at);
    }
    Ok((state.map(|s| s.with_id(stream_id)), version))
}

/// Runs a command against one aggregate instance: load, decide, append with optimistic concurrency.
/// Nothing is half-written: the events of one command are appended by one statement.
///
/// `is_creation` skips loading the stream for commands that start a new one with a fresh id.
#[allow(clippy::too_many_arguments, reason = "one call site per sink; a parameter struct would only rename them")]
pub async fn execute<A>(
    conn: &mut Conn<'_>,
    sink: &Sink<'_>,
    org_id: Uuid,
    stream_id: Uuid,
    command: &A::Command,
    is_creation: bool,
    metadata: &Metadata,
) -> Result<Executed<A>, ExecuteError>
where
    A: Aggregate + WithId,
{
    for _ in 0..CONFLICT_RETRIES {
        let (state, version) =
            if is_creation { (None, 0) } else { load::<A>(conn.get().await?, org_id, stream_id).await? };
        let decided = A::decide(state.as_ref(), command)?;
        if decided.is_empty() {
            let state = state.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?;
            return Ok(Executed { state, commit: None, created: false });
        }
        let new_events: Vec<_> = decided.iter().map(EventPayload::to_new_event).collect();
        let stream = StreamRef { org_id, stream_type: A::Event::STREAM_TYPE, stream_id, expected_version: version };
        let request = AppendRequest { stream, events: new_events, metadata: metadata.clone() };
        let mut requests = vec![request];
        requests.extend(A::follow_ups(conn, org_id, stream_id, &decided, metadata).await?);
        let appended = match sink {
            Sink::Group(appender) => appender.append(requests).await,
            Sink::Transaction => store::append_many(conn.get().await?, &requests).await,
        }
        .and_then(|all| {
            // The write is readable once the last of its events (follow-ups included) is.
            let main = all.first().copied().ok_or(AppendError::Database(sqlx::Error::RowNotFound))?;
            let last = all.iter().map(|a| a.key).max().unwrap_or(main.key);
            Ok(Appended { key: last, ..main })
        });
        match appended {
            Ok(appended) => {
                let created = state.is_none();
                let mut next = state;
                for event in &decided {
                    next = A::evolve(next, event, appended.recorded_at);
                }
                let state = next.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?.with_id(stream_id);
                return Ok(Executed { state, commit: Some(appended.key), created });
            }
            Err(AppendError::Conflict { .. }) if is_creation => {
                return Err(Rejection::conflict("ALREADY_EXISTS", "a resource with this id already exists").into());
            }
            // In a transaction the failed statement aborted it: the caller starts over.
            Err(AppendError::Conflict { .. }) if matches!(sink, Sink::Transaction) => {
                return Err(ExecuteError::Contended(stream_id));
            }
            Err(AppendError::Conflict { .. }) => continue,
            Err(AppendError::Database(e)) => return Err(e.into()),
        }
    }
    Err(ExecuteError::Contended(stream_id))
}

/// What the worker needs of an aggregate beyond deciding: its id comes from the stream it lives in,
/// and a decision may require events in other streams, appended atomically with its own.
pub trait WithId: Aggregate {
    fn with_id(self, id: Uuid) -> Self;

    /// Appends to other streams that must accompany `decided` (none by default).
    fn follow_ups(
        conn: &mut Conn<'_>,
        org_id: Uuid,
        stream_id: Uuid,
        decided: &[Self::Event],
        metadata: &Metadata,
    ) -> impl std::future::Future<Output = Result<Vec<AppendRequest>, ExecuteError>> + Send {
        let _ = (conn, org_id, stream_id, decided, metadata);
        async { Ok(Vec::new()) }
    }
}

impl<E> WithId for crate::customer::Contact<E>
where
    crate::customer::Contact<E>: Aggregate,
{
    fn with_id(self, id: Uuid) -> Self {
        crate::customer::Contact::with_id(self, id)
    }
}

impl WithId for WebhookEndpoint {
    fn with_id(self, id: Uuid) -> Self {
        WebhookEndpoint { id, ..self }
    }
}

impl WithId for Tag {
    fn with_id(self, id: Uuid) -> Self {
        Tag { id, ..self }
    }
}

impl WithId for Product {
    fn with_id(self, id: Uuid) -> Self {
        Product { id, ..self }
    }
}

impl<E: RecordEvent> WithId for Record<E> {
    fn with_id(self, id: Uuid) -> Self {
        Record::with_id(self, id)
    }

    /// At most one record of a kind is an organization's default: a record that becomes the default
    /// takes the flag from the current one, which is replaced in the same append.
    async fn follow_ups(
        conn: &mut Conn<'_>,
        org_id: Uuid,
        stream_id: Uuid,
        decided: &[E],
        metadata: &Metadata,
    ) -> Result<Vec<AppendRequest>, ExecuteError> {
        let Some(last) = decided.last() else { return Ok(Vec::new()) };
        if E::default_flag(last.fields()) != Some(true) {
            return Ok(Vec::new());
        }
        let conn = conn.get().await?;
        let mut follow_ups = Vec::new();
        for previous in current_defaults(conn, org_id, E::STREAM_TYPE).await? {
            if previous == stream_id {
                continue;
            }
            let (state, version) = load::<Record<E>>(conn, org_id, previous).await?;
            let Some(state) = state else { continue };
            let event = E::replaced(E::with_default_flag(&state.fields, false));
            let stream =
                StreamRef { org_id, stream_type: E::STREAM_TYPE, stream_id: previous, expected_version: version };
            follow_ups.push(AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() });
        }
        Ok(follow_ups)
    }
}

/// The records of a kind whose latest state is flagged as the organization's default.
async fn current_defaults(conn: &mut PgConnection, org_id: Uuid, stream_type: &str) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "select stream_id from (
             select distinct on (stream_id) stream_id, data from events
             where org_id = $1 and stream_type = $2 order by stream_id, version desc
         ) latest
         where (data->>'is_default')::boolean",
    )
    .bind(org_id)
    .bind(stream_type)
    .fetch_all(conn)
    .await
}

fn accepted<A: Serialize>(executed: Executed<A>) -> CommandReply {
    CommandReply::Accepted {
        commit: executed.commit,
        created: executed.created,
        state: serde_json::to_value(&executed.state).unwrap_or(serde_json::Value::Null),
        replayed: false,
    }
}

/// Facts a command needs from outside its own stream, checked before deciding.
async fn check_references(conn: &mut Conn<'_>, org_id: Uuid, command: &Command) -> Result<(), ExecuteError> {
    match command {
        Command::Customer(contact) | Command::Supplier(contact) => {
            let fields = contact.fields();
            if let Some(account) = fields.default_account_id {
                let conn = conn.get().await?;
                let exists: bool = sqlx::query_scalar(
                    "select exists(select 1 from ledger_accounts where org_id = $1 and id = $2 and is_active)",
                )
                .bind(org_id)
                .bind(account)
                .fetch_one(&mut *conn)
                .await?;
                if !exists {
                    return Err(Rejection::not_found("ledger account").into());
                }
            }
            Ok(())
        }
        Command::Category(RecordCommand::Create { id, fields } | RecordCommand::Replace { id, fields }) => {
            // The parent must be a category of this organization, and not the category itself or one of
            // its descendants.
            let mut next = fields.parent_id;
            let mut depth = 0;
            while let Some(parent) = next {
                let conn = conn.get().await?;
                if parent == *id {
                    return Err(Rejection::Invalid {
                        errors: vec![FieldError::new("parentId", "cycle", "a category cannot be its own ancestor")],
                    }
                    .into());
                }
                let (state, _) = load::<Category>(conn, org_id, parent).await?;
                let Some(state) = state else { return Err(Rejection::not_found("parent category").into()) };
                next = state.fields.parent_id;
                depth += 1;
                if depth > 32 {
                    return Err(Rejection::Invalid {
                        errors: vec![FieldError::new("parentId", "too_deep", "categories nest at most 32 levels")],
                    }
                    .into());
                }
            }
            Ok(())
        }
        Command::Product(product) => check_product_references(conn.get().await?, org_id, product).await,
        Command::MetafieldDefinition(RecordCommand::Create { id, fields } | RecordCommand::Replace { id, fields }) => {
            let conn = conn.get().await?;
            let taken: bool = sqlx::query_scalar(
                "select exists(select 1 from events where org_id = $1 and stream_type = 'metafield_definition'
                                and data->>'key' = $2 and stream_id <> $3)",
            )
            .bind(org_id)
            .bind(&fields.key)
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
            if taken {
                return Err(Rejection::Invalid {
                    errors: vec![FieldError::new("key", "already_exists", "a definition with this key exists")],
                }
                .into());
            }
            Ok(())
        }
        Command::Tag(tag) => {
            let Some(name) = tag.new_name() else { return Ok(()) };
            if name_taken(conn.get().await?, org_id, "tag", &["TagCreated", "TagChanged"], name, tag.id()).await? {
                return Err(Rejection::Invalid {
                    errors: vec![FieldError::new("name", "already_exists", "another tag has this name")],
                }
                .into());
            }
            Ok(())
        }
        Command::PriceList(RecordCommand::Create { id, fields } | RecordCommand::Replace { id, fields }) => {
            check_price_list(conn.get().await?, org_id, *id, fields).await
        }
        Command::PaymentMethod(_)
        | Command::Warehouse(_)
        | Command::Webhook(_)
        | Command::BulkAdjustProducts(_)
        | Command::ApplyTags(_) => Ok(()),
    }
}

/// Whether another stream of `stream_type` is named `name` (case-insensitively) by the latest of its
/// `naming` events (the events that carry a `name`).
async fn name_taken(
    conn: &mut PgConnection,
    org_id: Uuid,
    stream_type: &str,
    naming: &[&str],
    name: &str,
    except: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists(select 1 from (select distinct on (stream_id) stream_id, data->>'name' as name
                                      from events where org_id = $1 and stream_type = $2 and event_type = any($3)
                                      order by stream_id, version desc) latest
                       where lower(name) = lower($4) and stream_id <> $5)",
    )
    .bind(org_id)
    .bind(stream_type)
    .bind(naming)
    .bind(name)
    .bind(except)
    .fetch_one(conn)
    .await
}

/// A price list's name is its own in the organization (case-insensitively), and its explicit prices
/// name the organization's variants.
async fn check_price_list(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    fields: &events::catalogue::PriceListFields,
) -> Result<(), ExecuteError> {
    let mut errors = Vec::new();
    if name_taken(conn, org_id, "price_list", &["PriceListCreated", "PriceListReplaced"], &fields.name, id).await? {
        errors.push(FieldError::new("name", "already_exists", "another price list has this name"));
    }
    let ids: Vec<Uuid> = fields.prices.iter().map(|p| p.product_id).collect();
    if !ids.is_empty() {
        let found: Vec<Uuid> =
            sqlx::query_scalar("select variant_id from product_variants where org_id = $1 and variant_id = any($2)")
                .bind(org_id)
                .bind(&ids)
                .fetch_all(&mut *conn)
                .await?;
        let found: std::collections::HashSet<Uuid> = found.into_iter().collect();
        for (i, id) in ids.iter().enumerate() {
            if !found.contains(id) {
                errors.push(FieldError::new(
                    format!("prices[{i}].product_id"),
                    "not_found",
                    "no product of this organization has this id",
                ));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Rejection::Invalid { errors }.into()) }
}

/// A product's category, default supplier and opening-stock warehouses must exist in the organization.
async fn check_product_references(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &ProductCommand,
) -> Result<(), ExecuteError> {
    let mut errors = Vec::new();
    let assigned = command.assigned_metafields();
    if !assigned.is_empty() {
        let definitions = metafield_definitions(conn, org_id).await?;
        for (path, entry) in assigned {
            if let Some(definition) = definitions.iter().find(|d| d.key == entry.key)
                && let Some(why) = metafield_violation(definition, &entry.value)
            {
                errors.push(FieldError::new(path, "invalid_value", why));
            }
        }
    }
    let shared = command.shared();
    if let Some(category) = shared.and_then(|s| s.category_id)
        && load::<Category>(conn, org_id, category).await?.0.is_none()
    {
        errors.push(FieldError::new("categoryId", "not_found", "no category of this organization has this id"));
    }
    if let Some(supplier) = shared.and_then(|s| s.default_supplier_id)
        && load::<Supplier>(conn, org_id, supplier).await?.0.is_none()
    {
        errors.push(FieldError::new("defaultSupplierId", "not_found", "no supplier of this organization has this id"));
    }
    if let ProductCommand::Create { opening_stock, .. } = command {
        let mut checked: Vec<Uuid> = Vec::new();
        for stock in opening_stock {
            if checked.contains(&stock.warehouse_id) {
                continue;
            }
            checked.push(stock.warehouse_id);
            if load::<Warehouse>(conn, org_id, stock.warehouse_id).await?.0.is_none() {
                errors.push(FieldError::new(
                    "warehouseStocks",
                    "not_found",
                    format!("no warehouse of this organization has the id {}", stock.warehouse_id),
                ));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Rejection::Invalid { errors }.into()) }
}

/// Appends events to several streams in one statement inside the caller's transaction (all or none);
/// the commit key of the last, if any. A version conflict asks the caller to start over.
async fn append_together(
    conn: &mut PgConnection,
    requests: &[AppendRequest],
    operation: Uuid,
) -> Result<Option<CommitKey>, ExecuteError> {
    if requests.is_empty() {
        return Ok(None);
    }
    match store::append_many(conn, requests).await {
        Ok(appended) => Ok(appended.iter().map(|a| a.key).max()),
        Err(AppendError::Conflict { .. }) => Err(ExecuteError::Contended(operation)),
        Err(AppendError::Database(e)) => Err(e.into()),
    }
}

/// Adjusts the cost or price of every matching variant in one transaction: one `ProductUpdated` per
/// group that changed, appended together (all or nothing). Prices under automatic margin pricing are
/// recalculated from the new costs in the same events; automatic price lists price from the stored
/// base prices, so they follow by themselves. No sales channels exist yet, so there is no
/// synchronisation effect to record.
async fn run_bulk_adjustment(
    conn: &mut PgConnection,
    org_id: Uuid,
    adjustment: &BulkAdjustment,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let filter = &adjustment.filter;
    let tagged = match filter.tag_id {
        Some(tag_id) => {
            if load::<Tag>(conn, org_id, tag_id).await?.0.is_none() {
                return Err(Rejection::Invalid {
                    errors: vec![FieldError::new("tag_id", "not_found", "no tag of this organization has this id")],
                }
                .into());
            }
            Some(tagged_products(conn, org_id, tag_id).await?)
        }
        None => None,
    };
    let matched: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "select variant_id, group_id from product_variants
         where org_id = $1 and ($2::uuid is null or default_supplier_id = $2) and ($3::uuid is null or category_id = $3)
           and (cardinality($4::uuid[]) = 0 or variant_id = any($4))
           and ($5::uuid[] is null or variant_id = any($5))
         order by variant_id",
    )
    .bind(org_id)
    .bind(filter.default_supplier_id)
    .bind(filter.category_id)
    .bind(&filter.product_ids)
    .bind(tagged)
    .fetch_all(&mut *conn)
    .await?;
    let unknown: Vec<FieldError> = filter
        .product_ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !matched.iter().any(|(v, _)| v == *id))
        .map(|(i, _)| {
            FieldError::new(format!("product_ids[{i}]"), "not_found", "no product of this organization has this id")
        })
        .collect();
    if !unknown.is_empty()
        && filter.default_supplier_id.is_none()
        && filter.category_id.is_none()
        && filter.tag_id.is_none()
    {
        return Err(Rejection::Invalid { errors: unknown }.into());
    }
    let mut by_group: std::collections::BTreeMap<Uuid, Vec<Uuid>> = std::collections::BTreeMap::new();
    for (variant, group) in &matched {
        by_group.entry(*group).or_default().push(*variant);
    }
    let groups: Vec<Uuid> = by_group.keys().copied().collect();
    // Every product event carries its group's whole state: the latest one per stream is the state.
    let latest: Vec<(Uuid, i32, serde_json::Value)> = sqlx::query_as(
        "select distinct on (stream_id) stream_id, version, data from events
         where org_id = $1 and stream_type = 'product' and stream_id = any($2)
         order by stream_id, version desc",
    )
    .bind(org_id)
    .bind(&groups)
    .fetch_all(&mut *conn)
    .await?;
    let mut requests = Vec::new();
    let mut total = crate::products::Adjusted::default();
    for (group_id, version, data) in latest {
        let group: events::catalogue::ProductGroup =
            serde_json::from_value(data).map_err(|e| ExecuteError::Corrupt(org_id, e.to_string()))?;
        let chosen = by_group.get(&group_id).map(Vec::as_slice).unwrap_or_default();
        let (next, adjusted) = adjust_group(&group, chosen, &adjustment.target, adjustment.change);
        total.skipped += adjusted.skipped;
        if next == group {
            continue;
        }
        total.changed += adjusted.changed;
        total.repriced += adjusted.repriced;
        let changes = variant_changes(group_id, &group, &next);
        let event =
            events::catalogue::ProductEvent::ProductUpdated(events::catalogue::ProductUpdated { group: next, changes });
        let stream = StreamRef { org_id, stream_type: "product", stream_id: group_id, expected_version: version };
        requests.push(AppendRequest { stream, events: vec![event.to_new_event()], metadata: metadata.clone() });
    }
    let commit = append_together(conn, &requests, adjustment.id).await?;
    let state = serde_json::json!({
        "object": "bulk_adjustment",
        "id": adjustment.id,
        "target": adjustment.target,
        "change": adjustment.change,
        "matched_variants": matched.len(),
        "affected_variants": total.changed,
        "affected_products": requests.len(),
        "unchanged_variants": matched.len() - total.changed,
        "automatic_prices_recalculated": total.repriced,
        "skipped_automatic_variants": total.skipped,
        "synchronization_effects": [],
    });
    Ok(CommandReply::Accepted { commit, created: true, state, replayed: false })
}

/// The products `tag_id` is applied to now, folded from the tag's own events.
async fn tagged_products(conn: &mut PgConnection, org_id: Uuid, tag_id: Uuid) -> Result<Vec<Uuid>, ExecuteError> {
    let applications: Vec<(String, serde_json::Value)> = sqlx::query_as(
        "select event_type, data->'resource_ids' from events
         where org_id = $1 and stream_type = 'tag' and stream_id = $2
           and event_type in ('TagApplied', 'TagRemoved') and data->>'resource_type' = 'product'
         order by version",
    )
    .bind(org_id)
    .bind(tag_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut tagged = std::collections::BTreeSet::new();
    for (event_type, ids) in applications {
        let ids: Vec<Uuid> = serde_json::from_value(ids).map_err(|e| ExecuteError::Corrupt(org_id, e.to_string()))?;
        if event_type == "TagApplied" {
            tagged.extend(ids);
        } else {
            for id in ids {
                tagged.remove(&id);
            }
        }
    }
    Ok(tagged.into_iter().collect())
}

/// Applies and removes tags on resources of one kind: every resource and tag must be the
/// organization's (tags being added must not be archived); one event per tag, appended together.
async fn run_apply_tags(
    conn: &mut PgConnection,
    org_id: Uuid,
    apply: &ApplyTags,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let found: Vec<Uuid> = match apply.resource_type.as_str() {
        "product" => {
            sqlx::query_scalar("select variant_id from product_variants where org_id = $1 and variant_id = any($2)")
                .bind(org_id)
                .bind(&apply.resource_ids)
                .fetch_all(&mut *conn)
                .await?
        }
        "customer" | "supplier" => {
            sqlx::query_scalar(
                "select stream_id from events where org_id = $1 and stream_type = $2 and stream_id = any($3)
                   and version = 1",
            )
            .bind(org_id)
            .bind(&apply.resource_type)
            .bind(&apply.resource_ids)
            .fetch_all(&mut *conn)
            .await?
        }
        // No sales exist yet.
        _ => Vec::new(),
    };
    let mut errors: Vec<FieldError> = apply
        .resource_ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !found.contains(id))
        .map(|(i, _)| {
            FieldError::new(
                format!("ids[{i}]"),
                "not_found",
                format!("no {} of this organization has this id", apply.resource_type),
            )
        })
        .collect();
    let mut requests = Vec::new();
    for (list, adding) in [(&apply.add, true), (&apply.remove, false)] {
        let name = if adding { "add" } else { "remove" };
        for (i, tag_id) in list.iter().enumerate() {
            let (state, version) = load::<Tag>(conn, org_id, *tag_id).await?;
            match state {
                None => errors.push(FieldError::new(
                    format!("{name}[{i}]"),
                    "not_found",
                    "no tag of this organization has this id",
                )),
                Some(tag) if adding && tag.archived_at.is_some() => errors.push(FieldError::new(
                    format!("{name}[{i}]"),
                    "archived",
                    "an archived tag cannot be applied",
                )),
                Some(_) => {
                    let targets = events::catalogue::TagTargets {
                        resource_type: apply.resource_type.clone(),
                        resource_ids: apply.resource_ids.clone(),
                    };
                    let event = if adding {
                        events::catalogue::TagEvent::TagApplied(targets)
                    } else {
                        events::catalogue::TagEvent::TagRemoved(targets)
                    };
                    let stream =
                        StreamRef { org_id, stream_type: "tag", stream_id: *tag_id, expected_version: version };
                    requests.push(AppendRequest {
                        stream,
                        events: vec![event.to_new_event()],
                        metadata: metadata.clone(),
                    });
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Rejection::Invalid { errors }.into());
    }
    let commit = append_together(conn, &requests, apply.id).await?;
    let state = serde_json::json!({
        "object": "tag_application",
        "resource_type": apply.resource_type,
        "ids": apply.resource_ids,
        "added": apply.add,
        "removed": apply.remove,
    });
    Ok(CommandReply::Accepted { commit, created: false, state, replayed: false })
}

/// The organization's custom field definitions, as their latest events state them.
async fn metafield_definitions(
    conn: &mut PgConnection,
    org_id: Uuid,
) -> Result<Vec<events::catalogue::MetafieldDefinitionFields>, ExecuteError> {
    let stored: Vec<serde_json::Value> = sqlx::query_scalar(
        "select data from (select distinct on (stream_id) data from events
                           where org_id = $1 and stream_type = 'metafield_definition'
                           order by stream_id, version desc) latest",
    )
    .bind(org_id)
    .fetch_all(&mut *conn)
    .await?;
    Ok(stored.into_iter().filter_map(|data| serde_json::from_value(data).ok()).collect())
}

/// Runs a product command inside the caller's transaction: finds the group of a replaced variant,
/// refuses SKUs another variant of the organization holds, appends, and keeps `product_variants` in step.
async fn run_product(
    conn: &mut Conn<'_>,
    sink: &Sink<'_>,
    org_id: Uuid,
    command: &ProductCommand,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let group_id = match command {
        ProductCommand::Create { id, .. } => *id,
        ProductCommand::Replace { variant_id, .. } | ProductCommand::SetMetafields { variant_id, .. } => {
            sqlx::query_scalar("select group_id from product_variants where org_id = $1 and variant_id = $2")
                .bind(org_id)
                .bind(variant_id)
                .fetch_optional(conn.get().await?)
                .await?
                .ok_or_else(|| Rejection::not_found("product"))?
        }
    };
    let skus = command.skus();
    let taken: Vec<String> = sqlx::query_scalar(
        "select lower(sku) from product_variants
         where org_id = $1 and lower(sku) = any($2) and variant_id <> all($3)",
    )
    .bind(org_id)
    .bind(skus.iter().map(|(_, sku, _)| sku.to_lowercase()).collect::<Vec<_>>())
    .bind(skus.iter().map(|(id, _, _)| *id).collect::<Vec<_>>())
    .fetch_all(conn.get().await?)
    .await?;
    if !taken.is_empty() {
        let errors = skus
            .iter()
            .filter(|(_, sku, _)| taken.contains(&sku.to_lowercase()))
            .map(|(_, sku, path)| {
                FieldError::new(path.clone(), "already_exists", format!("the SKU {sku:?} is already in use"))
            })
            .collect();
        return Err(Rejection::Invalid { errors }.into());
    }
    let executed = execute::<Product>(conn, sink, org_id, group_id, command, command.is_creation(), metadata).await?;
    if executed.commit.is_some() {
        let variants = &executed.state.group.variants;
        let shared = &executed.state.group.shared;
        sqlx::query(
            "insert into product_variants (org_id, variant_id, group_id, sku, default_supplier_id, category_id)
             select $1, v, $2, s, $5, $6 from unnest($3::uuid[], $4::text[]) as t(v, s)
             on conflict (variant_id) do update set sku = excluded.sku,
                 default_supplier_id = excluded.default_supplier_id, category_id = excluded.category_id",
        )
        .bind(org_id)
        .bind(group_id)
        .bind(variants.iter().map(|v| v.id).collect::<Vec<_>>())
        .bind(variants.iter().map(|v| v.sku.clone()).collect::<Vec<_>>())
        .bind(shared.default_supplier_id)
        .bind(shared.category_id)
        .execute(conn.get().await?)
        .await?;
    }
    Ok(accepted(executed))
}

async fn run_command(
    conn: &mut Conn<'_>,
    sink: &Sink<'_>,
    org_id: Uuid,
    command: &Command,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    check_references(conn, org_id, command).await?;
    Ok(match command {
        Command::Customer(c) => {
            accepted(execute::<Customer>(conn, sink, org_id, c.contact_id(), c, c.is_creation(), metadata).await?)
        }
        Command::Supplier(c) => {
            accepted(execute::<Supplier>(conn, sink, org_id, c.contact_id(), c, c.is_creation(), metadata).await?)
        }
        Command::Product(c) => run_product(conn, sink, org_id, c, metadata).await?,
        Command::BulkAdjustProducts(c) => run_bulk_adjustment(conn.get().await?, org_id, c, metadata).await?,
        Command::Tag(c) => accepted(execute::<Tag>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?),
        Command::ApplyTags(c) => run_apply_tags(conn.get().await?, org_id, c, metadata).await?,
        Command::MetafieldDefinition(c) => {
            accepted(execute::<MetafieldDefinition>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?)
        }
        Command::PaymentMethod(c) => {
            accepted(execute::<PaymentMethod>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?)
        }
        Command::Warehouse(c) => {
            accepted(execute::<Warehouse>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?)
        }
        Command::Category(c) => {
            accepted(execute::<Category>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?)
        }
        Command::PriceList(c) => {
            accepted(execute::<PriceList>(conn, sink, org_id, c.id(), c, c.is_creation(), metadata).await?)
        }
        Command::Webhook(c) => {
            let creation = matches!(c, WebhookCommand::CreateEndpoint { .. });
            accepted(execute::<WebhookEndpoint>(conn, sink, org_id, c.id(), c, creation, metadata).await?)
        }
    })
}

/// Runs a command carrying an idempotency key: in one transaction, holding a lock on the key, either
/// replay the stored outcome, refuse a different request, or run the command and store its outcome
/// with its events. A rejected command stores nothing.
async fn run_idempotent(
    pool: &PgPool,
    request: &CommandRequest,
    claim: &Idempotency,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    for _ in 0..CONFLICT_RETRIES {
        let mut tx = pool.begin().await?;
        let locked: bool = sqlx::query_scalar("select pg_try_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("idempotency {} {}", request.org_id, claim.key))
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            return Err(Rejection::Idempotency {
                code: "IDEMPOTENCY_IN_PROGRESS".into(),
                message: "a request with this idempotency key is still running; retry shortly".into(),
                retryable: true,
            }
            .into());
        }
        let stored: Option<(String, Vec<u8>, serde_json::Value)> = sqlx::query_as(
            "select operation, request_hash, response from idempotency_keys where org_id = $1 and key = $2",
        )
        .bind(request.org_id)
        .bind(&claim.key)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((operation, hash, response)) = stored {
            // Ended here, not dropped: a dropped transaction rolls back (and lets go of the key's lock)
            // only when its connection is next used, so an immediate retry would find the key busy.
            tx.rollback().await?;
            if operation != claim.operation || hex::encode(hash) != claim.request_hash {
                return Err(Rejection::Idempotency {
                    code: "IDEMPOTENCY_CONFLICT".into(),
                    message: "this idempotency key was already used for a different request".into(),
                    retryable: false,
                }
                .into());
            }
            let mut reply: CommandReply =
                serde_json::from_value(response).map_err(|e| ExecuteError::Corrupt(request.org_id, e.to_string()))?;
            if let CommandReply::Accepted { replayed, .. } = &mut reply {
                *replayed = true;
            }
            return Ok(reply);
        }
        match run_command(&mut Conn::Open(&mut tx), &Sink::Transaction, request.org_id, &request.command, metadata)
            .await
        {
            Ok(reply) => {
                let hash = hex::decode(&claim.request_hash).unwrap_or_default();
                sqlx::query(
                    "insert into idempotency_keys (org_id, key, operation, request_hash, response)
                     values ($1, $2, $3, $4, $5)",
                )
                .bind(request.org_id)
                .bind(&claim.key)
                .bind(&claim.operation)
                .bind(hash)
                .bind(serde_json::to_value(&reply).unwrap_or_default())
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(reply);
            }
            Err(error) => {
                // Lets go of the key's lock now (see above).
                let _ = tx.rollback().await;
                match error {
                    ExecuteError::Contended(_) => continue,
                    other => return Err(other),
                }
            }
        }
    }
    Err(ExecuteError::Contended(request.org_id))
}

/// Runs a command without an idempotency key in its own transaction (for commands that write rows
/// beside their events), starting over when a concurrent write to its stream won.
async fn run_in_transaction(
    pool: &PgPool,
    request: &CommandRequest,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    for _ in 0..CONFLICT_RETRIES {
        let mut tx = pool.begin().await?;
        match run_command(&mut Conn::Open(&mut tx), &Sink::Transaction, request.org_id, &request.command, metadata)
            .await
        {
            Ok(reply) => {
                tx.commit().await?;
                return Ok(reply);
            }
            Err(ExecuteError::Contended(_)) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(ExecuteError::Contended(request.command.stream_id()))
}

/// Commands on one stream queue behind each other in this process instead of racing to append and
/// retrying on version conflicts (which a busy stream would exhaust). Striped by stream id.
static STREAM_TURNS: std::sync::LazyLock<Vec<tokio::sync::Mutex<()>>> =
    std::sync::LazyLock::new(|| (0..1024).map(|_| tokio::sync::Mutex::new(())).collect());

fn stream_turn(stream_id: Uuid) -> &'static tokio::sync::Mutex<()> {
    let bytes = stream_id.as_bytes();
    // The last bytes of a v7 id are random.
    let stripe = u16::from_be_bytes([bytes[14], bytes[15]]) as usize % STREAM_TURNS.len();
    &STREAM_TURNS[stripe]
}

/// Executes one request and turns the outcome into a reply.
pub async fn handle(pool: &PgPool, appender: &Appender, request: CommandRequest) -> CommandReply {
    let started = std::time::Instant::now();
    let _turn = stream_turn(request.command.stream_id()).lock().await;
    let metadata = Metadata {
        actor: request.actor.name.clone(),
        credential_id: request.actor.credential_id,
        request_id: Some(request.request_id.clone()),
        idempotency_key: request.idempotency.as_ref().map(|i| i.key.clone()),
        ..Metadata::default()
    };
    let result = match &request.idempotency {
        Some(claim) => run_idempotent(pool, &request, claim, &metadata).await,
        None if request.command.needs_transaction() => run_in_transaction(pool, &request, &metadata).await,
        None => {
            let mut conn = Conn::Lazy(pool, None);
            run_command(&mut conn, &Sink::Group(appender), request.org_id, &request.command, &metadata).await
        }
    };
    tracing::debug!(
        org.id = %request.org_id,
        request.id = %request.request_id,
        elapsed_ms = started.elapsed().as_millis() as u64,
        ok = result.is_ok(),
        "command handled"
    );
    match result {
        Ok(reply) => reply,
        Err(ExecuteError::Rejected(rejection)) => CommandReply::Rejected { rejection },
        Err(error) => {
            tracing::error!(org.id = %request.org_id, request.id = %request.request_id, %error, "command failed");
            let retryable = matches!(error, ExecuteError::Storage(_) | ExecuteError::Contended(_));
            let cause = match &error {
                ExecuteError::Storage(error) if storage_unavailable(error) => FailureCause::StorageUnavailable,
                ExecuteError::Contended(_) => FailureCause::Contended,
                _ => FailureCause::Internal,
            };
            CommandReply::Failed { retryable, message: "the command could not be completed".into(), cause }
        }
    }
}

/// Serves the `commands` queue group (single requests and batches) until the subscriptions end. Each
/// request runs on its own task, at most `concurrency` at once (a batch takes a permit per request);
/// after a commit the relay is woken.
pub async fn run(
    pool: PgPool,
    bus: Bus,
    relay: events::relay::RelayWake,
    concurrency: usize,
) -> Result<(), async_nats::SubscribeError> {
    let singles = bus.client.queue_subscribe(bus.command_subject(), QUEUE_GROUP.to_owned()).await?;
    let batches = bus.client.queue_subscribe(bus.command_batch_subject(), QUEUE_GROUP.to_owned()).await?;
    let mut messages = futures::stream::select(singles.map(|m| (false, m)), batches.map(|m| (true, m)));
    let permits = Arc::new(Semaphore::new(concurrency));
    let nudge = RelayNudge::start(bus.clone(), relay);
    let appender = Appender::start(pool.clone(), APPEND_LANES, nudge.clone());
    while let Some((batched, message)) = messages.next().await {
        let requests = if batched {
            serde_json::from_slice::<CommandBatch>(&message.payload).map(|batch| batch.requests)
        } else {
            serde_json::from_slice::<CommandRequest>(&message.payload).map(|request| vec![request])
        };
        let wanted = requests.as_ref().map_or(1, Vec::len).clamp(1, concurrency) as u32;
        let Ok(permit) = permits.clone().acquire_many_owned(wanted).await else { break };
        let pool = pool.clone();
        let bus = bus.clone();
        let nudge = nudge.clone();
        let appender = appender.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut own_transaction = Vec::new();
            let replies = match requests {
                Ok(requests) => {
                    own_transaction = requests.iter().map(runs_in_own_transaction).collect();
                    futures::future::join_all(requests.into_iter().map(|request| handle(&pool, &appender, request)))
                        .await
                }
                Err(error) => {
                    tracing::warn!(%error, batched, "malformed command request");
                    vec![CommandReply::Failed {
                        retryable: false,
                        message: format!("malformed command: {error}"),
                        cause: FailureCause::Internal,
                    }]
                }
            };
            // Appends through the group appender woke the relay as they committed; commands that ran in
            // a transaction of their own wake it here.
            let newest = replies
                .iter()
                .zip(&own_transaction)
                .filter_map(|(reply, own)| match reply {
                    CommandReply::Accepted { commit: Some(key), .. } if *own => Some(key.transaction_id),
                    _ => None,
                })
                .max();
            if let Some(transaction_id) = newest {
                nudge.committed(transaction_id);
            }
            if let Some(reply_to) = message.reply {
                let body = if batched {
                    serde_json::to_vec(&CommandBatchReply { replies })
                } else {
                    serde_json::to_vec(&replies[0])
                };
                if let Err(error) = bus.client.publish(reply_to, body.unwrap_or_default().into()).await {
                    tracing::warn!(%error, "could not send a command reply");
                }
            }
        });
    }
    Ok(())
}

/// Whether `error` says the event store could not be reached, rather than that it refused something:
/// a broken or refused connection, no free connection, or the server going down or refusing new
/// sessions (SQLSTATE classes 08 connection exception, 53 insufficient resources, 57P operator
/// intervention).
fn storage_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            db.code().is_some_and(|code| code.starts_with("08") || code.starts_with("53") || code.starts_with("57P"))
        }
        _ => false,
    }
}

/// Whether `request` runs in a transaction of its own rather than through the group appender (the
/// same choice [`handle`] makes).
fn runs_in_own_transaction(request: &CommandRequest) -> bool {
    request.idempotency.is_some() || request.command.needs_transaction()
}

/// Tells the relay about commits: directly when it leads in this process, otherwise over NATS,
/// coalesced (while one wake-up is being published, further commits only leave a permit).
#[derive(Clone)]
struct RelayNudge {
    relay: events::relay::RelayWake,
    remote: Arc<tokio::sync::Notify>,
}

impl RelayNudge {
    fn start(bus: Bus, relay: events::relay::RelayWake) -> Self {
        let remote = Arc::new(tokio::sync::Notify::new());
        {
            let (remote, relay) = (remote.clone(), relay.clone());
            tokio::spawn(async move {
                loop {
                    remote.notified().await;
                    bus.wake_relay(Some(relay.newest_commit())).await;
                }
            });
        }
        Self { relay, remote }
    }

    /// Transaction `transaction_id` committed events.
    fn committed(&self, transaction_id: i64) {
        self.relay.committed(transaction_id);
        if self.relay.is_local() {
            self.relay.wake_local();
        } else {
            self.remote.notify_one();
        }
    }
}

/// Statements appending events that may run at once.
const APPEND_LANES: usize = 2;
/// Most commands appended by one statement.
const MAX_GROUP: usize = 64;

/// The appends of one command: all or nothing, even when grouped with other commands.
struct AppendJob {
    requests: Vec<AppendRequest>,
    done: tokio::sync::oneshot::Sender<Result<Vec<Appended>, AppendError>>,
}

/// Group commit: commands decided at about the same time are appended by one statement (one round trip,
/// one commit). While every lane is busy, new appends queue up and leave together in the next group. A
/// group that fails is retried command by command, so one conflict only fails its own command.
#[derive(Clone)]
pub struct Appender {
    jobs: tokio::sync::mpsc::UnboundedSender<AppendJob>,
}

impl Appender {
    /// Starts the lanes; each commit wakes the relay through `nudge` at once, before the commands'
    /// replies are built and sent (the relay's read is on every write's read-your-writes path).
    fn start(pool: PgPool, lanes: usize, nudge: RelayNudge) -> Self {
        let (jobs, mut queue) = tokio::sync::mpsc::unbounded_channel::<AppendJob>();
        tokio::spawn(async move {
            // Each lane keeps its own connection: groups follow each other without a pool checkout
            // (and the round trip sqlx spends on every release). The groups running are futures of
            // this task, so a group's statement leaves in the turn that formed it.
            let mut idle: Vec<Option<Lane>> = (0..lanes).map(|_| None).collect();
            let mut running = futures::stream::FuturesUnordered::new();
            let mut waiting: Option<AppendJob> = None;
            let mut closed = false;
            loop {
                if !idle.is_empty()
                    && let Some(first) = waiting.take()
                {
                    let lane = idle.pop().flatten();
                    let mut group = vec![first];
                    while group.len() < MAX_GROUP {
                        match queue.try_recv() {
                            Ok(job) => group.push(job),
                            Err(_) => break,
                        }
                    }
                    let (pool, nudge) = (pool.clone(), nudge.clone());
                    running.push(async move { append_group(&pool, lane, group, &nudge).await });
                    continue;
                }
                if closed && waiting.is_none() && running.is_empty() {
                    return;
                }
                tokio::select! {
                    Some(lane) = running.next(), if !running.is_empty() => idle.push(lane),
                    job = queue.recv(), if waiting.is_none() && !closed => match job {
                        Some(job) => waiting = Some(job),
                        None => closed = true,
                    },
                }
            }
        });
        Self { jobs }
    }

    /// Appends one command's events (to one or several streams) atomically; results in request order.
    pub async fn append(&self, requests: Vec<AppendRequest>) -> Result<Vec<Appended>, AppendError> {
        let (done, result) = tokio::sync::oneshot::channel();
        self.jobs.send(AppendJob { requests, done }).map_err(|_| AppendError::Database(sqlx::Error::PoolClosed))?;
        result.await.unwrap_or(Err(AppendError::Database(sqlx::Error::PoolClosed)))
    }
}

/// Whether a connection that returned `result` can take the next group: conflicts and errors the
/// server reported leave it usable; anything else (a broken socket) does not.
fn still_usable<T>(result: &Result<T, AppendError>) -> bool {
    match result {
        Ok(_) | Err(AppendError::Conflict { .. }) => true,
        Err(AppendError::Database(error)) => matches!(error, sqlx::Error::Database(_)),
    }
}

/// A lane's connection and when it was last used.
struct Lane {
    conn: PgConnection,
    used: std::time::Instant,
}

/// A lane connection idle longer than this is checked before use (the server may have gone away
/// meanwhile); a busy lane never pays for the check.
const LANE_IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The lane's connection, checked if it has been idle, or a new one.
async fn lane_connection(pool: &PgPool, lane: Option<Lane>) -> Result<PgConnection, sqlx::Error> {
    use sqlx::Connection;
    if let Some(Lane { mut conn, used }) = lane
        && (used.elapsed() < LANE_IDLE_CHECK || conn.ping().await.is_ok())
    {
        return Ok(conn);
    }
    Ok(pool.acquire().await?.detach())
}

/// Appends a group on the lane's connection and hands the lane back, or `None` when its connection
/// broke.
async fn append_group(pool: &PgPool, lane: Option<Lane>, group: Vec<AppendJob>, nudge: &RelayNudge) -> Option<Lane> {
    let mut conn = match lane_connection(pool, lane).await {
        Ok(conn) => conn,
        Err(error) => {
            let message = error.to_string();
            for job in group {
                let _ = job.done.send(Err(AppendError::Database(sqlx::Error::Protocol(message.clone()))));
            }
            return None;
        }
    };
    let lane = |conn| Some(Lane { conn, used: std::time::Instant::now() });
    let mut usable = true;
    if group.len() > 1 {
        let requests: Vec<&AppendRequest> = group.iter().flat_map(|job| &job.requests).collect();
        let result = store::append_many(&mut conn, &requests).await;
        usable = still_usable(&result);
        if let Ok(appended) = result {
            let transaction_id = appended.first().map(|first| first.key.transaction_id);
            let mut appended = appended.into_iter();
            for job in group {
                let mine: Vec<Appended> = appended.by_ref().take(job.requests.len()).collect();
                let _ = job.done.send(Ok(mine));
            }
            // Woken last, so it runs first: the scheduler runs the task woken most recently next.
            if let Some(transaction_id) = transaction_id {
                nudge.committed(transaction_id);
            }
            return lane(conn);
        }
    }
    for job in group {
        let result = if usable {
            store::append_many(&mut conn, &job.requests).await
        } else {
            Err(AppendError::Database(sqlx::Error::Protocol("the connection broke".into())))
        };
        usable &= still_usable(&result);
        let transaction_id = result.as_ref().ok().and_then(|appended| appended.first()).map(|a| a.key.transaction_id);
        let _ = job.done.send(result);
        if let Some(transaction_id) = transaction_id {
            nudge.committed(transaction_id);
        }
    }
    if usable { lane(conn) } else { None }
}

#[cfg(test)]
mod tests {
    use super::storage_unavailable;

    #[test]
    fn only_an_unreachable_store_counts_as_unavailable() {
        let reset = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(storage_unavailable(&sqlx::Error::Io(reset())));
        assert!(storage_unavailable(&sqlx::Error::PoolTimedOut));
        assert!(storage_unavailable(&sqlx::Error::PoolClosed));
        assert!(storage_unavailable(&sqlx::Error::Protocol("the connection broke".into())));
        assert!(!storage_unavailable(&sqlx::Error::RowNotFound));
        assert!(!storage_unavailable(&sqlx::Error::ColumnNotFound("position".into())));
    }
}
