//! Organizations and their credentials, as operators create them from the admin CLI. Each operation is
//! one transaction: its events and the write-model rows later requests rely on.

pub use crate::admin::AdminError;
use crate::admin::organization_version;
use crate::records::point_of_sale_fields;
use crate::treasury::admin::{NewLocation, open_account, open_location};
use events::catalogue::{
    ApiKeyIssued, CredentialRevoked, Currency, CustomerEvent, CustomerFields, DelegatedTokenIssued, LedgerAccount,
    LocationKind, NegativeStock, OrganizationCreated, OrganizationEvent, OrganizationSettings, PaymentMethodEvent,
    PaymentMethodFields, PointOfSaleEvent, RateLimitsChanged, RecordEvent, WarehouseEvent, WarehouseFields,
};
use events::domain::Scope;
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata, NewEvent};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// SHA-256 of a credential secret: what is stored and looked up; the secret itself never is.
pub fn credential_hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

fn new_secret(prefix: &str) -> String {
    format!("{prefix}{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// A fresh API key secret (244 random bits).
pub fn new_api_key_secret() -> String {
    new_secret("bo_sk_")
}

fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { "org".to_owned() } else { slug.chars().take(48).collect() }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct CreatedOrganization {
    pub organization_id: Uuid,
    pub api_key: String,
}

/// Requests per minute and per hour allowed to one organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub per_minute: i32,
    pub per_hour: i32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_minute: events::catalogue::DEFAULT_RATE_LIMIT_PER_MINUTE,
            per_hour: events::catalogue::DEFAULT_RATE_LIMIT_PER_HOUR,
        }
    }
}

impl RateLimits {
    fn check(self) -> Result<Self, AdminError> {
        if self.per_minute < 1 || self.per_hour < 1 {
            return Err(AdminError::Invalid("rate limits must be at least 1".into()));
        }
        Ok(self)
    }
}

/// Checks a scope list against [`Scope::ALL`].
pub fn parse_scopes(scopes: &[String]) -> Result<Vec<String>, AdminError> {
    let mut parsed: Vec<String> = Vec::new();
    for text in scopes.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let scope: Scope = text.parse().map_err(|_| {
            let known: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
            AdminError::Invalid(format!("unknown scope {text:?} (known: {})", known.join(", ")))
        })?;
        if !parsed.iter().any(|s| s == scope.as_str()) {
            parsed.push(scope.as_str().to_owned());
        }
    }
    if parsed.is_empty() {
        return Err(AdminError::Invalid("give at least one scope".into()));
    }
    Ok(parsed)
}

async fn append_to_organization(
    conn: &mut PgConnection,
    org_id: Uuid,
    events: &[OrganizationEvent],
) -> Result<(), AdminError> {
    let version = organization_version(conn, org_id).await?;
    let stream =
        StreamRef { org_id, stream_type: OrganizationEvent::STREAM_TYPE, stream_id: org_id, expected_version: version };
    let new: Vec<NewEvent> = events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
    store::append(conn, stream, &new, &Metadata::system("admin")).await?;
    Ok(())
}

async fn create_record<E: RecordEvent>(
    conn: &mut PgConnection,
    org_id: Uuid,
    fields: E::Fields,
) -> Result<Uuid, AdminError> {
    let id = Uuid::now_v7();
    let stream = StreamRef { org_id, stream_type: E::STREAM_TYPE, stream_id: id, expected_version: 0 };
    store::append(conn, stream, &[E::created(fields).to_new_event()?], &Metadata::system("admin")).await?;
    Ok(id)
}

/// Creates an organization with a key carrying every scope and the records an integrator needs to
/// start: the default customer, point of sale 1, a default warehouse and payment method, a cash register
/// and a safe, and a starting chart of ledger accounts. Each is opened with its event, in one transaction.
pub async fn create_organization(pool: &PgPool, name: &str) -> Result<CreatedOrganization, AdminError> {
    create_organization_with(pool, name, RateLimits::default()).await
}

