//! The `backoffice` command line: one subcommand per role, plus the operator and auditor commands.
//! Everything an operator reads is JSON on stdout; progress and logs go to stderr.

use crate::fiscal_simulator;
use crate::roles::{self, ProjectionSet, Roles, Settings};
use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use commands::treasury::admin::{self as treasury, NewLocation};
use events::catalogue::{Currency, LocationKind, LocationStatus};
use events::chain::{self, Verification};
use projections::Partition;
use std::io::Write;
use uuid::Uuid;

#[derive(Debug, Parser)]
#[command(name = "backoffice", version, about = "Event-sourced back office: HTTP API, command workers, projectors")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every role in one process (api, commands, projections), and the fiscal simulator unless
    /// FISCAL_ENV or FISCAL_URL is set.
    All,
    /// Run the HTTP gateway.
    Api,
    /// Run the command workers, the relay to NATS and the hash-chain sealer, and the fiscal simulator
    /// unless FISCAL_ENV or FISCAL_URL is set.
    Commands,
    /// Run the tax authority's simulator alone on FISCAL_SIMULATOR_ADDR.
    FiscalSimulator,
    /// Run projectors, or rebuild projections.
    Projections(ProjectionsArgs),
    /// Create the database if missing and apply the migrations.
    Migrate,
    /// Operator commands.
    #[command(subcommand)]
    Admin(Box<AdminCommand>),
    /// Auditor commands over the event store.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Invoicing with the tax authority.
    #[command(subcommand)]
    Fiscal(FiscalCommand),
    /// Grouped reports, as the HTTP API answers them.
    #[command(subcommand)]
    Reports(ReportsCommand),
    /// Where every follower of the event store stands: each projection partition's position, lag and
    /// last progress, the relay and the sealer, and the webhook queue (from the database and NATS).
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum FiscalCommand {
    /// Whether an organization can invoice: its CUIT and certificate, the authority's health
    /// (FEDummy), a login ticket, the points of sale enabled at the authority against its electronic
    /// ones, and each series' last authorized number. Prints a JSON report; exits 1 naming what is wrong.
    Check {
        #[arg(long)]
        org: Uuid,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReportsCommand {
    /// Answer a report query (the body of `POST /api/v1/reports/query`, read from a file) with every
    /// group: JSON (the answer's `data`), or CSV with `--csv`. A bad query prints its errors and exits 2.
    Query {
        #[arg(long)]
        org: Uuid,
        /// The query, as JSON.
        #[arg(long)]
        file: std::path::PathBuf,
        /// Print CSV instead of JSON.
        #[arg(long)]
        csv: bool,
    },
}

// `--only` and `--partition` choose what the running projectors serve. A rebuild takes neither: it names
// its projections (NAME or --all) and rebuilds whole tables for every organization, swapping them in and
// resetting every partition's checkpoint at once, so a share of the organizations cannot be rebuilt
// alone. Given with `rebuild` they are a usage error (exit 2), not ignored. (A doc comment here would
// replace the subcommand's help.)
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProjectionsArgs {
    #[command(subcommand)]
    pub action: Option<ProjectionsAction>,
    /// Run only these projections (comma-separated names). Not with `rebuild`.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Serve one share of the organizations: `i/N`. Not with `rebuild`, which rebuilds every organization.
    #[arg(long)]
    pub partition: Option<Partition>,
}

#[derive(Debug, Subcommand)]
pub enum ProjectionsAction {
    /// Rebuild a projection (or all) from the event store and swap it in atomically.
    Rebuild {
        /// The projection to rebuild.
        name: Option<String>,
        /// Rebuild every projection.
        #[arg(long, conflicts_with = "name")]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an organization and print its id and first API key (every scope).
    CreateOrg {
        #[arg(long)]
        name: String,
        /// Requests per minute (default 120), shared by every credential of the organization.
        #[arg(long)]
        rate_limit_per_minute: Option<i32>,
        /// Requests per hour (default 5000).
        #[arg(long)]
        rate_limit_per_hour: Option<i32>,
    },
    /// Issue an API key with the given scopes; prints it once.
    CreateApiKey {
        #[arg(long)]
        org: Uuid,
        /// Comma-separated scopes, for example customers:read,customers:write.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
    },
    /// Issue a token acting for one user of the organization; prints it once.
    CreateDelegatedToken {
        #[arg(long)]
        org: Uuid,
        /// The user the token acts for.
        #[arg(long)]
        user: String,
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// Treasury visibility: `own` (only what the user created) or `organization`.
        #[arg(long, default_value = "organization")]
        visibility: String,
        /// Cash registers of the organization assigned to the user (comma-separated ids; none means all).
        #[arg(long, value_delimiter = ',')]
        registers: Vec<Uuid>,
        /// Safes of the organization assigned to the user (comma-separated ids; none means all).
        #[arg(long, value_delimiter = ',')]
        safes: Vec<Uuid>,
    },
    /// Revoke an API key or delegated token, given its secret or its id.
    Revoke {
        /// The API key, access token, or credential id.
        credential: String,
    },
    /// Change an organization's rate limits.
    SetRateLimits {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        per_minute: i32,
        #[arg(long)]
        per_hour: i32,
    },
    /// Change an organization's settings and print the organization (only the options given change).
    UpdateOrg {
        #[arg(long)]
        org: Uuid,
        /// `allow` (a stock shortfall is a warning, the default) or `block` (422, nothing written).
        #[arg(long, value_parser = ["allow", "block"])]
        negative_stock: Option<String>,
        /// The issuer's CUIT (11 digits with a valid check digit); empty clears it.
        #[arg(long)]
        tax_id: Option<String>,
        /// `Responsable Inscripto`, `Monotributista` or `Exento`; empty clears it.
        #[arg(long)]
        tax_category: Option<String>,
        /// The legal name printed on vouchers; empty clears it.
        #[arg(long)]
        legal_name: Option<String>,
        /// Whether prices sent with the historical sale contract include VAT.
        #[arg(long)]
        prices_include_tax: Option<bool>,
        /// The peso ledger account a dollar expense books its exchange difference to; empty clears it.
        #[arg(long)]
        exchange_difference_account: Option<String>,
        /// The peso ledger account customer payments credit (receivables); empty clears it.
        #[arg(long)]
        receivables_account: Option<String>,
        /// The peso ledger account supplier payments debit (payables); empty clears it.
        #[arg(long)]
        payables_account: Option<String>,
        /// The peso ledger account payment methods' fees are expensed to; empty clears it.
        #[arg(long)]
        payment_fees_account: Option<String>,
        /// The commercial address printed vouchers show; empty clears it.
        #[arg(long)]
        commercial_address: Option<String>,
        /// The gross-income tax number (Ingresos Brutos) printed vouchers show; empty clears it.
        #[arg(long)]
        gross_income_number: Option<String>,
        /// The activity start date printed vouchers show (YYYY-MM-DD, not in the future); empty clears it.
        #[arg(long)]
        activity_start: Option<String>,
    },
    /// Rebuild the stock write model (levels and reservations) from the event store and print what
    /// changed; stock commands wait while it runs.
    RebuildStock,
    /// Create a point of sale (fiscal numbering series) for an organization.
    CreatePointOfSale {
        #[arg(long)]
        org: Uuid,
        /// 1 to 99999, unique in the organization.
        #[arg(long)]
        number: i32,
        #[arg(long)]
        name: Option<String>,
        /// `electronic` (the tax authority numbers and authorizes its vouchers) or `manual`.
        #[arg(long, default_value = "electronic", value_parser = ["electronic", "manual"])]
        kind: String,
    },
    /// Open a bank account (with a new ledger account of its name, unless one is given); prints its id.
    CreateBankAccount {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        bank: String,
        #[arg(long)]
        name: String,
        /// `PES` or `DOL`.
        #[arg(long, default_value = "PES", value_parser = ["PES", "DOL"])]
        currency: String,
        /// The 22-digit CBU (both check digits are verified).
        #[arg(long)]
        cbu: Option<String>,
        #[arg(long)]
        alias: Option<String>,
        /// The account issues checks.
        #[arg(long)]
        checkbook: bool,
        /// An active ledger account of the organization in the same currency.
        #[arg(long)]
        ledger_account: Option<Uuid>,
    },
    /// Open a cash register; prints its id.
    CreateCashRegister(CashLocationArgs),
    /// Open a safe; prints its id.
    CreateSafe(CashLocationArgs),
    /// Activate or deactivate a bank account, cash register or safe.
    SetLocationStatus {
        #[arg(long)]
        org: Uuid,
        /// `bank_account`, `cash_register` or `safe`.
        #[arg(long, value_parser = ["bank_account", "cash_register", "safe"])]
        balance_type: String,
        #[arg(long)]
        id: Uuid,
        #[arg(long, value_parser = ["active", "inactive"])]
        status: String,
    },
    /// Open a ledger account of the organization's chart; prints its id.
    CreateLedgerAccount {
        #[arg(long)]
        org: Uuid,
        /// Unique in the organization, e.g. `1.1.2.05`.
        #[arg(long)]
        code: String,
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "PES", value_parser = ["PES", "DOL"])]
        currency: String,
    },
    /// Open a cost center; prints its id.
    CreateCostCenter {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        code: String,
        #[arg(long)]
        name: String,
    },
    /// Load central-bank rates from a CSV file (`date,currency,rate` per line; see the README).
    LoadRates {
        /// The file to read.
        file: std::path::PathBuf,
    },
    /// Keep an organization's certificate and private key for the tax authority's login tickets: the
    /// key must match the certificate, and the certificate name the organization's CUIT and be valid
    /// now. Prints its subject, CUIT and validity (never the key); the key is stored sealed.
    SetFiscalCertificate {
        #[arg(long)]
        org: Uuid,
        /// The X.509 certificate, PEM.
        #[arg(long)]
        cert: std::path::PathBuf,
        /// Its RSA private key, PEM (PKCS#8 or PKCS#1).
        #[arg(long)]
        key: std::path::PathBuf,
    },
}

/// A cash register or safe as the operator opens it.
#[derive(Debug, Args)]
pub struct CashLocationArgs {
    #[arg(long)]
    pub org: Uuid,
    #[arg(long)]
    pub name: String,
    #[arg(long, default_value = "PES", value_parser = ["PES", "DOL"])]
    pub currency: String,
    /// An active ledger account of the organization in the same currency.
    #[arg(long)]
    pub ledger_account: Option<Uuid>,
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Print an organization's events, one JSON envelope per line, in chain order, up to the highest
    /// position committed when it starts (first waiting for any transaction still writing events, which
    /// may hold a lower one); then say on stderr which --from-position the next export continues with.
    Export {
        #[arg(long)]
        org: Uuid,
        /// Only events at or after this position (the one the previous export named: none is skipped).
        #[arg(long, default_value_t = 0)]
        from_position: i64,
    },
    /// Verify an organization's hash chain; exits non-zero at the first broken position.
    Verify {
        #[arg(long)]
        org: Uuid,
    },
}

fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Runs the command line; returns the process exit code.
pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    let settings = Settings::from_env()?;
    match cli.command {
        Command::All => {
            let projections = ProjectionSet::from_env(projections::all(), Partition::WHOLE)?;
            serve(&settings, "all", true, true, Some(projections)).await
        }
        Command::Api => serve(&settings, "api", true, false, None).await,
        Command::Commands => serve(&settings, "commands", false, true, None).await,
        Command::FiscalSimulator => {
            let pool = roles::connect_database(&settings).await?;
            let listener = roles::bind(&settings.fiscal.simulator_addr).await?;
            eprintln!("backoffice fiscal-simulator: listening on http://{}", listener.local_addr()?);
            tokio::select! {
                _ = shutdown_signal() => {}
                result = fiscal_simulator::serve(listener, pool) => result.context("the fiscal simulator stopped")?,
            }
            Ok(0)
        }
        Command::Projections(args) => match args.action {
            None => {
                let projections = if args.only.is_empty() {
                    projections::all()
                } else {
                    projections::by_names(&args.only).map_err(anyhow::Error::msg)?
                };
                let set = ProjectionSet::from_env(projections, args.partition.unwrap_or(Partition::WHOLE))?;
                serve(&settings, "projections", false, false, Some(set)).await
            }
            Some(ProjectionsAction::Rebuild { name, all }) => {
                let selected = match (name, all) {
                    (_, true) => projections::all(),
                    (Some(name), false) => projections::by_names(&[name]).map_err(anyhow::Error::msg)?,
                    (None, false) => bail!("name a projection to rebuild, or pass --all"),
                };
                let pool = roles::connect_database(&settings).await?;
                // Progress shows on METRICS_ADDR too, when set, for operators watching a long rebuild; the
                // rebuild is run beside the role that already serves it (`docker compose exec`), so a taken
                // address costs the metrics, not the rebuild.
                let mut observed = tokio::task::JoinSet::new();
                if let Err(error) = roles::serve_metrics(&settings, &mut observed, &pool, None).await {
                    eprintln!("rebuild: {error:#}; rebuilding without metrics");
                }
                for projection in selected {
                    let name = projection.id();
                    let report = projections::rebuild::rebuild(&pool, projection.as_ref(), |done| {
                        eprintln!("rebuild {name}: {done} events folded");
                    })
                    .await
                    .with_context(|| format!("rebuild of {name} failed"))?;
                    let seconds = report.elapsed.as_secs_f64();
                    print_json(&serde_json::json!({
                        "projection": name,
                        "events": report.events,
                        "seconds": seconds,
                        "events_per_second": if seconds > 0.0 { report.events as f64 / seconds } else { 0.0 },
                    }))?;
                }
                Ok(0)
            }
        },
        Command::Migrate => {
            roles::connect_database(&settings).await?;
            print_json(&serde_json::json!({ "migrated": true }))?;
            Ok(0)
        }
        Command::Admin(admin) => run_admin(&settings, *admin).await,
        Command::Status { json } => {
            let pool = roles::connect_database(&settings).await?;
            let connect = async_nats::connect(settings.nats_url.as_str());
            let bus = match tokio::time::timeout(std::time::Duration::from_secs(2), connect).await {
                Ok(Ok(client)) => Some(events::bus::Bus::from_client(client, &settings.nats_prefix)),
                _ => {
                    eprintln!("status: NATS does not answer at {}; JetStream figures are missing", settings.nats_url);
                    None
                }
            };
            let status = crate::observe::status::read(&pool, bus.as_ref()).await?;
            if json {
                print_json(&serde_json::to_value(&status)?)?;
            } else {
                print!("{}", crate::observe::status::table(&status));
            }
            Ok(0)
        }
        Command::Events(EventsCommand::Export { org, from_position }) => {
            let pool = roles::connect_database(&settings).await?;
            if !organization_exists(&pool, org).await? {
                eprintln!("events export: no organization {org}");
                return Ok(1);
            }
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            // A transaction still writing events may hold a lower position than one already committed.
            let waiting = |writers: usize| {
                eprintln!("events export: waiting for {writers} transactions still writing events");
            };
            let exported = events::store::export(&pool, org, from_position, waiting, |event| {
                serde_json::to_writer(&mut out, &event)?;
                writeln!(out)
            })
            .await?;
            out.flush()?;
            // Stdout holds only envelopes: where the next export goes on from is said here.
            let (written, next) = (exported.events, exported.next_position);
            eprintln!("events export: {written} events; continue with --from-position {next}");
            Ok(0)
        }
        Command::Reports(ReportsCommand::Query { org, file, csv }) => report_query(&settings, org, &file, csv).await,
        Command::Fiscal(FiscalCommand::Check { org }) => {
            let pool = roles::connect_database(&settings).await?;
            let client = commands::fiscal::connect(&settings.fiscal, pool.clone())
                .await
                .context("the tax authority (FISCAL_ENV, FISCAL_URL)")?;
            let report = commands::fiscal::check::check(&pool, &client, org).await?;
            print_json(&serde_json::to_value(&report)?)?;
            for problem in &report.problems {
                eprintln!("fiscal check: {problem}");
            }
            Ok(if report.ok { 0 } else { 1 })
        }
        Command::Events(EventsCommand::Verify { org }) => {
            let pool = roles::connect_database(&settings).await?;
            // A mistyped id has no history, which is not an intact chain.
            if !organization_exists(&pool, org).await? {
                eprintln!("events verify: no organization {org}");
                return Ok(1);
            }
            match chain::verify(&pool, org).await? {
                Verification::Intact { events, unsealed } => {
                    print_json(&serde_json::json!({
                        "organization_id": org, "intact": true, "events_verified": events, "unsealed": unsealed
                    }))?;
                    Ok(0)
                }
                Verification::Broken { position, reason } => {
                    print_json(&serde_json::json!({
                        "organization_id": org, "intact": false, "first_broken_position": position, "reason": reason
                    }))?;
                    eprintln!("hash chain broken at position {position}: {reason}");
                    Ok(1)
                }
            }
        }
    }
}

