//! How the workers run webhook endpoint commands: everything is the aggregate's decision.

use crate::engine::{Conn, ExecuteError, NoFollowUps, Sink, WithId, run_aggregate};
use crate::handler::{Batching, Commit, Handler, Job, Together};
use crate::reply::CommandReply;
use crate::webhooks::{WebhookCommand, WebhookEndpoint};
use events::Metadata;
use uuid::Uuid;

impl WithId for WebhookEndpoint {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        WebhookEndpoint { id, ..self }
    }
}

impl Handler for WebhookEndpoint {
    type Command = WebhookCommand;
    const COMMIT: Commit = Commit::Grouped;
    const BATCHING: Batching = Batching::Shared;
    const TOGETHER: Option<Together<Self::Command>> = None;
    const JOBS: &'static [Job] = &[];

    fn stream_id(command: &WebhookCommand) -> Uuid {
        command.id()
    }

    async fn check_references(_: &WebhookCommand, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }

    async fn run(
        command: &WebhookCommand,
        conn: &mut Conn<'_>,
        sink: &Sink<'_>,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let creation = matches!(command, WebhookCommand::CreateEndpoint { .. });
        run_aggregate::<Self>(conn, sink, org_id, command.id(), command, creation, metadata).await
    }
}
