//! The organizations read model: the organization resource (`GET /api/v1/organization`).

use crate::{CacheKey, CacheResource, Folded, Target};
use events::RecordedEvent;
use events::catalogue::OrganizationEvent;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "organizations_view";

pub struct OrganizationsProjection;

projection!(OrganizationsProjection { id: Organizations, tables: &[TABLE], folds: [OrganizationEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    let mut stale = Vec::new();
    for event in events {
        let decoded: OrganizationEvent = crate::decode(event)?;
        match decoded {
            OrganizationEvent::OrganizationCreated(created) => {
                let sql = format!(
                    "insert into {table} (id, name, slug, country, rate_limit_per_minute, rate_limit_per_hour,
                                          created_at, updated_at)
                     values ($1, $2, $3, $4, $5, $6, $7, $7) on conflict (id) do nothing"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(&created.name)
                    .bind(&created.slug)
                    .bind(&created.country)
                    .bind(created.rate_limit_per_minute)
                    .bind(created.rate_limit_per_hour)
                    .bind(event.recorded_at)
                    .execute(&mut *conn)
                    .await?;
            }
            OrganizationEvent::SettingsChanged(settings) => {
                let sql = format!(
                    "update {table} set legal_name = $2, tax_id = $3, tax_category = $4, updated_at = $5 where id = $1"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(&settings.legal_name)
                    .bind(&settings.tax_id)
                    .bind(&settings.tax_category)
                    .bind(event.recorded_at)
                    .execute(&mut *conn)
                    .await?;
            }
            OrganizationEvent::RateLimitsChanged(limits) => {
                let sql = format!(
                    "update {table} set rate_limit_per_minute = $2, rate_limit_per_hour = $3, updated_at = $4
                     where id = $1"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(limits.per_minute)
                    .bind(limits.per_hour)
                    .bind(event.recorded_at)
                    .execute(&mut *conn)
                    .await?;
            }
            // Credentials are not part of the organization resource.
            OrganizationEvent::ApiKeyIssued(_)
            | OrganizationEvent::DelegatedTokenIssued(_)
            | OrganizationEvent::CredentialRevoked(_) => continue,
        }
        stale.push(CacheKey { resource: CacheResource::Organization, org_id: event.org_id, id: event.org_id });
    }
    Ok(stale)
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrganizationRow {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub country: String,
    pub legal_name: Option<String>,
    pub tax_id: Option<String>,
    pub tax_category: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// The organization. Its credential works as soon as it is created, so until the projection has caught
/// up the write-model row answers (an organization created moments ago has not been updated since).
pub async fn get(pool: &PgPool, id: Uuid) -> Result<Option<OrganizationRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, name, slug, country, legal_name, tax_id, tax_category, created_at, updated_at
         from organizations_view where id = $1
         union all
         select o.id, o.name, o.slug, 'Argentina', o.legal_name, o.tax_id, o.tax_category, o.created_at, o.created_at
         from organizations o
         where o.id = $1 and not exists (select 1 from organizations_view v where v.id = $1)
         limit 1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}
