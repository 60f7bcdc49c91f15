//! What every command the workers run must declare: where its events commit, whether it may share a
//! batch, the stream it writes, the facts it checks outside that stream, and how it runs. Every item is
//! required: a new command that forgets one does not compile.

use crate::engine::{Conn, ExecuteError, Sink};
use crate::protocol::CommandReply;
use events::Metadata;
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

/// A command the workers run. Implemented by a marker type per command kind (usually the aggregate it
/// drives) and listed once in [`crate::registry`], which generates the wire enum and its dispatch.
pub trait Handler {
    /// What travels on the bus (serde: the wire format of the command).
    type Command;

    const COMMIT: Commit;
    const BATCHING: Batching;

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
