//! SOAP 1.1 as the authority's services speak it: a request is the operation's element (its fields
//! written by serde from a [`super::wire`] struct) in the WSFEv1 namespace inside `Envelope`/`Body`; an
//! answer is `<Operation>Response`/`<Operation>Result` holding the result's fields, or a `Fault`.
//! Documents are written through quick-xml's writer and serializer, never by concatenating text, and
//! read by finding the element wanted by its local name (whatever prefix the sender chose) and
//! deserializing it.

use std::ops::Range;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::reader::Reader;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// WSFEv1's namespace: of every operation's element, and the prefix of its `SOAPAction`.
pub const FEV1_NAMESPACE: &str = "http://ar.gov.afip.dif.FEV1/";
/// SOAP 1.1's envelope namespace.
pub const ENVELOPE_NAMESPACE: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// The media type of a SOAP 1.1 message.
pub const CONTENT_TYPE: &str = "text/xml; charset=utf-8";

/// The `SOAPAction` header of a WSFEv1 operation: its namespace and name, quoted.
pub fn action(operation: &str) -> String {
    format!("\"{FEV1_NAMESPACE}{operation}\"")
}

/// Something that is not the SOAP message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SoapError {
    /// The other side answered a SOAP fault.
    #[error("SOAP fault {code}: {message}")]
    Fault { code: String, message: String },
    /// Not XML, no such element, or an element whose content does not fit.
    #[error("{0}")]
    Malformed(String),
}

fn malformed(error: impl std::fmt::Display) -> SoapError {
    SoapError::Malformed(error.to_string())
}

/// A WSFEv1 request: `fields` as the `operation` element, in the service's namespace.
pub fn request<T: Serialize>(operation: &str, fields: &T) -> Result<Vec<u8>, SoapError> {
    let inner = quick_xml::se::to_string_with_root(operation, fields).map_err(malformed)?;
    envelope(None, &inner, FEV1_NAMESPACE)
}

/// A WSFEv1 answer: `result` as `<operation>Result` inside `<operation>Response`.
pub fn response<T: Serialize>(operation: &str, result: &T) -> Result<Vec<u8>, SoapError> {
    let inner = quick_xml::se::to_string_with_root(&format!("{operation}Result"), result).map_err(malformed)?;
    envelope(Some(&format!("{operation}Response")), &inner, FEV1_NAMESPACE)
}

/// A SOAP fault: `code` (`soap:Client`, `soap:Server`, or a service's own such as
/// `ns1:coe.alreadyAuthenticated`) and a message.
pub fn fault(code: &str, message: &str) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new());
    let written: Result<(), quick_xml::Error> = (|| {
        open_envelope(&mut writer)?;
        writer.create_element("soap:Fault").write_inner_content(|w| {
            w.create_element("faultcode").write_text_content(BytesText::new(code))?;
            w.create_element("faultstring").write_text_content(BytesText::new(message))?;
            Ok::<_, quick_xml::Error>(())
        })?;
        close_envelope(&mut writer)
    })();
    // Writing into memory cannot fail.
    debug_assert!(written.is_ok());
    writer.into_inner()
}

fn open_envelope(writer: &mut Writer<Vec<u8>>) -> Result<(), quick_xml::Error> {
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("utf-8"), None)))?;
    let mut envelope = BytesStart::new("soap:Envelope");
    envelope.push_attribute(("xmlns:soap", ENVELOPE_NAMESPACE));
    writer.write_event(Event::Start(envelope))?;
    writer.write_event(Event::Start(BytesStart::new("soap:Body")))
}

fn close_envelope(writer: &mut Writer<Vec<u8>>) -> Result<(), quick_xml::Error> {
    writer.write_event(Event::End(BytesEnd::new("soap:Body")))?;
    writer.write_event(Event::End(BytesEnd::new("soap:Envelope")))
}

