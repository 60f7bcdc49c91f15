//! The one shape of a domain that writes documents (sales, purchases, quotes, orders, delivery notes,
//! payments, funds transfers and manual treasury movements): the handler loads, a pure `decide`
//! decides, the handler writes. The decision is the only place the domain's rules live, and it does no IO, so it
//! is tested without a database and reads the same facts whatever order the loads ran in.
//!
//! 1. [`Document::load`] reads, in the command's transaction, the document's own state (its stream,
//!    folded) and every fact outside it the decision needs: references, policies, today's date.
//!    Shared loaders live in [`crate::lookups`] (products) and the owning domain's public functions
//!    (warehouses, the stock policy), never in another domain's handler.
//! 2. [`Document::decide`] turns the command and those facts into a decision (the events, what the
//!    document wants of stock, what its reply warns) or a [`Rejection`]. Pure: no IO, no clock.
//! 3. [`Document::write`] carries the decision out in the same transaction: numbers, stock,
//!    write-model rows, the append, and the reply.
//!
//! A handler of a document domain runs [`run_document`] in its `run`.

use crate::aggregate::Rejection;
use crate::engine::ExecuteError;
use crate::reply::CommandReply;
use events::Metadata;
use sqlx::PgConnection;
use std::future::Future;
use uuid::Uuid;

/// What a domain that writes documents declares. Every item is required.
pub trait Document {
    type Command: Sync;
    /// Everything the decision reads, loaded by [`Document::load`].
    type Facts: Send;
    /// What [`Document::decide`] decided, for [`Document::write`] to carry out.
    type Decision: Send;

    /// Reads the document's state and every fact the decision needs.
    fn load(
        command: &Self::Command,
        conn: &mut PgConnection,
        org_id: Uuid,
    ) -> impl Future<Output = Result<Self::Facts, ExecuteError>> + Send;

    /// The command against the facts: pure.
    fn decide(command: &Self::Command, facts: &Self::Facts) -> Result<Self::Decision, Rejection>;

    /// Carries `decision` out in the command's transaction and answers.
    fn write(
        command: &Self::Command,
        facts: Self::Facts,
        decision: Self::Decision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> impl Future<Output = Result<CommandReply, ExecuteError>> + Send;
}

/// The next number of `series` in the organization (`document_numbers`): gap-free, since a refused
/// command rolls it back with its transaction, and never given back.
pub async fn next_number(conn: &mut PgConnection, org_id: Uuid, series: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "insert into document_numbers (org_id, series, last) values ($1, $2, 1)
         on conflict (org_id, series) do update set last = document_numbers.last + 1 returning last",
    )
    .bind(org_id)
    .bind(series)
    .fetch_one(conn)
    .await
}

/// Runs a document command: load, decide, write.
pub async fn run_document<D: Document>(
    command: &D::Command,
    conn: &mut PgConnection,
    org_id: Uuid,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let facts = D::load(command, conn, org_id).await?;
    let decision = D::decide(command, &facts)?;
    D::write(command, facts, decision, conn, org_id, metadata).await
}
