//! The `backoffice` binary: parses the command line and runs it.

use clap::Parser;

// Requests allocate many small short-lived buffers; mimalloc handles that pattern far better than the
// system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    projections::webhooks::dispatch::install_crypto_provider();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    // `LOG_FORMAT=json`: one JSON object per line, with the fields of the request or command it is
    // about (request id, organization id, command type) in `spans` (every enclosing span, outermost
    // first) and the innermost span's in `span`.
    if std::env::var("LOG_FORMAT").is_ok_and(|format| format.eq_ignore_ascii_case("json")) {
        tracing_subscriber::fmt()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let cli = api::cli::Cli::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    // One worker per core (tokio's default) for a role running alone. `all` shares its machine with the
    // Postgres and NATS it talks to on every write, so it takes half the cores: on two cores one
    // worker thread answered 10-15% more writes per second than two (fewer threads woken per message,
    // fewer context switches against the database and the bus). `BACKOFFICE_WORKER_THREADS` overrides both.
    let set = match std::env::var("BACKOFFICE_WORKER_THREADS") {
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(threads) if threads > 0 => Some(threads),
            _ => {
                eprintln!(
                    "error: BACKOFFICE_WORKER_THREADS must be a whole number of threads, 1 or more (not {text:?})"
                );
                std::process::exit(2);
            }
        },
        Err(_) => None,
    };
    let threads = set.or_else(|| {
        matches!(cli.command, api::cli::Command::All)
            .then(|| std::thread::available_parallelism().map_or(1, |cores| (cores.get() / 2).max(1)))
    });
    if let Some(threads) = threads {
        runtime.worker_threads(threads);
    }
    let code = match runtime.build() {
        Ok(runtime) => match runtime.block_on(api::cli::run(cli)) {
            Ok(code) => code,
            Err(error) => {
                eprintln!("error: {error:#}");
                1
            }
        },
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            1
        }
    };
    std::process::exit(code);
}
