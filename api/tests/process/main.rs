//! Whole-process tests: the `backoffice` binary run as operators run it, killed with SIGKILL, cut off
//! from NATS, audited and rebuilt from its CLI.

mod helpers;
mod observability;
mod operators;
mod resilience;
