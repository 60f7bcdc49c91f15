# The two commands a newcomer needs: `just run` and `just test`. Postgres and NATS are started locally
# (data under .local/) when none answers on DATABASE_URL / NATS_URL.

set shell := ["bash", "-euo", "pipefail", "-c"]

export DATABASE_URL := env_var_or_default("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/backoffice")
export NATS_URL := env_var_or_default("NATS_URL", "nats://127.0.0.1:4222")
export NATS_PREFIX := env_var_or_default("NATS_PREFIX", "backoffice")
export HTTP_ADDR := env_var_or_default("HTTP_ADDR", "127.0.0.1:8080")
# A NATS 2.10 or later for the test of multi-subject consumer filters (`scripts/services --filters`).
export NATS_FILTERS_URL := env_var_or_default("NATS_FILTERS_URL", "nats://127.0.0.1:4223")

# Tests create a fresh database per test through the server's maintenance database.
test_database_url := replace_regex(DATABASE_URL, '/[^/]*$', '/postgres')

# Run the whole service (every role in one process) on HTTP_ADDR.
run: services
    cargo run --release --bin backoffice -- all

# Formatting, lints, every test against real Postgres and NATS, and the OpenAPI contract test.
test: check
    scripts/services --filters
    if cargo nextest --version >/dev/null 2>&1; then \
        DATABASE_URL={{test_database_url}} cargo nextest run --workspace --no-fail-fast; \
    else \
        DATABASE_URL={{test_database_url}} cargo test --workspace --no-fail-fast; \
    fi
    just contract

# The OpenAPI contract: the running service against openapi-spec-validator, schemathesis (every
# operation, every check, its stateful phase) and a generated Python client (see scripts/contract).
# CONTRACT_BUDGET sets the examples shared by all operations (default 3400), CONTRACT_EXAMPLES those of
# each operation instead.
contract: services
    scripts/contract

# The quality gates.
check:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

# Throughput against pgbench on the same Postgres (see api/benches/service.rs), on the NATS 2.10 or
# later of NATS_FILTERS_URL: an older one delivers every event to every projection of several
# aggregates (BENCHMARKS.md, "Which NATS").
bench:
    scripts/services --filters
    cargo build --release --bin backoffice
    NATS_URL={{NATS_FILTERS_URL}} BENCH_ADMIN_DATABASE_URL={{test_database_url}} cargo bench -p api --bench service

# Start local Postgres and NATS if none answers.
services:
    scripts/services
