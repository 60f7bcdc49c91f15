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

/// Writes a command's `impl Handler` in the one shape every handler shares, from what is its own. The
/// four declarations come first and each is required, as in the trait (the macro has no default for
/// any): `COMMIT: …, BATCHING: …, TOGETHER: …, JOBS: …;`.
/// Then `stream_id(command) { … }`, and one form of each of the two steps:
///
/// - `check_references(command, conn, org_id) { … }`, the check on the command's connection, or
///   `check_references in run;` for a command whose `run` checks what it reads itself (its doc says
///   where);
/// - `run(command, conn, sink, org_id, metadata) { … }`, the run as the trait states it;
///   `run_on(command, conn, org_id, metadata) { … }`, a run on the command's own transaction (`conn`
///   is its `PgConnection`; no group sink); or `run_aggregate(command, creation = <expr>);`, the whole
///   run of an aggregate that keeps nothing beside its events: its decision on the command's stream,
///   appended through the sink, answered with the state after it (`creation`: whether the command
///   starts the stream).
///
/// Doc comments before a step are kept on it.
///
/// A domain on the document template (`crate::document`) writes `impl Handler for Ty as Document {
/// type Command = …; JOBS: …; stream_id(command) { … } }`: its own transaction, shared batches, no
/// grouping, references checked in `run` (they are facts of the decision), and `run_document` as the
/// run.
macro_rules! handler {
    (
        impl Handler for $ty:ty as Document {
            type Command = $command:ty;
            JOBS: $jobs:expr;
            stream_id($s:ident) $stream:block
        }
    ) => {
        $crate::handler::handler! {
            impl Handler for $ty {
                type Command = $command;
                COMMIT: $crate::handler::Commit::OwnTransaction,
                BATCHING: $crate::handler::Batching::Shared,
                TOGETHER: None,
                JOBS: $jobs;

                stream_id($s) $stream

                /// Checked in `run`: a document's references are facts of its decision.
                check_references in run;

                run_on(command, conn, org_id, metadata) {
                    $crate::document::run_document::<Self>(command, conn, org_id, metadata).await
                }
            }
        }
    };
    (
        impl $(<$g:ident: $bound:path>)? Handler for $ty:ty {
            type Command = $command:ty;
            COMMIT: $commit:expr,
            BATCHING: $batching:expr,
            TOGETHER: $together:expr,
            JOBS: $jobs:expr;
            stream_id($s:ident) $stream:block
            $($steps:tt)*
        }
    ) => {
        impl $(<$g: $bound>)? $crate::handler::Handler for $ty {
            type Command = $command;
            const COMMIT: $crate::handler::Commit = $commit;
            const BATCHING: $crate::handler::Batching = $batching;
            const TOGETHER: Option<$crate::handler::Together<Self::Command>> = $together;
            const JOBS: &'static [$crate::handler::Job] = $jobs;

            fn stream_id($s: &$command) -> ::uuid::Uuid $stream

            $crate::handler::handler!(@steps $command; $($steps)*);
        }
    };
    (@steps $command:ty;) => {};
    (@steps $command:ty; $(#[$m:meta])* check_references in run; $($rest:tt)*) => {
        $(#[$m])*
        async fn check_references(
            _: &$command,
            _: &mut $crate::engine::Conn<'_>,
            _: ::uuid::Uuid,
        ) -> Result<(), $crate::engine::ExecuteError> {
            Ok(())
        }

        $crate::handler::handler!(@steps $command; $($rest)*);
    };
    (@steps $command:ty; $(#[$m:meta])* check_references($c:tt, $conn:ident, $org:tt) $body:block $($rest:tt)*) => {
        $(#[$m])*
        async fn check_references(
            $c: &$command,
            $conn: &mut $crate::engine::Conn<'_>,
            $org: ::uuid::Uuid,
        ) -> Result<(), $crate::engine::ExecuteError> $body

        $crate::handler::handler!(@steps $command; $($rest)*);
    };
    (@steps $command:ty; $(#[$m:meta])* run($c:tt, $conn:tt, $sink:tt, $org:tt, $meta:tt) $body:block $($rest:tt)*) => {
        $(#[$m])*
        async fn run(
            $c: &$command,
            $conn: &mut $crate::engine::Conn<'_>,
            $sink: &$crate::engine::Sink<'_>,
            $org: ::uuid::Uuid,
            $meta: &::events::Metadata,
        ) -> Result<$crate::reply::CommandReply, $crate::engine::ExecuteError> $body

        $crate::handler::handler!(@steps $command; $($rest)*);
    };
    (@steps $command:ty; $(#[$m:meta])* run_on($c:tt, $conn:ident, $org:tt, $meta:tt) $body:block $($rest:tt)*) => {
        $(#[$m])*
        async fn run(
            $c: &$command,
            $conn: &mut $crate::engine::Conn<'_>,
            _: &$crate::engine::Sink<'_>,
            $org: ::uuid::Uuid,
            $meta: &::events::Metadata,
        ) -> Result<$crate::reply::CommandReply, $crate::engine::ExecuteError> {
            let $conn = $conn.get().await?;
            $body
        }

        $crate::handler::handler!(@steps $command; $($rest)*);
    };
    (@steps $command:ty; $(#[$m:meta])* run_aggregate($c:ident, creation = $creation:expr); $($rest:tt)*) => {
        $(#[$m])*
        async fn run(
            $c: &$command,
            conn: &mut $crate::engine::Conn<'_>,
            sink: &$crate::engine::Sink<'_>,
            org_id: ::uuid::Uuid,
            metadata: &::events::Metadata,
        ) -> Result<$crate::reply::CommandReply, $crate::engine::ExecuteError> {
            let id = <Self as $crate::handler::Handler>::stream_id($c);
            let executed = $crate::engine::execute::<Self>(conn, sink, org_id, id, $c, $creation, metadata).await?;
            $crate::engine::accepted(executed)
        }

        $crate::handler::handler!(@steps $command; $($rest)*);
    };
}

pub(crate) use handler;
