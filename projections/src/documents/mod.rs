//! Printed documents (sale vouchers, credit notes, purchases, delivery notes): what a document
//! shows, the tax authority's QR code, and the Argentine number formats; the renderer, the Postgres
//! store, the worker that renders pending documents and what delivery notes print live in the
//! submodules.
//!
//! A [`VoucherDocument`] is everything printed, already computed: the renderer decides layout only,
//! never amounts. It is stored as JSON (the store's `input`), so its wire form is kept stable.

pub mod delivery_notes;
mod qr;
pub mod render;
pub mod store;
pub mod vouchers;
pub mod worker;

pub use render::{RenderError, render_pdf};
pub use store::DocumentState;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use events::catalogue::iso_date;
use events::domain::Cents;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;
use std::str::FromStr;
use time::Date;

events::named_enum! {
    /// What owns a document: the store keys documents by (organization, owner kind, owner id), and
    /// signed links name the kind. Stored as text; a name, once written, is never renamed.
    pub enum OwnerKind { Sale = "sale", Purchase = "purchase", DeliveryNote = "delivery_note" }
}

impl OwnerKind {
    /// The projection that requests this kind's documents ([`store::request`]) as it folds their
    /// owners: the document worker wakes on its progress.
    pub const fn requested_by(self) -> crate::ProjectionId {
        match self {
            OwnerKind::Sale => crate::ProjectionId::Sales,
            OwnerKind::Purchase => crate::ProjectionId::Purchases,
            OwnerKind::DeliveryNote => crate::ProjectionId::DeliveryNotes,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a document owner kind")]
pub struct UnknownOwnerKind(pub String);

impl FromStr for OwnerKind {
    type Err = UnknownOwnerKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        OwnerKind::parse(text).ok_or_else(|| UnknownOwnerKind(text.to_owned()))
    }
}

/// A printed voucher or purchase: every text and amount it shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoucherDocument {
    /// `FACTURA`, `NOTA DE CRÉDITO`, `COMPRA`...
    pub title: String,
    /// `A`, `B` or `C`, boxed at the top as on Argentine vouchers; none for internal documents.
    pub letter: Option<String>,
    /// The authority's voucher type code (1, 6, 11...), printed under the letter.
    pub voucher_code: Option<i32>,
    pub point_of_sale: i32,
    pub number: i64,
    #[serde(with = "iso_date")]
    pub date: Date,
    pub issuer: Party,
    pub receiver: Party,
    pub lines: Vec<DocumentLine>,
    /// VAT by rate; empty shows no breakdown (B and C vouchers, purchases without one).
    pub vat_breakdown: Vec<VatLine>,
    pub subtotal_cents: Cents,
    pub tax_cents: Cents,
    pub total_cents: Cents,
    /// `PES`, `DOL`...
    pub currency: String,
    /// The exchange rate as exact decimal text, shown when the currency is not pesos.
    pub exchange_rate: Option<String>,
    /// The authority's authorization; none for documents it did not authorize.
    pub authorization: Option<Authorization>,
    pub notes: Option<String>,
    /// The supplier's invoice number of a purchase, or the voucher a credit or debit note corrects (its
    /// kind and number as printed).
    pub reference: Option<String>,
}

impl VoucherDocument {
    /// `PPPPP-NNNNNNNN`, as vouchers print their number.
    pub fn number_text(&self) -> String {
        format!("{:05}-{:08}", self.point_of_sale, self.number)
    }

    /// A file name for downloads: `factura-a-00001-00000042.pdf`.
    pub fn file_name(&self) -> String {
        let mut name = slug(&self.title);
        if let Some(letter) = self.letter.as_deref().map(slug).filter(|l| !l.is_empty()) {
            name = format!("{name}-{letter}");
        }
        if name.is_empty() {
            name = "documento".to_owned();
        }
        format!("{name}-{}.pdf", self.number_text())
    }
}

/// The issuer or the receiver of a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Party {
    pub name: String,
    pub tax_id: Option<String>,
    /// The VAT condition as printed (`IVA Responsable Inscripto`, `Consumidor Final`...).
    pub tax_category: Option<String>,
    pub address: Option<String>,
    /// An issuer's gross-income tax number (Ingresos Brutos) and activity start date, as its vouchers
    /// print them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gross_income_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "events::catalogue::iso_date_option")]
    pub activity_start: Option<time::Date>,
}

/// One printed line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentLine {
    pub description: String,
    /// Exact decimal text (`1.5`), printed with a decimal comma.
    pub quantity: String,
    pub unit_price_cents: Cents,
    /// As printed: `10%`.
    pub discount: Option<String>,
    /// As printed: `21%`.
    pub vat_label: Option<String>,
    pub amount_cents: Cents,
}

