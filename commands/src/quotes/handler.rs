//! How the workers run quotes: the document shape ([`crate::document`]) with the facts loaded from the
//! quote's stream, the customer, the price list, the products and the warehouses; the decision written
//! with the quote's number, its reservation, the sweeper's row and the append; and the expiry sweeper.

use super::{QuoteCommand, QuoteDecision, QuoteFacts, QuoteOutcome};
use crate::aggregate::Rejection;
use crate::document::{Document, next_number};
use crate::engine::{Committed, ExecuteError, append_typed, load};
use crate::handler::{Job, handler};
use crate::inventory::reservations;
use crate::inventory::{combos_and_retired, negative_stock_policy};
use crate::lookups::{active, load_products};
use crate::records::Warehouse;
use crate::reply::CommandReply;
use events::catalogue::{QuoteEvent, QuoteExpired, QuoteState, QuoteStatus, ReservationOwner, ar_date, fold_quote};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::{PgConnection, PgPool};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The quote's state and its stream version, folded from its events.
pub async fn load_quote(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<(Option<QuoteState>, i32, bool), ExecuteError> {
    let stored = events::store::load_stream(conn, org_id, id).await?;
    let (mut state, mut version, mut existed) = (None, 0, false);
    for event in stored {
        if event.stream_type != QuoteEvent::STREAM_TYPE {
            return Ok((None, 0, false));
        }
        let decoded = QuoteEvent::decode(&event.event_type, event.schema_version, event.data)
            .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        state = fold_quote(state, &decoded);
        version = event.version;
        existed = true;
    }
    Ok((state, version, existed))
}

/// Quotes (`POST`, `PUT` and `DELETE /api/v1/quotes`).
pub struct Quotes;

handler! {
    impl Handler for Quotes as Document {
        type Command = QuoteCommand;
        JOBS: &[crate::quotes::SWEEP_QUOTES];

        stream_id(command) {
            command.quote_id()
        }
    }
}

impl Document for Quotes {
    type Command = QuoteCommand;
    type Facts = QuoteFacts;
    type Decision = QuoteDecision;

    async fn load(command: &QuoteCommand, conn: &mut PgConnection, org_id: Uuid) -> Result<QuoteFacts, ExecuteError> {
        let (current, version, _) = load_quote(conn, org_id, command.quote_id()).await?;
        let today = Some(ar_date(OffsetDateTime::now_utc()));
        let mut facts = QuoteFacts { current, version, today, ..QuoteFacts::default() };
        let input = match command {
            QuoteCommand::Create { input, .. } | QuoteCommand::Replace { input, .. } => input,
            QuoteCommand::Delete { .. }
            | QuoteCommand::Send { .. }
            | QuoteCommand::Accept { .. }
            | QuoteCommand::Reject { .. } => return Ok(facts),
        };
        facts.customer = load::<crate::contacts::Customer>(conn, org_id, input.customer_id)
            .await?
            .0
            .filter(|c| c.is_active)
            .map(|c| c.fields.name);
        if let Some(list) = input.price_list_id {
            facts.price_list_found =
                load::<crate::price_lists::PriceList>(conn, org_id, list).await?.0.is_some_and(|l| l.fields.is_active);
        }
        let variants: Vec<Uuid> = input.items.iter().map(|i| i.variant_id).collect();
        facts.products = load_products(conn, org_id, &variants).await?.0;
        let combos: Vec<Uuid> =
            facts.products.iter().filter(|(_, f)| f.product_type.is_combo()).map(|(id, _)| *id).collect();
        // A combo reserves its components: one no longer active refuses the combo's items.
        (facts.components, facts.retired_components) = combos_and_retired(conn, org_id, &combos).await?;
        let warehouses: Vec<Uuid> = input.items.iter().filter_map(|i| i.warehouse_id).collect();
        facts.warehouses = active::<Warehouse>(conn, org_id, &warehouses, |w| w.fields.is_active).await?;
        Ok(facts)
    }

    fn decide(command: &QuoteCommand, facts: &QuoteFacts) -> Result<QuoteDecision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &QuoteCommand,
        facts: QuoteFacts,
        decision: QuoteDecision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.quote_id();
        let QuoteDecision { mut event, reservation, warnings_allowed } = decision;
        if let QuoteEvent::QuoteCreated(state) = &mut event {
            state.number = next_number(conn, org_id, "quote").await?;
        }
        let owner = ReservationOwner { kind: "quote".into(), id };
        let today = ar_date(OffsetDateTime::now_utc());
        let policy = negative_stock_policy(conn, org_id).await?;
        let decided = reservations::change(conn, org_id, &owner, &reservation, today, policy, metadata).await?;
        let warnings = if warnings_allowed { decided.warnings } else { Vec::new() };
        let created = facts.current.is_none();
        let next = fold_quote(facts.current, &event);
        track_expiry(conn, org_id, id, next.as_ref()).await?;
        let stream =
            StreamRef { org_id, stream_type: QuoteEvent::STREAM_TYPE, stream_id: id, expected_version: facts.version };
        let mut requests =
            vec![AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() }];
        requests.extend(decided.append);
        let Committed { key, keys, recorded_at } = append_typed(conn, &requests, id).await?;
        let outcome = QuoteOutcome {
            id,
            quote: next,
            warnings,
            reservation_released: decided.released,
            at: recorded_at,
        };
        Ok(CommandReply::accepted(key, created, &outcome, keys)?)
    }
}

