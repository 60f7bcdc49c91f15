//! What every command the workers run must declare: where its events commit, whether it may share a
//! batch, whether keyed commands of one batch run together, the background jobs its domain runs, the
//! stream it writes, the facts it checks outside that stream, and how it runs. Every item is required:
//! a new command that forgets one does not compile.

use crate::engine::{Conn, ExecuteError, Services, Sink};
use crate::reply::{CommandReply, Idempotency};
use events::Metadata;
use futures::future::BoxFuture;
use sqlx::PgPool;
use std::future::Future;
use uuid::Uuid;

/// Where a command's events are committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// Through the group appender, one statement shared with concurrent commands: for commands that
    /// write nothing beside their events.
    Grouped,
    /// In a transaction of its own, together with the write-model rows it keeps beside its events (or
    /// because it appends to many streams at once).
    OwnTransaction,
}

/// Whether a command may travel in a gateway batch with others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// About as quick as any other short command (one small stream): it may share a batch.
    Shared,
    /// Long or large (many variants, many streams, many prices): it travels alone, so it never holds
    /// the replies of short commands back.
    Alone,
}

/// One keyed command of a group that runs together, with its key and the metadata its events carry.
pub struct Member<'a, C> {
    pub command: &'a C,
    pub claim: &'a Idempotency,
    pub metadata: Metadata,
}

/// What each member of a group came to, in order, or the error that stopped the group as a whole
/// (nothing written: the worker then runs the members one by one).
pub type GroupResult = Result<Vec<Result<CommandReply, ExecuteError>>, ExecuteError>;

/// Runs two or more keyed commands of one kind and one organization (distinct keys) that reached a
/// worker in one batch together, each decided exactly as if it had come alone.
pub type Together<C> = for<'a> fn(&'a PgPool, Uuid, &'a [Member<'a, C>]) -> BoxFuture<'a, GroupResult>;

/// A background job a domain runs in every command-worker process (a sweeper, a retry worker): it runs
/// until the process stops. The roles start every job the registry's handlers declare, from one list.
#[derive(Clone, Copy)]
pub struct Job {
    /// Unique among jobs; a job two handlers of one domain both declare runs once.
    pub name: &'static str,
    pub run: fn(PgPool, Services) -> BoxFuture<'static, ()>,
}

/// A command the workers run. Implemented by a marker type per command kind (usually the aggregate it
/// drives) and listed once in the list of commands in `lib.rs`, which generates the wire enum and its dispatch.
pub trait Handler {
    /// What travels on the bus (serde: the wire format of the command).
    type Command;

    const COMMIT: Commit;
    const BATCHING: Batching;
    /// How keyed commands of this kind of one organization that reach a worker in one batch run: `None`,
    /// each alone; `Some`, together.
    const TOGETHER: Option<Together<Self::Command>>;
    /// The background jobs of the command's domain (none: `&[]`).
    const JOBS: &'static [Job];

    /// The stream the command writes: commands on one stream take turns within a worker process.
    fn stream_id(command: &Self::Command) -> Uuid;

    /// Facts the command needs from outside its own stream (referenced resources, unique names),
    /// checked before deciding. A violation is a rejection and writes nothing.
    fn check_references(
        command: &Self::Command,
        conn: &mut Conn<'_>,
        org_id: Uuid,
    ) -> impl Future<Output = Result<(), ExecuteError>> + Send;

    /// Runs the command: decides, appends through `sink` and writes any write-model rows on `conn`.
    fn run(
        command: &Self::Command,
        conn: &mut Conn<'_>,
        sink: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> impl Future<Output = Result<CommandReply, ExecuteError>> + Send;
}
