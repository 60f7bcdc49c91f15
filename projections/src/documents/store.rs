//! The document store: rendered PDFs in Postgres (`documents`, see `schema/0022_documents.sql`), the
//! blob store every api process can read. Owners request a document with what it prints; the worker
//! renders it; readers ask its state and its bytes.

use super::{OwnerKind, VoucherDocument};
use serde::Serialize;
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

events::named_enum! {
    /// Where a document stands, as `document.file.state` shows it.
    pub enum DocumentState {
        /// Never requested.
        Missing = "missing",
        /// Waiting to be rendered (or re-rendered after its input changed).
        Pending = "pending",
        Ready = "ready",
        /// Rendering failed repeatedly; it is still retried, less often.
        Failed = "failed",
    }
}

/// What the store keeps as a document's input: a [`VoucherDocument`] or a
/// [`DeliveryNoteDocument`](super::delivery_notes::DeliveryNoteDocument), as JSON, with its download's
/// file name.
pub trait Printable: Serialize + Sync {
    fn file_name(&self) -> String;
}

impl Printable for VoucherDocument {
    fn file_name(&self) -> String {
        VoucherDocument::file_name(self)
    }
}

/// A rendered document, ready for download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyDocument {
    pub file_name: String,
    pub content: Vec<u8>,
}

/// Asks for the document of (`org`, `kind`, `id`) printing `input`. Idempotent: asking again with
/// the same input changes nothing (a ready document stays ready, a failing one keeps its schedule);
/// a different input replaces the old one and its PDF, and the document is rendered anew. Takes a
/// connection so owners can ask inside the transaction that creates them. Returns whether the
/// document is now waiting for a rendering (worth waking the worker for).
#[tracing::instrument(skip_all, fields(org.id = %org, document.kind = %kind, document.owner = %id), err)]
pub async fn request(
    conn: &mut PgConnection,
    org: Uuid,
    kind: OwnerKind,
    id: Uuid,
    input: &impl Printable,
) -> Result<bool, sqlx::Error> {
    let queued: Option<bool> = sqlx::query_scalar(
        "insert into documents (org_id, owner_kind, owner_id, input, file_name)
         values ($1, $2, $3, $4, $5)
         on conflict (org_id, owner_kind, owner_id) do update
            set input = excluded.input, file_name = excluded.file_name, state = 'pending', content = null,
                attempts = 0, next_attempt_at = now(), last_error = null, updated_at = now(),
                rendered_at = null
          where documents.input is distinct from excluded.input
         returning true",
    )
    .bind(org)
    .bind(kind.as_str())
    .bind(id)
    .bind(Json(input))
    .bind(input.file_name())
    .fetch_optional(conn)
    .await?;
    Ok(queued.is_some())
}

/// The state of a document ([`DocumentState::Missing`] when never requested).
pub async fn state<'e>(
    db: impl PgExecutor<'e>,
    org: Uuid,
    kind: OwnerKind,
    id: Uuid,
) -> Result<DocumentState, sqlx::Error> {
    let state: Option<DocumentState> =
        sqlx::query_scalar("select state from documents where org_id = $1 and owner_kind = $2 and owner_id = $3")
            .bind(org)
            .bind(kind.as_str())
            .bind(id)
            .fetch_optional(db)
            .await?;
    Ok(state.unwrap_or(DocumentState::Missing))
}

/// The states of the documents of `ids` (one read for a page of owners): an owner whose document was
/// never requested is absent ([`DocumentState::Missing`]).
pub async fn states<'e>(
    db: impl PgExecutor<'e>,
    org: Uuid,
    kind: OwnerKind,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, DocumentState>, sqlx::Error> {
    let rows: Vec<(Uuid, DocumentState)> = sqlx::query_as(
        "select owner_id, state from documents where org_id = $1 and owner_kind = $2 and owner_id = any($3)",
    )
    .bind(org)
    .bind(kind.as_str())
    .bind(ids)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().collect())
}