/// Whether a quote in `status` still expires by itself.
pub fn expires(status: QuoteStatus) -> bool {
    matches!(status, QuoteStatus::Draft | QuoteStatus::Sent)
}

/// Keeps the sweeper's row of a draft or sent quote that expires (none for any other).
pub async fn track_expiry(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    quote: Option<&QuoteState>,
) -> Result<(), sqlx::Error> {
    match quote.filter(|q| expires(q.status)).and_then(|q| q.expires_at) {
        Some(expires_at) => {
            sqlx::query(
                "insert into quote_expiries (org_id, quote_id, expires_at) values ($1, $2, $3)
                 on conflict (org_id, quote_id) do update set expires_at = excluded.expires_at",
            )
            .bind(org_id)
            .bind(id)
            .bind(expires_at)
            .execute(conn)
            .await?;
        }
        None => {
            sqlx::query("delete from quote_expiries where org_id = $1 and quote_id = $2")
                .bind(org_id)
                .bind(id)
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}

/// Expires the draft and sent quotes whose `expires_at` is before `today` (the organization's date): one
/// `QuoteExpired` each and its reservation released, in one transaction per quote. Returns how many.
pub async fn expire_due(pool: &PgPool, today: Date) -> Result<usize, ExecuteError> {
    let mut expired = 0;
    for _ in 0..500 {
        let mut tx = pool.begin().await?;
        let due: Option<(Uuid, Uuid)> = sqlx::query_as(
            "select org_id, quote_id from quote_expiries where expires_at < $1 limit 1 for update skip locked",
        )
        .bind(today)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((org_id, id)) = due else { break };
        let (state, version, _) = load_quote(&mut tx, org_id, id).await?;
        let metadata = Metadata::system("quote_sweeper");
        let mut requests = Vec::new();
        if state.as_ref().is_some_and(|q| expires(q.status)) {
            let event = QuoteEvent::QuoteExpired(QuoteExpired { expired_on: today });
            let stream =
                StreamRef { org_id, stream_type: QuoteEvent::STREAM_TYPE, stream_id: id, expected_version: version };
            requests.push(AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
            let owner = ReservationOwner { kind: "quote".into(), id };
            let policy = crate::inventory::NegativeStock::Allow;
            requests.extend(reservations::set(&mut tx, org_id, &owner, None, today, policy, &metadata).await?.append);
            expired += 1;
        }
        track_expiry(&mut tx, org_id, id, None).await?;
        append_typed(&mut tx, &requests, id).await?;
        tx.commit().await?;
    }
    Ok(expired)
}

/// The quotes' background job: [`sweep_forever`].
pub const SWEEP_QUOTES: Job = Job { name: "quote_expiry", run: |pool, _| Box::pin(sweep_forever(pool)) };

/// Expires due quotes every minute, for ever.
pub async fn sweep_forever(pool: PgPool) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match expire_due(&pool, ar_date(OffsetDateTime::now_utc())).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "quotes past their expiry recorded as expired"),
            Err(error) => tracing::warn!(%error, "could not expire quotes"),
        }
    }
}
