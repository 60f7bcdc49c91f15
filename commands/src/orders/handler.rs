//! How the workers run orders: the document shape ([`crate::document`]) with the facts loaded from the
//! order's stream (and a converted quote's), the customer, the products and the warehouses; the
//! decision written with the order's number, its reservation (a conversion moves the quote's), the
//! quote's conversion and the append.

use super::{OrderCommand, OrderDecision, OrderFacts, OrderOutcome};
use crate::aggregate::Rejection;
use crate::document::{Document, next_number};
use crate::engine::{Committed, ExecuteError, append_typed, load};
use crate::handler::handler;
use crate::inventory::reservations::{self, ReservationChange};
use crate::inventory::{combos_and_retired, negative_stock_policy};
use crate::lookups::{active, load_products};
use crate::quotes::{load_quote, track_expiry};
use crate::records::Warehouse;
use crate::reply::CommandReply;
use events::catalogue::{OrderEvent, OrderState, QuoteEvent, ReservationOwner, ar_date, fold_order, fold_quote};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// The order's state, its stream version and when its last event was recorded: every order event
/// carries the whole order, so the last one is all a load reads (an order's stream grows with every
/// delivery and bill).
pub async fn load_order(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<(Option<OrderState>, i32, Option<OffsetDateTime>), ExecuteError> {
    let Some(event) = events::store::load_latest(conn, org_id, id).await? else { return Ok((None, 0, None)) };
    if event.stream_type != OrderEvent::STREAM_TYPE {
        return Ok((None, 0, None));
    }
    let decoded = OrderEvent::decode(&event.event_type, event.schema_version, event.data)
        .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
    Ok((fold_order(None, &decoded), event.version, Some(event.recorded_at)))
}

/// Orders (`POST /api/v1/orders`, `PATCH`, cancel, complete, and the conversion of a quote).
pub struct Orders;

handler! {
    impl Handler for Orders as Document {
        type Command = OrderCommand;
        JOBS: &[];

        stream_id(command) {
            command.order_id()
        }
    }
}

/// What a conversion loads besides the order: the quote and its stream's version.
pub struct Converting {
    pub version: i32,
}

impl Document for Orders {
    type Command = OrderCommand;
    type Facts = (OrderFacts, Option<Converting>);
    type Decision = OrderDecision;

    async fn load(
        command: &OrderCommand,
        conn: &mut PgConnection,
        org_id: Uuid,
    ) -> Result<(OrderFacts, Option<Converting>), ExecuteError> {
        let (current, version, updated_at) = load_order(conn, org_id, command.order_id()).await?;
        let today = Some(ar_date(OffsetDateTime::now_utc()));
        let mut facts = OrderFacts { current, version, updated_at, today, ..OrderFacts::default() };
        let mut converting = None;
        let (customer, variants, warehouses) = match command {
            OrderCommand::Create { input, .. } => (
                Some(input.customer_id),
                input.lines.iter().filter_map(|l| l.variant_id).collect::<Vec<_>>(),
                input.assigned_warehouse_id.into_iter().collect::<Vec<_>>(),
            ),
            OrderCommand::Convert { quote_id, .. } => {
                let (quote, version, _) = load_quote(conn, org_id, *quote_id).await?;
                converting = Some(Converting { version });
                let found = quote.as_ref().map(|q| (q.customer_id, q.items.iter().map(|i| i.variant_id).collect()));
                facts.quote = quote;
                match found {
                    Some((customer, variants)) => (Some(customer), variants, Vec::new()),
                    None => (None, Vec::new(), Vec::new()),
                }
            }
            OrderCommand::Edit { edit, .. } => {
                (None, edit.lines.iter().filter_map(|l| l.variant_id).collect(), vec![edit.assigned_warehouse_id])
            }
            OrderCommand::EditNotes { .. } | OrderCommand::Cancel { .. } | OrderCommand::Complete { .. } => {
                return Ok((facts, None));
            }
        };
        if let Some(customer) = customer {
            facts.customer = load::<crate::contacts::Customer>(conn, org_id, customer)
                .await?
                .0
                .filter(|c| c.is_active)
                .map(|c| c.fields.name);
        }
        facts.products = load_products(conn, org_id, &variants).await?.0;
        let combos: Vec<Uuid> =
            facts.products.iter().filter(|(_, f)| f.product_type.is_combo()).map(|(id, _)| *id).collect();
        // A combo reserves its components: one no longer active refuses a line naming the combo, where a
        // line naming an inactive product is refused (a conversion checks no product).
        let (components, retired) = combos_and_retired(conn, org_id, &combos).await?;
        if converting.is_none() {
            facts.retired_components = retired;
        }
        facts.components = components;
        facts.warehouses = active::<Warehouse>(conn, org_id, &warehouses, |w| w.fields.is_active).await?;
        Ok((facts, converting))
    }

    fn decide(
        command: &OrderCommand,
        (facts, _): &(OrderFacts, Option<Converting>),
    ) -> Result<OrderDecision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &OrderCommand,
        (facts, converting): (OrderFacts, Option<Converting>),
        decision: OrderDecision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.order_id();
        let OrderDecision { mut events, quote_event, reservation } = decision;
        if let Some(OrderEvent::OrderCreated(state)) = events.first_mut() {
            state.number = next_number(conn, org_id, "order").await?;
        }
        let owner = ReservationOwner { kind: "order".into(), id };
        let today = ar_date(OffsetDateTime::now_utc());
        let policy = negative_stock_policy(conn, org_id).await?;
        let mut requests = Vec::new();
        let warnings = match (command, &quote_event, converting, &reservation) {
            (
                OrderCommand::Convert { quote_id, .. },
                Some(quote_event),
                Some(converting),
                ReservationChange::Set(wanted),
            ) => {
                // The quote's reservation becomes the order's in this transaction.
                let from = ReservationOwner { kind: "quote".into(), id: *quote_id };
                let (released, taken) =
                    reservations::transfer(conn, org_id, &from, &owner, wanted.as_ref(), today, policy, metadata)
                        .await?;
                let quote = fold_quote(facts.quote.clone(), quote_event);
                track_expiry(conn, org_id, *quote_id, quote.as_ref()).await?;
                let stream = StreamRef {
                    org_id,
                    stream_type: QuoteEvent::STREAM_TYPE,
                    stream_id: *quote_id,
                    expected_version: converting.version,
                };
                requests.push(AppendRequest {
                    stream,
                    events: vec![quote_event.to_new_event()?],
                    metadata: metadata.clone(),
                });
                requests.extend(released.append);
                requests.extend(taken.append);
                taken.warnings
            }
            _ => {
                let decided = reservations::change(conn, org_id, &owner, &reservation, today, policy, metadata).await?;
                requests.extend(decided.append);
                decided.warnings
            }
        };
        let created = facts.current.is_none();
        let order = events.iter().fold(facts.current, fold_order);
        let order = order.ok_or_else(|| ExecuteError::Corrupt(id, "an order command decided no state".into()))?;
        let stream =
            StreamRef { org_id, stream_type: OrderEvent::STREAM_TYPE, stream_id: id, expected_version: facts.version };
        let events = events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
        requests.insert(0, AppendRequest { stream, events, metadata: metadata.clone() });
        let Committed { key, keys, recorded_at } = append_typed(conn, &requests, id).await?;
        let outcome = OrderOutcome { id, order, warnings, at: recorded_at };
        Ok(CommandReply::accepted(key, created, &outcome, keys)?)
    }
}