/// Whether `org` names an organization: the commands that read one refuse an id that names none.
async fn organization_exists(pool: &sqlx::PgPool, org: Uuid) -> anyhow::Result<bool> {
    let known: bool = sqlx::query_scalar("select exists (select 1 from organizations where id = $1)")
        .bind(org)
        .fetch_one(pool)
        .await?;
    Ok(known)
}

fn currency_arg(text: &str) -> anyhow::Result<Currency> {
    Currency::parse(text).with_context(|| format!("{text} is not PES or DOL"))
}

fn cash_location(kind: LocationKind, args: &CashLocationArgs) -> anyhow::Result<NewLocation> {
    Ok(NewLocation {
        kind,
        name: args.name.clone(),
        currency: currency_arg(&args.currency)?,
        bank: None,
        account_number: None,
        alias: None,
        uses_checkbook: false,
        ledger_account_id: args.ledger_account,
    })
}

/// `reports query`: the gateway's parser and queries, every group at once.
async fn report_query(settings: &Settings, org: Uuid, file: &std::path::Path, csv: bool) -> anyhow::Result<i32> {
    use crate::http::reports;
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let body: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let request = match reports::parse(&body, time::OffsetDateTime::now_utc()) {
        Ok(request) if request.cursor.is_some() => {
            eprintln!("reports query: a cursor pages the HTTP API; the CLI answers every group (drop `cursor`)");
            return Ok(2);
        }
        Ok(request) => request,
        Err(errors) => {
            print_json(&serde_json::json!({ "errors": errors }))?;
            return Ok(2);
        }
    };
    let pool = roles::connect_database(settings).await?;
    if !organization_exists(&pool, org).await? {
        eprintln!("reports query: no organization {org}");
        return Ok(1);
    }
    if !csv {
        let data = reports::answer(&pool, None, org, &request, (0, None))
            .await
            .map_err(|e| anyhow::anyhow!("the report could not be answered: {:?}", e.envelope("cli")))?;
        print_json(&serde_json::to_value(&data)?)?;
        return Ok(0);
    }
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<String>(64);
    let writer = tokio::spawn(async move { reports::write_csv(&pool, org, &request, (0, None), sender).await });
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    while let Some(line) = receiver.recv().await {
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    writer.await??;
    Ok(0)
}

async fn run_admin(settings: &Settings, command: AdminCommand) -> anyhow::Result<i32> {
    use commands::organization::{self as admin, Delegation, RateLimits};
    let pool = roles::connect_database(settings).await?;
    let (output, changed_org) = match command {
        AdminCommand::CreateOrg { name, rate_limit_per_minute, rate_limit_per_hour } => {
            let defaults = RateLimits::default();
            let limits = RateLimits {
                per_minute: rate_limit_per_minute.unwrap_or(defaults.per_minute),
                per_hour: rate_limit_per_hour.unwrap_or(defaults.per_hour),
            };
            let created = admin::create_organization_with(&pool, &name, limits).await?;
            (serde_json::to_value(created)?, None)
        }
        AdminCommand::CreateApiKey { org, scopes } => {
            let key = admin::create_api_key(&pool, org, &scopes).await?;
            (serde_json::json!({ "api_key": key }), Some(org))
        }
        AdminCommand::CreateDelegatedToken { org, user, scopes, visibility, registers, safes } => {
            let delegation = Delegation { user, visibility, registers, safes };
            let token = admin::create_delegated_token(&pool, org, &scopes, delegation).await?;
            (serde_json::json!({ "access_token": token }), Some(org))
        }
        AdminCommand::Revoke { credential } => {
            let (org, id) = admin::revoke(&pool, &credential).await?;
            (serde_json::json!({ "revoked": id, "organization_id": org }), Some(org))
        }
        AdminCommand::SetRateLimits { org, per_minute, per_hour } => {
            admin::set_rate_limits(&pool, org, RateLimits { per_minute, per_hour }).await?;
            (
                serde_json::json!({ "organization_id": org, "rate_limit_per_minute": per_minute, "rate_limit_per_hour": per_hour }),
                Some(org),
            )
        }
        AdminCommand::UpdateOrg {
            org,
            negative_stock,
            tax_id,
            tax_category,
            legal_name,
            prices_include_tax,
            exchange_difference_account,
            receivables_account,
            payables_account,
            payment_fees_account,
            commercial_address,
            gross_income_number,
            activity_start,
        } => {
            let change = admin::SettingsChange {
                negative_stock,
                legal_name,
                tax_id,
                tax_category,
                prices_include_tax,
                exchange_difference_account,
                receivables_account,
                payables_account,
                payment_fees_account,
                commercial_address,
                gross_income_number,
                activity_start,
            };
            let view = admin::update_organization(&pool, org, change).await?;
            (serde_json::to_value(view)?, Some(org))
        }
        AdminCommand::RebuildStock => {
            let report = commands::inventory::rebuild::rebuild(&pool, |events| {
                eprintln!("stock rebuild: {events} events folded");
            })
            .await?;
            (serde_json::to_value(report)?, None)
        }
        AdminCommand::CreatePointOfSale { org, number, name, kind } => {
            let id = admin::create_point_of_sale(&pool, org, number, name.as_deref(), &kind).await?;
            (serde_json::json!({ "point_of_sale_id": id, "number": number, "kind": kind }), None)
        }
        AdminCommand::CreateBankAccount { org, bank, name, currency, cbu, alias, checkbook, ledger_account } => {
            let new = NewLocation {
                kind: LocationKind::BankAccount,
                name,
                currency: currency_arg(&currency)?,
                bank: Some(bank),
                account_number: cbu,
                alias,
                uses_checkbook: checkbook,
                ledger_account_id: ledger_account,
            };
            let id = treasury::create_location(&pool, org, new).await?;
            (serde_json::json!({ "bank_account_id": id }), None)
        }
        AdminCommand::CreateCashRegister(args) => {
            let id =
                treasury::create_location(&pool, args.org, cash_location(LocationKind::CashRegister, &args)?).await?;
            (serde_json::json!({ "cash_register_id": id }), None)
        }
        AdminCommand::CreateSafe(args) => {
            let id = treasury::create_location(&pool, args.org, cash_location(LocationKind::Safe, &args)?).await?;
            (serde_json::json!({ "safe_id": id }), None)
        }
        AdminCommand::SetLocationStatus { org, balance_type, id, status } => {
            let kind = LocationKind::parse(&balance_type).context("balance_type")?;
            let status = if status == "active" { LocationStatus::Active } else { LocationStatus::Inactive };
            treasury::set_location_status(&pool, org, kind, id, status).await?;
            (serde_json::json!({ "balance_type": kind, "balance_id": id, "status": status }), None)
        }
        AdminCommand::CreateLedgerAccount { org, code, name, currency } => {
            let id = treasury::create_ledger_account(&pool, org, &code, &name, currency_arg(&currency)?).await?;
            (serde_json::json!({ "ledger_account_id": id }), None)
        }
        AdminCommand::CreateCostCenter { org, code, name } => {
            let id = treasury::create_cost_center(&pool, org, &code, &name).await?;
            (serde_json::json!({ "cost_center_id": id }), None)
        }
        AdminCommand::LoadRates { file } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let rows = treasury::parse_rates(&text)?;
            eprintln!("load-rates: {} rates read from {}", rows.len(), file.display());
            let loaded = treasury::load_rates(&pool, &rows).await?;
            (serde_json::to_value(loaded)?, None)
        }
        AdminCommand::SetFiscalCertificate { org, cert, key } => {
            let read = |path: &std::path::Path| {
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
            };
            let (cert, key) = (read(&cert)?, read(&key)?);
            let secrets = events::secrets::SecretBox::load(&pool).await?;
            let summary = commands::fiscal::certificate::set_certificate(&pool, &secrets, org, &cert, &key).await?;
            (serde_json::to_value(summary)?, Some(org))
        }
    };
    announce(settings, changed_org).await;
    print_json(&output)?;
    Ok(0)
}

