//! How the workers run contact commands: a contact's default ledger account must be an active account
//! of the organization; everything else is the aggregate's decision, appended through the group.

use crate::aggregate::Rejection;
use crate::contacts::{Contact, ContactCommand};
use crate::engine::{NoFollowUps, WithId};
use crate::handler::{Batching, Commit, handler};
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

handler! {
    impl<E: ContactEvent> Handler for Contact<E> {
        type Command = ContactCommand;
        COMMIT: Commit::Grouped,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.contact_id()
        }

        check_references(command, conn, org_id) {
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

        run_aggregate(command, creation = command.is_creation());
    }
}