/// VAT at one rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VatLine {
    /// As printed: `21%`.
    pub label: String,
    pub base_cents: Cents,
    pub amount_cents: Cents,
}

/// The authority's authorization of an electronic voucher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authorization {
    /// The 14-digit CAE.
    pub cae: String,
    #[serde(with = "iso_date")]
    pub cae_due: Date,
    pub qr: QrData,
}

/// The fields of the authority's QR code (RG 4291), in the JSON form the code carries.
///
/// Amounts are exact: `importe` is written from cents as a decimal number with two places, and
/// `ctz` from an [`ExchangeRate`]. Read back from JSON text only (the exact numbers are kept as
/// raw JSON text, which a `serde_json::Value` cannot hold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrData {
    /// The format version, 1.
    pub ver: i32,
    pub fecha: Date,
    /// The issuer's CUIT.
    pub cuit: i64,
    pub pto_vta: i32,
    pub tipo_cmp: i32,
    pub nro_cmp: i64,
    /// `importe`, the voucher's total, in cents.
    pub importe_cents: i64,
    pub moneda: String,
    pub ctz: ExchangeRate,
    /// The receiver's document type (80 CUIT, 96 DNI, 99 unidentified), when identified.
    pub tipo_doc_rec: Option<i32>,
    pub nro_doc_rec: Option<i64>,
    /// `E` for a CAE, `A` for a CAEA.
    pub tipo_cod_aut: String,
    /// The authorization code as a number.
    pub cod_aut: i64,
}

/// The JSON object inside the QR code, field names as RG 4291 spells them.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QrWire {
    ver: i32,
    #[serde(with = "iso_date")]
    fecha: Date,
    cuit: i64,
    pto_vta: i32,
    tipo_cmp: i32,
    nro_cmp: i64,
    importe: Box<RawValue>,
    moneda: String,
    ctz: Box<RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tipo_doc_rec: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nro_doc_rec: Option<i64>,
    tipo_cod_aut: String,
    cod_aut: i64,
}

impl Serialize for QrData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let number = |text: String| RawValue::from_string(text).map_err(S::Error::custom);
        QrWire {
            ver: self.ver,
            fecha: self.fecha,
            cuit: self.cuit,
            pto_vta: self.pto_vta,
            tipo_cmp: self.tipo_cmp,
            nro_cmp: self.nro_cmp,
            importe: number(decimal_text(i128::from(self.importe_cents), 2, 2))?,
            moneda: self.moneda.clone(),
            ctz: number(self.ctz.to_string())?,
            tipo_doc_rec: self.tipo_doc_rec,
            nro_doc_rec: self.nro_doc_rec,
            tipo_cod_aut: self.tipo_cod_aut.clone(),
            cod_aut: self.cod_aut,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for QrData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = QrWire::deserialize(deserializer)?;
        let importe = parse_scaled(wire.importe.get(), 2)
            .and_then(|cents| i64::try_from(cents).ok())
            .ok_or_else(|| D::Error::custom(format!("importe {} is not an amount in cents", wire.importe.get())))?;
        let ctz = ExchangeRate::parse(wire.ctz.get().trim_matches('"'))
            .ok_or_else(|| D::Error::custom(format!("ctz {} is not an exchange rate", wire.ctz.get())))?;
        Ok(QrData {
            ver: wire.ver,
            fecha: wire.fecha,
            cuit: wire.cuit,
            pto_vta: wire.pto_vta,
            tipo_cmp: wire.tipo_cmp,
            nro_cmp: wire.nro_cmp,
            importe_cents: importe,
            moneda: wire.moneda,
            ctz,
            tipo_doc_rec: wire.tipo_doc_rec,
            nro_doc_rec: wire.nro_doc_rec,
            tipo_cod_aut: wire.tipo_cod_aut,
            cod_aut: wire.cod_aut,
        })
    }
}

/// An exchange rate, positive, with at most six decimals (the authority's `MonCotiz` and the QR's
/// `ctz`), kept exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeRate {
    millionths: i64,
}

impl ExchangeRate {
    /// The rate of pesos to pesos.
    pub const ONE: ExchangeRate = ExchangeRate { millionths: 1_000_000 };

    /// A rate from decimal text (`1`, `1045.5`, `1045.500000`); none when it is not a positive
    /// plain decimal with at most six decimals.
    pub fn parse(text: &str) -> Option<Self> {
        let millionths = i64::try_from(parse_scaled(text, 6)?).ok()?;
        (millionths > 0).then_some(ExchangeRate { millionths })
    }
}

