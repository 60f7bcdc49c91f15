//! The NATS side: connection, subject names (all under `NATS_PREFIX`), the JetStream event stream and
//! the headers events travel with.

use crate::envelope::CommitKey;
use async_nats::jetstream::{self, stream};
use async_nats::{ConnectOptions, HeaderMap};
use std::time::Duration;
use uuid::Uuid;

/// Header carrying an event's commit-order key (`<transaction_id>:<position>`).
pub const COMMIT_KEY_HEADER: &str = "Bo-Commit-Key";

/// How long JetStream remembers message ids to drop republished events: longer than any relay outage
/// we expect to ride out. The relay also skips what the stream already holds when it starts.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone)]
pub struct Bus {
    pub client: async_nats::Client,
    pub js: jetstream::Context,
    prefix: String,
}

impl Bus {
    /// Connects to NATS. The connection is established (and re-established) in the background, so a
    /// process can start while NATS is away and recover by itself when it returns.
    pub async fn connect(url: &str, prefix: &str, name: &str) -> Result<Self, async_nats::ConnectError> {
        let client = ConnectOptions::new()
            .name(name)
            .retry_on_initial_connect()
            .max_reconnects(None)
            .request_timeout(Some(Duration::from_secs(5)))
            .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(2_000)))
            .event_callback(|event| async move {
                match event {
                    async_nats::Event::Connected => tracing::info!("nats connected"),
                    async_nats::Event::Disconnected => tracing::warn!("nats disconnected"),
                    other => tracing::debug!(%other, "nats event"),
                }
            })
            .connect(url)
            .await?;
        Ok(Self::from_client(client, prefix))
    }

    pub fn from_client(client: async_nats::Client, prefix: &str) -> Self {
        let js = jetstream::ContextBuilder::new().timeout(Duration::from_secs(5)).build(client.clone());
        Self { client, js, prefix: prefix.to_owned() }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn is_connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    /// `<prefix>.events.<org>.<aggregate>.<type>`
    pub fn event_subject(&self, org: Uuid, stream_type: &str, event_type: &str) -> String {
        format!("{}.events.{org}.{stream_type}.{event_type}", self.prefix)
    }

    pub fn events_wildcard(&self) -> String {
        format!("{}.events.>", self.prefix)
    }

    /// The JetStream stream holding every event (stream names allow no dots).
    pub fn stream_name(&self) -> String {
        let cleaned: String =
            self.prefix.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        format!("{cleaned}_EVENTS")
    }

    pub fn command_subject(&self) -> String {
        format!("{}.commands", self.prefix)
    }

    /// Several commands in one request (`commands::protocol::CommandBatch`), one reply listing their outcomes.
    pub fn command_batch_subject(&self) -> String {
        format!("{}.commands.batch", self.prefix)
    }

    pub fn progress_subject(&self, projection: &str) -> String {
        format!("{}.progress.{projection}", self.prefix)
    }

    pub fn progress_wildcard(&self) -> String {
        format!("{}.progress.>", self.prefix)
    }

    /// Operator commands announce credential and limit changes of an organization here (payload: its id).
    pub fn credentials_changed_subject(&self) -> String {
        format!("{}.credentials.changed", self.prefix)
    }

    pub fn relay_wake_subject(&self) -> String {
        format!("{}.relay.wake", self.prefix)
    }

    /// Tells the relay that events were committed, by transaction `transaction_id` when known (best
    /// effort: the relay also polls).
    pub async fn wake_relay(&self, transaction_id: Option<i64>) {
        let payload = transaction_id.map(|t| bytes::Bytes::from(t.to_string())).unwrap_or_default();
        let _ = self.client.publish(self.relay_wake_subject(), payload).await;
    }

    /// Creates the event stream, or updates it to the current configuration.
    pub async fn ensure_event_stream(&self) -> Result<stream::Stream, jetstream::context::CreateStreamError> {
        let config = stream::Config {
            name: self.stream_name(),
            subjects: vec![self.events_wildcard()],
            duplicate_window: DUPLICATE_WINDOW,
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            discard: stream::DiscardPolicy::Old,
            num_replicas: 1,
            ..Default::default()
        };
        self.js.create_or_update_stream(config.clone()).await?;
        self.js.get_or_create_stream(config).await
    }

    /// The headers an event is published with: its id for JetStream de-duplication, and its key.
    pub fn event_headers(event_id: Uuid, key: CommitKey) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, event_id.to_string().as_str());
        headers.insert(COMMIT_KEY_HEADER, key.to_string().as_str());
        headers
    }
}

/// Parses a `Bo-Commit-Key` header value.
pub fn parse_commit_key(text: &str) -> Option<CommitKey> {
    let (t, p) = text.split_once(':')?;
    Some(CommitKey::new(t.parse().ok()?, p.parse().ok()?))
}

pub fn header_commit_key(headers: Option<&HeaderMap>) -> Option<CommitKey> {
    headers?.get(COMMIT_KEY_HEADER).and_then(|v| parse_commit_key(v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_keys_round_trip_through_the_header_format() {
        let key = CommitKey::new(123, 456);
        assert_eq!(parse_commit_key(&key.to_string()), Some(key));
        assert_eq!(parse_commit_key("x:1"), None);
    }
}
