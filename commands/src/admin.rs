//! What every operator command of the admin CLI shares: its error, and the check that names an
//! organization (organizations and their credentials, the treasury's set-up, fiscal certificates).

use crate::Rejection;
use events::store::AppendError;
use sqlx::PgConnection;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("organization {0} not found")]
    UnknownOrganization(Uuid),
    #[error("no active credential matches")]
    UnknownCredential,
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// An event that does not encode: nothing is written.
    #[error("an event does not encode: {0}")]
    Unencodable(#[from] serde_json::Error),
}

/// The organization's stream version: what an operator command appends after, and the check that
/// `org_id` names an organization ([`AdminError::UnknownOrganization`] otherwise).
pub(crate) async fn organization_version(conn: &mut PgConnection, org_id: Uuid) -> Result<i32, AdminError> {
    let version: Option<i32> =
        sqlx::query_scalar("select max(version) from events where stream_id = $1 and org_id = $1")
            .bind(org_id)
            .fetch_one(&mut *conn)
            .await?;
    version.ok_or(AdminError::UnknownOrganization(org_id))
}
