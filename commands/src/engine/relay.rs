//! Waking the relay after commits: directly when it leads in this process, otherwise over NATS.

use events::bus::Bus;
use std::sync::Arc;

/// Tells the relay about commits: directly when it leads in this process, otherwise over NATS,
/// coalesced (while one wake-up is being published, further commits only leave a permit).
#[derive(Clone)]
pub(crate) struct RelayNudge {
    relay: events::relay::RelayWake,
    remote: Arc<tokio::sync::Notify>,
}

impl RelayNudge {
    pub(crate) fn start(bus: Bus, relay: events::relay::RelayWake) -> Self {
        let remote = Arc::new(tokio::sync::Notify::new());
        {
            let (remote, relay) = (remote.clone(), relay.clone());
            tokio::spawn(async move {
                loop {
                    remote.notified().await;
                    bus.wake_relay(Some(relay.newest_commit())).await;
                }
            });
        }
        Self { relay, remote }
    }

    /// Transaction `transaction_id` committed events.
    pub(crate) fn committed(&self, transaction_id: i64) {
        self.relay.committed(transaction_id);
        if self.relay.is_local() {
            self.relay.wake_local();
        } else {
            self.remote.notify_one();
        }
    }
}
