//! The gateway and the `backoffice` binary: HTTP routes for v1 (poem-openapi), authentication, the
//! error envelope, query handlers over the read tables, the read cache, and the process roles and CLI;
//! and the tax authority's simulator (`fiscal_simulator`), a separate HTTP server.

pub mod cache;
pub mod cli;
pub mod fiscal_simulator;
pub mod http;
pub mod observe;
pub mod ratelimit;
pub mod roles;
pub mod state;
