//! Projector progress: what projectors publish after each batch, and the tracker the gateway keeps to
//! wait until a projection has applied a given event (read-your-writes).

use crate::{CacheKey, Partition, ProjectionId};
use events::CommitKey;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use uuid::Uuid;

/// Published on `<prefix>.progress.<projection>` after every batch: every event at or below `key` in
/// commit order has been applied by this partition of the projection, and the listed cached reads are
/// stale. Invalidations travel in the same message so a reader never sees progress before them.
///
/// The projection and the cached resources travel as their stable strings, so the message is the same
/// as when they were plain strings. A reader that does not know one of them (a newer release added it)
/// cannot decode the message at all: gateways then forget their whole cache (see `api::state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub projection: ProjectionId,
    pub partition: Partition,
    pub key: CommitKey,
    #[serde(default)]
    pub invalidate: Vec<CacheKey>,
    /// Whether the batch wrote anything (false for heartbeats and batches passed over), so followers
    /// of the projection's output (the webhook sender) only look for new rows when there may be some.
    #[serde(default = "changed_by_default")]
    pub changed: bool,
    /// The process whose gateway already heard this progress directly ([`LocalProgress`]), so its
    /// copy from the bus can be passed over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard_by: Option<Uuid>,
}

fn changed_by_default() -> bool {
    true
}

/// Subscribes to the progress of `projections`, from every process, and returns the task that
/// notifies `wake` each time a batch of one of them wrote something: for the workers that follow a
/// projection's output (the webhook sender, the document renderer), which then look for new rows
/// at once instead of at their next poll. Heartbeats and batches that wrote nothing wake no one; a
/// message that cannot be read wakes (looking costs one query, missing new rows a whole poll).
pub async fn wake_on_change(
    bus: &events::bus::Bus,
    projections: &[ProjectionId],
    wake: Arc<tokio::sync::Notify>,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + use<>> {
    use futures::StreamExt;
    let mut subscriptions = Vec::with_capacity(projections.len());
    for projection in projections {
        subscriptions.push(bus.client.subscribe(bus.progress_subject(projection.as_str())).await?);
    }
    let mut progress = futures::stream::select_all(subscriptions);
    Ok(async move {
        while let Some(message) = progress.next().await {
            let changed = serde_json::from_slice::<Progress>(&message.payload).map(|p| p.changed).unwrap_or(true);
            if changed {
                wake.notify_one();
            }
        }
    })
}

type Listener = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Progress within one process: a gateway running beside projectors (`backoffice all`) hears their
/// progress the moment a batch commits, instead of one bus hop later, and every other gateway hears it
/// over the bus as before. The projector delivers each message here first and, when a listener heard
/// it, marks the published copy with this process's id ([`Progress::heard_by`]), so the gateway here
/// can pass that copy over.
#[derive(Clone)]
pub struct LocalProgress {
    process: Uuid,
    listeners: Arc<RwLock<Vec<Listener>>>,
}

impl Default for LocalProgress {
    fn default() -> Self {
        Self { process: Uuid::now_v7(), listeners: Arc::default() }
    }
}

impl LocalProgress {
    /// Calls `listener` with every progress the projectors of this process publish from now on.
    pub fn listen(&self, listener: impl Fn(&Progress) + Send + Sync + 'static) {
        self.listeners.write().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Arc::new(listener));
    }

    /// Hands `progress` to the listeners; when there are any, marks it as heard by this process.
    pub fn deliver(&self, progress: &mut Progress) {
        let listeners = self.listeners.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        if listeners.is_empty() {
            return;
        }
        for listener in listeners.iter() {
            listener(progress);
        }
        progress.heard_by = Some(self.process);
    }

    /// Whether `progress` (received from the bus) was already delivered here.
    pub fn already_heard(&self, progress: &Progress) -> bool {
        progress.heard_by == Some(self.process)
    }
}

/// The latest progress of every projection partition heard of, and the writes waiting for more.
/// Each waiter is woken once, by the progress that reaches its key: a progress message never wakes
/// writers it does not release.
#[derive(Default)]
pub struct ProgressTracker {
    state: Mutex<TrackerState>,
}

#[derive(Default)]
struct TrackerState {
    reached: HashMap<ProjectionId, HashMap<Partition, CommitKey>>,
    waiting: HashMap<ProjectionId, Vec<Waiter>>,
}

struct Waiter {
    org: Uuid,
    key: CommitKey,
    release: tokio::sync::oneshot::Sender<()>,
}

impl TrackerState {
    fn has_reached(&self, projection: ProjectionId, org: Uuid, key: CommitKey) -> bool {
        self.reached
            .get(&projection)
            .is_some_and(|partitions| partitions.iter().any(|(part, at)| part.owns(org) && *at >= key))
    }
}

