//! Delivery notes (remitos) in print: what one shows (the issuer, the customer, `R-PPPP-NNNNNNNN`, the
//! date and each line's name and quantity; never a price), and how they are asked for.
//!
//! A note's document is asked for when its `DeliveryNoteCreated` event commits, by the document
//! worker ([`request_created`], each round before it renders): it reads the event store's
//! `delivery_note` events in commit order after its checkpoint (`follower_checkpoints`, row
//! [`FOLLOWER`]), only those of transactions that have finished (below the snapshot's xmin, as every
//! follower of the commit order reads), so an event that commits late is never skipped. The events,
//! the requests and the new checkpoint are one transaction holding the checkpoint's row, so any
//! number of workers follow without losing or repeating a request (repeating one would change
//! nothing: a request with the same input is idempotent). A note is never changed, so its document is
//! asked for once; a deleted note's document stays stored, and the API answers 404 for it.

use super::{Party, RenderError, store};
use events::catalogue::{DeliveryNoteEvent, DeliveryNoteState, EventPayload, iso_date};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use time::Date;
use uuid::Uuid;

/// The checkpoint row of the worker's follower of delivery note events.
pub const FOLLOWER: &str = "documents:delivery_notes";

/// Events read (and documents asked for) at most per round.
const BATCH: i64 = 200;

/// A printed delivery note: every text it shows. Stored as JSON (the store's `input`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNoteDocument {
    /// The point of sale's number (at most 4 digits as remitos print it).
    pub point_of_sale: i32,
    /// At most 8 digits.
    pub number: i64,
    #[serde(with = "iso_date")]
    pub date: Date,
    /// The organization.
    pub issuer: Party,
    /// The customer.
    pub receiver: Party,
    pub lines: Vec<DeliveredLine>,
    pub notes: Option<String>,
}

/// One delivered line: what and how much, never a price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveredLine {
    pub description: String,
    /// Exact decimal text (`1.5`), printed with a decimal comma.
    pub quantity: String,
}

impl DeliveryNoteDocument {
    /// The document of `note`, issued by `issuer`.
    pub fn of(note: &DeliveryNoteState, issuer: &Party) -> Self {
        DeliveryNoteDocument {
            point_of_sale: note.point_of_sale_number,
            number: note.number,
            date: note.date,
            issuer: issuer.clone(),
            receiver: Party { name: note.customer_name.clone(), tax_id: None, tax_category: None, address: None },
            lines: note
                .lines
                .iter()
                .map(|l| DeliveredLine { description: l.name.clone(), quantity: l.quantity.to_string() })
                .collect(),
            notes: note.notes.clone(),
        }
    }

    /// `R-PPPP-NNNNNNNN`, as the note's `formatted_number`.
    pub fn number_text(&self) -> String {
        format!("R-{:04}-{:08}", self.point_of_sale, self.number)
    }

    /// A file name for downloads: `remito-r-0001-00000042.pdf`.
    pub fn file_name(&self) -> String {
        format!("remito-{}.pdf", self.number_text().to_ascii_lowercase())
    }

    /// What cannot be printed faithfully is refused rather than printed wrong.
    pub(crate) fn check(&self) -> Result<(), RenderError> {
        if !(0..=9_999).contains(&self.point_of_sale) {
            return Err(RenderError::Invalid(format!("point of sale {} has more than 4 digits", self.point_of_sale)));
        }
        if !(0..=99_999_999).contains(&self.number) {
            return Err(RenderError::Invalid(format!("number {} has more than 8 digits", self.number)));
        }
        Ok(())
    }
}

impl store::Printable for DeliveryNoteDocument {
    fn file_name(&self) -> String {
        DeliveryNoteDocument::file_name(self)
    }
}