pub async fn create_organization_with(
    pool: &PgPool,
    name: &str,
    limits: RateLimits,
) -> Result<CreatedOrganization, AdminError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AdminError::Invalid("the organization name must be 1 to 100 characters".into()));
    }
    let limits = limits.check()?;
    let org_id = Uuid::now_v7();
    let mut tx = pool.begin().await?;
    let base = slugify(name);
    let taken: bool = sqlx::query_scalar("select exists(select 1 from organizations where slug = $1)")
        .bind(&base)
        .fetch_one(&mut *tx)
        .await?;
    let slug = if taken { format!("{base}-{}", &org_id.simple().to_string()[24..]) } else { base };
    sqlx::query(
        "insert into organizations (id, name, slug, created_at, rate_limit_per_minute, rate_limit_per_hour)
         values ($1, $2, $3, now(), $4, $5)",
    )
    .bind(org_id)
    .bind(name)
    .bind(&slug)
    .bind(limits.per_minute)
    .bind(limits.per_hour)
    .execute(&mut *tx)
    .await?;

    let secret = new_api_key_secret();
    let key_id = Uuid::now_v7();
    let scopes: Vec<String> = Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect();
    insert_credential(&mut tx, org_id, key_id, &secret, &scopes, None).await?;
    let org_events = [
        OrganizationEvent::OrganizationCreated(OrganizationCreated {
            name: name.to_owned(),
            slug,
            country: "Argentina".to_owned(),
            rate_limit_per_minute: limits.per_minute,
            rate_limit_per_hour: limits.per_hour,
        }),
        OrganizationEvent::ApiKeyIssued(ApiKeyIssued {
            key_id,
            key_hash: hex::encode(credential_hash(&secret)),
            scopes,
        }),
    ];
    let org_stream =
        StreamRef { org_id, stream_type: OrganizationEvent::STREAM_TYPE, stream_id: org_id, expected_version: 0 };
    let new: Vec<_> = org_events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
    store::append(&mut tx, org_stream, &new, &Metadata::system("admin")).await?;

    let default_customer = create_record::<CustomerEvent>(
        &mut tx,
        org_id,
        CustomerFields {
            name: "Consumidor Final".to_owned(),
            tax_id_type: Some("DNI".to_owned()),
            tax_category: Some("Consumidor Final".to_owned()),
            ..CustomerFields::default()
        },
    )
    .await?;
    sqlx::query("update organizations set default_customer_id = $2 where id = $1")
        .bind(org_id)
        .bind(default_customer)
        .execute(&mut *tx)
        .await?;
    insert_point_of_sale(&mut tx, org_id, 1, None, "electronic").await?;
    create_record::<WarehouseEvent>(
        &mut tx,
        org_id,
        WarehouseFields { name: "Depósito principal".to_owned(), address: None, is_default: true, is_active: true },
    )
    .await?;
    create_record::<PaymentMethodEvent>(
        &mut tx,
        org_id,
        PaymentMethodFields {
            name: "Efectivo".to_owned(),
            icon: None,
            fee_percentage: None,
            fee_fixed: None,
            requires_reference: false,
            is_active: true,
            is_default: true,
        },
    )
    .await?;
    // A starting chart of accounts, each opened as `admin create-ledger-account` opens one (its row and
    // its event, which an audit replays); payments post to the first three until an operator names
    // others, and the cash register is kept on the fourth.
    let chart = [
        ("1.1.3", "Deudores por ventas"),
        ("2.1.1", "Proveedores"),
        ("5.2.1", "Comisiones y gastos de cobro"),
        ("1.1.1", "Caja"),
    ];
    let mut opened = Vec::new();
    for (code, account) in chart {
        let account = LedgerAccount { code: code.to_owned(), name: account.to_owned(), currency: Currency::Pes };
        opened.push(open_account(&mut tx, org_id, account).await?);
    }
    // A peso cash register on "Caja", and a safe on an account of its own that `open_location` numbers
    // as it numbers every register's and safe's without one: 1.1.1.01, so the next location opened
    // without an account gets 1.1.1.02.
    let cash =
        [(LocationKind::CashRegister, "Caja principal", Some(opened[3])), (LocationKind::Safe, "Caja fuerte", None)];
    for (kind, location, ledger_account_id) in cash {
        let new = NewLocation {
            kind,
            name: location.to_owned(),
            currency: Currency::Pes,
            bank: None,
            account_number: None,
            alias: None,
            uses_checkbook: false,
            ledger_account_id,
        };
        open_location(&mut tx, org_id, new).await?;
    }
    sqlx::query(
        "update organizations set receivables_account_id = $2, payables_account_id = $3, payment_fees_account_id = $4
         where id = $1",
    )
    .bind(org_id)
    .bind(opened[0])
    .bind(opened[1])
    .bind(opened[2])
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(CreatedOrganization { organization_id: org_id, api_key: secret })
}

