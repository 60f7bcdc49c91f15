//! The authority's login tickets (WSAA), the pieces that need no network: the login ticket request
//! (TRA) written with an XML writer, and its CMS (PKCS#7) SignedData, DER, signed with the
//! organization's certificate and RSA key (SHA-256), the request attached; and the reading back of
//! such a message (its content, certificate, signed digest and signature, verified), which the
//! simulator uses to check what it receives.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};
use ring::signature::{self, RsaKeyPair};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use x509_parser::prelude::{FromDer, X509Certificate};
use yasna::models::{ObjectIdentifier, UTCTime};
use yasna::{ASN1Error, ASN1ErrorKind, DERWriter, Tag};

/// The WSFEv1 service's name in a login ticket request.
pub const SERVICE: &str = "wsfe";

const OID_DATA: &[u64] = &[1, 2, 840, 113549, 1, 7, 1];
const OID_SIGNED_DATA: &[u64] = &[1, 2, 840, 113549, 1, 7, 2];
const OID_SHA256: &[u64] = &[2, 16, 840, 1, 101, 3, 4, 2, 1];
const OID_RSA: &[u64] = &[1, 2, 840, 113549, 1, 1, 1];
const OID_CONTENT_TYPE: &[u64] = &[1, 2, 840, 113549, 1, 9, 3];
const OID_MESSAGE_DIGEST: &[u64] = &[1, 2, 840, 113549, 1, 9, 4];
const OID_SIGNING_TIME: &[u64] = &[1, 2, 840, 113549, 1, 9, 5];

/// Something in a login ticket's signing or reading that went wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WsaaError {
    #[error("the certificate or key cannot be used: {0}")]
    Credentials(String),
    #[error("the signed login request is malformed: {0}")]
    Malformed(String),
    #[error("the login request's signature does not verify")]
    BadSignature,
}

fn oid(parts: &[u64]) -> ObjectIdentifier {
    ObjectIdentifier::from_slice(parts)
}

/// An instant as the ticket request writes it: whole seconds, in Argentine time with its offset.
fn rfc3339(at: OffsetDateTime) -> String {
    let local = at.to_offset(time::macros::offset!(-3));
    local.replace_nanosecond(0).unwrap_or(local).format(&Rfc3339).unwrap_or_default()
}

/// The login ticket request for `service`: `uniqueId`, `generationTime` and `expirationTime` (ISO 8601
/// with offset) in its header.
pub fn login_ticket_request(
    unique_id: u32,
    generation: OffsetDateTime,
    expiration: OffsetDateTime,
    service: &str,
) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new());
    let written: Result<(), quick_xml::Error> = (|| {
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        writer.create_element("loginTicketRequest").with_attribute(("version", "1.0")).write_inner_content(
            |w| -> Result<(), quick_xml::Error> {
                w.create_element("header").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                    w.create_element("uniqueId").write_text_content(BytesText::new(&unique_id.to_string()))?;
                    w.create_element("generationTime").write_text_content(BytesText::new(&rfc3339(generation)))?;
                    w.create_element("expirationTime").write_text_content(BytesText::new(&rfc3339(expiration)))?;
                    Ok(())
                })?;
                w.create_element("service").write_text_content(BytesText::new(service))?;
                Ok(())
            },
        )?;
        Ok(())
    })();
    // Writing into memory cannot fail.
    debug_assert!(written.is_ok());
    writer.into_inner()
}

/// The namespace of the authentication service's `loginCms` operation.
pub const WSAA_NAMESPACE: &str = "http://wsaa.view.sua.dvadac.desein.afip.gov";