/// Asks for the documents of the delivery notes created since the checkpoint (see the module
/// comment). Returns how many were newly queued for rendering; none when another worker holds the
/// checkpoint.
pub async fn request_created(pool: &PgPool) -> Result<usize, sqlx::Error> {
    // Every transaction below this has finished: the events read below it are all there will be.
    let horizon: i64 =
        sqlx::query_scalar("select pg_snapshot_xmin(pg_current_snapshot())::text::int8").fetch_one(pool).await?;
    let mut tx = pool.begin().await?;
    sqlx::query(
        "insert into follower_checkpoints (name, transaction_id, position) values ($1, '0'::xid8, 0)
         on conflict (name) do nothing",
    )
    .bind(FOLLOWER)
    .execute(&mut *tx)
    .await?;
    let checkpoint: Option<(i64, i64)> = sqlx::query_as(
        "select transaction_id::text::int8, position from follower_checkpoints where name = $1
         for update skip locked",
    )
    .bind(FOLLOWER)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(checkpoint) = checkpoint else {
        // Another worker is following.
        tx.rollback().await?;
        return Ok(0);
    };
    type Row = (i64, i64, Uuid, Uuid, String, i32, serde_json::Value);
    let rows: Vec<Row> = sqlx::query_as(
        "select e.transaction_id::text::int8, e.position, e.org_id, e.stream_id, e.event_type, e.schema_version,
                e.data
           from events e
          where e.stream_type = $1
            and (e.transaction_id, e.position) > ($2::int8::text::xid8, $3)
            and e.transaction_id < $4::int8::text::xid8
          order by e.transaction_id, e.position
          limit $5",
    )
    .bind(DeliveryNoteEvent::STREAM_TYPE)
    .bind(checkpoint.0)
    .bind(checkpoint.1)
    .bind(horizon)
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    let full = i64::try_from(rows.len()).is_ok_and(|n| n >= BATCH);
    let mut reached = checkpoint;
    let mut queued = 0;
    for (transaction_id, position, org, id, event_type, schema_version, data) in rows {
        reached = reached.max((transaction_id, position));
        match DeliveryNoteEvent::decode(&event_type, schema_version, data) {
            Ok(DeliveryNoteEvent::DeliveryNoteCreated(note)) => {
                let issuer = super::vouchers::issuer(&mut tx, org).await?;
                let document = DeliveryNoteDocument::of(&note, &issuer);
                if store::request(&mut tx, org, super::OwnerKind::DeliveryNote, id, &document).await? {
                    queued += 1;
                }
            }
            Ok(DeliveryNoteEvent::DeliveryNoteDeleted(_)) => {}
            Err(error) => {
                tracing::warn!(
                    org.id = %org,
                    document.owner = %id,
                    position,
                    %error,
                    "a delivery note event cannot be read"
                );
            }
        }
    }
    if !full {
        // Everything below the horizon is read: the next round starts there.
        reached = reached.max((horizon.saturating_sub(1), i64::MAX));
    }
    if reached != checkpoint {
        sqlx::query(
            "update follower_checkpoints set transaction_id = $2::int8::text::xid8, position = $3 where name = $1",
        )
        .bind(FOLLOWER)
        .bind(reached.0)
        .bind(reached.1)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(queued)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::OwnerKind;
    use crate::documents::store::DocumentState;
    use events::catalogue::{DeliveryLine, DeliveryNoteDeleted, DeliveryOrigin};
    use events::domain::Quantity;
    use time::macros::date;

    fn note(number: i64) -> DeliveryNoteState {
        DeliveryNoteState {
            origin: DeliveryOrigin::Custom,
            point_of_sale_id: Uuid::now_v7(),
            point_of_sale_number: 2,
            number,
            date: date!(2026 - 08 - 20),
            customer_id: Uuid::now_v7(),
            customer_name: "Ana Pérez".into(),
            warehouse_id: None,
            lines: vec![DeliveryLine {
                variant_id: None,
                name: "Folletos".into(),
                quantity: Quantity::from_thousandths(2_500).expect("quantity"),
                order_line_id: None,
            }],
            notes: None,
            changes: Vec::new(),
        }
    }

    /// Appends `event` to `stream` as the command side would (version `version`).
    async fn append(pool: &PgPool, org: Uuid, stream: Uuid, version: i32, event: &DeliveryNoteEvent) {
        sqlx::query(
            "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data,
                                 metadata)
             values ($1, $2, $3, $4, $5, $6, $7, $8, '{}')",
        )
        .bind(org)
        .bind(DeliveryNoteEvent::STREAM_TYPE)
        .bind(stream)
        .bind(version)
        .bind(Uuid::now_v7())
        .bind(event.event_type())
        .bind(event.schema_version())
        .bind(event.to_data())
        .execute(pool)
        .await
        .expect("appended");
    }

    #[sqlx::test(migrations = "../schema")]
    async fn created_notes_are_asked_for_once_in_commit_order(pool: PgPool) {
        let org = Uuid::now_v7();
        let (first, second) = (Uuid::now_v7(), Uuid::now_v7());
        append(&pool, org, first, 1, &DeliveryNoteEvent::DeliveryNoteCreated(Box::new(note(1)))).await;
        append(&pool, org, second, 1, &DeliveryNoteEvent::DeliveryNoteCreated(Box::new(note(2)))).await;
        let deleted = DeliveryNoteDeleted { note: note(2), deleted_on: date!(2026 - 08 - 21), restored: Vec::new() };
        append(&pool, org, second, 2, &DeliveryNoteEvent::DeliveryNoteDeleted(Box::new(deleted))).await;

        assert_eq!(request_created(&pool).await.expect("follows"), 2);
        for id in [first, second] {
            let state = store::state(&pool, org, OwnerKind::DeliveryNote, id).await.expect("state");
            assert_eq!(state, DocumentState::Pending);
        }
        let (file_name, input): (String, serde_json::Value) = sqlx::query_as(
            "select file_name, input::json from documents where org_id = $1 and owner_kind = 'delivery_note'
              and owner_id = $2",
        )
        .bind(org)
        .bind(first)
        .fetch_one(&pool)
        .await
        .expect("row");
        assert_eq!(file_name, "remito-r-0002-00000001.pdf");
        let document: DeliveryNoteDocument = serde_json::from_value(input).expect("the stored input");
        assert_eq!(document.receiver.name, "Ana Pérez");
        assert_eq!(document.lines, vec![DeliveredLine { description: "Folletos".into(), quantity: "2.5".into() }]);

        // The checkpoint moved past them: nothing is asked for again, and a new note is.
        assert_eq!(request_created(&pool).await.expect("follows"), 0);
        let third = Uuid::now_v7();
        append(&pool, org, third, 1, &DeliveryNoteEvent::DeliveryNoteCreated(Box::new(note(3)))).await;
        assert_eq!(request_created(&pool).await.expect("follows"), 1);
        let state = store::state(&pool, org, OwnerKind::DeliveryNote, third).await.expect("state");
        assert_eq!(state, DocumentState::Pending);
    }
}
