//! The one HTTP resource abstraction: a [`Kind`] says what a kind of resource is (its label, projection,
//! cache entry and list), and [`Call`] holds the handler sequence every resource shares, written once.
//! A handler opens a `Call` for its [`Operation`] (which checks the operation's scope), parses its
//! input, and hands the rest to one of:
//!
//! - [`Call::write`]: claim the `Idempotency-Key`, dispatch the command, render the answer from the
//!   command's outcome while the read side catches up, then wait until it has;
//! - [`Call::write_then_read`]: the same, rendering after the wait (answers read back from the read
//!   model);
//! - [`Call::get`]: one resource by its path id, through the read cache where its kind is cached;
//!   [`Call::find`] when the handler needs the row itself (a conditional answer, a check before a
//!   write, a sub-list of it);
//! - [`Call::cursor_list`]: one page of a Style A cursor list, resuming after a [`Position`] (an id, or a
//!   creation time and an id for a list newest first); [`Call::page`] for a list that reads its cursor
//!   positions or builds its envelope itself (it parses and issues the cursors, the handler does the
//!   rest).

use crate::cache::{ReadKey, Resource};
use crate::http::auth::{Auth, Principal};
use crate::http::body::JsonBody;
use crate::http::cursor::CursorCodec;
use crate::http::envelopes::PageParam;
use crate::http::error::{ApiError, ErrorType};
use crate::http::idempotency;
use crate::http::list::{ListEnvelope, ListParams, parse_id};
use crate::http::operations::{Idempotency, Operation};
use crate::http::schema::Limit;
use crate::http::{RequestId, ServiceVersion, Style};
use crate::state::{Accepted, AppState};
use bytes::Bytes;
use commands::protocol::Command;
use events::domain::Scope;
use poem::http::StatusCode;
use poem_openapi::param::Query;
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use projections::ProjectionId;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// One request to one operation, by an authenticated caller whose scope was checked.
pub struct Call<'a> {
    pub state: &'a AppState,
    pub principal: &'a Principal,
    pub request_id: &'a str,
    pub operation: Operation,
}

/// A kind of resource, as the shared sequence needs it: how errors name it, the projection its writes
/// wait on, where its single reads are cached (if they are) and where its list lives. Each domain
/// describes its kinds with this one type; `Call` does the rest.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// Singular, in errors ("customer", "price list").
    pub label: &'static str,
    pub projection: ProjectionId,
    pub cache: Option<Resource>,
    /// Its list: the path echoed in list envelopes, and what the list's cursors are signed for.
    pub list: ListAt<'static>,
}

impl Kind {
    /// A kind whose single reads are not cached, its list at `url` with cursors signed for `binding`.
    pub const fn new(label: &'static str, projection: ProjectionId, url: &'static str, binding: &'static str) -> Self {
        Self { label, projection, cache: None, list: ListAt { url, binding } }
    }

    /// The same kind, its single reads cached under `resource`, by organization and id: only for a kind
    /// whose single read is the same for every caller of the organization (no visibility, no request id
    /// in the body).
    pub const fn cached(self, resource: Resource) -> Self {
        Self { cache: Some(resource), ..self }
    }

    /// The id in a path naming a resource of this kind, in the parameter named after the kind
    /// (`customer_id`, `price_list_id`): see [`Kind::id_in`]. A handler with a [`Call`] uses
    /// [`Call::id`], which names the parameter its route documents.
    pub fn id(&self, text: &str) -> Result<Uuid, ApiError> {
        self.id_in(text, &self.parameter())
    }

    /// The id sent in `parameter` naming a resource of this kind: anything that is not an id names
    /// none, so it is simply not found (the same 404 as an unknown id), with a detail naming the
    /// parameter.
    pub fn id_in(&self, text: &str, parameter: &str) -> Result<Uuid, ApiError> {
        Uuid::parse_str(text).map_err(|_| {
            ApiError::not_found(self.label).with_detail(Some(parameter), "invalid_id", "not an id: names nothing")
        })
    }