/// What a delegated token may see of treasury: everything, or only what its user created; and which
/// cash registers and safes (none listed means no restriction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub user: String,
    pub visibility: String,
    pub registers: Vec<Uuid>,
    pub safes: Vec<Uuid>,
}

async fn insert_credential(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    secret: &str,
    scopes: &[String],
    delegation: Option<&Delegation>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into credentials (id, org_id, secret_hash, scopes, created_at, kind, user_name, visibility, registers, safes)
         values ($1, $2, $3, $4, now(), $5, $6, $7, $8, $9)",
    )
    .bind(id)
    .bind(org_id)
    .bind(credential_hash(secret))
    .bind(scopes)
    .bind(if delegation.is_some() { "delegated_token" } else { "api_key" })
    .bind(delegation.map(|d| d.user.clone()))
    .bind(delegation.map(|d| d.visibility.clone()))
    .bind(delegation.map(|d| d.registers.clone()).unwrap_or_default())
    .bind(delegation.map(|d| d.safes.clone()).unwrap_or_default())
    .execute(conn)
    .await?;
    Ok(())
}

/// Issues an API key with these scopes; returns the secret (shown once).
pub async fn create_api_key(pool: &PgPool, org_id: Uuid, scopes: &[String]) -> Result<String, AdminError> {
    let scopes = parse_scopes(scopes)?;
    let secret = new_api_key_secret();
    let key_id = Uuid::now_v7();
    let mut tx = pool.begin().await?;
    let event = OrganizationEvent::ApiKeyIssued(ApiKeyIssued {
        key_id,
        key_hash: hex::encode(credential_hash(&secret)),
        scopes: scopes.clone(),
    });
    append_to_organization(&mut tx, org_id, &[event]).await?;
    insert_credential(&mut tx, org_id, key_id, &secret, &scopes, None).await?;
    tx.commit().await?;
    Ok(secret)
}

/// Issues a token acting for one user; returns the secret (shown once).
pub async fn create_delegated_token(
    pool: &PgPool,
    org_id: Uuid,
    scopes: &[String],
    delegation: Delegation,
) -> Result<String, AdminError> {
    let scopes = parse_scopes(scopes)?;
    let user = delegation.user.trim();
    if user.is_empty() || user.chars().count() > 100 {
        return Err(AdminError::Invalid("the user name must be 1 to 100 characters".into()));
    }
    if !["own", "organization"].contains(&delegation.visibility.as_str()) {
        return Err(AdminError::Invalid("visibility must be own or organization".into()));
    }
    let delegation = Delegation { user: user.to_owned(), ..delegation };
    let secret = new_secret("bo_at_");
    let token_id = Uuid::now_v7();
    let mut tx = pool.begin().await?;
    organization_version(&mut tx, org_id).await?;
    for (kind, ids) in [(LocationKind::CashRegister, &delegation.registers), (LocationKind::Safe, &delegation.safes)] {
        own_locations(&mut tx, org_id, kind, ids).await?;
    }
    let event = OrganizationEvent::DelegatedTokenIssued(DelegatedTokenIssued {
        token_id,
        token_hash: hex::encode(credential_hash(&secret)),
        user: delegation.user.clone(),
        scopes: scopes.clone(),
        visibility: delegation.visibility.clone(),
        registers: delegation.registers.clone(),
        safes: delegation.safes.clone(),
    });
    append_to_organization(&mut tx, org_id, &[event]).await?;
    insert_credential(&mut tx, org_id, token_id, &secret, &scopes, Some(&delegation)).await?;
    tx.commit().await?;
    Ok(secret)
}