/// `inner` (one element, as serde wrote it) in an envelope; the namespace is declared on `wrapper`
/// when there is one, else on `inner`'s own element.
fn envelope(wrapper: Option<&str>, inner: &str, namespace: &str) -> Result<Vec<u8>, SoapError> {
    let mut writer = Writer::new(Vec::new());
    open_envelope(&mut writer).map_err(malformed)?;
    if let Some(wrapper) = wrapper {
        let mut start = BytesStart::new(wrapper);
        start.push_attribute(("xmlns", namespace));
        writer.write_event(Event::Start(start)).map_err(malformed)?;
    }
    let mut reader = Reader::from_str(inner);
    let mut first = wrapper.is_none();
    loop {
        let event = match reader.read_event().map_err(malformed)? {
            Event::Eof => break,
            Event::Start(mut start) if first => {
                first = false;
                start.push_attribute(("xmlns", namespace));
                Event::Start(start)
            }
            Event::Empty(mut start) if first => {
                first = false;
                start.push_attribute(("xmlns", namespace));
                Event::Empty(start)
            }
            event => event,
        };
        writer.write_event(event).map_err(malformed)?;
    }
    if let Some(wrapper) = wrapper {
        writer.write_event(Event::End(BytesEnd::new(wrapper))).map_err(malformed)?;
    }
    close_envelope(&mut writer).map_err(malformed)?;
    Ok(writer.into_inner())
}

/// Where the first element whose local name is `local` lies in `xml`, its tags included.
fn find(xml: &str, local: &str) -> Result<Option<Range<usize>>, SoapError> {
    let mut reader = Reader::from_str(xml);
    loop {
        let before = reader.buffer_position() as usize;
        match reader.read_event().map_err(malformed)? {
            Event::Start(start) if start.local_name().as_ref() == local.as_bytes() => {
                let end = start.to_end().into_owned();
                reader.read_to_end(end.name()).map_err(malformed)?;
                return Ok(Some(before..reader.buffer_position() as usize));
            }
            Event::Empty(start) if start.local_name().as_ref() == local.as_bytes() => {
                return Ok(Some(before..reader.buffer_position() as usize));
            }
            Event::Eof => return Ok(None),
            _ => {}
        }
    }
}

/// The first element named `local` (any prefix), deserialized.
fn element<T: DeserializeOwned>(xml: &str, local: &str) -> Result<Option<T>, SoapError> {
    match find(xml, local)? {
        None => Ok(None),
        Some(range) => quick_xml::de::from_str(&xml[range])
            .map(Some)
            .map_err(|error| SoapError::Malformed(format!("{local}: {error}"))),
    }
}

/// The fault in a SOAP answer, if it is one.
pub fn read_fault(xml: &[u8]) -> Option<SoapError> {
    let xml = std::str::from_utf8(xml).ok()?;
    let range = find(xml, "Fault").ok()??;
    let texts = texts(xml[range].as_bytes()).ok()?;
    let text = |name: &str| texts.iter().find(|(n, _)| n == name).map(|(_, t)| t.trim().to_owned());
    Some(SoapError::Fault {
        code: text("faultcode").unwrap_or_default(),
        message: text("faultstring").unwrap_or_default(),
    })
}

/// The result of `operation` in its answer (`<operation>Result`), or the fault answered instead.
pub fn read_response<T: DeserializeOwned>(xml: &[u8], operation: &str) -> Result<T, SoapError> {
    if let Some(fault) = read_fault(xml) {
        return Err(fault);
    }
    let text = std::str::from_utf8(xml).map_err(malformed)?;
    element(text, &format!("{operation}Result"))?
        .ok_or_else(|| SoapError::Malformed(format!("the answer holds no {operation}Result")))
}

