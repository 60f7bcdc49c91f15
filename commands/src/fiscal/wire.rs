//! The WSFEv1 vocabulary: one struct per request and answer of the operations we use, with the
//! authority's own element names, written and read as XML by serde (quick-xml) inside the SOAP
//! envelope of [`super::soap`]. The adapter writes requests and reads answers; the simulator (in
//! `api`) reads and writes the same structs, so both sides agree on one spelling.
//!
//! Every list is wrapped in an element of its own, as the service's schema has it
//! (`<Iva><AlicIva>…</AlicIva></Iva>`, `<Errors><Err>…</Err></Errors>`): the field is a `Vec` under
//! the outer name, written and read through the inner one by a [`wrapped`] module. Amounts are exact
//! decimals ([`Amount`], [`Rate`]) and dates `yyyymmdd` text.

use serde::{Deserialize, Serialize};
use time::Date;

use super::decimal::{Amount, Rate, yyyymmdd_opt};

/// The serde modules of the wrapped lists: `#[serde(rename = "Errors", with = "wrapped::err")]` reads
/// and writes `<Errors><Err>…</Err><Err>…</Err></Errors>` as a `Vec` of what each `<Err>` holds.
pub mod wrapped {
    macro_rules! wrapped {
        ($($module:ident: $item:tt),* $(,)?) => {$(
            #[doc = concat!("A list whose items are `<", $item, ">` elements.")]
            pub mod $module {
                use serde::{Deserialize, Deserializer, Serialize, Serializer};

                #[derive(Serialize)]
                struct Out<'a, T> {
                    #[serde(rename = $item)]
                    items: &'a [T],
                }

                #[derive(Deserialize)]
                struct In<T> {
                    #[serde(rename = $item, default = "Vec::new")]
                    items: Vec<T>,
                }

                pub fn serialize<T: Serialize, S: Serializer>(items: &[T], serializer: S) -> Result<S::Ok, S::Error> {
                    Out { items }.serialize(serializer)
                }

                pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
                    deserializer: D,
                ) -> Result<Vec<T>, D::Error> {
                    Ok(In::deserialize(deserializer)?.items)
                }
            }
        )*};
    }

    wrapped! {
        err: "Err",
        obs: "Obs",
        evt: "Evt",
        alic_iva: "AlicIva",
        cbte_asoc: "CbteAsoc",
        tributo: "Tributo",
        det_request: "FECAEDetRequest",
        det_response: "FECAEDetResponse",
        pto_venta: "PtoVenta",
    }
}

/// `Auth`: who asks, with the ticket of the authority's authentication service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    #[serde(rename = "Token")]
    pub token: String,
    #[serde(rename = "Sign")]
    pub sign: String,
    /// The issuer's CUIT.
    #[serde(rename = "Cuit")]
    pub cuit: i64,
}

/// `Err`, `Obs` and `Evt`: a coded message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    #[serde(rename = "Code")]
    pub code: i64,
    #[serde(rename = "Msg")]
    pub msg: String,
}

impl Message {
    pub fn new(code: i64, msg: impl Into<String>) -> Self {
        Message { code, msg: msg.into() }
    }
}

/// `FEDummy`'s answer: each server `OK` when healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DummyResponse {
    #[serde(rename = "AppServer")]
    pub app_server: String,
    #[serde(rename = "DbServer")]
    pub db_server: String,
    #[serde(rename = "AuthServer")]
    pub auth_server: String,
}

/// `FEDummy`'s request: no fields, no `Auth`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DummyRequest {}

/// The request of an operation that asks nothing but who asks: `FEParamGetPtosVenta`,
/// `FECompTotXRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthOnly {
    #[serde(rename = "Auth", default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
}

/// `FEParamGetPtosVenta`'s answer: the points of sale the authority has enabled for the CUIT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointsOfSaleResponse {
    #[serde(rename = "ResultGet", default, with = "wrapped::pto_venta", skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<PointOfSale>,
    #[serde(rename = "Errors", default, with = "wrapped::err", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Message>,
    #[serde(rename = "Events", default, with = "wrapped::evt", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Message>,
}

