//! Process roles and start-up: configuration from the environment, the database (created if missing,
//! migrated at start), the NATS connection, and the tasks each role runs.

use crate::state::AppState;
use anyhow::Context;
use commands::fiscal::FiscalSettings;
use events::bus::Bus;
use projections::webhooks::dispatch::SenderConfig;
use projections::{Partition, Projection};
use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::task::JoinSet;

pub static MIGRATOR: Migrator = sqlx::migrate!("../schema");

/// Settings read from the environment, with the documented defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    pub database_url: String,
    pub nats_url: String,
    pub nats_prefix: String,
    pub http_addr: String,
    /// `DATABASE_POOL_SIZE`: connections per process, 1 or more.
    pub pool_size: u32,
    /// `READ_WAIT_TIMEOUT_MS`: longest wait for the read side after a write.
    pub read_wait: Duration,
    /// `FISCAL_ENV`, `FISCAL_URL`, `FISCAL_SIMULATOR_ADDR`, `FISCAL_TIMEOUT_MS`: the tax authority.
    pub fiscal: FiscalSettings,
    /// `METRICS_ADDR`: where a process without HTTP of its own serves `/metrics`, `/healthz` and
    /// `/readyz` (none: it does not).
    pub metrics_addr: Option<String>,
}

impl Settings {
    pub fn from_env() -> anyhow::Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let var = |name: &str, default: &str| lookup(name).unwrap_or_else(|| default.to_owned());
        // A pool of no connections makes every query wait for one that never comes.
        let pool_size = var("DATABASE_POOL_SIZE", "32");
        let pool_size = match pool_size.trim().parse::<u32>() {
            Ok(size) if size > 0 => size,
            _ => {
                anyhow::bail!("DATABASE_POOL_SIZE must be a whole number of connections, 1 or more (not {pool_size:?})")
            }
        };
        Ok(Self {
            database_url: var("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/backoffice"),
            nats_url: var("NATS_URL", "nats://127.0.0.1:4222"),
            nats_prefix: var("NATS_PREFIX", "backoffice"),
            http_addr: var("HTTP_ADDR", "127.0.0.1:8080"),
            pool_size,
            read_wait: Duration::from_millis(
                var("READ_WAIT_TIMEOUT_MS", "10000").parse().context("READ_WAIT_TIMEOUT_MS must be a number")?,
            ),
            fiscal: FiscalSettings::from_lookup(&lookup)?,
            metrics_addr: lookup("METRICS_ADDR").filter(|addr| !addr.trim().is_empty()),
        })
    }
}

/// Connects to the database, creating it if missing, and applies the migrations.
pub async fn connect_database(settings: &Settings) -> anyhow::Result<PgPool> {
    let url = &settings.database_url;
    let exists = Postgres::database_exists(url).await.context("cannot reach Postgres (DATABASE_URL)")?;
    if !exists && let Err(error) = Postgres::create_database(url).await {
        // Another process may have created it first.
        if !Postgres::database_exists(url).await.unwrap_or(false) {
            return Err(error).context("cannot create the database");
        }
    }
    // Every statement is prepared once per connection; generic plans spare re-planning on each run.
    let options = PgConnectOptions::from_str(url)
        .context("DATABASE_URL is not a Postgres URL")?
        .options([("plan_cache_mode", "force_generic_plan")]);
    let pool = PgPoolOptions::new()
        .max_connections(settings.pool_size)
        .acquire_timeout(Duration::from_secs(10))
        // A broken connection fails its query and is replaced; pinging on every checkout would add a
        // round trip to every command and projector batch.
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .context("cannot connect to the database")?;
    MIGRATOR.run(&pool).await.context("cannot migrate the database")?;
    Ok(pool)
}

pub async fn connect_bus(settings: &Settings, role: &str) -> anyhow::Result<Bus> {
    Bus::connect(&settings.nats_url, &settings.nats_prefix, &format!("backoffice-{role}"))
        .await
        .context("cannot connect to NATS (NATS_URL)")
}

/// Which projections a process runs.
#[derive(Clone)]
pub struct ProjectionSet {
    pub projections: Vec<Arc<dyn Projection>>,
    pub partition: Partition,
    /// The webhook dispatcher's settings, when this process sends webhooks (it runs wherever the
    /// `webhooks` projection does).
    pub sender: Option<SenderConfig>,
}

impl ProjectionSet {
    /// `projections` for `partition`, with the sender configured from the environment when the set
    /// includes the webhooks projection.
    pub fn from_env(projections: Vec<Arc<dyn Projection>>, partition: Partition) -> anyhow::Result<Self> {
        let sender = if projections.iter().any(|p| p.id() == projections::ProjectionId::Webhooks) {
            Some(SenderConfig::from_env()?)
        } else {
            None
        };
        Ok(Self { projections, partition, sender })
    }
}

/// What one process does.
pub struct Roles {
    /// Serve HTTP on this listener.
    pub api: Option<tokio::net::TcpListener>,
    pub commands: bool,
    pub projections: Option<ProjectionSet>,
    /// The tax authority the command workers' sales speak to (none: fiscal vouchers are deferred).
    pub fiscal: Option<commands::fiscal::FiscalClient>,
}

/// The running roles of a process.
pub struct Running {
    pub tasks: JoinSet<()>,
    pub http_addr: Option<SocketAddr>,
    pub state: Option<Arc<AppState>>,
}