/// The SOAP 1.1 request of `loginCms`: its one parameter `in0`, the Base64 of the signed request.
pub fn login_envelope(cms: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(cms);
    let mut writer = Writer::new(Vec::new());
    let written: Result<(), quick_xml::Error> = (|| {
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        writer
            .create_element("soapenv:Envelope")
            .with_attribute(("xmlns:soapenv", "http://schemas.xmlsoap.org/soap/envelope/"))
            .with_attribute(("xmlns:wsaa", WSAA_NAMESPACE))
            .write_inner_content(|w| -> Result<(), quick_xml::Error> {
                w.create_element("soapenv:Header").write_empty()?;
                w.create_element("soapenv:Body").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                    w.create_element("wsaa:loginCms").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                        w.create_element("wsaa:in0").write_text_content(BytesText::new(&encoded))?;
                        Ok(())
                    })?;
                    Ok(())
                })?;
                Ok(())
            })?;
        Ok(())
    })();
    debug_assert!(written.is_ok());
    writer.into_inner()
}

/// A login ticket: what every call's `Auth` carries, and how long it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub token: String,
    pub sign: String,
    pub generation: OffsetDateTime,
    pub expiration: OffsetDateTime,
}

/// Why a login was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginRefused {
    /// A ticket for this certificate and service is still valid (`coe.alreadyAuthenticated`): the one
    /// already obtained must be used until it expires.
    #[error("a ticket for this certificate and service is still valid")]
    AlreadyAuthenticated,
    /// Any other SOAP fault (an invalid signature, an expired certificate, times out of range...).
    #[error("the authentication service refused the login: {code}: {message}")]
    Fault { code: String, message: String },
    /// An answer that is neither a ticket nor a fault.
    #[error("unreadable answer from the authentication service: {0}")]
    Unreadable(String),
}

/// A login ticket request as read back (by the simulator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketRequest {
    pub unique_id: u32,
    pub generation: OffsetDateTime,
    pub expiration: OffsetDateTime,
    pub service: String,
}

/// Reads a login ticket request as [`login_ticket_request`] writes it.
pub fn parse_login_ticket_request(xml: &[u8]) -> Result<TicketRequest, String> {
    let texts = super::soap::texts(xml)?;
    let field = |name: &str| {
        texts.iter().find(|(n, _)| n == name).map(|(_, t)| t.trim().to_owned()).ok_or_else(|| format!("no {name}"))
    };
    let instant = |name: &str| {
        let text = field(name)?;
        OffsetDateTime::parse(&text, &Rfc3339).map_err(|e| format!("{name} {text:?}: {e}"))
    };
    Ok(TicketRequest {
        unique_id: field("uniqueId")?.parse().map_err(|e| format!("uniqueId: {e}"))?,
        generation: instant("generationTime")?,
        expiration: instant("expirationTime")?,
        service: field("service")?,
    })
}

/// The answer to a `loginCms` that succeeded: the ticket's XML (`loginTicketResponse`, its `header`
/// and `credentials`) as the text of `loginCmsReturn`. What the simulator answers.
pub fn login_response(ticket: &Ticket, unique_id: u32, source: &str, destination: &str) -> Vec<u8> {
    let mut inner = Writer::new(Vec::new());
    let written: Result<(), quick_xml::Error> = (|| {
        inner.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), Some("yes"))))?;
        inner.create_element("loginTicketResponse").with_attribute(("version", "1.0")).write_inner_content(
            |w| -> Result<(), quick_xml::Error> {
                w.create_element("header").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                    w.create_element("source").write_text_content(BytesText::new(source))?;
                    w.create_element("destination").write_text_content(BytesText::new(destination))?;
                    w.create_element("uniqueId").write_text_content(BytesText::new(&unique_id.to_string()))?;
                    w.create_element("generationTime")
                        .write_text_content(BytesText::new(&rfc3339(ticket.generation)))?;
                    w.create_element("expirationTime")
                        .write_text_content(BytesText::new(&rfc3339(ticket.expiration)))?;
                    Ok(())
                })?;
                w.create_element("credentials").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                    w.create_element("token").write_text_content(BytesText::new(&ticket.token))?;
                    w.create_element("sign").write_text_content(BytesText::new(&ticket.sign))?;
                    Ok(())
                })?;
                Ok(())
            },
        )?;
        Ok(())
    })();
    debug_assert!(written.is_ok());
    let ticket_xml = String::from_utf8_lossy(&inner.into_inner()).into_owned();
    let mut writer = Writer::new(Vec::new());
    let written: Result<(), quick_xml::Error> = (|| {
        writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
        writer
            .create_element("soapenv:Envelope")
            .with_attribute(("xmlns:soapenv", "http://schemas.xmlsoap.org/soap/envelope/"))
            .write_inner_content(|w| -> Result<(), quick_xml::Error> {
                w.create_element("soapenv:Body").write_inner_content(|w| -> Result<(), quick_xml::Error> {
                    w.create_element("loginCmsResponse")
                        .with_attribute(("xmlns", WSAA_NAMESPACE))
                        .write_inner_content(|w| -> Result<(), quick_xml::Error> {
                            // The ticket travels as text: escaped, never as markup of the envelope.
                            w.create_element("loginCmsReturn").write_text_content(BytesText::new(&ticket_xml))?;
                            Ok(())
                        })?;
                    Ok(())
                })?;
                Ok(())
            })?;
        Ok(())
    })();
    debug_assert!(written.is_ok());
    writer.into_inner()
}

