//! Projector progress: what projectors publish after each batch, and the tracker the gateway keeps to
//! wait until a projection has applied a given event (read-your-writes).

use crate::{CacheKey, Partition};
use events::CommitKey;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use uuid::Uuid;

/// Published on `<prefix>.progress.<projection>` after every batch: every event at or below `key` in
/// commit order has been applied by this partition of the projection, and the listed cached reads are
/// stale. Invalidations travel in the same message so a reader never sees progress before them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub projection: String,
    pub partition: Partition,
    pub key: CommitKey,
    #[serde(default)]
    pub invalidate: Vec<CacheKey>,
    /// Whether the batch wrote anything (false for heartbeats and batches passed over), so followers
    /// of the projection's output (the webhook sender) only look for new rows when there may be some.
    #[serde(default = "changed_by_default")]
    pub changed: bool,
}

fn changed_by_default() -> bool {
    true
}

/// The latest progress of every projection partition heard of, and a way to wait for more.
#[derive(Default)]
pub struct ProgressTracker {
    reached: Mutex<HashMap<String, HashMap<Partition, CommitKey>>>,
    changed: Notify,
}

impl ProgressTracker {
    pub fn record(&self, progress: &Progress) {
        {
            let mut reached = self.reached.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let entry = reached
                .entry(progress.projection.clone())
                .or_default()
                .entry(progress.partition)
                .or_insert(CommitKey::ZERO);
            if progress.key > *entry {
                *entry = progress.key;
            }
        }
        self.changed.notify_waiters();
    }

    /// Whether some running partition that owns `org` has applied everything up to `key`.
    pub fn has_reached(&self, projection: &str, org: Uuid, key: CommitKey) -> bool {
        let reached = self.reached.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        reached
            .get(projection)
            .is_some_and(|partitions| partitions.iter().any(|(part, at)| part.owns(org) && *at >= key))
    }

    /// Waits until [`Self::has_reached`] holds, for at most `timeout`. Returns whether it did.
    pub async fn wait_for(&self, projection: &str, org: Uuid, key: CommitKey, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.has_reached(projection, org, key) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.has_reached(projection, org, key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn progress(key: CommitKey) -> Progress {
        Progress { projection: "customers".into(), partition: Partition::WHOLE, key, invalidate: vec![], changed: true }
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_the_key_is_reached() {
        let tracker = Arc::new(ProgressTracker::default());
        let org = Uuid::now_v7();
        let target = CommitKey::new(10, 5);
        assert!(!tracker.has_reached("customers", org, target));
        let waiter = {
            let tracker = tracker.clone();
            tokio::spawn(async move { tracker.wait_for("customers", org, target, Duration::from_secs(5)).await })
        };
        tracker.record(&progress(CommitKey::new(10, 4)));
        tracker.record(&progress(CommitKey::new(11, 1)));
        assert!(waiter.await.expect("joined"));
        assert!(!tracker.has_reached("other", org, target));
    }

    #[tokio::test]
    async fn waiting_gives_up_at_the_deadline() {
        let tracker = ProgressTracker::default();
        let reached = tracker.wait_for("customers", Uuid::now_v7(), CommitKey::new(1, 1), Duration::from_millis(20));
        assert!(!reached.await);
    }

    #[test]
    fn only_the_owning_partition_counts() {
        let tracker = ProgressTracker::default();
        let org = Uuid::now_v7();
        let owner = Partition::of(org, 2);
        let other = Partition { index: 1 - owner, count: 2 };
        tracker.record(&Progress { partition: other, ..progress(CommitKey::new(5, 5)) });
        assert!(!tracker.has_reached("customers", org, CommitKey::new(5, 5)));
        tracker.record(&Progress { partition: Partition { index: owner, count: 2 }, ..progress(CommitKey::new(5, 5)) });
        assert!(tracker.has_reached("customers", org, CommitKey::new(5, 5)));
    }
}
