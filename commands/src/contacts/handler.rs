//! How the workers run contact commands: a contact's default ledger account must be an active account
//! of the organization; everything else is the aggregate's decision, appended through the group.

use crate::aggregate::Rejection;
use crate::contacts::{Contact, ContactCommand};
use crate::engine::{Conn, ExecuteError, NoFollowUps, Sink, WithId, run_aggregate};
use crate::handler::{Batching, Commit, Handler, Job, Together};
use crate::reply::CommandReply;
use events::Metadata;
use events::catalogue::{CustomerFields, RecordEvent};
use uuid::Uuid;

/// The event enums of the contact kinds (customers and suppliers).
pub trait ContactEvent:
    RecordEvent<Fields = CustomerFields> + std::fmt::Debug + Clone + PartialEq + Send + Sync + 'static
{
}

impl<E> ContactEvent for E where
    E: RecordEvent<Fields = CustomerFields> + std::fmt::Debug + Clone + PartialEq + Send + Sync + 'static
{
}

impl<E: ContactEvent> WithId for Contact<E> {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        Contact::with_id(self, id)
    }
}

impl<E: ContactEvent> Handler for Contact<E> {
    type Command = ContactCommand;
    const COMMIT: Commit = Commit::Grouped;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[];

    fn stream_id(command: &ContactCommand) -> Uuid {
        command.contact_id()
    }

    async fn check_references(command: &ContactCommand, conn: &mut Conn<'_>, org_id: Uuid) -> Result<(), ExecuteError> {
        let Some(account) = command.fields().default_account_id else { return Ok(()) };
        let exists: bool = sqlx::query_scalar(
            "select exists(select 1 from ledger_accounts where org_id = $1 and id = $2 and is_active)",
        )
        .bind(org_id)
        .bind(account)
        .fetch_one(conn.get().await?)
        .await?;
        if exists { Ok(()) } else { Err(Rejection::not_found("ledger account").into()) }
    }

    async fn run(
        command: &ContactCommand,
        conn: &mut Conn<'_>,
        sink: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.contact_id();
        run_aggregate::<Self>(conn, sink, org_id, id, command, command.is_creation(), metadata).await
    }
}