/// Refuses `ids` unless each is a location of this kind of the organization: a token never names
/// another organization's locations, and a mistyped id is refused rather than leaving a token that
/// sees nothing.
async fn own_locations(
    conn: &mut PgConnection,
    org_id: Uuid,
    kind: LocationKind,
    ids: &[Uuid],
) -> Result<(), AdminError> {
    if ids.is_empty() {
        return Ok(());
    }
    let found: Vec<Uuid> =
        sqlx::query_scalar("select id from treasury_locations where org_id = $1 and kind = $2 and id = any($3)")
            .bind(org_id)
            .bind(kind.as_str())
            .bind(ids)
            .fetch_all(&mut *conn)
            .await?;
    let unknown: Vec<String> = ids.iter().filter(|id| !found.contains(*id)).map(ToString::to_string).collect();
    if !unknown.is_empty() {
        return Err(AdminError::Invalid(format!(
            "the organization has no {} {}",
            kind.as_str().replace('_', " "),
            unknown.join(", ")
        )));
    }
    Ok(())
}

/// Revokes the API key or delegated token with this secret (or this credential id). Returns the
/// credential's organization and id.
pub async fn revoke(pool: &PgPool, secret_or_id: &str) -> Result<(Uuid, Uuid), AdminError> {
    let mut tx = pool.begin().await?;
    let found: Option<(Uuid, Uuid)> = match Uuid::parse_str(secret_or_id) {
        Ok(id) => {
            sqlx::query_as("select org_id, id from credentials where id = $1 and revoked_at is null for update")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
        }
        Err(_) => {
            sqlx::query_as(
                "select org_id, id from credentials where secret_hash = $1 and revoked_at is null for update",
            )
            .bind(credential_hash(secret_or_id.trim()))
            .fetch_optional(&mut *tx)
            .await?
        }
    };
    let (org_id, credential_id) = found.ok_or(AdminError::UnknownCredential)?;
    sqlx::query("update credentials set revoked_at = now() where id = $1")
        .bind(credential_id)
        .execute(&mut *tx)
        .await?;
    append_to_organization(
        &mut tx,
        org_id,
        &[OrganizationEvent::CredentialRevoked(CredentialRevoked { credential_id })],
    )
    .await?;
    disable_grant_endpoints(&mut tx, org_id, credential_id).await?;
    tx.commit().await?;
    Ok((org_id, credential_id))
}

/// The webhook endpoints a revoked grant owned are disabled with it (their unsent deliveries are then
/// cancelled by the sender).
async fn disable_grant_endpoints(conn: &mut PgConnection, org_id: Uuid, credential_id: Uuid) -> Result<(), AdminError> {
    use crate::webhooks::{EndpointStatus, WebhookEndpoint};
    use events::catalogue::{WebhookEndpointDisabled, WebhookEndpointEvent};
    let owned: Vec<Uuid> = sqlx::query_scalar(
        "select stream_id from events
         where org_id = $1 and stream_type = 'webhook_endpoint' and event_type = 'WebhookEndpointCreated'
           and data->>'owner_credential_id' = $2",
    )
    .bind(org_id)
    .bind(credential_id.to_string())
    .fetch_all(&mut *conn)
    .await?;
    for endpoint in owned {
        let (state, version) = crate::engine::load::<WebhookEndpoint>(conn, org_id, endpoint)
            .await
            .map_err(|e| AdminError::Invalid(e.to_string()))?;
        if state.is_none_or(|s| s.status == EndpointStatus::Disabled) {
            continue;
        }
        let event =
            WebhookEndpointEvent::WebhookEndpointDisabled(WebhookEndpointDisabled { reason: "grant_revoked".into() });
        let stream = StreamRef {
            org_id,
            stream_type: WebhookEndpointEvent::STREAM_TYPE,
            stream_id: endpoint,
            expected_version: version,
        };
        store::append(conn, stream, &[event.to_new_event()?], &Metadata::system("admin")).await?;
    }
    Ok(())
}

/// Changes an organization's rate limits.
pub async fn set_rate_limits(pool: &PgPool, org_id: Uuid, limits: RateLimits) -> Result<(), AdminError> {
    let limits = limits.check()?;
    let mut tx = pool.begin().await?;
    let updated =
        sqlx::query("update organizations set rate_limit_per_minute = $2, rate_limit_per_hour = $3 where id = $1")
            .bind(org_id)
            .bind(limits.per_minute)
            .bind(limits.per_hour)
            .execute(&mut *tx)
            .await?;
    if updated.rows_affected() == 0 {
        return Err(AdminError::UnknownOrganization(org_id));
    }
    let event = OrganizationEvent::RateLimitsChanged(RateLimitsChanged {
        per_minute: limits.per_minute,
        per_hour: limits.per_hour,
    });
    append_to_organization(&mut tx, org_id, &[event]).await?;
    tx.commit().await?;
    Ok(())
}

