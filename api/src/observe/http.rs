//! The gateway's per-request metrics: requests in flight, responses by status class, and each request's
//! duration by route, method and status class.
//!
//! Every series' handle is registered on its first use and kept, so recording a request costs a few
//! atomic operations instead of building its name and labels and looking them up in the recorder's
//! registry three times (a sixth of the gateway's throughput on cached reads went there). Handles are
//! made lazily, never up front, so `/metrics` lists only the series that have seen a request.
//!
//! Requests in flight and responses by class are counted in plain atomics of the process (as the
//! recorder's series are the process's), copied into their series when `/metrics` is rendered
//! ([`publish`]): a request pays an atomic add for each, not the recorder's handle calls.

use metrics::{Counter, Gauge, Histogram};
use poem::http::{Method, StatusCode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// The status classes, as labels.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The methods, as labels: the standard ones by name, anything else as one value.
const METHODS: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"];

/// Requests in flight in this process, and their series once one was counted.
static IN_FLIGHT: AtomicI64 = AtomicI64::new(0);
static IN_FLIGHT_SERIES: OnceLock<Gauge> = OnceLock::new();

/// Responses of this process by class, and each class's series once it had one.
static RESPONSES: [AtomicU64; CLASSES.len()] = [const { AtomicU64::new(0) }; CLASSES.len()];
static RESPONSE_SERIES: [OnceLock<Counter>; CLASSES.len()] = [const { OnceLock::new() }; CLASSES.len()];

/// Copies the counts of requests in flight and responses into their series (before `/metrics` renders
/// them).
pub fn publish() {
    if let Some(gauge) = IN_FLIGHT_SERIES.get() {
        gauge.set(IN_FLIGHT.load(Ordering::Relaxed) as f64);
    }
    for (series, count) in RESPONSE_SERIES.iter().zip(&RESPONSES) {
        if let Some(counter) = series.get() {
            counter.absolute(count.load(Ordering::Relaxed));
        }
    }
}

/// The handles of one gateway's duration series: for every route (by its index among `routes`),
/// method and class.
pub struct HttpMetrics {
    routes: Vec<&'static str>,
    durations: Box<[OnceLock<Histogram>]>,
}

impl HttpMetrics {
    /// Handles for the routes named, each by its index in `routes` (route labels of bounded cardinality).
    pub fn new(routes: Vec<&'static str>) -> Self {
        let cells = routes.len() * METHODS.len() * CLASSES.len();
        Self { routes, durations: (0..cells).map(|_| OnceLock::new()).collect() }
    }

    /// Counts a request in flight until the guard is dropped (a request whose client went away is
    /// dropped too).
    pub fn enter(&self) -> InFlight {
        IN_FLIGHT_SERIES.get_or_init(|| metrics::gauge!("backoffice_http_requests_in_flight"));
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        InFlight
    }

    /// Records a finished request: its route's index, its method's (see [`method_index`]), its status
    /// and how long it took.
    pub fn record(&self, route: usize, MethodIndex(method): MethodIndex, status: StatusCode, elapsed: Duration) {
        let class = class_index(status);
        RESPONSE_SERIES[class]
            .get_or_init(|| metrics::counter!("backoffice_http_responses_total", "class" => CLASSES[class]));
        RESPONSES[class].fetch_add(1, Ordering::Relaxed);
        let Some(template) = self.routes.get(route).copied() else { return };
        let cell = (route * METHODS.len() + method) * CLASSES.len() + class;
        self.durations[cell]
            .get_or_init(|| {
                metrics::histogram!(
                    "backoffice_http_request_duration_seconds",
                    "route" => template,
                    "method" => METHODS[method],
                    "status" => CLASSES[class],
                )
            })
            .record(elapsed.as_secs_f64());
    }
}

/// A request in flight, counted until dropped.
pub struct InFlight;

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

fn class_index(status: StatusCode) -> usize {
    match status.as_u16() {
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        _ => 4,
    }
}

/// A method's index among the method labels (made only by [`method_index`], so always one of them).
#[derive(Debug, Clone, Copy)]
pub struct MethodIndex(usize);

/// A method's index among the method labels.
pub fn method_index(method: &Method) -> MethodIndex {
    MethodIndex(match *method {
        Method::GET => 0,
        Method::HEAD => 1,
        Method::POST => 2,
        Method::PUT => 3,
        Method::PATCH => 4,
        Method::DELETE => 5,
        Method::OPTIONS => 6,
        _ => METHODS.len() - 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method_index_of(method: &Method) -> usize {
        method_index(method).0
    }

    #[test]
    fn labels_name_the_class_and_method_of_a_request() {
        assert_eq!(CLASSES[class_index(StatusCode::OK)], "2xx");
        assert_eq!(CLASSES[class_index(StatusCode::NOT_FOUND)], "4xx");
        assert_eq!(CLASSES[class_index(StatusCode::SERVICE_UNAVAILABLE)], "5xx");
        assert_eq!(METHODS[method_index_of(&Method::DELETE)], "DELETE");
        assert_eq!(METHODS[method_index_of(&Method::TRACE)], "other");
        assert_eq!(METHODS[method_index_of(&Method::from_bytes(b"PURGE").expect("a method"))], "other");
    }
}
