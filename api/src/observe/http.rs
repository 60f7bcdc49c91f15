//! The gateway's per-request metrics: requests in flight, responses by status class, and each request's
//! duration by route, method and status class.
//!
//! Every series' handle is registered on its first use and kept, so recording a request costs a few
//! atomic operations instead of building its name and labels and looking them up in the recorder's
//! registry three times (a sixth of the gateway's throughput on cached reads went there). Handles are
//! made lazily, never up front, so `/metrics` lists only the series that have seen a request.

use metrics::{Counter, Gauge, Histogram};
use poem::http::{Method, StatusCode};
use std::sync::OnceLock;
use std::time::Duration;

/// The status classes, as labels.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The methods, as labels: the standard ones by name, anything else as one value.
const METHODS: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"];

/// The handles of one gateway's series: durations for every route (by its index among `routes`),
/// method and class; responses for every class; the in-flight gauge.
pub struct HttpMetrics {
    routes: Vec<&'static str>,
    durations: Box<[OnceLock<Histogram>]>,
    responses: [OnceLock<Counter>; CLASSES.len()],
    in_flight: OnceLock<Gauge>,
}

impl HttpMetrics {
    /// Handles for the routes named, each by its index in `routes` (route labels of bounded cardinality).
    pub fn new(routes: Vec<&'static str>) -> Self {
        let cells = routes.len() * METHODS.len() * CLASSES.len();
        Self {
            routes,
            durations: (0..cells).map(|_| OnceLock::new()).collect(),
            responses: Default::default(),
            in_flight: OnceLock::new(),
        }
    }

    /// Counts a request in flight until the guard is dropped (a request whose client went away is
    /// dropped too).
    pub fn enter(&self) -> InFlight<'_> {
        let gauge = self.in_flight.get_or_init(|| metrics::gauge!("backoffice_http_requests_in_flight"));
        gauge.increment(1.0);
        InFlight(gauge)
    }

    /// Records a finished request: its route's index, method, status and how long it took.
    pub fn record(&self, route: usize, method: &Method, status: StatusCode, elapsed: Duration) {
        let class = class_index(status);
        self.responses[class]
            .get_or_init(|| metrics::counter!("backoffice_http_responses_total", "class" => CLASSES[class]))
            .increment(1);
        let Some(template) = self.routes.get(route).copied() else { return };
        let method = method_index(method);
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
pub struct InFlight<'a>(&'a Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.decrement(1.0);
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

fn method_index(method: &Method) -> usize {
    let name = method.as_str();
    METHODS[..METHODS.len() - 1].iter().position(|known| *known == name).unwrap_or(METHODS.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_class_and_method_of_a_request() {
        assert_eq!(CLASSES[class_index(StatusCode::OK)], "2xx");
        assert_eq!(CLASSES[class_index(StatusCode::NOT_FOUND)], "4xx");
        assert_eq!(CLASSES[class_index(StatusCode::SERVICE_UNAVAILABLE)], "5xx");
        assert_eq!(METHODS[method_index(&Method::DELETE)], "DELETE");
        assert_eq!(METHODS[method_index(&Method::TRACE)], "other");
        assert_eq!(METHODS[method_index(&Method::from_bytes(b"PURGE").expect("a method"))], "other");
    }
}