/// What `admin update-org` changes; `None` keeps the current value (an empty text clears an optional
/// one).
#[derive(Debug, Clone, Default)]
pub struct SettingsChange {
    pub negative_stock: Option<String>,
    pub legal_name: Option<String>,
    pub tax_id: Option<String>,
    pub tax_category: Option<String>,
    pub prices_include_tax: Option<bool>,
    /// The id of the peso ledger account exchange differences are booked to; empty clears it.
    pub exchange_difference_account: Option<String>,
    /// The peso ledger accounts of receivables, payables and payment fees; empty clears each.
    pub receivables_account: Option<String>,
    pub payables_account: Option<String>,
    pub payment_fees_account: Option<String>,
    /// What printed vouchers show: the commercial address, the gross-income tax number (Ingresos
    /// Brutos) and the activity start date (`YYYY-MM-DD`, not in the future); empty clears each.
    pub commercial_address: Option<String>,
    pub gross_income_number: Option<String>,
    pub activity_start: Option<String>,
}

/// The tax categories an issuer may have (they decide the voucher letters it issues).
pub const ISSUER_TAX_CATEGORIES: &[&str] = &["Responsable Inscripto", "Monotributista", "Exento"];

/// The organization as operators see it: its settings beside its identity.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OrganizationAdminView {
    pub organization_id: Uuid,
    pub name: String,
    pub slug: String,
    pub rate_limit_per_minute: i32,
    pub rate_limit_per_hour: i32,
    #[serde(flatten)]
    pub settings: OrganizationSettings,
}

/// An organization's row as an update reads it: what operators see beside its settings.
#[derive(sqlx::FromRow)]
struct SettingsRow {
    name: String,
    slug: String,
    rate_limit_per_minute: i32,
    rate_limit_per_hour: i32,
    #[sqlx(flatten)]
    settings: OrganizationSettings,
}

/// Changes an organization's settings (one `SettingsChanged` event with the whole set, none when
/// nothing changes) and returns the organization as operators see it.
pub async fn update_organization(
    pool: &PgPool,
    org_id: Uuid,
    change: SettingsChange,
) -> Result<OrganizationAdminView, AdminError> {
    let mut tx = pool.begin().await?;
    let row: Option<SettingsRow> = sqlx::query_as(
        "select name, slug, rate_limit_per_minute, rate_limit_per_hour, negative_stock, legal_name, tax_id,
                tax_category, prices_include_tax, exchange_difference_account_id, receivables_account_id,
                payables_account_id, payment_fees_account_id, commercial_address, gross_income_number, activity_start
         from organizations where id = $1 for update",
    )
    .bind(org_id)
    .fetch_optional(&mut *tx)
    .await?;
    let SettingsRow { name, slug, rate_limit_per_minute, rate_limit_per_hour, settings: current } =
        row.ok_or(AdminError::UnknownOrganization(org_id))?;
    let mut accounts = Vec::new();
    for (flag, text) in [
        ("--exchange-difference-account", &change.exchange_difference_account),
        ("--receivables-account", &change.receivables_account),
        ("--payables-account", &change.payables_account),
        ("--payment-fees-account", &change.payment_fees_account),
    ] {
        accounts.push(match text.as_deref().map(str::trim) {
            None => None,
            Some("") => Some(None),
            Some(text) => Some(Some(peso_account(&mut tx, org_id, flag, text).await?)),
        });
    }
    let mut next = apply_settings(&current, change)?;
    let targets = [
        &mut next.exchange_difference_account_id,
        &mut next.receivables_account_id,
        &mut next.payables_account_id,
        &mut next.payment_fees_account_id,
    ];
    for (target, account) in targets.into_iter().zip(accounts) {
        if let Some(account) = account {
            *target = account;
        }
    }
    if next != current {
        sqlx::query(
            "update organizations set negative_stock = $2, legal_name = $3, tax_id = $4, tax_category = $5,
                    prices_include_tax = $6, exchange_difference_account_id = $7, receivables_account_id = $8,
                    payables_account_id = $9, payment_fees_account_id = $10, commercial_address = $11,
                    gross_income_number = $12, activity_start = $13
             where id = $1",
        )
        .bind(org_id)
        .bind(next.negative_stock)
        .bind(&next.legal_name)
        .bind(&next.tax_id)
        .bind(&next.tax_category)
        .bind(next.prices_include_tax)
        .bind(next.exchange_difference_account_id)
        .bind(next.receivables_account_id)
        .bind(next.payables_account_id)
        .bind(next.payment_fees_account_id)
        .bind(&next.commercial_address)
        .bind(&next.gross_income_number)
        .bind(next.activity_start)
        .execute(&mut *tx)
        .await?;
        append_to_organization(&mut tx, org_id, &[OrganizationEvent::SettingsChanged(next.clone())]).await?;
    }
    tx.commit().await?;
    Ok(OrganizationAdminView {
        organization_id: org_id,
        name,
        slug,
        rate_limit_per_minute,
        rate_limit_per_hour,
        settings: next,
    })
}