/// Starts every role asked for on the current runtime.
pub async fn start(pool: PgPool, bus: Bus, roles: Roles, read_wait: Duration) -> anyhow::Result<Running> {
    crate::observe::install();
    let mut tasks = JoinSet::new();
    // Progress of this process's projectors reaches this process's gateway without a bus hop.
    let local_progress = projections::progress::LocalProgress::default();
    if roles.commands {
        let wake = events::relay::RelayWake::default();
        wake.listen(&bus).await?;
        tasks.spawn(events::relay::run_relay(pool.clone(), bus.clone(), wake.clone()));
        tasks.spawn(events::relay::run_sealer(pool.clone()));
        let services = commands::engine::Services { fiscal: roles.fiscal.clone() };
        for job in commands::worker::jobs() {
            tasks.spawn((job.run)(pool.clone(), services.clone()));
        }
        let concurrency = pool.options().get_max_connections().max(2) as usize;
        let (pool, bus) = (pool.clone(), bus.clone());
        tasks.spawn(async move {
            if let Err(error) = commands::worker::run(pool, bus, wake, concurrency, services).await {
                tracing::error!(%error, "command worker stopped");
            }
        });
    }
    if let Some(set) = roles.projections {
        for projection in set.projections {
            tasks.spawn(projections::runtime::run(
                pool.clone(),
                bus.clone(),
                projection,
                set.partition,
                local_progress.clone(),
            ));
        }
        // Documents render wherever projections run, woken by the progress of the projections that
        // request them.
        {
            let (pool, bus) = (pool.clone(), bus.clone());
            tasks.spawn(async move {
                if let Err(error) = projections::documents::worker::run(pool, bus).await {
                    tracing::error!(error = format!("{error:#}"), "document worker stopped");
                }
            });
        }
        if let Some(config) = set.sender {
            let (pool, bus) = (pool.clone(), bus.clone());
            tasks.spawn(async move {
                if let Err(error) = projections::webhooks::dispatch::run(pool, bus, config).await {
                    tracing::error!(error = format!("{error:#}"), "webhook sender stopped");
                }
            });
        }
    }
    let mut http_addr = None;
    let mut app_state = None;
    if let Some(listener) = roles.api {
        let state = AppState::new(pool.clone(), bus.clone(), read_wait).await?;
        state.follow_progress(&local_progress).await?;
        let addr = listener.local_addr()?;
        http_addr = Some(addr);
        let app = crate::http::app(state.clone());
        let std_listener = listener.into_std()?;
        tasks.spawn(async move {
            let acceptor = poem::listener::TcpAcceptor::from_std(std_listener);
            match acceptor {
                Ok(acceptor) => {
                    if let Err(error) = poem::Server::new_with_acceptor(acceptor).run(app).await {
                        tracing::error!(%error, "http server stopped");
                    }
                }
                Err(error) => tracing::error!(%error, "http listener unusable"),
            }
        });
        state.ready.store(true, Ordering::Release);
        app_state = Some(state);
    }
    Ok(Running { tasks, http_addr, state: app_state })
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `METRICS_ADDR`, when set, for a process whose roles
/// serve no HTTP of their own.
pub async fn serve_metrics(
    settings: &Settings,
    tasks: &mut JoinSet<()>,
    pool: &PgPool,
    bus: Option<Bus>,
) -> anyhow::Result<()> {
    let Some(addr) = &settings.metrics_addr else { return Ok(()) };
    crate::observe::install();
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on METRICS_ADDR {addr}"))?;
    eprintln!("backoffice: metrics on http://{}/metrics", listener.local_addr()?);
    tasks.spawn(crate::observe::serve(listener, pool.clone(), bus));
    Ok(())
}

/// Binds the HTTP listener for `HTTP_ADDR`.
pub async fn bind(addr: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))
}

/// The listener of the built-in fiscal simulator, for a process running the command workers without a
/// `FISCAL_URL`. When another process already serves `FISCAL_SIMULATOR_ADDR` (a second worker on the
/// machine) it is left to that one: the simulator's state is in the shared database, so either
/// answers alike.
pub async fn bind_fiscal_simulator(settings: &FiscalSettings) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    if !settings.uses_simulator() {
        return Ok(None);
    }
    match tokio::net::TcpListener::bind(&settings.simulator_addr).await {
        Ok(listener) => Ok(Some(listener)),
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            tracing::warn!(addr = %settings.simulator_addr, "FISCAL_SIMULATOR_ADDR is in use; leaving the fiscal simulator to its process");
            Ok(None)
        }
        Err(error) => {
            Err(error).with_context(|| format!("cannot listen on FISCAL_SIMULATOR_ADDR {}", settings.simulator_addr))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> anyhow::Result<Settings> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn a_database_pool_of_no_connections_is_refused() {
        for size in ["0", "-1", "many", ""] {
            let error = settings(&[("DATABASE_POOL_SIZE", size)]).expect_err(size);
            assert!(
                error.to_string().contains("DATABASE_POOL_SIZE must be a whole number of connections, 1 or more"),
                "{size:?}: {error}"
            );
        }
        assert_eq!(settings(&[("DATABASE_POOL_SIZE", "1")]).expect("one connection").pool_size, 1);
        assert_eq!(settings(&[]).expect("the defaults").pool_size, 32);
    }
}
