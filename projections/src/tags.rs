//! The tags read model: the tags (`tags_view`) and which resources carry them (`tag_assignments`),
//! read beside every customer, supplier and product.

use crate::{CacheKey, CacheResource, Folded, ProjectionError, Target};
use events::RecordedEvent;
use events::catalogue::TagEvent;
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "tags_view";
pub const ASSIGNMENTS: &str = "tag_assignments";

pub struct TagsProjection;

projection!(TagsProjection { id: Tags, tables: &[TABLE, ASSIGNMENTS], folds: [TagEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let (tags, assignments) = (target.table(TABLE), target.table(ASSIGNMENTS));
    let mut stale = Vec::new();
    for event in events {
        let decoded: TagEvent = crate::decode(event)?;
        let (org, tag, at) = (event.org_id, event.stream_id, event.recorded_at);
        let touches_tag = match &decoded {
            TagEvent::TagCreated(fields) | TagEvent::TagChanged(fields) => {
                // A creation writes the row once; a change writes over its name and colour.
                let sql = if matches!(decoded, TagEvent::TagCreated(_)) {
                    format!(
                        "insert into {tags} (org_id, id, name, color, created_at, updated_at)
                         values ($1, $2, $3, $4, $5, $5) on conflict (org_id, id) do nothing"
                    )
                } else {
                    format!("update {tags} set name = $3, color = $4, updated_at = $5 where org_id = $1 and id = $2")
                };
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(org)
                    .bind(tag)
                    .bind(&fields.name)
                    .bind(&fields.color)
                    .bind(at)
                    .execute(&mut *conn)
                    .await?;
                true
            }
            TagEvent::TagArchived | TagEvent::TagRestored => {
                let archived = matches!(decoded, TagEvent::TagArchived).then_some(at);
                let sql = format!("update {tags} set archived_at = $3, updated_at = $4 where org_id = $1 and id = $2");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(org)
                    .bind(tag)
                    .bind(archived)
                    .bind(at)
                    .execute(&mut *conn)
                    .await?;
                true
            }
            TagEvent::TagApplied(targets) | TagEvent::TagRemoved(targets) => {
                let sql = if matches!(decoded, TagEvent::TagApplied(_)) {
                    format!(
                        "insert into {assignments} (org_id, tag_id, resource_type, resource_id)
                         select $1, $2, $3, unnest($4::uuid[]) on conflict do nothing"
                    )
                } else {
                    format!(
                        "delete from {assignments} where org_id = $1 and tag_id = $2 and resource_type = $3 and resource_id = any($4)"
                    )
                };
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(org)
                    .bind(tag)
                    .bind(&targets.resource_type)
                    .bind(&targets.resource_ids)
                    .execute(&mut *conn)
                    .await?;
                if let Some(resource) = carried_resource(&targets.resource_type, event.position)? {
                    stale.extend(targets.resource_ids.iter().map(|id| CacheKey { resource, org_id: org, id: *id }));
                }
                false
            }
        };
        if touches_tag {
            // Every resource showing the tag shows its new state.
            let sql = format!("select resource_type, resource_id from {assignments} where org_id = $1 and tag_id = $2");
            let carriers: Vec<(String, Uuid)> =
                sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org).bind(tag).fetch_all(&mut *conn).await?;
            for (resource, id) in carriers {
                if let Some(resource) = carried_resource(&resource, event.position)? {
                    stale.push(CacheKey { resource, org_id: org, id });
                }
            }
            stale.push(CacheKey { resource: CacheResource::Tag, org_id: org, id: tag });
        }
    }
    Ok(stale)
}

/// Resources tags apply to whose reads are not cached: nothing to invalidate.
const UNCACHED_TARGETS: &[&str] = &["stock_transfer", "sale", "purchase", "purchase_order"];

/// The cached resource a tag's `resource_type` names (none for [`UNCACHED_TARGETS`]). Any other name is
/// a malformed event: the projector stops on it rather than leave a cached read stale.
fn carried_resource(resource_type: &str, position: i64) -> Result<Option<CacheResource>, ProjectionError> {
    if UNCACHED_TARGETS.contains(&resource_type) {
        return Ok(None);
    }
    resource_type.parse().map(Some).map_err(|e: crate::registry::UnknownName| ProjectionError::Undecodable {
        position,
        reason: format!("tag target: {e}"),
    })
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TagRow {
    pub id: Uuid,
    pub name: String,
    pub color: Option<String>,
    pub archived_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<TagRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, name, color, archived_at, created_at, updated_at from tags_view where org_id = $1 and id = $2",
    )
    .bind(org_id)
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// A page of the organization's tags in creation order (archived ones only when asked).
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    include_archived: bool,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<TagRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, name, color, archived_at, created_at, updated_at from tags_view
         where org_id = $1 and ($2 or archived_at is null) and ($3::uuid is null or id > $3) order by id limit $4",
    )
    .bind(org_id)
    .bind(include_archived)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

type AssignedTag = (Uuid, Uuid, String, Option<String>, Option<OffsetDateTime>, OffsetDateTime, OffsetDateTime);

/// The tags each of `ids` (resources of `resource_type`) carries, ordered by name.
pub async fn tags_for(
    pool: &PgPool,
    org_id: Uuid,
    resource_type: &str,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<TagRow>>, sqlx::Error> {
    let rows: Vec<AssignedTag> = sqlx::query_as(
        "select a.resource_id, t.id, t.name, t.color, t.archived_at, t.created_at, t.updated_at
             from tag_assignments a join tags_view t on t.org_id = a.org_id and t.id = a.tag_id
             where a.org_id = $1 and a.resource_type = $2 and a.resource_id = any($3)
             order by lower(t.name), t.id",
    )
    .bind(org_id)
    .bind(resource_type)
    .bind(ids)
    .fetch_all(pool)
    .await?;
    let mut out: HashMap<Uuid, Vec<TagRow>> = HashMap::new();
    for (resource, id, name, color, archived_at, created_at, updated_at) in rows {
        out.entry(resource).or_default().push(TagRow { id, name, color, archived_at, created_at, updated_at });
    }
    Ok(out)
}
