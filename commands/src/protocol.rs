//! What travels between the gateway and the command workers over NATS request/reply.

use crate::aggregate::Rejection;
use crate::customer::CustomerCommand;
use crate::products::{BulkAdjustment, ProductCommand};
use crate::records::RecordCommand;
use crate::tags::{ApplyTags, TagCommand};
use crate::webhooks::WebhookCommand;
use events::CommitKey;
use events::catalogue::{CategoryEvent, MetafieldDefinitionEvent, PaymentMethodEvent, PriceListEvent, WarehouseEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Queue group shared by every command worker.
pub const QUEUE_GROUP: &str = "commands";

/// Who is acting, as recorded in event metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// `api_key:<id>`, `token:<id>`, `admin` or `system`.
    pub name: String,
    pub credential_id: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRequest {
    pub org_id: Uuid,
    pub actor: Actor,
    pub request_id: String,
    pub idempotency: Option<Idempotency>,
    pub command: Command,
}

/// Several requests sent as one NATS request on the batch subject; the worker runs them concurrently
/// (each exactly as if it had come alone) and answers with one [`CommandBatchReply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandBatch {
    pub requests: Vec<CommandRequest>,
}

/// The outcomes of a [`CommandBatch`], in the order of its requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandBatchReply {
    pub replies: Vec<CommandReply>,
}

/// The idempotency key of a request, with what identifies the request it was first used for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Idempotency {
    pub key: String,
    /// The operation (for example `createCustomer`): a key reused on another operation is a conflict.
    pub operation: String,
    /// SHA-256 (hex) of the operation, its path parameters, the contract version and the canonical body.
    pub request_hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "aggregate", content = "command", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant, reason = "a command lives for one request; boxing buys nothing")]
pub enum Command {
    Customer(CustomerCommand),
    Supplier(CustomerCommand),
    Product(ProductCommand),
    MetafieldDefinition(RecordCommand<MetafieldDefinitionEvent>),
    BulkAdjustProducts(BulkAdjustment),
    Tag(TagCommand),
    ApplyTags(ApplyTags),
    PaymentMethod(RecordCommand<PaymentMethodEvent>),
    Warehouse(RecordCommand<WarehouseEvent>),
    Category(RecordCommand<CategoryEvent>),
    PriceList(RecordCommand<PriceListEvent>),
    Webhook(WebhookCommand),
}

impl Command {
    /// Commands that also write write-model rows beside their events, which must commit together.
    pub fn needs_transaction(&self) -> bool {
        matches!(self, Command::Product(_) | Command::BulkAdjustProducts(_) | Command::ApplyTags(_))
    }

    /// Commands that take about as long as one another (one small stream, a few milliseconds), so they may
    /// share a batch without one holding the others' replies back. Product writes (up to 250 variants),
    /// bulk adjustments, tag applications and price lists (any number of prices) travel alone.
    pub fn batches_well(&self) -> bool {
        !matches!(
            self,
            Command::Product(_) | Command::BulkAdjustProducts(_) | Command::ApplyTags(_) | Command::PriceList(_)
        )
    }

    /// The stream the command writes (its aggregate's id).
    pub fn stream_id(&self) -> Uuid {
        match self {
            Command::Customer(c) | Command::Supplier(c) => c.contact_id(),
            Command::Product(c) => c.target_id(),
            Command::MetafieldDefinition(c) => c.id(),
            Command::BulkAdjustProducts(c) => c.id,
            Command::Tag(c) => c.id(),
            Command::ApplyTags(c) => c.id,
            Command::PaymentMethod(c) => c.id(),
            Command::Warehouse(c) => c.id(),
            Command::Category(c) => c.id(),
            Command::PriceList(c) => c.id(),
            Command::Webhook(c) => c.id(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CommandReply {
    /// The command was applied (or had nothing to change). `state` is the aggregate after it;
    /// `commit` is the commit-order key of the last event written, for read-your-writes waits.
    Accepted {
        commit: Option<CommitKey>,
        created: bool,
        state: Value,
        /// True when this is the stored outcome of an earlier request with the same idempotency key.
        #[serde(default)]
        replayed: bool,
    },
    /// The command was refused; nothing was written.
    Rejected { rejection: Rejection },
    /// The outcome could not be stored; nothing was written. `retryable` tells whether the same
    /// request may succeed later; `cause` whether the event store could not be reached at all.
    Failed {
        retryable: bool,
        message: String,
        /// Absent from the replies of workers of earlier releases, which read as `internal`.
        #[serde(default)]
        cause: FailureCause,
    },
}

/// Why a command failed in the worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The event store could not be reached or dropped the connection (a restart, an outage, no free
    /// connection): the same request may well succeed once it is back.
    StorageUnavailable,
    /// Other writes to the same stream kept committing first, until the optimistic-concurrency retries
    /// ran out: nothing was written, and the same request may succeed when retried.
    Contended,
    /// Anything else: a fault of the service itself. Also what a cause this release does not know
    /// reads as (a newer worker's); it stays last for that.
    #[default]
    #[serde(other)]
    Internal,
}