/// The Base64 text of `loginCms`'s `in0`, decoded: the signed request (what the simulator verifies).
pub fn signed_request_of(envelope: &[u8]) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let texts = super::soap::texts(envelope)?;
    let encoded = texts.iter().find(|(n, _)| n == "in0").map(|(_, t)| t).ok_or("no in0 in the request")?;
    let compact: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(compact).map_err(|e| format!("in0 is not Base64: {e}"))
}

/// The ticket in a `loginCms` answer, or why the login was refused.
pub fn parse_login_response(xml: &[u8]) -> Result<Ticket, LoginRefused> {
    let unreadable = LoginRefused::Unreadable;
    let outer = super::soap::texts(xml).map_err(unreadable)?;
    let find = |list: &[(String, String)], name: &str| list.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
    if let Some(code) = find(&outer, "faultcode") {
        let message = find(&outer, "faultstring").unwrap_or_default();
        return Err(if code.ends_with("coe.alreadyAuthenticated") {
            LoginRefused::AlreadyAuthenticated
        } else {
            LoginRefused::Fault { code, message }
        });
    }
    let inner = find(&outer, "loginCmsReturn").ok_or_else(|| unreadable("no loginCmsReturn".into()))?;
    let ticket = super::soap::texts(inner.as_bytes()).map_err(unreadable)?;
    let field = |name: &str| find(&ticket, name).ok_or_else(|| unreadable(format!("no {name} in the ticket")));
    let instant = |name: &str| {
        let text = field(name)?;
        OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|e| unreadable(format!("{name} {text:?}: {e}")))
    };
    Ok(Ticket {
        token: field("token")?,
        sign: field("sign")?,
        generation: instant("generationTime")?,
        expiration: instant("expirationTime")?,
    })
}

/// An organization's certificate (DER) and RSA key, ready to sign.
pub struct Signer {
    certificate: Vec<u8>,
    key: RsaKeyPair,
}