/// Best effort: lets a running relay publish what an operator command appended right away, and tells
/// gateways that an organization's credentials or limits changed.
async fn announce(settings: &Settings, changed_org: Option<Uuid>) {
    let connect = async_nats::connect(settings.nats_url.as_str());
    if let Ok(Ok(client)) = tokio::time::timeout(std::time::Duration::from_secs(1), connect).await {
        let bus = events::bus::Bus::from_client(client.clone(), &settings.nats_prefix);
        if let Some(org) = changed_org {
            let _ = client.publish(bus.credentials_changed_subject(), org.to_string().into()).await;
        }
        bus.wake_relay(None).await;
        let _ = client.flush().await;
    }
}

async fn serve(
    settings: &Settings,
    role: &str,
    api: bool,
    commands: bool,
    projections: Option<ProjectionSet>,
) -> anyhow::Result<i32> {
    let pool = roles::connect_database(settings).await?;
    let bus = roles::connect_bus(settings, role).await?;
    let listener = if api { Some(roles::bind(&settings.http_addr).await?) } else { None };
    // Without FISCAL_URL the command workers' tax authority is the built-in simulator, served from here.
    let simulator = if commands { roles::bind_fiscal_simulator(&settings.fiscal).await? } else { None };
    let fiscal = match &simulator {
        Some(listener) => settings.fiscal.clone().with_simulator_at(listener.local_addr()?),
        None => settings.fiscal.clone(),
    };
    let fiscal =
        commands::fiscal::connect(&fiscal, pool.clone()).await.context("the tax authority (FISCAL_ENV, FISCAL_URL)")?;
    let roles = Roles { api: listener, commands, projections, fiscal: commands.then_some(fiscal) };
    let mut running = roles::start(pool.clone(), bus.clone(), roles, settings.read_wait).await?;
    if !api {
        roles::serve_metrics(settings, &mut running.tasks, &pool, Some(bus)).await?;
    }
    if let Some(listener) = simulator {
        eprintln!("backoffice {role}: fiscal simulator on http://{}", listener.local_addr()?);
        running.tasks.spawn(async move {
            if let Err(error) = fiscal_simulator::serve(listener, pool).await {
                tracing::error!(%error, "fiscal simulator stopped");
            }
        });
    }
    if let Some(addr) = running.http_addr {
        tracing::info!(%addr, role, "listening");
        eprintln!("backoffice {role}: listening on http://{addr}");
    } else {
        eprintln!("backoffice {role}: running");
    }
    Ok(until_stopped(role, &mut running.tasks, shutdown_signal()).await)
}