/// `PtoVenta`: one enabled point of sale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointOfSale {
    #[serde(rename = "Nro")]
    pub number: i32,
    /// How it issues: `CAE - ...` for electronic vouchers authorized one by one.
    #[serde(rename = "EmisionTipo", default)]
    pub emission_type: String,
    /// `S` when blocked, `N` otherwise.
    #[serde(rename = "Bloqueado", default)]
    pub blocked: String,
    /// The date it was withdrawn (`yyyymmdd`), `NULL` or empty while in use.
    #[serde(rename = "FchBaja", default)]
    pub withdrawn: String,
}

impl PointOfSale {
    /// Whether vouchers may be issued at it: not blocked and not withdrawn.
    pub fn in_use(&self) -> bool {
        !self.blocked.eq_ignore_ascii_case("S") && matches!(self.withdrawn.trim(), "" | "NULL")
    }
}

/// `FECompTotXRequest`'s answer: the most vouchers one `FECAESolicitar` may carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchLimitResponse {
    #[serde(rename = "RegXReq", default)]
    pub per_request: i32,
    #[serde(rename = "Errors", default, with = "wrapped::err", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Message>,
    #[serde(rename = "Events", default, with = "wrapped::evt", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Message>,
}

/// `FECompUltimoAutorizado`'s request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastAuthorizedRequest {
    /// Optional on the wire only so the simulator can answer its absence as the authority does.
    #[serde(rename = "Auth", default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    #[serde(rename = "PtoVta")]
    pub point_of_sale: i32,
    #[serde(rename = "CbteTipo")]
    pub voucher_type: i32,
}

/// `FECompUltimoAutorizado`'s answer: `CbteNro` 0 when the series has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastAuthorizedResponse {
    #[serde(rename = "PtoVta", default)]
    pub point_of_sale: i32,
    #[serde(rename = "CbteTipo", default)]
    pub voucher_type: i32,
    #[serde(rename = "CbteNro", default)]
    pub number: i64,
    #[serde(rename = "Errors", default, with = "wrapped::err", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Message>,
    #[serde(rename = "Events", default, with = "wrapped::evt", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Message>,
}

/// `FECAESolicitar`'s request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaeRequest {
    #[serde(rename = "Auth", default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    #[serde(rename = "FeCAEReq")]
    pub request: FeCaeReq,
}

/// `FeCAEReq`: the header and the vouchers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeCaeReq {
    #[serde(rename = "FeCabReq")]
    pub header: CabRequest,
    #[serde(rename = "FeDetReq", with = "wrapped::det_request")]
    pub details: Vec<DetRequest>,
}

/// `FeCabReq`: how many vouchers, of which point of sale and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CabRequest {
    #[serde(rename = "CantReg")]
    pub count: i32,
    #[serde(rename = "PtoVta")]
    pub point_of_sale: i32,
    #[serde(rename = "CbteTipo")]
    pub voucher_type: i32,
}