impl Signer {
    /// From the PEM texts `admin set-fiscal-certificate` keeps (checked there).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, WsaaError> {
        let (certificate, key) = super::certificate::read_pair(cert_pem, key_pem).map_err(WsaaError::Credentials)?;
        Ok(Self { certificate, key })
    }

    /// `content` as CMS SignedData (DER), attached, signed at `now`: SHA-256, RSA PKCS#1 v1.5, the
    /// certificate included, the signer named by its issuer and serial number, and the signed
    /// attributes content type, signing time and message digest.
    pub fn sign(&self, content: &[u8], now: OffsetDateTime) -> Result<Vec<u8>, WsaaError> {
        let (_, cert) = X509Certificate::from_der(&self.certificate)
            .map_err(|e| WsaaError::Credentials(format!("the certificate: {e}")))?;
        let issuer = cert.issuer().as_raw().to_vec();
        let serial = cert.raw_serial().to_vec();
        let digest = Sha256::digest(content).to_vec();
        // UTCTime holds whole seconds.
        let utc = now.to_offset(time::UtcOffset::UTC);
        let second = utc.replace_nanosecond(0).unwrap_or(utc);
        let signing_time = UTCTime::from_datetime(second);
        let attributes = yasna::construct_der(|w| {
            w.write_set(|w| {
                attribute(w.next(), OID_CONTENT_TYPE, |w| w.write_oid(&oid(OID_DATA)));
                attribute(w.next(), OID_SIGNING_TIME, |w| w.write_utctime(&signing_time));
                attribute(w.next(), OID_MESSAGE_DIGEST, |w| w.write_bytes(&digest));
            })
        });
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(&signature::RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), &attributes, &mut signature)
            .map_err(|_| WsaaError::Credentials("the key cannot sign".into()))?;
        // In the SignerInfo the attributes are `[0] IMPLICIT`: the same encoding under another tag.
        let mut implicit = attributes.clone();
        implicit[0] = 0xA0;
        Ok(yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_oid(&oid(OID_SIGNED_DATA));
                w.next().write_tagged(Tag::context(0), |w| {
                    w.write_sequence(|w| {
                        w.next().write_u8(1);
                        w.next().write_set(|w| algorithm(w.next(), OID_SHA256));
                        w.next().write_sequence(|w| {
                            w.next().write_oid(&oid(OID_DATA));
                            w.next().write_tagged(Tag::context(0), |w| w.write_bytes(content));
                        });
                        w.next().write_tagged_implicit(Tag::context(0), |w| {
                            w.write_set(|w| w.next().write_der(&self.certificate))
                        });
                        w.next().write_set(|w| {
                            w.next().write_sequence(|w| {
                                w.next().write_u8(1);
                                w.next().write_sequence(|w| {
                                    w.next().write_der(&issuer);
                                    w.next().write_bigint_bytes(&serial, true);
                                });
                                algorithm(w.next(), OID_SHA256);
                                w.next().write_der(&implicit);
                                algorithm(w.next(), OID_RSA);
                                w.next().write_bytes(&signature);
                            })
                        });
                    })
                });
            })
        }))
    }
}

fn attribute(w: DERWriter<'_>, kind: &[u64], value: impl FnOnce(DERWriter<'_>)) {
    w.write_sequence(|w| {
        w.next().write_oid(&oid(kind));
        w.next().write_set(|w| value(w.next()));
    });
}

fn algorithm(w: DERWriter<'_>, kind: &[u64]) {
    w.write_sequence(|w| {
        w.next().write_oid(&oid(kind));
        w.next().write_null();
    });
}

/// What a signed login request carries, its signature verified against the certificate it includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRequest {
    /// The attached content (the login ticket request).
    pub content: Vec<u8>,
    /// The signer's certificate, DER.
    pub certificate: Vec<u8>,
}

