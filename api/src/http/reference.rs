//! The organization resource and the reference data (tax rates, voucher types): Style A.

use crate::cache::Resource;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::presence::Nullable;
use crate::http::resource::{Call, Kind, PageParams};
use crate::http::routes_group::routes;
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use events::domain::VatRate;
use poem::web::Data;
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use serde::Serialize;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The organization a credential acts on.
#[derive(Debug, Serialize, Object)]
pub struct OrganizationData {
    /// Always `organization`.
    pub object: String,
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub legal_name: Nullable<String>,
    pub logo_url: Nullable<String>,
    pub tax_id: Nullable<String>,
    pub tax_id_type: Nullable<String>,
    pub tax_category: Nullable<String>,
    pub person_type: Nullable<String>,
    pub address: Nullable<String>,
    pub apartment: Nullable<String>,
    pub city: Nullable<String>,
    pub province_id: Nullable<String>,
    pub postal_code: Nullable<String>,
    pub phone: Nullable<String>,
    pub email: Nullable<String>,
    pub rounding_preference: Nullable<String>,
    pub country: String,
    /// Always `PES`.
    pub default_currency: String,
    /// Always `UTC-3`.
    pub timezone: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Style A single resource.
#[derive(Debug, Serialize, Object)]
pub struct OrganizationEnvelope {
    pub request_id: String,
    pub data: OrganizationData,
}

/// A VAT rate the tax authority knows.
#[derive(Debug, Clone, Serialize, Object)]
pub struct TaxRateReference {
    /// Always `tax_rate_reference`.
    pub object: String,
    pub code: i32,
    pub percentage: f64,
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum DocumentKind {
    Invoice,
    DebitNote,
    CreditNote,
    Receipt,
    CashSaleNote,
    Quote,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Enum)]
pub enum Letter {
    A,
    B,
    C,
    E,
    M,
}

/// A voucher type.
#[derive(Debug, Clone, Serialize, Object)]
pub struct VoucherTypeReference {
    /// Always `voucher_type_reference`.
    pub object: String,
    pub code: i32,
    pub abbreviation: String,
    pub document_kind: DocumentKind,
    /// Null for vouchers without a letter (code 90).
    pub letter: Nullable<Letter>,
    pub description: String,
}

use DocumentKind::{CashSaleNote, CreditNote, DebitNote, Invoice, Quote, Receipt};
use Letter::{A, B, C, E, M};

// The operations this module serves (see `operations.rs`).
operations! {
    ReferenceApi;
    GET_ORGANIZATION = read("getOrganization", None);
    LIST_TAX_RATES = read("listTaxRates", None);
    LIST_VOUCHER_TYPES = read("listVoucherTypes", None);
}

/// Voucher types: code, abbreviation, kind, letter, description.
const VOUCHER_TYPES: &[(i32, &str, DocumentKind, Option<Letter>, &str)] = &[
    (1, "FA", Invoice, Some(A), "Factura A"),
    (2, "NDA", DebitNote, Some(A), "Nota de débito A"),
    (3, "NCA", CreditNote, Some(A), "Nota de crédito A"),
    (4, "RA", Receipt, Some(A), "Recibo A"),
    (5, "NVA", CashSaleNote, Some(A), "Nota de venta al contado A"),
    (6, "FB", Invoice, Some(B), "Factura B"),
    (7, "NDB", DebitNote, Some(B), "Nota de débito B"),
    (8, "NCB", CreditNote, Some(B), "Nota de crédito B"),
    (9, "RB", Receipt, Some(B), "Recibo B"),
    (10, "NVB", CashSaleNote, Some(B), "Nota de venta al contado B"),
    (11, "FC", Invoice, Some(C), "Factura C"),
    (12, "NDC", DebitNote, Some(C), "Nota de débito C"),
    (13, "NCC", CreditNote, Some(C), "Nota de crédito C"),
    (15, "RC", Receipt, Some(C), "Recibo C"),
    (19, "FE", Invoice, Some(E), "Factura de exportación E"),
    (20, "NDE", DebitNote, Some(E), "Nota de débito por operaciones con el exterior E"),
    (21, "NCE", CreditNote, Some(E), "Nota de crédito por operaciones con el exterior E"),
    (51, "FM", Invoice, Some(M), "Factura M"),
    (52, "NDM", DebitNote, Some(M), "Nota de débito M"),
    (53, "NCM", CreditNote, Some(M), "Nota de crédito M"),
    (54, "RM", Receipt, Some(M), "Recibo M"),
    (90, "PRE", Quote, None, "Comprobante tipo presupuesto (precio con IVA, no se informa a la autoridad fiscal)"),
    (201, "FCE A", Invoice, Some(A), "Factura de crédito electrónica MiPyMEs A"),
    (202, "NDFCE A", DebitNote, Some(A), "Nota de débito electrónica MiPyMEs A"),
    (203, "NCFCE A", CreditNote, Some(A), "Nota de crédito electrónica MiPyMEs A"),
    (206, "FCE B", Invoice, Some(B), "Factura de crédito electrónica MiPyMEs B"),
    (207, "NDFCE B", DebitNote, Some(B), "Nota de débito electrónica MiPyMEs B"),
    (208, "NCFCE B", CreditNote, Some(B), "Nota de crédito electrónica MiPyMEs B"),
    (211, "FCE C", Invoice, Some(C), "Factura de crédito electrónica MiPyMEs C"),
    (212, "NDFCE C", DebitNote, Some(C), "Nota de débito electrónica MiPyMEs C"),
    (213, "NCFCE C", CreditNote, Some(C), "Nota de crédito electrónica MiPyMEs C"),
];

/// Each voucher type's code and description.
pub fn voucher_type_names() -> Vec<(i32, &'static str)> {
    VOUCHER_TYPES.iter().map(|(code, _, _, _, description)| (*code, *description)).collect()
}

responses! {
    OrganizationResponse: Ok(RawJson<OrganizationEnvelope>) = 200, "The organization.";
    TaxRatesResponse: Ok(RawJson<ListEnvelope<TaxRateReference>>) = 200, "Tax rates by code.";
    VoucherTypesResponse: Ok(RawJson<ListEnvelope<VoucherTypeReference>>) = 200, "Voucher types by code.";
}

/// A static list paged like every v1 list (sorted by code; the cursor is the last code).
fn static_page<T>(call: &Call<'_>, url: &str, items: Vec<(i32, T)>, params: PageParams) -> Result<Bytes, ApiError>
where
    T: Type + ParseFromJSON + ToJSON + Serialize + Send + Sync,
{
    let page = call.page(params, url)?;
    let after: Option<i32> = page.after().and_then(|a| a.parse().ok());
    let mut rest: Vec<(i32, T)> = items.into_iter().filter(|(code, _)| after.is_none_or(|a| *code > a)).collect();
    let next = page.finish(&mut rest, |(code, _)| code.to_string());
    let has_more = next.is_some();
    let data = rest.into_iter().map(|(_, item)| item).collect();
    Style::a(&ListEnvelope::new(call.request_id.to_owned(), url, data, has_more, next))
}

/// The caller's organization, as the shared handler sequence sees it (a single read, cached).
const ORGANIZATION: Kind =
    Kind::new("organization", ProjectionId::Organizations, "/api/v1/organization", "/api/v1/organization")
        .cached(Resource::Organization);

pub struct ReferenceApi;

routes! {
    #[OpenApi(prefix_path = "/api/v1")]
    ReferenceApi {
        /// The organization
        ///
        /// Any valid credential may read it: the recommended first call to check credentials.
        #[oai(path = "/organization", method = "get", operation_id = "getOrganization", tag = "ApiTags::Organization")]
        async fn organization(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
        ) -> Result<OrganizationResponse, ApiError> {
            let call = Call::new(GET_ORGANIZATION, &state, &auth, request_id)?;
            let data = call
                .cached(&ORGANIZATION, call.org_id(), async |org| {
                    let Some(row) = projections::organizations::get(&state.pool, org).await? else { return Ok(None) };
                    let data = OrganizationData {
                        object: "organization".into(),
                        id: row.id,
                        name: row.name,
                        slug: row.slug,
                        tax_id_type: row.tax_id.as_ref().map(|_| "CUIL/CUIT".to_owned()).into(),
                        legal_name: row.legal_name.into(),
                        logo_url: None.into(),
                        tax_id: row.tax_id.into(),
                        tax_category: row.tax_category.into(),
                        person_type: None.into(),
                        address: None.into(),
                        apartment: None.into(),
                        city: None.into(),
                        province_id: None.into(),
                        postal_code: None.into(),
                        phone: None.into(),
                        email: None.into(),
                        rounding_preference: None.into(),
                        country: row.country,
                        default_currency: "PES".into(),
                        timezone: "UTC-3".into(),
                        created_at: ar_time(row.created_at),
                        updated_at: ar_time(row.updated_at),
                    };
                    Ok(Some(Style::a(&data)?))
                })
                .await?;
            // The cached part is `data`; the envelope carries this request's id.
            let mut body = Vec::with_capacity(data.len() + 64);
            body.extend_from_slice(b"{\"request_id\":");
            body.extend_from_slice(&serde_json::to_vec(&request_id.0).unwrap_or_default());
            body.extend_from_slice(b",\"data\":");
            body.extend_from_slice(&data);
            body.push(b'}');
            Ok(OrganizationResponse::Ok(RawJson::new(body.into())))
        }

    }
    cursor_lists: {
        /// Tax rates
        ///
        /// The VAT rates of the tax authority, by code. Any valid credential.
        tax_rates("/tax-rates", "listTaxRates", tag = "ApiTags::Reference")
            -> TaxRatesResponse = LIST_TAX_RATES, tax_rates {};

        /// Voucher types
        ///
        /// The voucher types of the tax authority plus code 90 (quote-type voucher). Any valid credential.
        voucher_types("/voucher-types", "listVoucherTypes", tag = "ApiTags::Reference")
            -> VoucherTypesResponse = LIST_VOUCHER_TYPES, voucher_types {};
    }
}

/// The VAT rates by code.
async fn tax_rates(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    let items = VatRate::all()
        .map(|rate| {
            let item = TaxRateReference {
                object: "tax_rate_reference".into(),
                code: rate.code(),
                percentage: rate.percent(),
                description: rate.description().into(),
            };
            (rate.code(), item)
        })
        .collect();
    static_page(call, "/api/v1/tax-rates", items, params)
}

/// The voucher types by code.
async fn voucher_types(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    let items = VOUCHER_TYPES
        .iter()
        .map(|(code, abbreviation, kind, letter, description)| {
            let item = VoucherTypeReference {
                object: "voucher_type_reference".into(),
                code: *code,
                abbreviation: (*abbreviation).into(),
                document_kind: *kind,
                letter: (*letter).into(),
                description: (*description).into(),
            };
            (*code, item)
        })
        .collect();
    static_page(call, "/api/v1/voucher-types", items, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_data_matches_the_fiscal_reference() {
        assert_eq!(VatRate::from_code(5).map(VatRate::percent), Ok(21.0));
        assert_eq!(VatRate::from_code(4).map(VatRate::percent), Ok(10.5));
        assert!(VatRate::from_code(7).is_err());
        let codes: Vec<i32> = VOUCHER_TYPES.iter().map(|v| v.0).collect();
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "sorted by code");
        assert!(codes.contains(&90) && codes.contains(&213));
        let quote = VOUCHER_TYPES.iter().find(|v| v.0 == 90).expect("code 90");
        assert_eq!(quote.3, None);
    }
}
