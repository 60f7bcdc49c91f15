//! How the workers run webhook endpoint commands: everything is the aggregate's decision.

use crate::engine::{NoFollowUps, WithId};
use crate::handler::{Batching, Commit, handler};
use crate::webhooks::{WebhookCommand, WebhookEndpoint};
use uuid::Uuid;

impl WithId for WebhookEndpoint {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        WebhookEndpoint { id, ..self }
    }
}

handler! {
    impl Handler for WebhookEndpoint {
        type Command = WebhookCommand;
        COMMIT: Commit::Grouped,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.id()
        }

        /// An endpoint names nothing outside its own stream.
        check_references in run;

        run_aggregate(command, creation = matches!(command, WebhookCommand::CreateEndpoint { .. }));
    }
}