impl fmt::Display for ExchangeRate {
    /// The shortest exact decimal: `1`, `1045.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal_text(i128::from(self.millionths), 6, 0))
    }
}

/// Where the authority's QR codes point.
pub const QR_URL_PREFIX: &str = "https://www.afip.gob.ar/fe/qr/?p=";

/// The address a voucher's QR code encodes: [`QR_URL_PREFIX`] and the Base64 of the JSON object.
pub fn qr_url(data: &QrData) -> String {
    // Every field serializes (the numbers are written from integers), so this never falls back.
    let json = serde_json::to_string(data).unwrap_or_default();
    format!("{QR_URL_PREFIX}{}", STANDARD.encode(json))
}

/// The fields a QR code's address carries, as a reader decodes them; none if it is not one.
pub fn decode_qr_url(url: &str) -> Option<QrData> {
    let payload = url.strip_prefix(QR_URL_PREFIX)?;
    // Some encoders percent-encode the Base64 alphabet's URL-unsafe characters.
    let payload = payload.replace("%2B", "+").replace("%2F", "/").replace("%3D", "=");
    let json = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|e| e.decode(&payload).ok())?;
    serde_json::from_slice(&json).ok()
}

/// Cents in the Argentine format with the currency's symbol: `$ 1.234,56`, `US$ 10,00`, `-$ 5,00`.
pub fn money(cents: i64, currency: &str) -> String {
    let symbol = match currency {
        "PES" | "ARS" => "$",
        "DOL" | "USD" => "US$",
        "060" | "EUR" => "€",
        other => other,
    };
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{symbol} {}", amount(cents.unsigned_abs().into()))
}

/// Cents as an Argentine amount without a symbol: `1.234,56`, `-5,00`.
pub fn amount(cents: i128) -> String {
    let text = decimal_text(cents, 2, 2);
    argentine(&text).unwrap_or(text)
}

/// A decimal in the Argentine format (`1234.5` → `1.234,5`); the text itself when it is not a plain
/// decimal.
pub fn argentine_decimal(text: &str) -> String {
    argentine(text.trim()).unwrap_or_else(|| text.to_owned())
}

fn argentine(text: &str) -> Option<String> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || (unsigned.contains('.') && fraction.is_empty()) {
        return None;
    }
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(digit);
    }
    Some(if fraction.is_empty() { format!("{sign}{grouped}") } else { format!("{sign}{grouped},{fraction}") })
}

/// `value / 10^scale` as decimal text with at least `min_places` decimals (trailing zeros beyond
/// them dropped): `decimal_text(123450, 2, 2)` is `1234.50`, `decimal_text(1_500_000, 6, 0)` is `1.5`.
fn decimal_text(value: i128, scale: u32, min_places: usize) -> String {
    let divisor = 10_u128.pow(scale);
    let magnitude = value.unsigned_abs();
    let sign = if value < 0 { "-" } else { "" };
    let whole = magnitude / divisor;
    let mut fraction = format!("{:0width$}", magnitude % divisor, width = scale as usize);
    while fraction.len() > min_places && fraction.ends_with('0') {
        fraction.pop();
    }
    if fraction.is_empty() { format!("{sign}{whole}") } else { format!("{sign}{whole}.{fraction}") }
}

/// Plain decimal text (an optional minus, digits, an optional fraction) as a count of `10^-scale`;
/// none when it is not one, has digits below the scale, or is out of range.
fn parse_scaled(text: &str, scale: u32) -> Option<i128> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || (unsigned.contains('.') && fraction.is_empty()) {
        return None;
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > scale as usize || whole.len() > 20 {
        return None;
    }
    let whole: i128 = whole.parse().ok()?;
    let padded = format!("{fraction:0<width$}", width = scale as usize);
    let fraction: i128 = if padded.is_empty() { 0 } else { padded.parse().ok()? };
    let value = whole.checked_mul(10_i128.pow(scale))?.checked_add(fraction)?;
    Some(if negative { -value } else { value })
}

