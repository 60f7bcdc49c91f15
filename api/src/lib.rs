//! The gateway and the `backoffice` binary: HTTP routes for v1 (poem-openapi), authentication, the
//! error envelope, query handlers over the read tables, the read cache, and the process roles and CLI.

pub mod cache;
pub mod cli;
pub mod http;
pub mod ratelimit;
pub mod roles;
pub mod state;
