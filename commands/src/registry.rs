//! The one list of commands the workers run, written once in `lib.rs` as `commands!`: each entry
//! declares a domain's module and names, for each command kind, a variant of the wire enum and the
//! [`Handler`](crate::handler::Handler) that runs it. The macro generates the domain modules and the
//! module `registered`: the enum (its serde form is the wire format: the variant's snake_case name
//! under `aggregate`, the command under `command`), a data-less `CommandKind`, and every dispatch as an
//! exhaustive match: references and runs, commits and batching, groups that run together, and the
//! background jobs of every domain. Adding a domain is one entry of the list.

/// Declares the domains' modules and generates `registered` (see the module's comment).
macro_rules! commands {
    ($(mod $module:ident { $($(#[$doc:meta])* $variant:ident => $handler:ident,)+ })+) => {
        $(pub mod $module;)+

        /// The commands of every domain, as `registry.rs` generates them from the list in `lib.rs`.
        pub mod registered {
            use crate::engine::{Conn, ExecuteError, Sink};
            use crate::handler::{Batching, Commit, GroupResult, Handler, Job, Member};
            use crate::reply::{CommandReply, Idempotency};
            use events::Metadata;
            use serde::{Deserialize, Serialize};
            use sqlx::PgPool;
            use uuid::Uuid;

            /// A command for the workers, as it travels on the bus.
            #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
            #[serde(tag = "aggregate", content = "command", rename_all = "snake_case")]
            #[allow(clippy::large_enum_variant, reason = "a command lives for one request; boxing buys nothing")]
            pub enum Command {
                $($($(#[$doc])* $variant(<crate::$module::$handler as Handler>::Command),)+)+
            }

            /// The kind of a [`Command`], without its data.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
            #[serde(rename_all = "snake_case")]
            pub enum CommandKind {
                $($($variant,)+)+
            }

            impl CommandKind {
                /// Every kind, in registry order.
                pub const ALL: &[CommandKind] = &[$($(CommandKind::$variant,)+)+];

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
                        $($(Command::$variant(_) => CommandKind::$variant,)+)+
                    }
                }

                /// The stream the command writes.
                pub fn stream_id(&self) -> Uuid {
                    match self {
                        $($(Command::$variant(command) => <crate::$module::$handler as Handler>::stream_id(command),)+)+
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
                        $($(Command::$variant(command) => {
                            <crate::$module::$handler as Handler>::check_references(command, conn, org_id).await?;
                            <crate::$module::$handler as Handler>::run(command, conn, sink, org_id, metadata).await
                        })+)+
                    }
                }
            }

            impl CommandKind {
                /// Where the kind's events commit.
                pub fn commit(self) -> Commit {
                    match self {
                        $($(CommandKind::$variant => <crate::$module::$handler as Handler>::COMMIT,)+)+
                    }
                }

                /// Whether the kind may share a gateway batch.
                pub fn batching(self) -> Batching {
                    match self {
                        $($(CommandKind::$variant => <crate::$module::$handler as Handler>::BATCHING,)+)+
                    }
                }

                /// Whether keyed commands of this kind of one organization in one batch run together.
                pub fn runs_together(self) -> bool {
                    match self {
                        $($(CommandKind::$variant => <crate::$module::$handler as Handler>::TOGETHER.is_some(),)+)+
                    }
                }

                /// The background jobs the kind's domain declares.
                pub fn jobs(self) -> &'static [Job] {
                    match self {
                        $($(CommandKind::$variant => <crate::$module::$handler as Handler>::JOBS,)+)+
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
                    $($(CommandKind::$variant => {
                        let together = <crate::$module::$handler as Handler>::TOGETHER?;
                        let mut members = Vec::with_capacity(group.len());
                        for (command, claim, metadata) in group {
                            let Command::$variant(command) = command else { return None };
                            members.push(Member { command, claim, metadata });
                        }
                        Some(together(pool, org_id, &members).await)
                    })+)+
                }
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
        }
    };
}

pub(crate) use commands;