/// The operator's request to stop: an interrupt (Ctrl-C) or SIGTERM, which `docker stop`, systemd and
/// Kubernetes send before they kill the process.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "SIGTERM cannot be watched; only an interrupt stops the process cleanly");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs until `shutdown` (the operator's interrupt: exit code 0) or until one of the roles' tasks ends on
/// its own, panics included: they run forever, so that is a failure, and the exit code says so to the
/// supervisor that should restart the process.
async fn until_stopped<T>(
    role: &str,
    tasks: &mut tokio::task::JoinSet<()>,
    shutdown: impl std::future::Future<Output = T>,
) -> i32 {
    tokio::select! {
        _ = shutdown => 0,
        stopped = tasks.join_next() => {
            match stopped {
                Some(Err(error)) => tracing::error!(role, %error, "a role stopped unexpectedly"),
                _ => tracing::error!(role, "a role stopped unexpectedly"),
            }
            eprintln!("backoffice {role}: a role stopped unexpectedly; exiting");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn partitions_and_lists_parse() {
        let cli = Cli::try_parse_from(["backoffice", "projections", "--only", "customers", "--partition", "1/2"])
            .expect("parses");
        let Command::Projections(args) = cli.command else { panic!("projections") };
        assert_eq!(args.only, vec!["customers".to_owned()]);
        assert_eq!(args.partition, Some(Partition { index: 1, count: 2 }));
        assert!(Cli::try_parse_from(["backoffice", "projections", "--partition", "2/2"]).is_err());
    }

    #[test]
    fn a_rebuild_refuses_only_and_partition_rather_than_ignore_them() {
        for args in [
            ["backoffice", "projections", "--only", "customers", "rebuild", "customers"],
            ["backoffice", "projections", "--only", "customers", "rebuild", "--all"],
            ["backoffice", "projections", "--partition", "0/2", "rebuild", "customers"],
        ] {
            let error = Cli::try_parse_from(args).expect_err("refused");
            assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict, "{args:?}: {error}");
            assert_eq!(error.exit_code(), 2, "{args:?}: a usage error");
        }
        let cli = Cli::try_parse_from(["backoffice", "projections", "rebuild", "customers"]).expect("parses");
        let Command::Projections(args) = cli.command else { panic!("projections") };
        assert!(matches!(args.action, Some(ProjectionsAction::Rebuild { name: Some(_), all: false })));
    }

    #[tokio::test]
    async fn a_role_that_stops_on_its_own_exits_non_zero_and_an_interrupt_zero() {
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(std::future::pending::<()>());
        tasks.spawn(async {});
        assert_eq!(until_stopped("test", &mut tasks, std::future::pending::<()>()).await, 1, "a task ended");
        tasks.spawn(async { panic!("a role panicked") });
        assert_eq!(until_stopped("test", &mut tasks, std::future::pending::<()>()).await, 1, "a task panicked");
        assert_eq!(until_stopped("test", &mut tasks, std::future::ready(())).await, 0, "the operator stopped it");
    }
}
