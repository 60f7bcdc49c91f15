//! What the workers record of each command (see the service's metrics): its outcome, whether it had to
//! decide again after a concurrent write, and how its time split between deciding and appending. The
//! figures of one command are gathered in a task-local scope around its run, so the engine's inner
//! steps need not carry them.

use crate::reply::{CommandReply, FailureCause};
use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};

struct Observed {
    retries: Cell<u32>,
    appending: Cell<Duration>,
}

tokio::task_local! {
    static COMMAND: Observed;
}

/// Runs `run`, a command of kind `kind`, and records what it came to.
pub(crate) async fn observed<F: Future<Output = CommandReply>>(kind: &'static str, run: F) -> CommandReply {
    let started = Instant::now();
    let scope = Observed { retries: Cell::new(0), appending: Cell::new(Duration::ZERO) };
    let (reply, retries, appending) = COMMAND
        .scope(scope, async {
            let reply = run.await;
            let (retries, appending) = COMMAND.with(|observed| (observed.retries.get(), observed.appending.get()));
            (reply, retries, appending)
        })
        .await;
    record(kind, &reply, started.elapsed(), retries, appending);
    reply
}

/// Records what one command of kind `kind` came to: its reply, how long it took, how often it decided
/// again and how long it spent appending.
pub(crate) fn record(kind: &'static str, reply: &CommandReply, elapsed: Duration, retries: u32, appending: Duration) {
    let outcome = match reply {
        CommandReply::Accepted { replayed, .. } => {
            if *replayed {
                metrics::counter!("backoffice_idempotent_replays_total", "command" => kind).increment(1);
            }
            "accepted"
        }
        CommandReply::Rejected { .. } => "rejected",
        CommandReply::Failed { cause: FailureCause::Contended, .. } => "conflict",
        CommandReply::Failed { .. } => "failed",
    };
    metrics::counter!("backoffice_commands_total", "command" => kind, "outcome" => outcome).increment(1);
    if retries > 0 {
        metrics::counter!("backoffice_commands_total", "command" => kind, "outcome" => "retried").increment(1);
    }
    metrics::histogram!("backoffice_command_duration_seconds", "command" => kind).record(elapsed.as_secs_f64());
    if !appending.is_zero() {
        metrics::histogram!("backoffice_command_phase_seconds", "command" => kind, "phase" => "append")
            .record(appending.as_secs_f64());
    }
    metrics::histogram!("backoffice_command_phase_seconds", "command" => kind, "phase" => "decide")
        .record(elapsed.saturating_sub(appending).as_secs_f64());
}

/// The command running on this task decides again after a concurrent write to its stream.
pub(crate) fn retried() {
    let _ = COMMAND.try_with(|observed| observed.retries.set(observed.retries.get() + 1));
}

/// Times `append`, the command's events being written, as its append phase.
pub(crate) async fn appending<T>(append: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let result = append.await;
    let _ = COMMAND.try_with(|observed| observed.appending.set(observed.appending.get() + started.elapsed()));
    result
}