impl ProgressTracker {
    fn state(&self) -> std::sync::MutexGuard<'_, TrackerState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn record(&self, progress: &Progress) {
        let mut state = self.state();
        let entry =
            state.reached.entry(progress.projection).or_default().entry(progress.partition).or_insert(CommitKey::ZERO);
        if progress.key <= *entry {
            return;
        }
        *entry = progress.key;
        let Some(waiters) = state.waiting.get_mut(&progress.projection) else { return };
        // Release the writes this progress reaches; forget those that stopped waiting.
        let mut i = 0;
        while i < waiters.len() {
            let waiter = &waiters[i];
            if waiter.release.is_closed() {
                waiters.swap_remove(i);
            } else if progress.partition.owns(waiter.org) && progress.key >= waiter.key {
                let _ = waiters.swap_remove(i).release.send(());
            } else {
                i += 1;
            }
        }
    }

    /// Whether some running partition that owns `org` has applied everything up to `key`.
    pub fn has_reached(&self, projection: ProjectionId, org: Uuid, key: CommitKey) -> bool {
        self.state().has_reached(projection, org, key)
    }

    /// Waits until [`Self::has_reached`] holds, for at most `timeout`. Returns whether it did.
    pub async fn wait_for(&self, projection: ProjectionId, org: Uuid, key: CommitKey, timeout: Duration) -> bool {
        let released = {
            let mut state = self.state();
            if state.has_reached(projection, org, key) {
                return true;
            }
            let (release, released) = tokio::sync::oneshot::channel();
            state.waiting.entry(projection).or_default().push(Waiter { org, key, release });
            released
        };
        match tokio::time::timeout(timeout, released).await {
            Ok(Ok(())) => true,
            _ => self.has_reached(projection, org, key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(key: CommitKey) -> Progress {
        Progress {
            projection: ProjectionId::Customers,
            partition: Partition::WHOLE,
            key,
            invalidate: vec![],
            changed: true,
            heard_by: None,
        }
    }

    #[test]
    fn progress_on_the_wire_names_projections_and_resources_as_before() {
        let (org, id) = (Uuid::nil(), Uuid::max());
        let text = format!(
            r#"{{"projection":"points_of_sale","partition":{{"index":0,"count":1}},"key":{{"transaction_id":7,"position":42}},"invalidate":[{{"resource":"point_of_sale","org_id":"{org}","id":"{id}"}}],"changed":true}}"#
        );
        let progress = Progress {
            projection: ProjectionId::PointsOfSale,
            partition: Partition::WHOLE,
            key: CommitKey::new(7, 42),
            invalidate: vec![CacheKey { resource: crate::CacheResource::PointOfSale, org_id: org, id }],
            changed: true,
            heard_by: None,
        };
        assert_eq!(serde_json::to_string(&progress).expect("json"), text);
        assert_eq!(serde_json::from_str::<Progress>(&text).expect("json"), progress);
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_the_key_is_reached() {
        let tracker = Arc::new(ProgressTracker::default());
        let org = Uuid::now_v7();
        let target = CommitKey::new(10, 5);
        assert!(!tracker.has_reached(ProjectionId::Customers, org, target));
        let waiter = {
            let tracker = tracker.clone();
            tokio::spawn(
                async move { tracker.wait_for(ProjectionId::Customers, org, target, Duration::from_secs(5)).await },
            )
        };
        tracker.record(&progress(CommitKey::new(10, 4)));
        tracker.record(&progress(CommitKey::new(11, 1)));
        assert!(waiter.await.expect("joined"));
        assert!(!tracker.has_reached(ProjectionId::Suppliers, org, target));
    }

    #[tokio::test]
    async fn waiting_gives_up_at_the_deadline() {
        let tracker = ProgressTracker::default();
        let reached =
            tracker.wait_for(ProjectionId::Customers, Uuid::now_v7(), CommitKey::new(1, 1), Duration::from_millis(20));
        assert!(!reached.await);
    }

    #[tokio::test]
    async fn each_waiter_is_released_by_the_progress_reaching_it_and_stale_ones_are_forgotten() {
        let tracker = Arc::new(ProgressTracker::default());
        let org = Uuid::now_v7();
        let wait = |key: CommitKey, timeout_ms: u64| {
            let tracker = tracker.clone();
            tokio::spawn(async move {
                tracker.wait_for(ProjectionId::Customers, org, key, Duration::from_millis(timeout_ms)).await
            })
        };
        assert!(!wait(CommitKey::new(1, 1), 10).await.expect("joined"), "gave up");
        let near = wait(CommitKey::new(2, 1), 5_000);
        let far = wait(CommitKey::new(3, 1), 5_000);
        while tracker.state().waiting.get(&ProjectionId::Customers).map_or(0, Vec::len) < 3 {
            tokio::task::yield_now().await;
        }
        tracker.record(&progress(CommitKey::new(2, 1)));
        assert!(near.await.expect("joined"));
        assert_eq!(
            tracker.state().waiting[&ProjectionId::Customers].len(),
            1,
            "the stale waiter went, the far one stays"
        );
        tracker.record(&progress(CommitKey::new(3, 1)));
        assert!(far.await.expect("joined"));
        assert!(tracker.state().waiting[&ProjectionId::Customers].is_empty());
    }

    #[test]
    fn only_the_owning_partition_counts() {
        let tracker = ProgressTracker::default();
        let org = Uuid::now_v7();
        let owner = Partition::of(org, 2);
        let other = Partition { index: 1 - owner, count: 2 };
        tracker.record(&Progress { partition: other, ..progress(CommitKey::new(5, 5)) });
        assert!(!tracker.has_reached(ProjectionId::Customers, org, CommitKey::new(5, 5)));
        tracker.record(&Progress { partition: Partition { index: owner, count: 2 }, ..progress(CommitKey::new(5, 5)) });
        assert!(tracker.has_reached(ProjectionId::Customers, org, CommitKey::new(5, 5)));
    }
}
