//! The delivery notes read model (`delivery_notes_view`): each note's whole state (every note event
//! carries it), kept when the note is deleted (`deleted`), with the columns its list filters on.

use crate::{Folded, Target};
use events::RecordedEvent;
use events::catalogue::{DeliveryNoteEvent, DeliveryNoteState, DeliveryOrigin};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "delivery_notes_view";

pub struct DeliveryNotesProjection;

projection!(DeliveryNotesProjection { id: DeliveryNotes, tables: &[TABLE], folds: [DeliveryNoteEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    for event in events {
        let decoded: DeliveryNoteEvent = crate::decode(event)?;
        let (note, deleted) = match &decoded {
            DeliveryNoteEvent::DeliveryNoteCreated(note) => (&**note, false),
            DeliveryNoteEvent::DeliveryNoteDeleted(deleted) => (&deleted.note, true),
        };
        let origin_id = match note.origin {
            DeliveryOrigin::Custom => None,
            DeliveryOrigin::Sale { sale_id } => Some(sale_id),
            DeliveryOrigin::Order { order_id } => Some(order_id),
        };
        let sql = format!(
            "insert into {table} (org_id, id, origin_type, origin_id, point_of_sale_id, number, customer_id, deleted,
                                  doc, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
             on conflict (org_id, id) do update set deleted = excluded.deleted, doc = excluded.doc,
                 updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(event.org_id)
            .bind(event.stream_id)
            .bind(note.origin.as_str())
            .bind(origin_id)
            .bind(note.point_of_sale_id)
            .bind(note.number)
            .bind(note.customer_id)
            .bind(deleted)
            .bind(sqlx::types::Json(note))
            .bind(event.recorded_at)
            .execute(&mut *conn)
            .await?;
        // A new note gets its printed remito (asking again with the same content changes nothing).
        if let DeliveryNoteEvent::DeliveryNoteCreated(note) = &decoded {
            let issuer = crate::documents::vouchers::issuer(conn, event.org_id).await?;
            let document = crate::documents::delivery_notes::DeliveryNoteDocument::of(note, &issuer);
            crate::documents::store::request(
                conn,
                event.org_id,
                crate::documents::OwnerKind::DeliveryNote,
                event.stream_id,
                &document,
            )
            .await?;
        }
    }
    // Delivery note reads are not cached.
    Ok(Vec::new())
}

/// A delivery note as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NoteRow {
    pub id: Uuid,
    #[sqlx(json, rename = "doc")]
    pub note: DeliveryNoteState,
    pub deleted: bool,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// A note, deleted or not.
pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<NoteRow>, sqlx::Error> {
    crate::row_by_id(pool, "delivery_notes_view", "id, doc, deleted, created_at, updated_at", org_id, id).await
}

/// What the delivery note list filters on (each `None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NoteFilter {
    pub origin_type: Option<String>,
    /// The sale a `sale` note documents.
    pub sale_id: Option<Uuid>,
    /// The order an `order` note delivers.
    pub order_id: Option<Uuid>,
    pub customer_id: Option<Uuid>,
}

/// Up to `limit` notes that are not deleted after `after` (created at, id), newest first. Every filter
/// applies: a note has one origin, so a sale and an order together match none.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    filter: &NoteFilter,
    after: Option<(OffsetDateTime, Uuid)>,
    limit: i64,
) -> Result<Vec<NoteRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, doc, deleted, created_at, updated_at from delivery_notes_view
         where org_id = $1 and not deleted and ($2::text is null or origin_type = $2)
           and ($3::uuid is null or (origin_type = 'sale' and origin_id = $3))
           and ($4::uuid is null or (origin_type = 'order' and origin_id = $4))
           and ($5::uuid is null or customer_id = $5)
           and ($6::timestamptz is null or (created_at, id) < ($6, $7))
         order by created_at desc, id desc limit $8",
    )
    .bind(org_id)
    .bind(filter.origin_type.as_deref())
    .bind(filter.sale_id)
    .bind(filter.order_id)
    .bind(filter.customer_id)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(limit)
    .fetch_all(pool)
    .await
}