/// Lowercase ASCII letters and digits separated by single dashes (`NOTA DE CRÉDITO` →
/// `nota-de-credito`).
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        let c = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ñ' => 'n',
            'ç' => 'c',
            other => other,
        };
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use time::macros::date;

    /// A voucher exercising everything the renderer prints.
    pub(crate) fn sample() -> VoucherDocument {
        let qr = QrData {
            ver: 1,
            fecha: date!(2026 - 08 - 20),
            cuit: 30_712_345_678,
            pto_vta: 1,
            tipo_cmp: 1,
            nro_cmp: 42,
            importe_cents: 1_234_567,
            moneda: "PES".into(),
            ctz: ExchangeRate::ONE,
            tipo_doc_rec: Some(80),
            nro_doc_rec: Some(20_123_456_786),
            tipo_cod_aut: "E".into(),
            cod_aut: 74_123_456_789_012,
        };
        VoucherDocument {
            title: "FACTURA".into(),
            letter: Some("A".into()),
            voucher_code: Some(1),
            point_of_sale: 1,
            number: 42,
            date: date!(2026 - 08 - 20),
            issuer: Party {
                name: "Almacén de Prueba S.R.L.".into(),
                tax_id: Some("30712345678".into()),
                tax_category: Some("IVA Responsable Inscripto".into()),
                address: Some("Av. Corrientes 1234, 3º B, C1043AAZ CABA".into()),
                gross_income_number: Some("901-123456-7".into()),
                activity_start: Some(date!(2015 - 03 - 01)),
            },
            receiver: Party {
                name: "José Peñalver Muñoz".into(),
                tax_id: Some("20123456786".into()),
                tax_category: Some("IVA Responsable Inscripto".into()),
                address: Some("Calle Güemes 55, Córdoba".into()),
                ..Party::default()
            },
            lines: vec![
                DocumentLine {
                    description: "Yerba mate orgánica 1 kg, edición especial de campaña con descripción larga \
                                  que ocupa más de un renglón en la tabla"
                        .into(),
                    quantity: "1.5".into(),
                    unit_price_cents: Cents::of(500_000),
                    discount: Some("10%".into()),
                    vat_label: Some("21%".into()),
                    amount_cents: Cents::of(675_000),
                },
                DocumentLine {
                    description: "Señalador de cortesía".into(),
                    quantity: "3".into(),
                    unit_price_cents: Cents::of(100_000),
                    discount: None,
                    vat_label: Some("10,5%".into()),
                    amount_cents: Cents::of(300_000),
                },
            ],
            vat_breakdown: vec![
                VatLine { label: "21%".into(), base_cents: Cents::of(675_000), amount_cents: Cents::of(141_750) },
                VatLine { label: "10,5%".into(), base_cents: Cents::of(300_000), amount_cents: Cents::of(31_500) },
            ],
            subtotal_cents: Cents::of(975_000),
            tax_cents: Cents::of(173_250),
            total_cents: Cents::of(1_234_567),
            currency: "PES".into(),
            exchange_rate: None,
            authorization: Some(Authorization { cae: "74123456789012".into(), cae_due: date!(2026 - 08 - 30), qr }),
            notes: Some("Gracias por su compra.\nEntrega en depósito Nº 2.".into()),
            reference: None,
        }
    }

    #[test]
    fn money_is_printed_in_the_argentine_format_from_exact_cents() {
        assert_eq!(money(123_456, "PES"), "$ 1.234,56");
        assert_eq!(money(5, "PES"), "$ 0,05");
        assert_eq!(money(100, "PES"), "$ 1,00");
        assert_eq!(money(0, "PES"), "$ 0,00");
        assert_eq!(money(-123_456_789, "PES"), "-$ 1.234.567,89");
        assert_eq!(money(99_999_999_999_999, "PES"), "$ 999.999.999.999,99");
        assert_eq!(money(i64::MIN, "PES"), "-$ 92.233.720.368.547.758,08");
        assert_eq!(money(1_000, "DOL"), "US$ 10,00");
        assert_eq!(amount(100_000), "1.000,00");
        assert_eq!(argentine_decimal("1234.5"), "1.234,5");
        assert_eq!(argentine_decimal("0.125"), "0,125");
        assert_eq!(argentine_decimal("3"), "3");
        assert_eq!(argentine_decimal("a lot"), "a lot");
    }

    #[test]
    fn the_qr_url_round_trips_every_field_with_the_exact_importe() {
        let mut data = sample().authorization.expect("authorized").qr;
        data.importe_cents = 1_210_050;
        data.moneda = "DOL".into();
        data.ctz = ExchangeRate::parse("1045.500").expect("rate");
        let url = qr_url(&data);
        let payload = url.strip_prefix(QR_URL_PREFIX).expect("the authority's address");
        let json: serde_json::Value =
            serde_json::from_slice(&STANDARD.decode(payload).expect("Base64")).expect("a JSON object");
        // The JSON text holds the exact decimals, as the reader sees them.
        let text = String::from_utf8(STANDARD.decode(payload).expect("Base64")).expect("UTF-8");
        assert!(text.contains(r#""importe":12100.50"#), "{text}");
        assert!(text.contains(r#""ctz":1045.5"#), "{text}");
        assert_eq!(json["ver"], 1);
        assert_eq!(json["fecha"], "2026-08-20");
        assert_eq!(json["cuit"], 30_712_345_678_i64);
        assert_eq!(json["ptoVta"], 1);
        assert_eq!(json["tipoCmp"], 1);
        assert_eq!(json["nroCmp"], 42);
        assert_eq!(json["moneda"], "DOL");
        assert_eq!(json["tipoDocRec"], 80);
        assert_eq!(json["nroDocRec"], 20_123_456_786_i64);
        assert_eq!(json["tipoCodAut"], "E");
        assert_eq!(json["codAut"], 74_123_456_789_012_i64);
        assert_eq!(decode_qr_url(&url), Some(data.clone()));

        // An unidentified receiver leaves its fields out, and the reader reads them as absent.
        data.tipo_doc_rec = None;
        data.nro_doc_rec = None;
        let url = qr_url(&data);
        let text = String::from_utf8(STANDARD.decode(&url[QR_URL_PREFIX.len()..]).expect("b64")).expect("utf8");
        assert!(!text.contains("DocRec"), "{text}");
        assert_eq!(decode_qr_url(&url), Some(data));
    }

    #[test]
    fn a_reader_decodes_codes_written_elsewhere_and_refuses_what_is_not_one() {
        // The example of RG 4291, as another issuer's software writes it (importe without decimals).
        let json = r#"{"ver":1,"fecha":"2020-10-13","cuit":30000000007,"ptoVta":10,"tipoCmp":1,"nroCmp":94,"importe":12100,"moneda":"DOL","ctz":65,"tipoDocRec":80,"nroDocRec":20000000001,"tipoCodAut":"E","codAut":70417054367476}"#;
        let decoded = decode_qr_url(&format!("{QR_URL_PREFIX}{}", STANDARD.encode(json))).expect("decodes");
        assert_eq!(decoded.importe_cents, 1_210_000);
        assert_eq!(decoded.ctz.to_string(), "65");
        assert_eq!(decoded.cod_aut, 70_417_054_367_476);
        let url_encoded = format!("{QR_URL_PREFIX}{}", STANDARD.encode(json).replace('=', "%3D"));
        assert_eq!(decode_qr_url(&url_encoded), Some(decoded));

        assert_eq!(decode_qr_url("https://example.com/?p=e30="), None);
        assert_eq!(decode_qr_url(&format!("{QR_URL_PREFIX}not base64!")), None);
        let fraction_of_a_cent = json.replace("12100", "12100.005");
        assert_eq!(decode_qr_url(&format!("{QR_URL_PREFIX}{}", STANDARD.encode(fraction_of_a_cent))), None);
    }

    #[test]
    fn exchange_rates_are_exact_positive_decimals() {
        assert_eq!(ExchangeRate::parse("1"), Some(ExchangeRate::ONE));
        assert_eq!(ExchangeRate::parse("1045.123456").map(|r| r.to_string()).as_deref(), Some("1045.123456"));
        assert_eq!(ExchangeRate::parse("1045.1234567"), None);
        assert_eq!(ExchangeRate::parse("0"), None);
        assert_eq!(ExchangeRate::parse("-1"), None);
        assert_eq!(ExchangeRate::parse("1e3"), None);
        assert_eq!(ExchangeRate::parse("1."), None);
    }

    #[test]
    fn documents_survive_their_stored_json_form() {
        let document = sample();
        let json = serde_json::to_string(&document).expect("serializes");
        assert!(json.contains(r#""date":"2026-08-20""#), "{json}");
        assert_eq!(serde_json::from_str::<VoucherDocument>(&json).expect("deserializes"), document);
    }

    #[test]
    fn file_names_are_plain_ascii() {
        let mut document = sample();
        assert_eq!(document.file_name(), "factura-a-00001-00000042.pdf");
        document.title = "NOTA DE CRÉDITO".into();
        document.letter = Some("B".into());
        assert_eq!(document.file_name(), "nota-de-credito-b-00001-00000042.pdf");
        document.title = "COMPRA".into();
        document.letter = None;
        assert_eq!(document.file_name(), "compra-00001-00000042.pdf");
        document.title = "—".into();
        assert_eq!(document.file_name(), "documento-00001-00000042.pdf");
    }

    #[test]
    fn owner_kinds_read_back_from_their_names() {
        for kind in OwnerKind::ALL {
            assert_eq!(kind.as_str().parse::<OwnerKind>(), Ok(kind));
        }
        assert!("quote".parse::<OwnerKind>().is_err());
    }
}