    /// The parameter most routes name this kind's id with: `{label}_id`, spaces as underscores.
    pub fn parameter(&self) -> String {
        format!("{}_id", self.label.replace(' ', "_"))
    }
}

/// The path parameters of each operation, by `operationId`, as the OpenAPI document publishes them
/// (read once, the first time a malformed path id is answered).
fn path_parameters(operation: &str) -> &'static [String] {
    static PARAMETERS: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    let table = PARAMETERS.get_or_init(|| {
        let document: Value = serde_json::from_str(&crate::http::api_service().spec()).unwrap_or_default();
        let mut table = HashMap::new();
        for (path, operations) in document["paths"].as_object().into_iter().flatten() {
            let names: Vec<String> = path
                .split('/')
                .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
                .map(str::to_owned)
                .collect();
            for operation in operations.as_object().into_iter().flat_map(|o| o.values()) {
                if let Some(id) = operation["operationId"].as_str() {
                    table.insert(id.to_owned(), names.clone());
                }
            }
        }
        table
    });
    table.get(operation).map(Vec::as_slice).unwrap_or_default()
}

/// What identifies a write for its idempotency claim: the key, the contract version, the path
/// parameters as sent and the body.
#[derive(Clone)]
pub struct Write<'a> {
    pub key: Option<String>,
    pub version: &'a ServiceVersion,
    pub path: &'a [&'a str],
    pub body: Option<&'a Value>,
}

impl<'a> Write<'a> {
    /// A write with a JSON body.
    pub fn json<T>(
        key: Option<String>,
        version: &'a ServiceVersion,
        path: &'a [&'a str],
        body: &'a JsonBody<T>,
    ) -> Self {
        Self { key, version, path, body: Some(&body.value) }
    }

    /// A write without a body (a state change named by its route).
    pub fn bare(key: Option<String>, version: &'a ServiceVersion, path: &'a [&'a str]) -> Self {
        Self { key, version, path, body: None }
    }
}

/// The `limit`, `cursor` and `page` parameters of a cursor list, as sent.
pub struct PageParams {
    pub limit: Option<String>,
    pub cursor: Option<String>,
    pub page: Option<String>,
}

impl PageParams {
    /// The parameters as a handler receives them.
    pub fn new(limit: Query<Option<Limit>>, cursor: Query<Option<String>>, page: PageParam) -> Self {
        Self { limit: limit.0.map(|l| l.0), cursor: cursor.0, page: page.0 }
    }
}

/// One page of a cursor list being served, from parameters checked against the list's binding.
pub struct Page<'a> {
    params: ListParams,
    cursors: &'a CursorCodec,
    binding: &'a str,
}

impl Page<'_> {
    /// How many rows the page shows.
    pub fn limit(&self) -> i64 {
        self.params.limit
    }

    /// How many rows to fetch: one more than the page, to learn whether another follows.
    pub fn fetch_size(&self) -> i64 {
        self.params.limit + 1
    }

    /// The position the page resumes after, as the list wrote it into its cursor (none: the first page).
    pub fn after(&self) -> Option<&str> {
        self.params.after.as_deref()
    }

    /// Cuts `rows` (fetched as [`Page::fetch_size`]) to the page; when more follow, the cursor resuming
    /// after its last row, whose position `position` writes.
    pub fn finish<R>(&self, rows: &mut Vec<R>, position: impl Fn(&R) -> String) -> Option<String> {
        self.params.finish_page(rows, self.cursors, self.binding, position)
    }
}

/// Where a cursor list resumes: the sort key of the last row a page showed, written into the list's
/// signed cursor and read back from it.
pub trait Position: Sized {
    /// The key as the cursor carries it.
    fn write(&self) -> String;

    /// The key a cursor carries (the cursor is genuine and of this list by now): anything else is a 400
    /// naming `cursor`.
    fn read(text: &str) -> Result<Self, ApiError>;
}