/// The operation a request asks for: the local name of the body's first element.
pub fn requested_operation(xml: &[u8]) -> Result<String, SoapError> {
    let text = std::str::from_utf8(xml).map_err(malformed)?;
    let body = find(text, "Body")?.ok_or_else(|| SoapError::Malformed("no SOAP Body".into()))?;
    let mut reader = Reader::from_str(&text[body]);
    let mut depth = 0;
    loop {
        match reader.read_event().map_err(malformed)? {
            Event::Start(start) | Event::Empty(start) if depth == 1 => {
                return Ok(String::from_utf8_lossy(start.local_name().as_ref()).into_owned());
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Eof => return Err(SoapError::Malformed("an empty SOAP Body".into())),
            _ => {}
        }
    }
}

/// A request's fields: the `operation` element, deserialized.
pub fn read_request<T: DeserializeOwned>(xml: &[u8], operation: &str) -> Result<T, SoapError> {
    let text = std::str::from_utf8(xml).map_err(malformed)?;
    element(text, operation)?.ok_or_else(|| SoapError::Malformed(format!("the request holds no {operation}")))
}

/// Every element's local name with its text, in document order.
pub(crate) fn texts(xml: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut reader = Reader::from_reader(xml);
    let (mut open, mut found) = (Vec::<String>::new(), Vec::new());
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            Event::Start(start) => open.push(String::from_utf8_lossy(start.local_name().as_ref()).into_owned()),
            Event::End(_) => {
                open.pop();
            }
            Event::Text(text) => {
                let text = text.unescape().map_err(|e| e.to_string())?;
                if let (Some(name), false) = (open.last(), text.trim().is_empty()) {
                    found.push((name.clone(), text.into_owned()));
                }
            }
            Event::CData(data) => {
                if let Some(name) = open.last() {
                    found.push((name.clone(), String::from_utf8_lossy(&data.into_inner()).into_owned()));
                }
            }
            Event::Eof => return Ok(found),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fiscal::decimal::{Amount, Rate};
    use crate::fiscal::wire::*;
    use time::macros::date;

    /// One line per element holding text (and per attribute): its path of local names, `=`, the text.
    fn outline(xml: &[u8]) -> String {
        let mut reader = Reader::from_reader(xml);
        let (mut path, mut lines) = (Vec::<String>::new(), Vec::new());
        loop {
            match reader.read_event().expect("xml") {
                Event::Start(start) => {
                    path.push(String::from_utf8_lossy(start.name().as_ref()).into_owned());
                    attributes(&start, &path, &mut lines);
                }
                Event::Empty(start) => {
                    path.push(String::from_utf8_lossy(start.name().as_ref()).into_owned());
                    lines.push(format!("{} (empty)", path.join("/")));
                    attributes(&start, &path, &mut lines);
                    path.pop();
                }
                Event::End(_) => {
                    path.pop();
                }
                Event::Text(text) => {
                    let text = text.unescape().expect("text");
                    if !text.trim().is_empty() {
                        lines.push(format!("{} = {text}", path.join("/")));
                    }
                }
                Event::Eof => return lines.join("\n") + "\n",
                _ => {}
            }
        }
    }

    fn attributes(start: &BytesStart<'_>, path: &[String], lines: &mut Vec<String>) {
        for attribute in start.attributes() {
            let attribute = attribute.expect("attribute");
            let value = attribute.unescape_value().expect("value");
            lines.push(format!("{} @{} = {value}", path.join("/"), String::from_utf8_lossy(attribute.key.as_ref())));
        }
    }

    /// Compares `xml`'s outline with the golden file `name` (rewritten with `UPDATE_GOLDEN=1`).
    fn golden(name: &str, xml: &[u8]) {
        let path = format!("{}/tests/fixtures/fiscal/soap/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        let actual = outline(xml);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &actual).expect("golden file written");
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(actual, expected, "{name}: the request differs from its golden file");
    }

    fn auth() -> Option<Auth> {
        Some(Auth { token: "PD94bWwgdG9rZW4=".into(), sign: "c2lnbg==".into(), cuit: 20267565393 })
    }

    fn voucher(number: i64) -> DetRequest {
        DetRequest {
            concept: 3,
            doc_type: 80,
            doc_number: 20055361682,
            number_from: number,
            number_to: number,
            date: Some(date!(2026 - 11 - 27)),
            total: Amount::from_cents(12_600),
            non_taxed: Amount::ZERO,
            net: Amount::from_cents(10_000),
            exempt: Amount::ZERO,
            other_taxes: Amount::from_cents(500),
            vat: Amount::from_cents(2_100),
            service_from: Some(date!(2026 - 11 - 01)),
            service_to: Some(date!(2026 - 11 - 30)),
            payment_due: Some(date!(2026 - 12 - 10)),
            currency: "PES".into(),
            rate: Some(Rate::ONE),
            receiver_vat_condition: Some(1),
            associated: vec![AssociatedVoucher {
                voucher_type: 1,
                point_of_sale: 3,
                number: 41,
                cuit: Some(20267565393),
                date: Some(date!(2026 - 11 - 20)),
            }],
            other_tax_lines: vec![OtherTax {
                code: 7,
                description: Some("Percepción IIBB".into()),
                base: Amount::from_cents(10_000),
                rate: Amount::from_cents(500),
                amount: Amount::from_cents(500),
            }],
            vat_lines: vec![VatRate { code: 5, base: Amount::from_cents(10_000), amount: Amount::from_cents(2_100) }],
        }
    }

    #[test]
    fn every_operations_request_matches_its_golden_file_element_by_element() {
        golden("FEDummy", &request("FEDummy", &DummyRequest {}).expect("written"));
        let last = LastAuthorizedRequest { auth: auth(), point_of_sale: 3, voucher_type: 3 };
        golden("FECompUltimoAutorizado", &request("FECompUltimoAutorizado", &last).expect("written"));
        let batch = CaeRequest {
            auth: auth(),
            request: FeCaeReq {
                header: CabRequest { count: 2, point_of_sale: 3, voucher_type: 3 },
                details: vec![voucher(42), voucher(43)],
            },
        };
        golden("FECAESolicitar", &request("FECAESolicitar", &batch).expect("written"));
        let consult =
            ConsultRequest { auth: auth(), request: ConsultQuery { voucher_type: 3, number: 42, point_of_sale: 3 } };
        golden("FECompConsultar", &request("FECompConsultar", &consult).expect("written"));
        golden("FEParamGetPtosVenta", &request("FEParamGetPtosVenta", &AuthOnly { auth: auth() }).expect("written"));
        golden("FECompTotXRequest", &request("FECompTotXRequest", &AuthOnly { auth: auth() }).expect("written"));
    }

    #[test]
    fn requests_read_back_as_the_simulator_reads_them() {
        let batch = CaeRequest {
            auth: auth(),
            request: FeCaeReq {
                header: CabRequest { count: 2, point_of_sale: 3, voucher_type: 3 },
                details: vec![voucher(42), voucher(43)],
            },
        };
        let xml = request("FECAESolicitar", &batch).expect("written");
        assert_eq!(requested_operation(&xml).expect("operation"), "FECAESolicitar");
        assert_eq!(read_request::<CaeRequest>(&xml, "FECAESolicitar").expect("read"), batch);
        let dummy = request("FEDummy", &DummyRequest {}).expect("written");
        assert_eq!(requested_operation(&dummy).expect("operation"), "FEDummy");
    }

    #[test]
    fn answers_are_read_whatever_prefixes_the_service_writes() {
        let answer = br#"<?xml version="1.0" encoding="utf-8"?>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
  <soap:Body>
    <FECompUltimoAutorizadoResponse xmlns="http://ar.gov.afip.dif.FEV1/">
      <FECompUltimoAutorizadoResult>
        <PtoVta>3</PtoVta>
        <CbteTipo>6</CbteTipo>
        <CbteNro>41</CbteNro>
        <Events><Evt><Code>1</Code><Msg>Mantenimiento programado</Msg></Evt></Events>
      </FECompUltimoAutorizadoResult>
    </FECompUltimoAutorizadoResponse>
  </soap:Body>
</soap:Envelope>"#;
        let read: LastAuthorizedResponse = read_response(answer, "FECompUltimoAutorizado").expect("read");
        assert_eq!(read.number, 41);
        assert_eq!(read.events, vec![Message::new(1, "Mantenimiento programado")]);
        assert!(read.errors.is_empty());
        // What the simulator writes reads back the same.
        let written = response("FECompUltimoAutorizado", &read).expect("written");
        assert_eq!(read_response::<LastAuthorizedResponse>(&written, "FECompUltimoAutorizado").expect("read"), read);
        let points = PointsOfSaleResponse {
            points: vec![PointOfSale {
                number: 3,
                emission_type: "CAE - RECE".into(),
                blocked: "N".into(),
                withdrawn: "NULL".into(),
            }],
            errors: vec![],
            events: vec![],
        };
        let written = response("FEParamGetPtosVenta", &points).expect("written");
        assert_eq!(read_response::<PointsOfSaleResponse>(&written, "FEParamGetPtosVenta").expect("read"), points);
    }

    #[test]
    fn faults_and_other_documents_are_told_apart() {
        let fault = fault("soap:Client", "Server did not recognize the value of HTTP Header SOAPAction");
        assert_eq!(
            read_response::<LastAuthorizedResponse>(&fault, "FECompUltimoAutorizado"),
            Err(SoapError::Fault {
                code: "soap:Client".into(),
                message: "Server did not recognize the value of HTTP Header SOAPAction".into()
            })
        );
        let other = response(
            "FEDummy",
            &DummyResponse { app_server: "OK".into(), db_server: "OK".into(), auth_server: "OK".into() },
        )
        .expect("written");
        assert!(matches!(
            read_response::<LastAuthorizedResponse>(&other, "FECompUltimoAutorizado"),
            Err(SoapError::Malformed(_))
        ));
        assert!(matches!(
            read_response::<DummyResponse>(b"<html>Bad gateway", "FEDummy"),
            Err(SoapError::Malformed(_))
        ));
        assert_eq!(action("FECAESolicitar"), "\"http://ar.gov.afip.dif.FEV1/FECAESolicitar\"");
    }
}
