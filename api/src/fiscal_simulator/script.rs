//! The scripted outcomes a test or demo queues per issuer and point of sale, consumed one per
//! `FECAESolicitar`. They live in the simulator process's memory: a restart forgets the script, never
//! the vouchers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// What the simulator does with the next `FECAESolicitar` of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    /// Judge the voucher by the rules (the default when nothing is queued).
    Approve,
    /// Judge it by the rules and, if approved, add this observation (default 10217).
    ApproveWithObservations {
        #[serde(default)]
        code: Option<i64>,
        #[serde(default)]
        message: Option<String>,
    },
    /// Reject it with this error, whatever the rules say; nothing is stored.
    Reject { code: i64, message: String },
    /// Answer 503 before processing anything.
    Unavailable,
    /// Judge it and store it if approved, then never answer: the request is held open until the
    /// client gives up.
    LostReply,
}

/// The non-blocking observation `approve_with_observations` adds when it names none.
pub const DEFAULT_OBSERVATION: (i64, &str) = (
    10217,
    "El credito fiscal discriminado en el presente comprobante solo podra ser computado a efectos del Procedimiento permanente de transicion al Regimen General.",
);

/// `POST /_simulator/outcomes`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Queued {
    pub issuer_tax_id: i64,
    pub point_of_sale: i32,
    pub outcomes: Vec<Outcome>,
}

/// `POST /_simulator/tickets`: how long the tickets issued from now on last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketLifetime {
    pub lifetime_seconds: u32,
}

/// `POST /_simulator/latency`: how long each `FECAESolicitar` takes to answer from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub milliseconds: u32,
}

/// `POST /_simulator/points-of-sale`: the points of sale enabled for a CUIT.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnabledPoints {
    pub issuer_tax_id: i64,
    pub points_of_sale: Vec<i32>,
}

/// A ticket's lifetime when none is scripted: the authority's twelve hours.
pub const TICKET_LIFETIME: time::Duration = time::Duration::hours(12);
/// The points of sale enabled for a CUIT nobody scripted.
pub const DEFAULT_POINTS_OF_SALE: std::ops::RangeInclusive<i32> = 1..=10;

/// The queues, per issuer CUIT and point of sale (any voucher type), the tickets' lifetime and the
/// enabled points of sale.
#[derive(Debug, Default)]
pub struct Script {
    queues: Mutex<HashMap<(i64, i32), VecDeque<Outcome>>>,
    ticket_lifetime: Mutex<Option<time::Duration>>,
    points_of_sale: Mutex<HashMap<i64, Vec<i32>>>,
    requests: Mutex<HashMap<String, u64>>,
    latency: Mutex<std::time::Duration>,
}

impl Script {
    /// Appends `outcomes` to the series' queue; answers how many are now pending there.
    pub fn queue(&self, issuer: i64, point_of_sale: i32, outcomes: Vec<Outcome>) -> usize {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = queues.entry((issuer, point_of_sale)).or_default();
        queue.extend(outcomes);
        queue.len()
    }

    /// Each authorization takes `latency` to answer from now on (the authority's own processing).
    pub fn set_latency(&self, latency: std::time::Duration) {
        *self.latency.lock().unwrap_or_else(PoisonError::into_inner) = latency;
    }

    pub fn latency(&self) -> std::time::Duration {
        *self.latency.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a request of `operation`.
    pub fn count(&self, operation: &str) {
        *self.requests.lock().unwrap_or_else(PoisonError::into_inner).entry(operation.to_owned()).or_default() += 1;
    }

    /// The requests served so far, by operation.
    pub fn requests(&self) -> HashMap<String, u64> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Tickets issued from now on last `lifetime`.
    pub fn set_ticket_lifetime(&self, lifetime: time::Duration) {
        *self.ticket_lifetime.lock().unwrap_or_else(PoisonError::into_inner) = Some(lifetime);
    }

    pub fn ticket_lifetime(&self) -> time::Duration {
        self.ticket_lifetime.lock().unwrap_or_else(PoisonError::into_inner).unwrap_or(TICKET_LIFETIME)
    }

    /// The points of sale enabled for `issuer` are exactly `points` from now on.
    pub fn enable_points_of_sale(&self, issuer: i64, mut points: Vec<i32>) {
        points.sort_unstable();
        points.dedup();
        self.points_of_sale.lock().unwrap_or_else(PoisonError::into_inner).insert(issuer, points);
    }

    /// The points of sale enabled for `issuer`: those scripted, else [`DEFAULT_POINTS_OF_SALE`].
    pub fn points_of_sale(&self, issuer: i64) -> Vec<i32> {
        let scripted = self.points_of_sale.lock().unwrap_or_else(PoisonError::into_inner).get(&issuer).cloned();
        scripted.unwrap_or_else(|| DEFAULT_POINTS_OF_SALE.collect())
    }

    /// Takes the next outcome of the series: [`Outcome::Approve`] when none is queued.
    pub fn next(&self, issuer: i64, point_of_sale: i32) -> Outcome {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues.get_mut(&(issuer, point_of_sale)).and_then(VecDeque::pop_front).unwrap_or(Outcome::Approve)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_consumed_in_order_per_series_then_approve() {
        let script = Script::default();
        let body = r#"{"issuer_tax_id": 20267565393, "point_of_sale": 3, "outcomes": [
            {"outcome": "unavailable"},
            {"outcome": "reject", "code": 10048, "message": "totales"},
            {"outcome": "approve_with_observations"},
            {"outcome": "lost_reply"}
        ]}"#;
        let queued: Queued = serde_json::from_str(body).expect("parses");
        assert_eq!(script.queue(queued.issuer_tax_id, queued.point_of_sale, queued.outcomes), 4);
        assert_eq!(script.next(20267565393, 4), Outcome::Approve, "another point of sale");
        assert_eq!(script.next(20055361682, 3), Outcome::Approve, "another issuer");
        assert_eq!(script.next(20267565393, 3), Outcome::Unavailable);
        assert_eq!(script.next(20267565393, 3), Outcome::Reject { code: 10048, message: "totales".into() });
        assert_eq!(script.next(20267565393, 3), Outcome::ApproveWithObservations { code: None, message: None });
        assert_eq!(script.next(20267565393, 3), Outcome::LostReply);
        assert_eq!(script.next(20267565393, 3), Outcome::Approve);
    }

    #[test]
    fn malformed_outcomes_are_refused() {
        for body in [
            r#"{"outcome": "explode"}"#,
            r#"{"outcome": "reject", "code": 1}"#,
            r#"{"outcome": "reject", "code": 1, "mesage": "typo"}"#,
            r#"{"code": 1}"#,
        ] {
            assert!(serde_json::from_str::<Outcome>(body).is_err(), "{body}");
        }
    }
}