/// The key of a list ordered by id.
impl Position for Uuid {
    fn write(&self) -> String {
        self.to_string()
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        parse_id(text, "cursor")
    }
}

/// The key of a list newest first: the creation time, then the id (`{RFC 3339}/{id}`).
impl Position for (OffsetDateTime, Uuid) {
    fn write(&self) -> String {
        format!("{}/{}", self.0.format(&Rfc3339).unwrap_or_default(), self.1)
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        let (at, id) = text.split_once('/').unwrap_or((text, ""));
        let at = OffsetDateTime::parse(at, &Rfc3339)
            .map_err(|_| ApiError::invalid_request("INVALID_CURSOR", "the cursor is not valid for this list"))?;
        Ok((at, parse_id(id, "cursor")?))
    }
}

/// The key of a list ordered by two ids (`{first}/{second}`: a variant, then a warehouse).
impl Position for (Uuid, Uuid) {
    fn write(&self) -> String {
        format!("{}/{}", self.0, self.1)
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        let (first, second) = text.split_once('/').unwrap_or((text, ""));
        Ok((parse_id(first, "cursor")?, parse_id(second, "cursor")?))
    }
}

/// The key of a list in the order of a sequence number.
impl Position for i64 {
    fn write(&self) -> String {
        self.to_string()
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        text.parse().map_err(|_| {
            ApiError::invalid_request("INVALID_PARAMETERS", "cursor is not valid").with_detail(
                Some("cursor"),
                "invalid_cursor",
                "not a cursor of this list",
            )
        })
    }
}

/// The key of a list in commit order: a transaction id, then a sequence number within it
/// (`{transaction}/{seq}`).
impl Position for (i64, i64) {
    fn write(&self) -> String {
        format!("{}/{}", self.0, self.1)
    }

    fn read(text: &str) -> Result<Self, ApiError> {
        let (first, second) = text.split_once('/').unwrap_or((text, ""));
        Ok((<i64 as Position>::read(first)?, <i64 as Position>::read(second)?))
    }
}

/// Where a cursor list lives: `url` is echoed in the envelope, `binding` is what its cursors are signed
/// for (a cursor of another list, or of other filters, is refused).
#[derive(Debug, Clone, Copy)]
pub struct ListAt<'a> {
    pub url: &'a str,
    pub binding: &'a str,
}

impl ListAt<'_> {
    /// The same list served under filters: its cursors signed for `binding` (the list and its filters).
    pub fn bound<'b>(&self, binding: &'b str) -> ListAt<'b>
    where
        Self: 'b,
    {
        ListAt { url: self.url, binding }
    }
}

impl<'a> Call<'a> {
    /// Opens a call: 403 naming the scope when the credential lacks the operation's.
    pub fn new(
        operation: Operation,
        state: &'a AppState,
        auth: &'a Auth,
        request_id: &'a RequestId,
    ) -> Result<Self, ApiError> {
        if let Some(scope) = operation.scope() {
            auth.0.require(scope)?;
        }
        Ok(Self { state, principal: &auth.0, request_id: &request_id.0, operation })
    }

    /// A further scope this particular request needs (for example to set a field guarded by another
    /// resource's scope).
    pub fn also_require(&self, scope: Scope) -> Result<(), ApiError> {
        self.principal.require(scope)
    }

    pub fn org_id(&self) -> Uuid {
        self.principal.org_id
    }

    /// The id in this operation's path naming a resource of `kind`: [`Kind::id_in`] for the path
    /// parameter the route documents (its only one, else the one named after the kind).
    pub fn id(&self, kind: &Kind, text: &str) -> Result<Uuid, ApiError> {
        if let Ok(id) = Uuid::parse_str(text) {
            return Ok(id);
        }
        let named = kind.parameter();
        let parameter = match path_parameters(self.operation.id()) {
            [only] => only.as_str(),
            several => several.iter().find(|p| **p == named).map_or(named.as_str(), String::as_str),
        };
        kind.id_in(text, parameter)
    }

