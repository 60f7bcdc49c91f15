//! How the workers run delivery notes: the document shape ([`crate::document`]) with the facts loaded
//! from the note's stream, the point of sale, the customer, the products, the warehouses and the sale
//! or order it documents; the decision written with its number, the order's reservation first (so the
//! units it held are the ones that leave), the stock, the one-note-per-sale row and the append.

use super::{NoteCommand, NoteDecision, NoteFacts, NoteOutcome};
use crate::aggregate::Rejection;
use crate::document::{Document, next_number};
use crate::engine::{Committed, ExecuteError, append_typed, load};
use crate::handler::handler;
use crate::inventory::reservations;
use crate::inventory::{apply_policy, combo_components, combos_and_retired, levels, negative_stock_policy, plan};
use crate::lookups::{active, load_products};
use crate::orders::load_order;
use crate::records::Warehouse;
use crate::reply::CommandReply;
use events::catalogue::{
    DeliveryNoteDeleted, DeliveryNoteEvent, DeliveryNoteState, DeliveryOrigin, OrderEvent, ReservationOwner, ar_date,
};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// The note's state (and whether it was deleted) and its stream version.
pub async fn load_note(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<(Option<(DeliveryNoteState, bool)>, i32), ExecuteError> {
    let stored = events::store::load_stream(conn, org_id, id).await?;
    let (mut state, mut version) = (None, 0);
    for event in stored {
        if event.stream_type != DeliveryNoteEvent::STREAM_TYPE {
            return Ok((None, 0));
        }
        let decoded = DeliveryNoteEvent::decode(&event.event_type, event.schema_version, event.data)
            .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        state = Some(match decoded {
            DeliveryNoteEvent::DeliveryNoteCreated(note) => (*note, false),
            DeliveryNoteEvent::DeliveryNoteDeleted(deleted) => (deleted.note, true),
        });
        version = event.version;
    }
    Ok((state, version))
}

/// Delivery notes (`POST` and `DELETE /api/v1/delivery-notes`).
pub struct DeliveryNotes;

handler! {
    impl Handler for DeliveryNotes as Document {
        type Command = NoteCommand;
        JOBS: &[];

        stream_id(command) {
            command.note_id()
        }
    }
}

impl Document for DeliveryNotes {
    type Command = NoteCommand;
    type Facts = NoteFacts;
    type Decision = NoteDecision;

    async fn load(command: &NoteCommand, conn: &mut PgConnection, org_id: Uuid) -> Result<NoteFacts, ExecuteError> {
        let (current, version) = load_note(conn, org_id, command.note_id()).await?;
        let today = Some(ar_date(OffsetDateTime::now_utc()));
        let mut facts = NoteFacts { current, version, today, ..NoteFacts::default() };
        let input = match command {
            NoteCommand::Create { input, .. } => input,
            NoteCommand::Delete { .. } => {
                if let Some((note, false)) = &facts.current
                    && let DeliveryOrigin::Order { order_id } = note.origin
                {
                    let (order, version, _) = load_order(conn, org_id, order_id).await?;
                    let variants: Vec<Uuid> =
                        order.iter().flat_map(|o| o.lines.iter().filter_map(|l| l.variant_id)).collect();
                    facts.components = combo_components(conn, org_id, &variants).await?;
                    facts.order = order.map(|o| (o, version));
                }
                return Ok(facts);
            }
        };
        facts.point_of_sale = sqlx::query_scalar("select number from points_of_sale where org_id = $1 and id = $2")
            .bind(org_id)
            .bind(input.point_of_sale_id)
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(customer) = input.customer_id {
            facts.customer = load::<crate::contacts::Customer>(conn, org_id, customer)
                .await?
                .0
                .filter(|c| c.is_active)
                .map(|c| c.fields.name);
        }
        let mut variants: Vec<Uuid> = input.items.iter().filter_map(|i| i.variant_id).collect();
        match input.origin {
            DeliveryOrigin::Sale { sale_id } => {
                facts.sale = crate::sales::invoicing::load_sale(conn, org_id, sale_id).await?.map(|(s, _)| s);
            }
            DeliveryOrigin::Order { order_id } => {
                let (order, version, _) = load_order(conn, org_id, order_id).await?;
                variants.extend(order.iter().flat_map(|o| o.lines.iter().filter_map(|l| l.variant_id)));
                facts.order = order.map(|o| (o, version));
            }
            DeliveryOrigin::Custom => {}
        }
        let (products, groups) = load_products(conn, org_id, &variants).await?;
        facts.products = products
            .into_iter()
            .map(|(variant, fact)| {
                let name = groups.get(&fact.group_id).map(|state| state.group.shared.name.clone()).unwrap_or_default();
                (variant, (fact, name))
            })
            .collect();
        let combos: Vec<Uuid> =
            facts.products.iter().filter(|(_, (f, _))| f.product_type.is_combo()).map(|(id, _)| *id).collect();
        // A custom note's combo leaves as its components: one no longer active refuses the combo's items
        // (an order's lines are delivered as the order holds them, inactive products too).
        let (components, retired) = combos_and_retired(conn, org_id, &combos).await?;
        if matches!(input.origin, DeliveryOrigin::Custom) {
            facts.retired_components = retired;
        }
        facts.components = components;
        facts.default_warehouse = crate::records::current_defaults(conn, org_id, "warehouse").await?.first().copied();
        // A note for an order takes its goods from the order's warehouses (a line's own, or the order's)
        // unless it names one: checked like one it names, as a sale billing the order checks them.
        let of_order = facts
            .order
            .iter()
            .flat_map(|(o, _)| o.lines.iter().filter_map(|l| l.warehouse_id).chain(o.assigned_warehouse_id));
        let named: Vec<Uuid> = input.warehouse_id.into_iter().chain(facts.default_warehouse).chain(of_order).collect();
        facts.warehouses = active::<Warehouse>(conn, org_id, &named, |w| w.fields.is_active).await?;
        Ok(facts)
    }

    fn decide(command: &NoteCommand, facts: &NoteFacts) -> Result<NoteDecision, Rejection> {
        super::decide(command, facts)
    }

    async fn write(
        command: &NoteCommand,
        facts: NoteFacts,
        decision: NoteDecision,
        conn: &mut PgConnection,
        org_id: Uuid,
        metadata: &Metadata,
    ) -> Result<CommandReply, ExecuteError> {
        let id = command.note_id();
        let NoteDecision { mut note, deleted, moves, order } = decision;
        let today = ar_date(OffsetDateTime::now_utc());
        let policy = negative_stock_policy(conn, org_id).await?;
        let mut requests = Vec::new();
        // The order's reservation first: the units it held are the ones that leave (or come back).
        if let (Some((events, reservation)), Some((_, version))) = (&order, &facts.order) {
            let owner = ReservationOwner { kind: "order".into(), id: order_id(&note) };
            let decided = reservations::change(
                conn,
                org_id,
                &owner,
                reservation,
                today,
                crate::inventory::NegativeStock::Allow,
                metadata,
            )
            .await?;
            let stream = StreamRef {
                org_id,
                stream_type: OrderEvent::STREAM_TYPE,
                stream_id: owner.id,
                expected_version: *version,
            };
            let events = events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
            requests.push(AppendRequest { stream, events, metadata: metadata.clone() });
            requests.extend(decided.append);
        }
        let mut locked = levels::lock(conn, org_id, moves.iter().map(|m| m.key), today).await?;
        let (changes, shortfalls) = plan(&mut locked, &moves)?;
        // Restoring a deleted note's stock is never short.
        let warnings = if deleted { Vec::new() } else { apply_policy(policy, shortfalls)? };
        levels::write(conn, org_id, &changes).await?;
        let event = if deleted {
            if let DeliveryOrigin::Sale { sale_id } = note.origin {
                sqlx::query("delete from sale_delivery_notes where org_id = $1 and sale_id = $2")
                    .bind(org_id)
                    .bind(sale_id)
                    .execute(&mut *conn)
                    .await?;
            }
            DeliveryNoteEvent::DeliveryNoteDeleted(Box::new(DeliveryNoteDeleted {
                note: note.clone(),
                deleted_on: today,
                restored: changes,
            }))
        } else {
            if let DeliveryOrigin::Sale { sale_id } = note.origin {
                let taken: Option<Uuid> = sqlx::query_scalar(
                    "insert into sale_delivery_notes (org_id, sale_id, note_id) values ($1, $2, $3)
                     on conflict (org_id, sale_id) do nothing returning note_id",
                )
                .bind(org_id)
                .bind(sale_id)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
                if taken.is_none() {
                    return Err(Rejection::state_conflict(
                        "SALE_ALREADY_DELIVERED",
                        "delivered",
                        "the sale already has a delivery note",
                    )
                    .into());
                }
            }
            // Per point of sale, never given back by a delete.
            note.number = next_number(conn, org_id, &format!("delivery_note:{}", note.point_of_sale_id)).await?;
            note.changes = changes;
            DeliveryNoteEvent::DeliveryNoteCreated(Box::new(note.clone()))
        };
        let stream = StreamRef {
            org_id,
            stream_type: DeliveryNoteEvent::STREAM_TYPE,
            stream_id: id,
            expected_version: facts.version,
        };
        requests.insert(0, AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
        let Committed { key, keys, recorded_at } = append_typed(conn, &requests, id).await?;
        let outcome = NoteOutcome { id, note, deleted, warnings, at: recorded_at };
        Ok(CommandReply::accepted(key, !deleted, &outcome, keys)?)
    }
}

fn order_id(note: &DeliveryNoteState) -> Uuid {
    match note.origin {
        DeliveryOrigin::Order { order_id } => order_id,
        DeliveryOrigin::Custom | DeliveryOrigin::Sale { .. } => Uuid::nil(),
    }
}