/// The account `text` (given with `flag`) names, when it is an active peso ledger account of the
/// organization.
async fn peso_account(conn: &mut PgConnection, org_id: Uuid, flag: &str, text: &str) -> Result<Uuid, AdminError> {
    let id: Uuid =
        text.parse().map_err(|_| AdminError::Invalid(format!("{flag} must be a ledger account id, not {text:?}")))?;
    let found: Option<(bool, String)> =
        sqlx::query_as("select is_active, currency from ledger_accounts where org_id = $1 and id = $2")
            .bind(org_id)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    match found {
        None => Err(AdminError::Invalid(format!("the organization has no ledger account {id}"))),
        Some((false, _)) => Err(AdminError::Invalid(format!("the ledger account {id} is inactive"))),
        Some((true, currency)) if currency != "PES" => {
            Err(AdminError::Invalid(format!("the ledger account {id} is in {currency}: {flag} takes a peso account")))
        }
        Some(_) => Ok(id),
    }
}

/// The settings after `change`, each value checked.
fn apply_settings(current: &OrganizationSettings, change: SettingsChange) -> Result<OrganizationSettings, AdminError> {
    let mut next = current.clone();
    if let Some(policy) = change.negative_stock {
        next.negative_stock = NegativeStock::parse(&policy)
            .ok_or_else(|| AdminError::Invalid(format!("--negative-stock must be allow or block, not {policy:?}")))?;
    }
    let optional = |text: String| {
        let text = text.trim().to_owned();
        (!text.is_empty()).then_some(text)
    };
    if let Some(name) = change.legal_name {
        let name = optional(name);
        if name.as_ref().is_some_and(|n| n.chars().count() > 150) {
            return Err(AdminError::Invalid("the legal name must be at most 150 characters".into()));
        }
        next.legal_name = name;
    }
    if let Some(tax_id) = change.tax_id {
        let tax_id = optional(tax_id);
        if let Some(digits) = &tax_id
            && !crate::validate::is_valid_cuit(digits)
        {
            return Err(AdminError::Invalid(format!("{digits:?} is not a valid CUIT (11 digits, valid check digit)")));
        }
        next.tax_id = tax_id;
    }
    if let Some(category) = change.tax_category {
        let category = optional(category);
        if let Some(text) = &category
            && !ISSUER_TAX_CATEGORIES.contains(&text.as_str())
        {
            return Err(AdminError::Invalid(format!(
                "--tax-category must be one of {}, not {text:?}",
                ISSUER_TAX_CATEGORIES.join(", ")
            )));
        }
        next.tax_category = category;
    }
    if let Some(included) = change.prices_include_tax {
        next.prices_include_tax = included;
    }
    if let Some(address) = change.commercial_address {
        let address = optional(address);
        if address.as_ref().is_some_and(|a| a.chars().count() > 200) {
            return Err(AdminError::Invalid("the commercial address must be at most 200 characters".into()));
        }
        next.commercial_address = address;
    }
    if let Some(number) = change.gross_income_number {
        let number = optional(number);
        if number.as_ref().is_some_and(|n| n.chars().count() > 30) {
            return Err(AdminError::Invalid("the gross-income tax number must be at most 30 characters".into()));
        }
        next.gross_income_number = number;
    }
    if let Some(start) = change.activity_start {
        next.activity_start = match optional(start) {
            None => None,
            Some(text) => {
                let date = events::catalogue::parse_date(&text).ok_or_else(|| {
                    AdminError::Invalid(format!("--activity-start must be a date YYYY-MM-DD, not {text:?}"))
                })?;
                if date > events::catalogue::ar_date(time::OffsetDateTime::now_utc()) {
                    return Err(AdminError::Invalid("--activity-start cannot be after today (UTC-3)".into()));
                }
                Some(date)
            }
        };
    }
    Ok(next)
}