    /// Claims the key and sends the command; the outcome once the workers have decided.
    pub async fn dispatch(&self, write: Write<'_>, command: Command) -> Result<Accepted, ApiError> {
        if self.operation.command() != Some(command.kind()) {
            tracing::error!(operation = self.operation.id(), command = ?command.kind(), "operation sent a command it does not declare");
            return Err(ApiError::internal());
        }
        let required = self.operation.idempotency() == Idempotency::Required;
        let claim = idempotency::claim(
            write.key,
            required,
            self.operation.id(),
            self.grant(),
            write.path,
            write.version.0.as_deref(),
            write.body,
        )?;
        self.state.dispatch(self.principal, self.request_id, claim, command).await
    }

    /// The delegated grant the request acts under (none for an API key): part of its keys' claims.
    fn grant(&self) -> Option<Uuid> {
        self.principal.delegation.as_ref().map(|_| self.principal.credential_id)
    }

    /// The answer of `served`, the serving of a write whose claim is `sent`. Every write with a body
    /// answers through here, so a request refused before its key is checked is answered as
    /// [`Call::refused`] says.
    pub async fn serve<T>(
        &self,
        sent: Write<'_>,
        served: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        match served.await {
            Ok(answer) => Ok(answer),
            Err(error) => Err(self.refused(error, sent).await),
        }
    }

    /// The answer to a write that failed with `error`: 409 `IDEMPOTENCY_CONFLICT` instead when its key
    /// already stands for another request (a body the parser refuses, or one sent under the other
    /// contract, never reaches the worker that checks the key), else `error`.
    async fn refused(&self, error: ApiError, write: Write<'_>) -> ApiError {
        let answered =
            [StatusCode::BAD_REQUEST, StatusCode::NOT_FOUND, StatusCode::CONFLICT, StatusCode::UNPROCESSABLE_ENTITY];
        if !answered.contains(&error.status) || error.body.kind == ErrorType::IdempotencyError {
            return error;
        }
        let id = self.operation.id();
        let Ok(Some(claim)) =
            idempotency::claim(write.key, false, id, self.grant(), write.path, write.version.0.as_deref(), write.body)
        else {
            return error;
        };
        match commands::protocol::stored_conflict(&self.state.pool, self.org_id(), &claim).await {
            Ok(Some(conflict)) => ApiError::from_rejection(conflict),
            Ok(None) => error,
            Err(failure) => {
                tracing::warn!(error = %failure, "reading a refused write's idempotency key");
                error
            }
        }
    }

    /// Waits until each of `projections` has what `accepted` wrote: a read of any of them right after
    /// sees it.
    pub async fn await_reads(
        &self,
        accepted: &Accepted,
        projections: impl IntoIterator<Item = projections::ProjectionId>,
    ) -> Result<(), ApiError> {
        for projection in projections {
            self.state.await_read(projection, self.principal, accepted.key_for(projection)).await?;
        }
        Ok(())
    }

    /// Writes, renders the answer from the command's outcome while the kind's projection catches up,
    /// and answers once it has: a read right after sees the change.
    pub async fn write<T>(
        &self,
        kind: &Kind,
        write: Write<'_>,
        command: Command,
        render: impl FnOnce(Accepted) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let accepted = self.dispatch(write, command).await?;
        let key = accepted.key_for(kind.projection);
        let answer = render(accepted)?;
        self.state.await_read(kind.projection, self.principal, key).await?;
        Ok(answer)
    }

    /// Writes, waits until the kind's projection has the change, then renders (for answers read back
    /// from the read model).
    pub async fn write_then_read<T>(
        &self,
        kind: &Kind,
        write: Write<'_>,
        command: Command,
        render: impl AsyncFnOnce(Accepted) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let accepted = self.dispatch(write, command).await?;
        self.state.await_read(kind.projection, self.principal, accepted.key_for(kind.projection)).await?;
        render(accepted).await
    }

