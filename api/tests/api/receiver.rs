//! A real HTTPS webhook receiver for tests: its own CA (written to a PEM file for `WEBHOOK_CA_FILE`),
//! a certificate for `localhost` and `127.0.0.1`, scripted replies, and every request it got. The
//! benchmark uses it too.
#![allow(dead_code)]

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Status(u16),
    /// Answers `status` after `delay`.
    Slow(u16, Duration),
    /// A redirect to another path of this receiver (which must not be followed).
    Redirect,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
    /// Wall-clock arrival time.
    pub at: std::time::SystemTime,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("webhook body is JSON")
    }
}

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    arrived: Notify,
    /// Replies per path, used in order; then `Status(200)`.
    script: Mutex<HashMap<String, VecDeque<Reply>>>,
    /// While set, connections are closed at once (the receiver is "down").
    down: AtomicBool,
    refused: AtomicUsize,
}

pub struct Receiver {
    pub port: u16,
    pub ca_file: PathBuf,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "Test webhook CA");
        ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");
        let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("leaf params")
            .signed_by(&leaf_key, &ca)
            .expect("leaf certificate");
        let ca_file = std::env::temp_dir().join(format!("webhook-ca-{}.pem", uuid::Uuid::now_v7().simple()));
        std::fs::write(&ca_file, ca.pem()).expect("CA file");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("key der");
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("receiver listener");
        let port = listener.local_addr().expect("address").port();
        let state = Arc::new(State::default());
        let serving = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                if serving.down.load(Ordering::Acquire) {
                    serving.refused.fetch_add(1, Ordering::AcqRel);
                    drop(stream);
                    continue;
                }
                let (acceptor, state) = (acceptor.clone(), serving.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else { return };
                    let service = hyper::service::service_fn(move |request| handle(state.clone(), request));
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        Self { port, ca_file, state, task }
    }

    /// An address of this receiver by name (resolved by the sender).
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// An address of this receiver as an IP literal.
    pub fn ip_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Queues replies for `path`, used in order before the default 200.
    pub fn script(&self, path: &str, replies: &[Reply]) {
        self.state.script.lock().expect("script").entry(path.to_owned()).or_default().extend(replies.iter().copied());
    }

    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::Release);
    }

    /// Connections closed while down.
    pub fn refused_connections(&self) -> usize {
        self.state.refused.load(Ordering::Acquire)
    }

    /// Every request so far, whatever its path.
    pub fn count(&self) -> usize {
        self.state.received.lock().expect("received").len()
    }

    /// Every request so far.
    pub fn all(&self) -> Vec<Received> {
        self.state.received.lock().expect("received").clone()
    }

    pub fn received(&self, path: &str) -> Vec<Received> {
        self.state.received.lock().expect("received").iter().filter(|r| r.path == path).cloned().collect()
    }

    /// Waits until `path` has received at least `count` requests; returns them.
    pub async fn wait_for(&self, path: &str, count: usize) -> Vec<Received> {
        self.wait_until(path, |got| got.len() >= count).await
    }

    /// Waits until the requests to `path` satisfy `done` (for at most 30 s).
    pub async fn wait_until(&self, path: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let arrived = self.state.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let got = self.received(path);
            if done(&got) {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("{path} did not receive what was expected; got {got:#?}");
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.ca_file);
    }
}

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = request.uri().path().to_owned();
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or_default().to_owned()))
        .collect();
    let body = request.into_body().collect().await?.to_bytes();
    let reply = state.script.lock().expect("script").get_mut(&path).and_then(VecDeque::pop_front);
    let reply = reply.unwrap_or(Reply::Status(200));
    // Recorded on arrival, before any delay: a request counts as received even if the sender gives up.
    state.received.lock().expect("received").push(Received {
        path: path.clone(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: std::time::SystemTime::now(),
    });
    state.arrived.notify_waiters();
    if let Reply::Slow(_, delay) = reply {
        tokio::time::sleep(delay).await;
    }
    let response = match reply {
        Reply::Status(code) | Reply::Slow(code, _) => {
            Response::builder().status(code).body(Full::new(Bytes::from_static(b"{\"ok\":true}")))
        }
        Reply::Redirect => Response::builder()
            .status(302)
            .header("Location", format!("{path}-redirected"))
            .body(Full::new(Bytes::new())),
    };
    Ok(response.expect("response"))
}