async fn insert_point_of_sale(
    conn: &mut PgConnection,
    org_id: Uuid,
    number: i32,
    name: Option<&str>,
    kind: &str,
) -> Result<Uuid, AdminError> {
    let fields = point_of_sale_fields(number, name, kind)?;
    let id = Uuid::now_v7();
    let inserted = sqlx::query(
        "insert into points_of_sale (org_id, id, number, kind) values ($1, $2, $3, $4) on conflict (org_id, number) do nothing",
    )
    .bind(org_id)
    .bind(id)
    .bind(number)
    .bind(kind)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(AdminError::Invalid(format!("point of sale {number} already exists")));
    }
    let stream = StreamRef { org_id, stream_type: PointOfSaleEvent::STREAM_TYPE, stream_id: id, expected_version: 0 };
    let event = PointOfSaleEvent::created(fields);
    store::append(conn, stream, &[event.to_new_event()?], &Metadata::system("admin")).await?;
    Ok(id)
}

/// Creates a point of sale with a number not yet used by the organization: `electronic` (the tax
/// authority numbers its vouchers) or `manual`.
pub async fn create_point_of_sale(
    pool: &PgPool,
    org_id: Uuid,
    number: i32,
    name: Option<&str>,
    kind: &str,
) -> Result<Uuid, AdminError> {
    let mut tx = pool.begin().await?;
    organization_version(&mut tx, org_id).await?;
    let id = insert_point_of_sale(&mut tx, org_id, number, name, kind).await?;
    tx.commit().await?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_changes_are_checked_and_keep_what_is_not_named() {
        let current = OrganizationSettings::default();
        let blocked =
            apply_settings(&current, SettingsChange { negative_stock: Some("block".into()), ..Default::default() })
                .expect("valid");
        assert_eq!(blocked.negative_stock, NegativeStock::Block);
        assert!(blocked.prices_include_tax, "untouched");
        let fiscal = SettingsChange {
            tax_id: Some("20267565393".into()),
            tax_category: Some("Responsable Inscripto".into()),
            legal_name: Some("  Almacén SA ".into()),
            ..Default::default()
        };
        let fiscal = apply_settings(&blocked, fiscal).expect("valid");
        assert_eq!(fiscal.legal_name.as_deref(), Some("Almacén SA"));
        assert_eq!(fiscal.negative_stock, NegativeStock::Block);
        let cleared = apply_settings(&fiscal, SettingsChange { legal_name: Some(" ".into()), ..Default::default() });
        assert_eq!(cleared.expect("valid").legal_name, None);
        for bad in [
            SettingsChange { negative_stock: Some("maybe".into()), ..Default::default() },
            SettingsChange { tax_id: Some("20267565392".into()), ..Default::default() },
            SettingsChange { tax_category: Some("Consumidor Final".into()), ..Default::default() },
        ] {
            assert!(apply_settings(&current, bad).is_err());
        }
    }

    #[test]
    fn slugs_are_lowercase_words_joined_by_dashes() {
        assert_eq!(slugify("  Almacén Don José S.A. "), "almac-n-don-jos-s-a");
        assert_eq!(slugify("!!!"), "org");
    }

    #[test]
    fn secrets_are_unique_and_hashes_stable() {
        let a = new_api_key_secret();
        assert_ne!(a, new_api_key_secret());
        assert_eq!(credential_hash(&a), credential_hash(&a));
    }

    #[test]
    fn scopes_are_checked_and_deduplicated() {
        let scopes = parse_scopes(&["customers:read".into(), " customers:read".into(), "sales:write".into()]);
        assert_eq!(scopes.expect("valid"), vec!["customers:read", "sales:write"]);
        assert!(parse_scopes(&["customers:delete".into()]).is_err());
        assert!(parse_scopes(&[]).is_err());
    }
}