/// Writes a struct of the fields of a voucher as `FECAEDetRequest` states them, in its order, followed by
/// the struct's own: [`DetRequest`] is those alone, [`StoredDetail`] (`ResultGet`) repeats them with
/// what the authority adds. They repeat them rather than flattening a `DetRequest`, since a flattened
/// struct cannot read exact decimals; this is their one list. With `identity:` only the fields that
/// name the voucher (concept to date), which [`DetResponse`] repeats before its outcome.
macro_rules! voucher_fields {
    (identity: $(#[$meta:meta])* pub struct $name:ident { $($own:tt)* }) => {
        $(#[$meta])*
        pub struct $name {
            /// 1 products, 2 services, 3 both.
            #[serde(rename = "Concepto")]
            pub concept: i32,
            #[serde(rename = "DocTipo")]
            pub doc_type: i32,
            #[serde(rename = "DocNro")]
            pub doc_number: i64,
            #[serde(rename = "CbteDesde")]
            pub number_from: i64,
            #[serde(rename = "CbteHasta")]
            pub number_to: i64,
            /// Absent from a request means the day it is sent.
            #[serde(rename = "CbteFch", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
            pub date: Option<Date>,
            $($own)*
        }
    };
    ($(#[$meta:meta])* pub struct $name:ident { $($own:tt)* }) => {
        voucher_fields! {
            identity:
            $(#[$meta])*
            pub struct $name {
                #[serde(rename = "ImpTotal")]
                pub total: Amount,
                /// Not taxed.
                #[serde(rename = "ImpTotConc")]
                pub non_taxed: Amount,
                /// Taxed net.
                #[serde(rename = "ImpNeto")]
                pub net: Amount,
                #[serde(rename = "ImpOpEx")]
                pub exempt: Amount,
                /// Other taxes.
                #[serde(rename = "ImpTrib")]
                pub other_taxes: Amount,
                #[serde(rename = "ImpIVA")]
                pub vat: Amount,
                #[serde(rename = "FchServDesde", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
                pub service_from: Option<Date>,
                #[serde(rename = "FchServHasta", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
                pub service_to: Option<Date>,
                #[serde(rename = "FchVtoPago", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
                pub payment_due: Option<Date>,
                #[serde(rename = "MonId")]
                pub currency: String,
                #[serde(rename = "MonCotiz", default, skip_serializing_if = "Option::is_none")]
                pub rate: Option<Rate>,
                /// Mandatory since RG 5616; its absence is an observation (10246), not a rejection.
                #[serde(rename = "CondicionIVAReceptorId", default, skip_serializing_if = "Option::is_none")]
                pub receiver_vat_condition: Option<i32>,
                #[serde(rename = "CbtesAsoc", default, with = "wrapped::cbte_asoc", skip_serializing_if = "Vec::is_empty")]
                pub associated: Vec<AssociatedVoucher>,
                #[serde(rename = "Tributos", default, with = "wrapped::tributo", skip_serializing_if = "Vec::is_empty")]
                pub other_tax_lines: Vec<OtherTax>,
                #[serde(rename = "Iva", default, with = "wrapped::alic_iva", skip_serializing_if = "Vec::is_empty")]
                pub vat_lines: Vec<VatRate>,
                $($own)*
            }
        }
    };
}

voucher_fields! {
    /// `FECAEDetRequest`: one voucher.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct DetRequest {}
}

/// `AlicIva`: the VAT of one rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VatRate {
    /// The VAT rate code (3 = 0%, 4 = 10.5%, 5 = 21%, 6 = 27%, 8 = 5%, 9 = 2.5%).
    #[serde(rename = "Id")]
    pub code: i32,
    #[serde(rename = "BaseImp")]
    pub base: Amount,
    #[serde(rename = "Importe")]
    pub amount: Amount,
}

/// `CbteAsoc`: the voucher a credit or debit note corrects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssociatedVoucher {
    #[serde(rename = "Tipo")]
    pub voucher_type: i32,
    #[serde(rename = "PtoVta")]
    pub point_of_sale: i32,
    #[serde(rename = "Nro")]
    pub number: i64,
    /// The issuer of the associated voucher, when not the same.
    #[serde(rename = "Cuit", default, skip_serializing_if = "Option::is_none")]
    pub cuit: Option<i64>,
    #[serde(rename = "CbteFch", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
    pub date: Option<Date>,
}

/// `Tributo`: one other tax (perceptions, internal taxes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherTax {
    #[serde(rename = "Id")]
    pub code: i32,
    #[serde(rename = "Desc", default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "BaseImp")]
    pub base: Amount,
    /// The rate in percent, two places.
    #[serde(rename = "Alic")]
    pub rate: Amount,
    #[serde(rename = "Importe")]
    pub amount: Amount,
}

/// `FECAESolicitar`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaeResponse {
    #[serde(rename = "FeCabResp", default, skip_serializing_if = "Option::is_none")]
    pub header: Option<CabResponse>,
    #[serde(rename = "FeDetResp", default, with = "wrapped::det_response", skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<DetResponse>,
    #[serde(rename = "Errors", default, with = "wrapped::err", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Message>,
    #[serde(rename = "Events", default, with = "wrapped::evt", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Message>,
}