/// Reads a CMS SignedData as [`Signer::sign`] writes it and verifies it: the signed attributes' message
/// digest is the content's SHA-256 and the signature over them verifies with the included certificate.
pub fn verify(der: &[u8]) -> Result<SignedRequest, WsaaError> {
    let malformed = |e: ASN1Error| WsaaError::Malformed(e.to_string());
    let (content, certificate, attributes, signature) = yasna::parse_der(der, |r| {
        r.read_sequence(|r| {
            if r.next().read_oid()? != oid(OID_SIGNED_DATA) {
                return Err(ASN1Error::new(ASN1ErrorKind::Invalid));
            }
            r.next().read_tagged(Tag::context(0), |r| {
                r.read_sequence(|r| {
                    r.next().read_u8()?;
                    r.next().read_der()?;
                    let content = r.next().read_sequence(|r| {
                        r.next().read_oid()?;
                        r.next().read_tagged(Tag::context(0), |r| r.read_bytes())
                    })?;
                    let mut certificates = Vec::new();
                    r.read_optional(|r| {
                        r.read_tagged_implicit(Tag::context(0), |r| {
                            r.read_set_of(|r| {
                                certificates.push(r.read_der()?);
                                Ok(())
                            })
                        })
                    })?;
                    let mut signer = None;
                    r.next().read_set_of(|r| {
                        signer = Some(r.read_sequence(|r| {
                            r.next().read_u8()?;
                            r.next().read_der()?;
                            r.next().read_der()?;
                            let attributes = r.next().read_der()?;
                            r.next().read_der()?;
                            let signature = r.next().read_bytes()?;
                            Ok((attributes, signature))
                        })?);
                        Ok(())
                    })?;
                    let (attributes, signature) = signer.ok_or_else(|| ASN1Error::new(ASN1ErrorKind::Eof))?;
                    let certificate =
                        certificates.into_iter().next().ok_or_else(|| ASN1Error::new(ASN1ErrorKind::Eof))?;
                    Ok((content, certificate, attributes, signature))
                })
            })
        })
    })
    .map_err(malformed)?;
    // The signature covers the attributes as a SET, not under their `[0]` tag.
    let mut signed = attributes;
    if signed.first() != Some(&0xA0) {
        return Err(WsaaError::Malformed("the signer has no signed attributes".into()));
    }
    signed[0] = 0x31;
    let digest = yasna::parse_der(&signed, |r| {
        let mut digest = None;
        r.read_set_of(|r| {
            r.read_sequence(|r| {
                let kind = r.next().read_oid()?;
                r.next().read_set_of(|r| {
                    if kind == oid(OID_MESSAGE_DIGEST) {
                        digest = Some(r.read_bytes()?);
                    } else {
                        r.read_der()?;
                    }
                    Ok(())
                })
            })
        })?;
        Ok(digest)
    })
    .map_err(malformed)?;
    if digest.as_deref() != Some(Sha256::digest(&content).as_slice()) {
        return Err(WsaaError::BadSignature);
    }
    let (_, cert) =
        X509Certificate::from_der(&certificate).map_err(|e| WsaaError::Malformed(format!("the certificate: {e}")))?;
    let key = signature::UnparsedPublicKey::new(
        &signature::RSA_PKCS1_2048_8192_SHA256,
        cert.public_key().subject_public_key.data.as_ref(),
    );
    key.verify(&signed, &signature).map_err(|_| WsaaError::BadSignature)?;
    Ok(SignedRequest { content, certificate })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str = include_str!("../../tests/fixtures/fiscal/org.crt");
    const KEY: &str = include_str!("../../tests/fixtures/fiscal/org.key");
    const OTHER_KEY: &str = include_str!("../../tests/fixtures/fiscal/other.key");

    #[test]
    fn the_login_ticket_request_has_the_references_shape() {
        let at = time::macros::datetime!(2026-11-28 10:00:00 -3);
        let tra = login_ticket_request(4_000_000_001, at, at + time::Duration::hours(12), SERVICE);
        let text = String::from_utf8(tra).expect("utf-8");
        let utc = login_ticket_request(1, time::macros::datetime!(2026-11-28 13:00:00.25 UTC), at, SERVICE);
        assert!(String::from_utf8(utc).expect("utf-8").contains("<generationTime>2026-11-28T10:00:00-03:00<"));
        assert_eq!(
            text,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><loginTicketRequest version=\"1.0\"><header>\
             <uniqueId>4000000001</uniqueId><generationTime>2026-11-28T10:00:00-03:00</generationTime>\
             <expirationTime>2026-11-28T22:00:00-03:00</expirationTime></header><service>wsfe</service>\
             </loginTicketRequest>"
        );
    }

    #[test]
    fn the_login_envelope_carries_the_signed_request_and_answers_read_back() {
        use base64::Engine as _;
        let envelope = String::from_utf8(login_envelope(b"\x30\x03signed")).expect("utf-8");
        let texts = crate::fiscal::soap::texts(envelope.as_bytes()).expect("xml");
        assert_eq!(texts, [("in0".to_owned(), base64::engine::general_purpose::STANDARD.encode(b"\x30\x03signed"))]);
        assert!(envelope.contains("xmlns:wsaa=\"http://wsaa.view.sua.dvadac.desein.afip.gov\""), "{envelope}");

        let ticket = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><loginTicketResponse version=\"1.0\"><header>\
            <source>CN=wsaahomo</source><destination>SERIALNUMBER=CUIT 20267565393</destination>\
            <uniqueId>1</uniqueId><generationTime>2026-11-28T10:00:00.000-03:00</generationTime>\
            <expirationTime>2026-11-28T22:00:00.000-03:00</expirationTime></header><credentials>\
            <token>PD94bWwg</token><sign>c2lnbg==</sign></credentials></loginTicketResponse>";
        let escaped = ticket.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let answer = format!(
            "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>\
             <loginCmsResponse xmlns=\"{WSAA_NAMESPACE}\"><loginCmsReturn>{escaped}</loginCmsReturn></loginCmsResponse>\
             </soapenv:Body></soapenv:Envelope>"
        );
        let read = parse_login_response(answer.as_bytes()).expect("a ticket");
        assert_eq!((read.token.as_str(), read.sign.as_str()), ("PD94bWwg", "c2lnbg=="));
        assert_eq!(read.expiration - read.generation, time::Duration::hours(12));
        let fault = |code: &str| {
            format!(
                "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>\
                 <soapenv:Fault><faultcode>{code}</faultcode><faultstring>No se pudo</faultstring></soapenv:Fault>\
                 </soapenv:Body></soapenv:Envelope>"
            )
        };
        assert_eq!(
            parse_login_response(fault("ns1:coe.alreadyAuthenticated").as_bytes()),
            Err(LoginRefused::AlreadyAuthenticated)
        );
        assert!(matches!(
            parse_login_response(fault("ns1:cms.sign.invalid").as_bytes()),
            Err(LoginRefused::Fault { code, .. }) if code == "ns1:cms.sign.invalid"
        ));
        assert!(matches!(parse_login_response(b"<x/>"), Err(LoginRefused::Unreadable(_))));
    }

    #[test]
    fn a_signed_request_verifies_and_a_tampered_one_does_not() {
        let signer = Signer::from_pem(CERT, KEY).expect("credentials");
        let now = OffsetDateTime::now_utc();
        let tra = login_ticket_request(7, now, now + time::Duration::hours(1), SERVICE);
        let cms = signer.sign(&tra, now).expect("signed");
        let read = verify(&cms).expect("verifies");
        assert_eq!(read.content, tra);
        let (_, cert) = X509Certificate::from_der(&read.certificate).expect("certificate");
        assert!(cert.subject().to_string().contains("CUIT 20267565393"));

        // The content changed after signing: its digest no longer matches.
        let mut tampered = cms.clone();
        let at = tampered.windows(4).position(|w| w == b"wsfe").expect("the service in the content");
        tampered[at] = b'W';
        assert_eq!(verify(&tampered), Err(WsaaError::BadSignature));
        // Signed with another key than the certificate's.
        let key = Signer::from_pem(CERT, OTHER_KEY).expect("key").key;
        let impostor = Signer { certificate: signer.certificate.clone(), key };
        assert_eq!(verify(&impostor.sign(&tra, now).expect("signed")), Err(WsaaError::BadSignature));
        assert!(matches!(verify(b"not der"), Err(WsaaError::Malformed(_))));
    }
}