    /// One resource by the id in its path: from the read cache where the kind's reads are cached, else
    /// `load`ed (none: 404 naming the kind) and cached unless an invalidation raced the load.
    pub async fn get(
        &self,
        kind: &Kind,
        id: &str,
        load: impl AsyncFnOnce(Uuid) -> Result<Option<Bytes>, ApiError>,
    ) -> Result<Bytes, ApiError> {
        self.cached(kind, self.id(kind, id)?, load).await
    }

    /// [`Self::get`] of a resource whose id the request implies (the caller's organization).
    pub async fn cached(
        &self,
        kind: &Kind,
        id: Uuid,
        load: impl AsyncFnOnce(Uuid) -> Result<Option<Bytes>, ApiError>,
    ) -> Result<Bytes, ApiError> {
        // The load is boxed: only a miss runs it, and its database future inline would make every
        // read's future, moved into its box on every request, several times larger.
        let Some(resource) = kind.cache else {
            return Box::pin(load(id)).await?.ok_or_else(|| ApiError::not_found(kind.label));
        };
        let key = ReadKey { resource, org_id: self.principal.org_id, id };
        if let Some(bytes) = self.state.reads.get(&key) {
            return Ok(bytes);
        }
        let epoch = self.state.reads.epoch();
        let bytes = Box::pin(load(id)).await?.ok_or_else(|| ApiError::not_found(kind.label))?;
        self.state.reads.insert_if_current(key, bytes.clone(), epoch);
        Ok(bytes)
    }

    /// One resource by the id in its path, as `load` returns it (none: 404 naming the kind), for a
    /// handler that needs the row itself (a conditional answer, a check before a write, a sub-list).
    pub async fn find<R>(
        &self,
        kind: &Kind,
        id: &str,
        load: impl AsyncFnOnce(Uuid) -> Result<Option<R>, ApiError>,
    ) -> Result<R, ApiError> {
        let id = self.id(kind, id)?;
        load(id).await?.ok_or_else(|| ApiError::not_found(kind.label))
    }

    /// Opens one page of the cursor list bound to `binding`: `limit` 1 to 100 (default 50), no `page`,
    /// and a cursor this list issued for the same binding.
    pub fn page<'b>(&'b self, params: PageParams, binding: &'b str) -> Result<Page<'b>, ApiError> {
        let cursors = &self.state.cursors;
        let params = ListParams::parse(params.limit, params.cursor, params.page, cursors, binding)?;
        Ok(Page { params, cursors, binding })
    }

    /// One page of a cursor list ordered by a [`Position`] (most lists: the id): `fetch(after, n)`
    /// returns up to `n` rows after the cursor's position, in one query; one more than the page is
    /// fetched to learn whether another page follows. `position` is a row's key; `render` turns the
    /// page's rows into its items.
    pub async fn cursor_list<R, T, P: Position>(
        &self,
        params: PageParams,
        at: ListAt<'_>,
        fetch: impl AsyncFnOnce(Option<P>, i64) -> Result<Vec<R>, ApiError>,
        position: impl Fn(&R) -> P,
        render: impl AsyncFnOnce(Vec<R>) -> Result<Vec<T>, ApiError>,
    ) -> Result<Bytes, ApiError>
    where
        T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync,
    {
        let page = self.page(params, at.binding)?;
        let after = page.after().map(P::read).transpose()?;
        let mut rows = fetch(after, page.fetch_size()).await?;
        let next_cursor = page.finish(&mut rows, |row| position(row).write());
        let has_more = next_cursor.is_some();
        let data = render(rows).await?;
        Style::a(&ListEnvelope::new(self.request_id.to_owned(), at.url, data, has_more, next_cursor))
    }
}

/// Reads what the workers answered as the aggregate state `T` (their contract with the gateway).
pub fn decode_state<T: DeserializeOwned>(state: Value, what: &str) -> Result<T, ApiError> {
    serde_json::from_value(state).map_err(|error| {
        tracing::error!(%error, what, "unexpected state from the command worker");
        ApiError::internal()
    })
}
