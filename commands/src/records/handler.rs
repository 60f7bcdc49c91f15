//! How the workers run record commands. Every kind of record states its own rules ([`RecordRules`]):
//! whether it may share a batch and which facts outside its stream it checks. One record of a kind
//! may be the organization's default: a record that takes the flag takes it from the previous one in
//! the same append.

use crate::aggregate::Rejection;
use crate::engine::{Conn, ExecuteError, FollowUps, WithId, load};
use crate::handler::{Batching, Commit, handler};
use crate::records::{Category, Record, RecordCommand};
use crate::validate::FieldError;
use events::Metadata;
use events::catalogue::{CategoryEvent, CategoryFields, PaymentMethodEvent, OrganizationDefault, RecordEvent, WarehouseEvent};
use events::store::{AppendRequest, StreamRef};
use sqlx::PgConnection;
use std::future::Future;
use uuid::Uuid;

/// What one kind of record adds to the generic record handler. Every item is required.
pub trait RecordRules: RecordEvent + Send + Sync + 'static {
    const BATCHING: Batching;

    /// Facts outside the record's own stream that its fields must satisfy (`id` is the record's).
    fn check_references(
        id: Uuid,
        fields: &Self::Fields,
        conn: &mut Conn<'_>,
        org_id: Uuid,
    ) -> impl Future<Output = Result<(), ExecuteError>> + Send;
}

impl<E: RecordRules> WithId for Record<E> {
    type FollowUps = DefaultFlag;

    fn with_id(self, id: Uuid) -> Self {
        Record::with_id(self, id)
    }
}

/// At most one record of a kind is an organization's default: a record that becomes the default takes
/// the flag from the current one, which is replaced in the same append.
pub struct DefaultFlag;

impl<E: RecordRules> FollowUps<Record<E>> for DefaultFlag {
    async fn follow_ups(
        conn: &mut Conn<'_>,
        org_id: Uuid,
        stream_id: Uuid,
        decided: &[E],
        metadata: &Metadata,
    ) -> Result<Vec<AppendRequest>, ExecuteError> {
        let Some(last) = decided.last() else { return Ok(Vec::new()) };
        if last.fields().default_flag() != Some(true) {
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
            let event = E::replaced(state.fields.with_default_flag(false));
            let stream =
                StreamRef { org_id, stream_type: E::STREAM_TYPE, stream_id: previous, expected_version: version };
            follow_ups.push(AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
        }
        Ok(follow_ups)
    }
}

/// The records of a kind whose latest state is flagged as the organization's default.
pub(crate) async fn current_defaults(
    conn: &mut PgConnection,
    org_id: Uuid,
    stream_type: &str,
) -> Result<Vec<Uuid>, sqlx::Error> {
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

handler! {
    impl<E: RecordRules> Handler for Record<E> {
        type Command = RecordCommand<E>;
        COMMIT: Commit::Grouped,
        BATCHING: E::BATCHING,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.id()
        }

        check_references(command, conn, org_id) {
            E::check_references(command.id(), command.fields(), conn, org_id).await
        }

        run_aggregate(command, creation = command.is_creation());
    }
}

impl RecordRules for PaymentMethodEvent {
    const BATCHING: Batching = Batching::Shared;

    async fn check_references(_: Uuid, _: &Self::Fields, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }
}

impl RecordRules for WarehouseEvent {
    const BATCHING: Batching = Batching::Shared;

    async fn check_references(_: Uuid, _: &Self::Fields, _: &mut Conn<'_>, _: Uuid) -> Result<(), ExecuteError> {
        Ok(())
    }
}

impl RecordRules for CategoryEvent {
    const BATCHING: Batching = Batching::Shared;

    /// The parent must be a category of this organization, and not the category itself or one of its
    /// descendants.
    async fn check_references(
        id: Uuid,
        fields: &CategoryFields,
        conn: &mut Conn<'_>,
        org_id: Uuid,
    ) -> Result<(), ExecuteError> {
        let mut next = fields.parent_id;
        let mut depth = 0;
        while let Some(parent) = next {
            let conn = conn.get().await?;
            if parent == id {
                return Err(parent_error("cycle", "a category cannot be its own ancestor"));
            }
            let (state, _) = load::<Category>(conn, org_id, parent).await?;
            let Some(state) = state else { return Err(Rejection::not_found("parent category").into()) };
            next = state.fields.parent_id;
            depth += 1;
            if depth > 32 {
                return Err(parent_error("too_deep", "categories nest at most 32 levels"));
            }
        }
        Ok(())
    }
}

fn parent_error(code: &str, message: &str) -> ExecuteError {
    Rejection::Invalid { errors: vec![FieldError::new("parentId", code, message)] }.into()
}
