//! Authentication: the bearer credential of a request becomes a [`Principal`] (organization, scopes).
//! Credentials are looked up by the SHA-256 of the secret and kept in memory, so the hot path does no
//! database round trip.

use crate::http::error::ApiError;
use crate::state::AppState;
use commands::organization::credential_hash;
use commands::protocol::Actor;
use moka::future::Cache;
use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

pub const SECURITY_SCHEME: &str = "bearerAuth";

/// Who a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub org_id: Uuid,
    pub credential_id: Uuid,
    pub scopes: Arc<[String]>,
}

impl Principal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// 403 naming the scope when the credential lacks it.
    pub fn require(&self, scope: &str) -> Result<(), ApiError> {
        if self.has_scope(scope) { Ok(()) } else { Err(ApiError::missing_scope(scope)) }
    }

    pub fn actor(&self) -> Actor {
        Actor { name: format!("api_key:{}", self.credential_id), credential_id: Some(self.credential_id) }
    }
}

/// Credentials by hash, cached. Unknown hashes are remembered briefly so a flood of bad keys does not
/// reach the database.
pub struct Credentials {
    known: Cache<Vec<u8>, Principal>,
    unknown: Cache<Vec<u8>, ()>,
}

impl Default for Credentials {
    fn default() -> Self {
        Self {
            known: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(600)).build(),
            unknown: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(5)).build(),
        }
    }
}

impl Credentials {
    pub async fn authenticate(&self, pool: &PgPool, secret: &str) -> Result<Principal, ApiError> {
        let hash = credential_hash(secret);
        if let Some(principal) = self.known.get(&hash).await {
            return Ok(principal);
        }
        if self.unknown.contains_key(&hash) {
            return Err(ApiError::unauthenticated("the credential is not valid"));
        }
        let row: Option<(Uuid, Uuid, Vec<String>)> =
            sqlx::query_as("select id, org_id, scopes from api_keys where key_hash = $1 and revoked_at is null")
                .bind(&hash)
                .fetch_optional(pool)
                .await?;
        match row {
            Some((credential_id, org_id, scopes)) => {
                let principal = Principal { org_id, credential_id, scopes: scopes.into() };
                self.known.insert(hash, principal.clone()).await;
                Ok(principal)
            }
            None => {
                self.unknown.insert(hash, ()).await;
                Err(ApiError::unauthenticated("the credential is not valid"))
            }
        }
    }
}

/// The authenticated caller of an operation (declares the bearer scheme in the OpenAPI document).
pub struct Auth(pub Principal);

impl<'a> ApiExtractor<'a> for Auth {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        registry.create_security_scheme(
            SECURITY_SCHEME,
            MetaSecurityScheme {
                ty: "http",
                description: Some("`Authorization: Bearer <API key or access token>`"),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec![SECURITY_SCHEME]
    }

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        _options: ExtractParamOptions<()>,
    ) -> poem::Result<Self> {
        let state = request.data::<Arc<AppState>>().ok_or_else(ApiError::internal)?;
        let header = request
            .header("authorization")
            .ok_or_else(|| ApiError::unauthenticated("missing Authorization header (Bearer credential)"))?;
        let secret = header
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, secret)| secret.trim())
            .filter(|secret| !secret.is_empty())
            .ok_or_else(|| ApiError::unauthenticated("the Authorization header must be `Bearer <credential>`"))?;
        Ok(Auth(state.credentials.authenticate(&state.pool, secret).await?))
    }
}
