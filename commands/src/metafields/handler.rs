//! How the workers run metafield definitions: a key names one definition in the organization.

use crate::engine::{Conn, ExecuteError, reject_fields};
use crate::handler::Batching;
use crate::records::RecordRules;
use crate::validate::FieldError;
use events::catalogue::{MetafieldDefinitionEvent, MetafieldDefinitionFields};
use uuid::Uuid;

impl RecordRules for MetafieldDefinitionEvent {
    const BATCHING: Batching = Batching::Shared;

    async fn check_references(
        id: Uuid,
        fields: &MetafieldDefinitionFields,
        conn: &mut Conn<'_>,
        org_id: Uuid,
    ) -> Result<(), ExecuteError> {
        let taken: bool = sqlx::query_scalar(
            "select exists(select 1 from events where org_id = $1 and stream_type = 'metafield_definition'
                            and data->>'key' = $2 and stream_id <> $3)",
        )
        .bind(org_id)
        .bind(&fields.key)
        .bind(id)
        .fetch_one(conn.get().await?)
        .await?;
        let mut errors = Vec::new();
        if taken {
            errors.push(FieldError::new("key", "already_exists", "a definition with this key exists"));
        }
        reject_fields(errors)
    }
}

/// The organization's custom field definitions, as their latest events state them.
pub(crate) async fn definitions(
    conn: &mut sqlx::PgConnection,
    org_id: Uuid,
) -> Result<Vec<MetafieldDefinitionFields>, ExecuteError> {
    let stored: Vec<(Uuid, serde_json::Value)> = sqlx::query_as(
        "select stream_id, data from (select distinct on (stream_id) stream_id, data from events
                           where org_id = $1 and stream_type = 'metafield_definition'
                           order by stream_id, version desc) latest",
    )
    .bind(org_id)
    .fetch_all(&mut *conn)
    .await?;
    // A definition that no longer decodes is corrupt history, not one to skip: its rule would go unchecked.
    stored
        .into_iter()
        .map(|(stream, data)| serde_json::from_value(data).map_err(|e| ExecuteError::Corrupt(stream, e.to_string())))
        .collect()
}
