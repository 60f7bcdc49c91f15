//! `backoffice fiscal check --org ID`: whether an organization can invoice at the authority, asked of
//! the authority itself. In order: its CUIT, its certificate, `FEDummy`, a login ticket, the points of
//! sale the authority has enabled for the CUIT against the organization's electronic ones, and the last
//! authorized number of each series it issues beside the last the service knows. Every problem found
//! is named; none means the organization can invoice.

use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{FiscalClient, Issuer, issuer_may_issue};

/// What the check found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub organization_id: Uuid,
    pub cuit: Option<String>,
    pub certificate: Option<Certificate>,
    /// `OK`, or what `FEDummy` said.
    pub authority: String,
    /// Whether a login ticket was obtained (or is held).
    pub ticket: bool,
    /// The points of sale the authority has enabled for the CUIT (in use: not blocked, not withdrawn).
    pub enabled_at_authority: Vec<i32>,
    pub points_of_sale: Vec<PointOfSale>,
    /// What stops the organization from invoicing; empty when it can.
    pub problems: Vec<String>,
    /// What deserves attention but does not stop it.
    pub warnings: Vec<String>,
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Certificate {
    pub subject: String,
    #[serde(with = "time::serde::rfc3339")]
    pub not_after: OffsetDateTime,
}

/// One of the organization's electronic points of sale.
#[derive(Debug, Clone, Serialize)]
pub struct PointOfSale {
    pub number: i32,
    pub enabled_at_authority: bool,
    pub series: Vec<Series>,
}

/// A series (point of sale and voucher type) the organization issues.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub voucher_type: i32,
    /// The authority's last authorized number (`None` when it could not be asked).
    pub authority_last: Option<i64>,
    /// The last number the authority approved to this service.
    pub service_last: i64,
}

/// The voucher types (invoice, debit note, credit note) of each letter.
const TYPES: [(&str, [i32; 3]); 3] = [("A", [1, 2, 3]), ("B", [6, 7, 8]), ("C", [11, 12, 13])];
/// A certificate this close to its end is a warning.
const EXPIRY_WARNING: time::Duration = time::Duration::days(30);

/// Runs the check for `org_id` through `client`.
pub async fn check(pool: &PgPool, client: &FiscalClient, org_id: Uuid) -> Result<Report, sqlx::Error> {
    let mut report = Report {
        organization_id: org_id,
        cuit: None,
        certificate: None,
        authority: String::new(),
        ticket: false,
        enabled_at_authority: vec![],
        points_of_sale: vec![],
        problems: vec![],
        warnings: vec![],
        ok: false,
    };
    let profile: Option<(Option<String>, Option<String>)> =
        sqlx::query_as("select tax_id, tax_category from organizations where id = $1")
            .bind(org_id)
            .fetch_optional(pool)
            .await?;
    let Some((cuit, category)) = profile else {
        report.problems.push(format!("no organization {org_id}"));
        return Ok(report);
    };
    report.cuit.clone_from(&cuit);
    let issuer = cuit.as_deref().and_then(|cuit| Issuer::new(org_id, cuit.parse().ok()?).ok());
    if issuer.is_none() {
        report.problems.push("the organization has no valid CUIT: set it with `admin update-org --tax-id`".into());
    }
    let certificate: Option<(String, OffsetDateTime)> =
        sqlx::query_as("select subject, not_after from fiscal_certificates where org_id = $1")
            .bind(org_id)
            .fetch_optional(pool)
            .await?;
    let now = OffsetDateTime::now_utc();
    match certificate {
        None => report.problems.push(
            "the organization has no certificate for the tax authority: set one with `admin set-fiscal-certificate`"
                .into(),
        ),
        Some((_, not_after)) if not_after <= now => {
            report.problems.push(format!("the organization's certificate expired on {not_after}"));
        }
        Some((_, not_after)) if not_after - now < EXPIRY_WARNING => {
            report.warnings.push(format!("the organization's certificate expires on {not_after}"));
        }
        Some(_) => {}
    }
    if let Some((subject, not_after)) = certificate {
        report.certificate = Some(Certificate { subject, not_after });
    }
    report.authority = match client.health().await {
        Ok(()) => "OK".to_owned(),
        Err(error) => {
            report.problems.push(format!("the tax authority's service: {error}"));
            error.to_string()
        }
    };
    let Some(issuer) = issuer.filter(|_| report.problems.is_empty()) else {
        return Ok(report);
    };
    if let Err(error) = client.points_of_sale(issuer).await.map(|points| {
        report.enabled_at_authority = points.iter().filter(|p| p.in_use()).map(|p| p.number).collect();
    }) {
        report.problems.push(format!("the points of sale enabled at the authority: {error}"));
        return Ok(report);
    }
    report.ticket = true;
    let electronic: Vec<(Uuid, i32)> = sqlx::query_as(
        "select id, number from points_of_sale where org_id = $1 and kind = 'electronic' order by number",
    )
    .bind(org_id)
    .fetch_all(pool)
    .await?;
    if electronic.is_empty() {
        report.warnings.push("the organization has no electronic point of sale".into());
    }
    let category = category.unwrap_or_default();
    let types: Vec<i32> =
        TYPES.iter().filter(|(letter, _)| issuer_may_issue(&category, letter)).flat_map(|(_, types)| *types).collect();
    for (id, number) in electronic {
        let enabled = report.enabled_at_authority.contains(&number);
        if !enabled {
            report.problems.push(format!(
                "point of sale {number} is electronic here but not enabled at the tax authority for CUIT {}",
                issuer.cuit()
            ));
        }
        let mut series = Vec::new();
        for &voucher_type in &types {
            let service_last: i64 = sqlx::query_scalar(
                "select coalesce(max(last), 0) from document_numbers where org_id = $1 and series = $2",
            )
            .bind(org_id)
            .bind(super::series_row(id, voucher_type))
            .fetch_one(pool)
            .await?;
            let authority_last = if enabled {
                match client.last_authorized(issuer, number, voucher_type).await {
                    Ok(last) => Some(last),
                    Err(error) => {
                        report.problems.push(format!("point of sale {number}, voucher type {voucher_type}: {error}"));
                        None
                    }
                }
            } else {
                None
            };
            if let Some(last) = authority_last.filter(|last| *last < service_last) {
                report.problems.push(format!(
                    "point of sale {number}, voucher type {voucher_type}: the authority's last number {last} is behind \
                     the service's {service_last} (another CUIT or environment?)"
                ));
            }
            series.push(Series { voucher_type, authority_last, service_last });
        }
        report.points_of_sale.push(PointOfSale { number, enabled_at_authority: enabled, series });
    }
    report.ok = report.problems.is_empty();
    Ok(report)
}
