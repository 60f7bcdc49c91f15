//! Document downloads: links signed for five minutes, and the public route that serves them without a
//! bearer credential (`GET /documents/{token}`, outside `/api/`, so the gateway does not authenticate
//! it: the signature is the credential).
//!
//! What a token holds and how it is signed and checked live in `links.rs`; this module serves them.
//!
//! The authenticated document routes of sales, purchases and delivery notes answer 302 to
//! [`signed_path`] (see [`link`]); this route is deliberately left out of the OpenAPI document, which
//! describes the authenticated API under `/api/` (a route there without a credential would also break
//! the rule that every operation names its scope). Those operations describe it in their text instead:
//! [`DOWNLOAD_DESCRIPTION`].

use crate::http::error::{ApiError, ErrorType};
pub use crate::http::links::{DocumentKey, DocumentLink, LINK_LIFETIME, LinkError, signed_path, verify};
use crate::state::AppState;
use poem::http::{HeaderValue, StatusCode, header};
use poem::web::{Data, Path};
use poem::{Response, handler};
use projections::documents::OwnerKind;
use projections::documents::store::{self, DocumentState};
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// For the description of the authenticated operations that redirect here.
pub const DOWNLOAD_DESCRIPTION: &str = "Answers 302 to a signed link, `/documents/{token}`, valid five minutes and \
     served without a bearer credential: within them it answers 200 with the PDF (`application/pdf`, \
     inline); an expired or altered link answers 403 (`authorization_error`, `INVALID_DOCUMENT_LINK`) \
     and nothing else. Ask this operation again for a fresh link.";

/// For the authenticated document routes: a fresh signed path to the document when it is ready;
/// 404 naming its state otherwise (missing, pending or failed).
pub async fn link(state: &AppState, org: Uuid, kind: OwnerKind, id: Uuid) -> Result<String, ApiError> {
    let current = store::state(&state.pool, org, kind, id).await.map_err(|error| {
        tracing::error!(%error, "cannot read a document's state");
        ApiError::internal()
    })?;
    if current != DocumentState::Ready {
        return Err(not_ready(current));
    }
    Ok(signed_path(&state.documents, org, kind, id, OffsetDateTime::now_utc()))
}

fn not_ready(state: DocumentState) -> ApiError {
    let message = match state {
        DocumentState::Missing => "this document does not exist",
        DocumentState::Pending => "this document is being rendered; try again shortly",
        _ => "this document could not be rendered yet; it is retried",
    };
    ApiError::new(StatusCode::NOT_FOUND, ErrorType::InvalidRequestError, "DOCUMENT_NOT_READY", message).with_detail(
        Some("document.state"),
        state.as_str(),
        message,
    )
}

fn refused(error: LinkError) -> ApiError {
    let message = match error {
        LinkError::Invalid => "this document link is not valid",
        LinkError::Expired => "this document link has expired; ask the API for a new one",
    };
    ApiError::new(StatusCode::FORBIDDEN, ErrorType::AuthorizationError, "INVALID_DOCUMENT_LINK", message)
}

/// `GET /documents/{token}`: the PDF a genuine, unexpired link names.
#[handler]
pub async fn download(Path(token): Path<String>, state: Data<&Arc<AppState>>) -> poem::Result<Response> {
    let link = verify(&state.documents, &token, OffsetDateTime::now_utc()).map_err(refused)?;
    let unavailable = |error: sqlx::Error| {
        tracing::error!(%error, org.id = %link.org, "cannot read a document");
        ApiError::internal()
    };
    let found = store::ready(&state.pool, link.org, link.kind, link.id).await.map_err(unavailable)?;
    let Some(document) = found else {
        let current = store::state(&state.pool, link.org, link.kind, link.id).await.map_err(unavailable)?;
        return Err(not_ready(current).into());
    };
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .content_type("application/pdf")
        .header(header::CACHE_CONTROL, "private, max-age=300")
        .header("X-Content-Type-Options", "nosniff")
        .body(document.content);
    // File names are ASCII by construction (`VoucherDocument::file_name`); a header refuses anything else.
    if let Ok(value) = HeaderValue::from_str(&format!("inline; filename=\"{}\"", document.file_name)) {
        response.headers_mut().insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}
