//! Authentication and per-organization settings on the hot path: the bearer credential of a request
//! becomes a [`Principal`] (organization, scopes, delegation). Credentials and rate limits are looked
//! up by the SHA-256 of the secret and the organization id, and kept in memory; events that revoke a
//! credential or change limits drop the cached entries in every gateway.

use crate::http::error::ApiError;
use crate::ratelimit::Limits;
use commands::organization::credential_hash;
use commands::protocol::Actor;
use events::domain::Scope;
use moka::future::Cache;
use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSecurityScheme, Registry};
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

pub const SECURITY_SCHEME: &str = "bearerAuth";

/// What a delegated token may see: its user, treasury visibility (`own` or `organization`), and the
/// cash registers and safes assigned to the user (empty means all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub user: String,
    pub visibility: String,
    pub registers: Vec<Uuid>,
    pub safes: Vec<Uuid>,
}

/// Who a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub org_id: Uuid,
    pub credential_id: Uuid,
    pub scopes: ScopeSet,
    pub delegation: Option<Arc<Delegation>>,
}

/// The scopes a credential carries, one bit per [`Scope`] (its place in [`Scope::ALL`]): a request's
/// scope check is one bit test, not a comparison with every scope's name. Names no scope has (none is
/// ever stored) grant nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScopeSet(u128);

impl ScopeSet {
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Self(
            names
                .into_iter()
                .filter_map(|name| name.parse::<Scope>().ok())
                .fold(0, |bits, scope| bits | Self::bit(scope)),
        )
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & Self::bit(scope) != 0
    }

    fn bit(scope: Scope) -> u128 {
        1 << (scope as u32)
    }
}

const _: () = assert!(Scope::ALL.len() <= 128, "a scope set holds at most 128 scopes");

impl Principal {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }

    /// 403 naming the scope when the credential lacks it.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.has_scope(scope) { Ok(()) } else { Err(ApiError::missing_scope(scope)) }
    }

    pub fn actor(&self) -> Actor {
        let name = match &self.delegation {
            Some(_) => format!("token:{}", self.credential_id),
            None => format!("api_key:{}", self.credential_id),
        };
        Actor { name, credential_id: Some(self.credential_id) }
    }
}

type CredentialRow = (Uuid, Uuid, Vec<String>, String, Option<String>, Option<String>, Vec<Uuid>, Vec<Uuid>);

/// Credentials by hash and rate limits by organization, cached. Unknown hashes are remembered briefly
/// so a flood of bad keys does not reach the database.
pub struct Credentials {
    /// Bumped whenever cached credentials are dropped: a lookup that raced a revocation is not cached.
    epoch: std::sync::atomic::AtomicU64,
    known: Cache<Vec<u8>, Principal>,
    unknown: Cache<Vec<u8>, ()>,
    limits: Cache<Uuid, Limits>,
}

impl Default for Credentials {
    fn default() -> Self {
        Self {
            epoch: std::sync::atomic::AtomicU64::new(0),
            known: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(300)).build(),
            unknown: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(2)).build(),
            limits: Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(300)).build(),
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
        let epoch = self.epoch.load(std::sync::atomic::Ordering::Acquire);
        let row: Option<CredentialRow> = sqlx::query_as(
            "select id, org_id, scopes, kind, user_name, visibility, registers, safes from credentials
             where secret_hash = $1 and revoked_at is null",
        )
        .bind(&hash)
        .fetch_optional(pool)
        .await?;
        match row {
            Some((credential_id, org_id, scopes, kind, user, visibility, registers, safes)) => {
                let delegation = (kind == "delegated_token").then(|| {
                    Arc::new(Delegation {
                        user: user.unwrap_or_default(),
                        visibility: visibility.unwrap_or_else(|| "organization".into()),
                        registers,
                        safes,
                    })
                });
                let scopes = ScopeSet::of(scopes.iter().map(String::as_str));
                let principal = Principal { org_id, credential_id, scopes, delegation };
                if self.epoch.load(std::sync::atomic::Ordering::Acquire) == epoch {
                    self.known.insert(hash, principal.clone()).await;
                }
                Ok(principal)
            }
            None => {
                self.unknown.insert(hash, ()).await;
                Err(ApiError::unauthenticated("the credential is not valid"))
            }
        }
    }

    pub async fn limits(&self, pool: &PgPool, org_id: Uuid) -> Result<Limits, ApiError> {
        if let Some(limits) = self.limits.get(&org_id).await {
            return Ok(limits);
        }
        let (per_minute, per_hour): (i32, i32) =
            sqlx::query_as("select rate_limit_per_minute, rate_limit_per_hour from organizations where id = $1")
                .bind(org_id)
                .fetch_optional(pool)
                .await?
                .ok_or_else(|| ApiError::unauthenticated("the credential is not valid"))?;
        let limits = Limits { per_minute: per_minute.max(1) as u32, per_hour: per_hour.max(1) as u32 };
        self.limits.insert(org_id, limits).await;
        Ok(limits)
    }

    /// Forgets what is cached about an organization (its credentials changed, or its limits).
    pub async fn forget(&self, org_id: Uuid) {
        // Credentials are cached by hash, not by organization; revocations are rare, so all go.
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        self.known.invalidate_all();
        self.unknown.invalidate_all();
        self.limits.invalidate(&org_id).await;
    }
}

/// The secret of a request's `Authorization: Bearer …` header.
pub fn bearer(request: &Request) -> Result<&str, ApiError> {
    let header = request
        .header(poem::http::header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthenticated("missing Authorization header (Bearer credential)"))?;
    header
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, secret)| secret.trim())
        .filter(|secret| !secret.is_empty())
        .ok_or_else(|| ApiError::unauthenticated("the Authorization header must be `Bearer <credential>`"))
}

/// The authenticated caller of an operation (declares the bearer scheme in the OpenAPI document). The
/// gateway middleware authenticates every `/api/` request before routing; this reads its result.
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
                description: Some(
                    "`Authorization: Bearer <API key or access token>`. Each operation lists the scope it \
                     needs in `x-required-scopes`.",
                ),
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
        let principal = request
            .data::<Principal>()
            .cloned()
            .ok_or_else(|| ApiError::unauthenticated("missing Authorization header (Bearer credential)"))?;
        Ok(Auth(principal))
    }
}

#[cfg(test)]
mod scope_set_tests {
    use super::{Scope, ScopeSet};

    #[test]
    fn a_scope_set_holds_exactly_the_scopes_named() {
        let all = ScopeSet::of(Scope::ALL.iter().map(|s| s.as_str()));
        assert!(Scope::ALL.iter().all(|s| all.contains(*s)));
        let some = ScopeSet::of(["customers:read", "warehouses:write", "nonsense:read"]);
        let held: Vec<Scope> = Scope::ALL.iter().copied().filter(|s| some.contains(*s)).collect();
        assert_eq!(held, [Scope::CustomersRead, Scope::WarehousesWrite]);
        assert!(!ScopeSet::default().contains(Scope::CustomersRead));
    }
}