/// `FeCabResp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CabResponse {
    #[serde(rename = "Cuit")]
    pub cuit: i64,
    #[serde(rename = "PtoVta")]
    pub point_of_sale: i32,
    #[serde(rename = "CbteTipo")]
    pub voucher_type: i32,
    /// `yyyymmddhhmmss`, the authority's time.
    #[serde(rename = "FchProceso")]
    pub processed_at: String,
    #[serde(rename = "CantReg")]
    pub count: i32,
    /// `A` approved, `R` rejected, `P` partially approved (batches).
    #[serde(rename = "Resultado")]
    pub result: String,
    #[serde(rename = "Reproceso", default)]
    pub reprocessed: String,
}

voucher_fields! {
    identity:
    /// `FECAEDetResponse`: the outcome of one voucher.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct DetResponse {
        #[serde(rename = "Resultado")]
        pub result: String,
        #[serde(rename = "Observaciones", default, with = "wrapped::obs", skip_serializing_if = "Vec::is_empty")]
        pub observations: Vec<Message>,
        /// Empty when rejected.
        #[serde(rename = "CAE", default)]
        pub cae: String,
        #[serde(rename = "CAEFchVto", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
        pub cae_due: Option<Date>,
    }
}

/// `FECompConsultar`'s request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsultRequest {
    #[serde(rename = "Auth", default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    #[serde(rename = "FeCompConsReq")]
    pub request: ConsultQuery,
}

/// `FeCompConsReq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsultQuery {
    #[serde(rename = "CbteTipo")]
    pub voucher_type: i32,
    #[serde(rename = "CbteNro")]
    pub number: i64,
    #[serde(rename = "PtoVta")]
    pub point_of_sale: i32,
}

/// `FECompConsultar`'s answer: the voucher, or error 602 when it does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsultResponse {
    #[serde(rename = "ResultGet", default, skip_serializing_if = "Option::is_none")]
    pub result: Option<StoredDetail>,
    #[serde(rename = "Errors", default, with = "wrapped::err", skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Message>,
    #[serde(rename = "Events", default, with = "wrapped::evt", skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Message>,
}

voucher_fields! {
    /// `FECompConsResponse` (`ResultGet`): a stored voucher as it was authorized.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    pub struct StoredDetail {
        #[serde(rename = "Resultado")]
        pub result: String,
        /// The CAE.
        #[serde(rename = "CodAutorizacion")]
        pub authorization_code: String,
        /// `CAE` (or `CAEA` for the contingency regime).
        #[serde(rename = "EmisionTipo")]
        pub emission_type: String,
        /// The CAE's expiry.
        #[serde(rename = "FchVto", default, with = "yyyymmdd_opt", skip_serializing_if = "Option::is_none")]
        pub authorization_due: Option<Date>,
        #[serde(rename = "FchProceso", default)]
        pub processed_at: String,
        #[serde(rename = "Observaciones", default, with = "wrapped::obs", skip_serializing_if = "Vec::is_empty")]
        pub observations: Vec<Message>,
        #[serde(rename = "PtoVta")]
        pub point_of_sale: i32,
        #[serde(rename = "CbteTipo")]
        pub voucher_type: i32,
    }
}

