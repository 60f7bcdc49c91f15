//! Group commit: the appender that writes the events of commands decided at about the same time with
//! one statement, on lanes that each keep a connection of their own.

use crate::engine::relay::RelayNudge;
use events::store::{self, AppendError, AppendRequest, Appended};
use futures::StreamExt;
use sqlx::{PgConnection, PgPool};

/// Statements appending events that may run at once.
pub(crate) const APPEND_LANES: usize = 2;
/// Most commands appended by one statement.
const MAX_GROUP: usize = 64;

/// The appends of one command: all or nothing, even when grouped with other commands.
struct AppendJob {
    requests: Vec<AppendRequest>,
    done: tokio::sync::oneshot::Sender<Result<Vec<Appended>, AppendError>>,
}

/// Group commit: commands decided at about the same time are appended by one statement (one round trip,
/// one commit). While every lane is busy, new appends queue up and leave together in the next group. A
/// group that fails is retried command by command, so one conflict only fails its own command.
#[derive(Clone)]
pub struct Appender {
    jobs: tokio::sync::mpsc::UnboundedSender<AppendJob>,
}

impl Appender {
    /// Starts the lanes; each commit wakes the relay through `nudge` at once, before the commands'
    /// replies are built and sent (the relay's read is on every write's read-your-writes path).
    pub(crate) fn start(pool: PgPool, lanes: usize, nudge: RelayNudge) -> Self {
        let (jobs, mut queue) = tokio::sync::mpsc::unbounded_channel::<AppendJob>();
        tokio::spawn(async move {
            // Each lane keeps its own connection: groups follow each other without a pool checkout
            // (and the round trip sqlx spends on every release). The groups running are futures of
            // this task, so a group's statement leaves in the turn that formed it.
            let mut idle: Vec<Option<Lane>> = (0..lanes).map(|_| None).collect();
            let mut running = futures::stream::FuturesUnordered::new();
            let mut waiting: Option<AppendJob> = None;
            let mut closed = false;
            loop {
                if !idle.is_empty()
                    && let Some(first) = waiting.take()
                {
                    let lane = idle.pop().flatten();
                    let mut group = vec![first];
                    while group.len() < MAX_GROUP {
                        match queue.try_recv() {
                            Ok(job) => group.push(job),
                            Err(_) => break,
                        }
                    }
                    let (pool, nudge) = (pool.clone(), nudge.clone());
                    running.push(async move { append_group(&pool, lane, group, &nudge).await });
                    continue;
                }
                if closed && waiting.is_none() && running.is_empty() {
                    return;
                }
                tokio::select! {
                    Some(lane) = running.next(), if !running.is_empty() => idle.push(lane),
                    job = queue.recv(), if waiting.is_none() && !closed => match job {
                        Some(job) => waiting = Some(job),
                        None => closed = true,
                    },
                }
            }
        });
        Self { jobs }
    }

    /// Appends one command's events (to one or several streams) atomically; results in request order.
    pub async fn append(&self, requests: Vec<AppendRequest>) -> Result<Vec<Appended>, AppendError> {
        let (done, result) = tokio::sync::oneshot::channel();
        self.jobs.send(AppendJob { requests, done }).map_err(|_| AppendError::Database(sqlx::Error::PoolClosed))?;
        result.await.unwrap_or(Err(AppendError::Database(sqlx::Error::PoolClosed)))
    }
}

/// Whether a connection that returned `result` can take the next group: conflicts and errors the
/// server reported leave it usable; anything else (a broken socket) does not.
fn still_usable<T>(result: &Result<T, AppendError>) -> bool {
    match result {
        Ok(_) | Err(AppendError::Conflict { .. }) => true,
        Err(AppendError::Database(error)) => matches!(error, sqlx::Error::Database(_)),
    }
}

/// A lane's connection and when it was last used.
struct Lane {
    conn: PgConnection,
    used: std::time::Instant,
}

/// A lane connection idle longer than this is checked before use (the server may have gone away
/// meanwhile); a busy lane never pays for the check.
const LANE_IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// The lane's connection, checked if it has been idle, or a new one.
async fn lane_connection(pool: &PgPool, lane: Option<Lane>) -> Result<PgConnection, sqlx::Error> {
    use sqlx::Connection;
    if let Some(Lane { mut conn, used }) = lane
        && (used.elapsed() < LANE_IDLE_CHECK || conn.ping().await.is_ok())
    {
        return Ok(conn);
    }
    Ok(pool.acquire().await?.detach())
}

/// Appends a group on the lane's connection and hands the lane back, or `None` when its connection
/// broke.
async fn append_group(pool: &PgPool, lane: Option<Lane>, group: Vec<AppendJob>, nudge: &RelayNudge) -> Option<Lane> {
    let mut conn = match lane_connection(pool, lane).await {
        Ok(conn) => conn,
        Err(error) => {
            let message = error.to_string();
            for job in group {
                let _ = job.done.send(Err(AppendError::Database(sqlx::Error::Protocol(message.clone()))));
            }
            return None;
        }
    };
    let lane = |conn| Some(Lane { conn, used: std::time::Instant::now() });
    let mut usable = true;
    if group.len() > 1 {
        let requests: Vec<&AppendRequest> = group.iter().flat_map(|job| &job.requests).collect();
        let result = store::append_many(&mut conn, &requests).await;
        usable = still_usable(&result);
        if let Ok(appended) = result {
            let transaction_id = appended.first().map(|first| first.key.transaction_id);
            let mut appended = appended.into_iter();
            for job in group {
                let mine: Vec<Appended> = appended.by_ref().take(job.requests.len()).collect();
                let _ = job.done.send(Ok(mine));
            }
            // Woken last, so it runs first: the scheduler runs the task woken most recently next.
            if let Some(transaction_id) = transaction_id {
                nudge.committed(transaction_id);
            }
            return lane(conn);
        }
    }
    for job in group {
        let result = if usable {
            store::append_many(&mut conn, &job.requests).await
        } else {
            Err(AppendError::Database(sqlx::Error::Protocol("the connection broke".into())))
        };
        usable &= still_usable(&result);
        let transaction_id = result.as_ref().ok().and_then(|appended| appended.first()).map(|a| a.key.transaction_id);
        let _ = job.done.send(result);
        if let Some(transaction_id) = transaction_id {
            nudge.committed(transaction_id);
        }
    }
    if usable { lane(conn) } else { None }
}
