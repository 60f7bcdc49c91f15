//! The one list of commands the workers run. Each line names a variant of the wire enum and the
//! [`Handler`] that runs it; the macro generates the enum (its serde form is the wire format: the
//! variant's snake_case name under `aggregate`, the command under `command`), a data-less
//! [`CommandKind`], and every dispatch as an exhaustive match: references and runs, commits and
//! batching, groups that run together, and the background jobs of every domain. Adding a command is
//! one line here.

use crate::engine::{Conn, ExecuteError, Sink};
use crate::handler::{Batching, Commit, GroupResult, Handler, Job, Member};
use crate::reply::{CommandReply, Idempotency};
use events::Metadata;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident => $handler:ty,)+) => {
        /// A command for the workers, as it travels on the bus.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "aggregate", content = "command", rename_all = "snake_case")]
        #[allow(clippy::large_enum_variant, reason = "a command lives for one request; boxing buys nothing")]
        pub enum Command {
            $($(#[$doc])* $variant(<$handler as Handler>::Command),)+
        }

        /// The kind of a [`Command`], without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum CommandKind {
            $($variant,)+
        }

        impl CommandKind {
            /// Every kind, in registry order.
            pub const ALL: &[CommandKind] = &[$(CommandKind::$variant,)+];

            /// The kind's wire name (`bulk_adjust_products`), as logs and metrics label it.
            pub fn name(self) -> &'static str {
                static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
                let names = NAMES.get_or_init(|| {
                    Self::ALL
                        .iter()
                        .map(|kind| {
                            let name = serde_json::to_value(kind)
                                .ok()
                                .and_then(|value| value.as_str().map(str::to_owned))
                                .unwrap_or_default();
                            &*Box::leak(name.into_boxed_str())
                        })
                        .collect()
                });
                names[self as usize]
            }
        }

        impl Command {
            pub fn kind(&self) -> CommandKind {
                match self {
                    $(Command::$variant(_) => CommandKind::$variant,)+
                }
            }

            /// The stream the command writes.
            pub fn stream_id(&self) -> Uuid {
                match self {
                    $(Command::$variant(command) => <$handler as Handler>::stream_id(command),)+
                }
            }

            /// Checks the command's references, then runs it.
            pub(crate) async fn run(
                &self,
                conn: &mut Conn<'_>,
                sink: &Sink<'_>,
                org_id: Uuid,
                metadata: &Metadata,
            ) -> Result<CommandReply, ExecuteError> {
                match self {
                    $(Command::$variant(command) => {
                        <$handler as Handler>::check_references(command, conn, org_id).await?;
                        <$handler as Handler>::run(command, conn, sink, org_id, metadata).await
                    })+
                }
            }
        }

        impl CommandKind {
            /// Where the kind's events commit.
            pub fn commit(self) -> Commit {
                match self {
                    $(CommandKind::$variant => <$handler as Handler>::COMMIT,)+
                }
            }

            /// Whether the kind may share a gateway batch.
            pub fn batching(self) -> Batching {
                match self {
                    $(CommandKind::$variant => <$handler as Handler>::BATCHING,)+
                }
            }

            /// Whether keyed commands of this kind of one organization in one batch run together.
            pub fn runs_together(self) -> bool {
                match self {
                    $(CommandKind::$variant => <$handler as Handler>::TOGETHER.is_some(),)+
                }
            }

            /// The background jobs the kind's domain declares.
            pub fn jobs(self) -> &'static [Job] {
                match self {
                    $(CommandKind::$variant => <$handler as Handler>::JOBS,)+
                }
            }
        }

        /// Runs `group` (keyed commands of `kind` and of `org_id`, distinct keys, each with the metadata
        /// its events carry) together; `None` when the kind does not run together or a member is of
        /// another kind (the caller then runs each alone).
        pub(crate) async fn run_together(
            kind: CommandKind,
            pool: &PgPool,
            org_id: Uuid,
            group: Vec<(&Command, &Idempotency, Metadata)>,
        ) -> Option<GroupResult> {
            match kind {
                $(CommandKind::$variant => {
                    let together = <$handler as Handler>::TOGETHER?;
                    let mut members = Vec::with_capacity(group.len());
                    for (command, claim, metadata) in group {
                        let Command::$variant(command) = command else { return None };
                        members.push(Member { command, claim, metadata });
                    }
                    Some(together(pool, org_id, &members).await)
                })+
            }
        }
    };
}

registry! {
    Customer => crate::contacts::Customer,
    Supplier => crate::contacts::Supplier,
    Product => crate::products::Product,
    MetafieldDefinition => crate::metafields::MetafieldDefinition,
    BulkAdjustProducts => crate::products::BulkAdjustments,
    Tag => crate::tags::Tag,
    ApplyTags => crate::tags::TagApplications,
    PaymentMethod => crate::records::PaymentMethod,
    Warehouse => crate::records::Warehouse,
    Category => crate::records::Category,
    PriceList => crate::price_lists::PriceList,
    Webhook => crate::webhooks::WebhookEndpoint,
    StockMovement => crate::inventory::StockMovements,
    StockTransfer => crate::inventory::StockTransfers,
    Purchase => crate::purchases::Purchases,
    PurchaseOrder => crate::purchases::PurchaseOrders,
    Sale => crate::sales::Sales,
    InvoiceSale => crate::sales::InvoiceSales,
    Quote => crate::quotes::Quotes,
}

/// Every background job the registry's handlers declare, once each (two handlers of one domain may
/// both name a job).
pub fn jobs() -> Vec<Job> {
    let mut jobs: Vec<Job> = Vec::new();
    for job in CommandKind::ALL.iter().flat_map(|kind| kind.jobs()) {
        if !jobs.iter().any(|known| known.name == job.name) {
            jobs.push(*job);
        }
    }
    jobs
}

impl Command {
    /// Commands that write write-model rows beside their events, which must commit together.
    pub fn needs_transaction(&self) -> bool {
        self.kind().commit() == Commit::OwnTransaction
    }

    /// Commands that take about as long as one another, so they may share a batch without one holding
    /// the others' replies back.
    pub fn batches_well(&self) -> bool {
        self.kind().batching() == Batching::Shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_travel_under_their_wire_names() {
        let names: Vec<String> =
            CommandKind::ALL.iter().map(|kind| serde_json::to_value(kind).expect("kind").to_string()).collect();
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), CommandKind::ALL.len());
        assert!(names.contains(&"\"bulk_adjust_products\"".to_owned()));
        for kind in CommandKind::ALL {
            assert_eq!(format!("\"{}\"", kind.name()), serde_json::to_value(kind).expect("kind").to_string());
        }
    }

    #[test]
    fn writes_with_rows_beside_their_events_commit_in_their_own_transaction() {
        for kind in [CommandKind::Product, CommandKind::BulkAdjustProducts, CommandKind::ApplyTags] {
            assert_eq!(kind.commit(), Commit::OwnTransaction, "{kind:?}");
            assert_eq!(kind.batching(), Batching::Alone, "{kind:?}");
        }
        assert_eq!(CommandKind::Customer.commit(), Commit::Grouped);
        assert_eq!(CommandKind::PriceList.batching(), Batching::Alone);
        assert_eq!(CommandKind::PriceList.commit(), Commit::Grouped);
    }
}