/// The PDF of a ready document; none when it is missing or not ready.
pub async fn content<'e>(
    db: impl PgExecutor<'e>,
    org: Uuid,
    kind: OwnerKind,
    id: Uuid,
) -> Result<Option<Vec<u8>>, sqlx::Error> {
    Ok(ready(db, org, kind, id).await?.map(|document| document.content))
}

/// The PDF of a ready document with its file name; none when it is missing or not ready.
pub async fn ready<'e>(
    db: impl PgExecutor<'e>,
    org: Uuid,
    kind: OwnerKind,
    id: Uuid,
) -> Result<Option<ReadyDocument>, sqlx::Error> {
    let row: Option<(String, Vec<u8>)> = sqlx::query_as(
        "select file_name, content from documents
          where org_id = $1 and owner_kind = $2 and owner_id = $3 and state = 'ready'",
    )
    .bind(org)
    .bind(kind.as_str())
    .bind(id)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|(file_name, content)| ReadyDocument { file_name, content }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::tests::sample;
    use sqlx::PgPool;

    async fn row(pool: &PgPool, id: Uuid) -> (String, i32, Option<String>) {
        sqlx::query_as("select state, attempts, last_error from documents where owner_id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("row")
    }

    #[sqlx::test(migrations = "../schema")]
    async fn requests_are_idempotent_and_a_new_input_renders_anew(pool: PgPool) {
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mut conn = pool.acquire().await.expect("connection");
        assert_eq!(state(&pool, org, OwnerKind::Sale, id).await.expect("state"), DocumentState::Missing);
        assert!(request(&mut conn, org, OwnerKind::Sale, id, &sample()).await.expect("request"));
        assert_eq!(state(&pool, org, OwnerKind::Sale, id).await.expect("state"), DocumentState::Pending);
        assert_eq!(content(&pool, org, OwnerKind::Sale, id).await.expect("content"), None);

        // As the worker would leave it.
        sqlx::query("update documents set state = 'ready', content = 'pdf', attempts = 1 where owner_id = $1")
            .bind(id)
            .execute(&pool)
            .await
            .expect("ready");
        assert!(!request(&mut conn, org, OwnerKind::Sale, id, &sample()).await.expect("again"));
        assert_eq!(state(&pool, org, OwnerKind::Sale, id).await.expect("state"), DocumentState::Ready);
        let ready = ready(&pool, org, OwnerKind::Sale, id).await.expect("ready").expect("a document");
        assert_eq!(ready, ReadyDocument { file_name: "factura-a-00001-00000042.pdf".into(), content: b"pdf".to_vec() });

        // Another owner kind with the same id, and another organization, are other documents.
        assert_eq!(state(&pool, org, OwnerKind::Purchase, id).await.expect("state"), DocumentState::Missing);
        assert_eq!(state(&pool, Uuid::now_v7(), OwnerKind::Sale, id).await.expect("state"), DocumentState::Missing);

        let mut changed = sample();
        changed.notes = Some("Corregida".into());
        assert!(request(&mut conn, org, OwnerKind::Sale, id, &changed).await.expect("changed"));
        assert_eq!(row(&pool, id).await, ("pending".into(), 0, None));
        assert_eq!(content(&pool, org, OwnerKind::Sale, id).await.expect("content"), None);
    }

    #[sqlx::test(migrations = "../schema")]
    async fn a_failing_document_keeps_its_schedule_when_asked_again(pool: PgPool) {
        let (org, id) = (Uuid::now_v7(), Uuid::now_v7());
        let mut conn = pool.acquire().await.expect("connection");
        request(&mut conn, org, OwnerKind::Purchase, id, &sample()).await.expect("request");
        sqlx::query(
            "update documents set state = 'failed', attempts = 7, last_error = 'boom',
                    next_attempt_at = now() + interval '1 hour' where owner_id = $1",
        )
        .bind(id)
        .execute(&pool)
        .await
        .expect("failed");
        assert!(!request(&mut conn, org, OwnerKind::Purchase, id, &sample()).await.expect("again"));
        assert_eq!(row(&pool, id).await, ("failed".into(), 7, Some("boom".into())));
        assert_eq!(state(&pool, org, OwnerKind::Purchase, id).await.expect("state"), DocumentState::Failed);
    }
}
