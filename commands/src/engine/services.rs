//! What commands and jobs reach besides the event store: the tax authority's adapter. The worker runs
//! every command and job inside a scope holding them, so no domain's handler carries them along.

use crate::fiscal::FiscalClient;
use std::future::Future;

/// The services of a command-worker process.
#[derive(Clone, Default)]
pub struct Services {
    /// The tax authority sales speak to (none: fiscal vouchers are deferred).
    pub fiscal: Option<FiscalClient>,
}

tokio::task_local! {
    static SERVICES: Services;
}

/// Runs `work` with `services` in scope.
pub async fn with_services<F: Future>(services: Services, work: F) -> F::Output {
    SERVICES.scope(services, work).await
}

/// The tax authority of the running command or job, if one is configured.
pub fn fiscal() -> Option<FiscalClient> {
    SERVICES.try_with(|services| services.fiscal.clone()).ok().flatten()
}