impl StoredDetail {
    /// The stored form of an authorized `detail`.
    pub fn of(detail: DetRequest, header: &CabRequest, authorization: StoredAuthorization) -> Self {
        StoredDetail {
            concept: detail.concept,
            doc_type: detail.doc_type,
            doc_number: detail.doc_number,
            number_from: detail.number_from,
            number_to: detail.number_to,
            date: detail.date,
            total: detail.total,
            non_taxed: detail.non_taxed,
            net: detail.net,
            exempt: detail.exempt,
            other_taxes: detail.other_taxes,
            vat: detail.vat,
            service_from: detail.service_from,
            service_to: detail.service_to,
            payment_due: detail.payment_due,
            currency: detail.currency,
            rate: detail.rate,
            receiver_vat_condition: detail.receiver_vat_condition,
            associated: detail.associated,
            other_tax_lines: detail.other_tax_lines,
            vat_lines: detail.vat_lines,
            result: authorization.result,
            authorization_code: authorization.code,
            emission_type: "CAE".to_owned(),
            authorization_due: Some(authorization.due),
            processed_at: authorization.processed_at,
            observations: authorization.observations,
            point_of_sale: header.point_of_sale,
            voucher_type: header.voucher_type,
        }
    }
}

/// What the authority adds to a voucher it authorized, for [`StoredDetail::of`].
#[derive(Debug, Clone)]
pub struct StoredAuthorization {
    pub result: String,
    pub code: String,
    pub due: Date,
    pub processed_at: String,
    pub observations: Vec<Message>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn detail() -> DetRequest {
        DetRequest {
            concept: 1,
            doc_type: 80,
            doc_number: 20055361682,
            number_from: 7,
            number_to: 7,
            date: Some(date!(2025 - 03 - 07)),
            total: Amount::from_cents(12100),
            non_taxed: Amount::ZERO,
            net: Amount::from_cents(10000),
            exempt: Amount::ZERO,
            other_taxes: Amount::ZERO,
            vat: Amount::from_cents(2100),
            service_from: None,
            service_to: None,
            payment_due: None,
            currency: "PES".into(),
            rate: Some(Rate::ONE),
            receiver_vat_condition: Some(1),
            associated: vec![],
            other_tax_lines: vec![],
            vat_lines: vec![VatRate { code: 5, base: Amount::from_cents(10000), amount: Amount::from_cents(2100) }],
        }
    }

    #[test]
    fn a_voucher_survives_its_xml_form_with_exact_decimals_and_wrapped_lists() {
        let text = quick_xml::se::to_string_with_root("FECAEDetRequest", &detail()).expect("serializes");
        assert!(text.contains("<ImpTotal>121.00</ImpTotal>"), "{text}");
        assert!(text.contains("<MonCotiz>1.000000</MonCotiz>"), "{text}");
        assert!(
            text.contains("<Iva><AlicIva><Id>5</Id><BaseImp>100.00</BaseImp><Importe>21.00</Importe></AlicIva></Iva>"),
            "{text}"
        );
        assert_eq!(quick_xml::de::from_str::<DetRequest>(&text).expect("parses"), detail());
    }

    #[test]
    fn absent_lists_and_empty_dates_read_as_empty() {
        let answer: CaeResponse = quick_xml::de::from_str(
            "<FECAESolicitarResult><FeDetResp><FECAEDetResponse><Concepto>1</Concepto><DocTipo>99</DocTipo>\
             <DocNro>0</DocNro><CbteDesde>1</CbteDesde><CbteHasta>1</CbteHasta><CbteFch></CbteFch>\
             <Resultado>R</Resultado><CAE/></FECAEDetResponse></FeDetResp><Errors><Err><Code>10016</Code>\
             <Msg>x</Msg></Err></Errors></FECAESolicitarResult>",
        )
        .expect("parses");
        assert_eq!(answer.details[0].date, None);
        assert!(answer.details[0].observations.is_empty());
        assert_eq!(answer.errors, vec![Message::new(10016, "x")]);
        assert!(answer.header.is_none());
    }
}
