//! The reservations primitive quotes and orders build on: a reservation belongs to its owner (a quote, an
//! order), lives in a stream of its own derived from the owner's id, and is reserved, adjusted, released
//! or expired, each an event, in the owner's command transaction. Its lines count in `reserved` (and
//! against `available`) through `reserved_through`, the organization's calendar date; from the next day
//! availability ignores them, and the sweeper ([`expire_due`]) records their expiry.

use super::levels::{self, Key};
use super::{NegativeStock, StockShortfall, apply_policy, expand_combos};
use crate::engine::ExecuteError;
use events::catalogue::{Reservation, ReservationOwner, ReservedLine, StockLine, StockReservationEvent};
use events::domain::Quantity;
use events::store::{AppendRequest, StreamRef, stream_version};
use events::unnest::Unnest;
use events::{EventPayload, Metadata};
use sqlx::{PgConnection, PgPool};
use std::collections::BTreeMap;
use time::Date;
use uuid::Uuid;

/// The stream of the reservation `owner_id` holds (one per owner, derived so nothing needs storing).
pub fn reservation_id(owner_id: Uuid) -> Uuid {
    Uuid::new_v5(&owner_id, b"stock_reservation")
}

/// The refusal of a reservation that would end before `today`, the organization's date when the
/// command is decided (after its idempotency key is claimed: a retry of a request that was accepted
/// yesterday replays it instead of being refused). None for no date, or without a date to compare.
pub fn through_in_past(through: Option<time::Date>, today: Option<time::Date>) -> Option<crate::FieldError> {
    let (through, today) = (through?, today?);
    (through < today).then(|| {
        crate::FieldError::new(
            "reservation.reserved_through_date",
            "in_past",
            format!("must be today ({today}) or later"),
        )
    })
}

/// What an owner wants reserved: lines (any order; a (variant, warehouse) may repeat and is summed)
/// through a date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub reserved_through: Date,
    pub lines: Vec<(ReservedLine, String)>,
}

/// `lines` with each combo's line as its components (each one's quantity in the combo times the line's,
/// in the line's warehouse, under the line's field), expanded as a sale moves them: a combo holds no
/// stock, so it reserves none of its own. `combos` maps each combo among the lines to its components.
pub fn of_components(
    lines: Vec<(ReservedLine, String)>,
    combos: &BTreeMap<Uuid, Vec<StockLine>>,
) -> Result<Vec<(ReservedLine, String)>, crate::aggregate::Rejection> {
    let mut out = Vec::with_capacity(lines.len());
    let mut errors = Vec::new();
    for (line, field) in lines {
        let one = StockLine { variant_id: line.variant_id, quantity: line.quantity };
        match expand_combos(std::slice::from_ref(&one), combos, "items") {
            Ok(parts) => out.extend(parts.into_iter().map(|part| {
                let warehouse_id = line.warehouse_id;
                (ReservedLine { variant_id: part.variant_id, warehouse_id, quantity: part.quantity }, field.clone())
            })),
            // Named by the line's own field, not by its place in a slice of one.
            Err(refused) => errors.extend(refused.into_iter().map(|e| crate::FieldError { field: field.clone(), ..e })),
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(crate::aggregate::Rejection::Invalid { errors }) }
}

/// What a command does to its owner's reservation: leave it as it is, or set it to what is wanted
/// (`None` releases it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReservationChange {
    Keep,
    Set(Option<Wanted>),
}

/// A reservation's change, decided: the event to append with the owner's own (none when nothing
/// changes) and the shortfalls the policy let through as warnings.
#[derive(Debug, Default)]
pub struct Decided {
    pub append: Option<AppendRequest>,
    pub warnings: Vec<StockShortfall>,
    /// Whether an active reservation was released.
    pub released: bool,
}

/// The rows of a reservation as stored, by (variant, warehouse), with the date they count through.
async fn current_rows(
    conn: &mut PgConnection,
    org_id: Uuid,
    reservation: Uuid,
) -> Result<(BTreeMap<Key, Quantity>, Option<Date>), sqlx::Error> {
    let rows: Vec<(Uuid, Uuid, Quantity, Date)> = sqlx::query_as(
        "select variant_id, warehouse_id, quantity, reserved_through from stock_reservations
         where org_id = $1 and reservation_id = $2 for update",
    )
    .bind(org_id)
    .bind(reservation)
    .fetch_all(&mut *conn)
    .await?;
    let through = rows.first().map(|r| r.3);
    let lines = rows.into_iter().map(|(v, w, q, _)| ((v, w), q)).collect();
    Ok((lines, through))
}

/// Sets the reservation `owner` holds to `wanted` (`None` releases it), in the caller's transaction:
/// the levels concerned are locked like any stock command's, a line that grows beyond what is available
/// (on hand − other active reservations) is a shortfall the `policy` turns into a warning or a 422, and
/// the rows and the event are written together or not at all. `today` is the organization's date.
pub async fn set(
    conn: &mut PgConnection,
    org_id: Uuid,
    owner: &ReservationOwner,
    wanted: Option<&Wanted>,
    today: Date,
    policy: NegativeStock,
    metadata: &Metadata,
) -> Result<Decided, ExecuteError> {
    let reservation = reservation_id(owner.id);
    let (current, current_through) = current_rows(conn, org_id, reservation).await?;
    let mut lines: BTreeMap<Key, (Quantity, String)> = BTreeMap::new();
    for (line, field) in wanted.map(|w| w.lines.as_slice()).unwrap_or_default() {
        let entry = lines.entry((line.variant_id, line.warehouse_id)).or_insert((Quantity::ZERO, field.clone()));
        entry.0 = entry.0.checked_add(line.quantity).ok_or_else(|| crate::aggregate::Rejection::Invalid {
            errors: vec![crate::validate::FieldError::new(field, "out_of_range", "the total quantity is too large")],
        })?;
    }
    let still_counting = |through: Option<Date>| through.is_some_and(|d| d >= today);
    let mut shortfalls = Vec::new();
    if !lines.is_empty() {
        let locked = levels::lock(conn, org_id, lines.keys().copied(), today).await?;
        for (key, (quantity, field)) in &lines {
            let level = locked.get(key).copied().unwrap_or_default();
            // What this reservation already holds counts as its own: only growth needs stock.
            let own = if still_counting(current_through) {
                current.get(key).copied().unwrap_or_default()
            } else {
                Quantity::ZERO
            };
            if *quantity <= own {
                continue;
            }
            let available = level.available().saturating_add(own);
            if *quantity > available {
                shortfalls.push(StockShortfall {
                    field: field.clone(),
                    product_id: key.0,
                    warehouse_id: key.1,
                    requested_quantity: *quantity,
                    available_quantity: available,
                });
            }
        }
    }
    let warnings = apply_policy(policy, shortfalls)?;
    let next: Vec<ReservedLine> = lines
        .iter()
        .map(|((variant_id, warehouse_id), (quantity, _))| ReservedLine {
            variant_id: *variant_id,
            warehouse_id: *warehouse_id,
            quantity: *quantity,
        })
        .collect();
    let through = wanted.map(|w| w.reserved_through);
    let unchanged = current.len() == next.len()
        && next.iter().all(|l| current.get(&(l.variant_id, l.warehouse_id)) == Some(&l.quantity))
        && (next.is_empty() || current_through == through);
    if unchanged {
        return Ok(Decided { append: None, warnings, released: false });
    }
    let event = match (current.is_empty(), next.is_empty(), through) {
        (_, true, _) | (_, _, None) => {
            sqlx::query("delete from stock_reservations where org_id = $1 and reservation_id = $2")
                .bind(org_id)
                .bind(reservation)
                .execute(&mut *conn)
                .await?;
            StockReservationEvent::ReservationReleased
        }
        (empty, false, Some(reserved_through)) => {
            write_rows(conn, org_id, reservation, &next, reserved_through).await?;
            let state = Reservation { owner: owner.clone(), reserved_through, lines: next };
            if empty {
                StockReservationEvent::StockReserved(state)
            } else {
                StockReservationEvent::ReservationAdjusted(state)
            }
        }
    };
    let released = matches!(event, StockReservationEvent::ReservationReleased);
    let version = stream_version(conn, org_id, reservation).await?;
    let stream = StreamRef {
        org_id,
        stream_type: StockReservationEvent::STREAM_TYPE,
        stream_id: reservation,
        expected_version: version,
    };
    let append = AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() };
    Ok(Decided { append: Some(append), warnings, released: released && !current.is_empty() })
}

/// [`set`] for a [`ReservationChange`]: nothing for `Keep`. What a document still wants reserved through
/// a day before `today` has ended (the sweeper records its expiry): it is set as none, so an order
/// billed, delivered or edited after its date is neither held again nor recorded through a past date.
pub async fn change(
    conn: &mut PgConnection,
    org_id: Uuid,
    owner: &ReservationOwner,
    change: &ReservationChange,
    today: Date,
    policy: NegativeStock,
    metadata: &Metadata,
) -> Result<Decided, ExecuteError> {
    match change {
        ReservationChange::Keep => Ok(Decided::default()),
        ReservationChange::Set(wanted) => {
            let wanted = wanted.as_ref().filter(|w| w.reserved_through >= today);
            set(conn, org_id, owner, wanted, today, policy, metadata).await
        }
    }
}

/// Moves what `from` holds to `to`, which then holds `wanted`, in the caller's transaction: `from`'s
/// reservation is released and `to`'s taken with the levels locked, so the units `from` held count as
/// available to `to` and to nobody else (another transaction still sees them held until this one
/// commits). Returns both changes to append.
#[allow(clippy::too_many_arguments, reason = "the two owners beside `set`'s own arguments")]
pub async fn transfer(
    conn: &mut PgConnection,
    org_id: Uuid,
    from: &ReservationOwner,
    to: &ReservationOwner,
    wanted: Option<&Wanted>,
    today: Date,
    policy: NegativeStock,
    metadata: &Metadata,
) -> Result<(Decided, Decided), ExecuteError> {
    if let Some(wanted) = wanted {
        // Lock the levels first: nothing else may read them between the release and the new hold.
        let keys = wanted.lines.iter().map(|(l, _)| (l.variant_id, l.warehouse_id));
        levels::lock(conn, org_id, keys, today).await?;
    }
    let released = set(conn, org_id, from, None, today, NegativeStock::Allow, metadata).await?;
    let taken = set(conn, org_id, to, wanted, today, policy, metadata).await?;
    Ok((released, taken))
}

/// Makes the reservation's rows exactly `lines`: rows no longer held go, the others are updated in place
/// where they changed and inserted where new. A reservation adjusted on every delivery would otherwise
/// leave a dead row per level and delivery, which every level's reserved sum then steps over.
async fn write_rows(
    conn: &mut PgConnection,
    org_id: Uuid,
    reservation: Uuid,
    lines: &[ReservedLine],
    through: Date,
) -> Result<(), sqlx::Error> {
    let variants: Vec<Uuid> = lines.iter().map(|l| l.variant_id).collect();
    let warehouses: Vec<Uuid> = lines.iter().map(|l| l.warehouse_id).collect();
    sqlx::query(
        "delete from stock_reservations r where r.org_id = $1 and r.reservation_id = $2
           and (r.variant_id, r.warehouse_id) not in (select * from unnest($3::uuid[], $4::uuid[]))",
    )
    .bind(org_id)
    .bind(reservation)
    .bind(&variants)
    .bind(&warehouses)
    .execute(&mut *conn)
    .await?;
    Unnest::new(lines)
        .constant("org_id", org_id)
        .constant("reservation_id", reservation)
        .column("variant_id", |l| l.variant_id)
        .column("warehouse_id", |l| l.warehouse_id)
        .column("quantity", |l| l.quantity.thousandths())
        .constant("reserved_through", through)
        .execute(
            conn,
            "insert into stock_reservations as r",
            "on conflict (org_id, reservation_id, variant_id, warehouse_id) do update
                 set quantity = excluded.quantity, reserved_through = excluded.reserved_through
                 where (r.quantity, r.reserved_through) is distinct from (excluded.quantity, excluded.reserved_through)",
        )
        .await?;
    Ok(())
}

/// The active reservation `owner` holds (none when released, expired or never taken), as stored.
pub async fn active(
    conn: &mut PgConnection,
    org_id: Uuid,
    owner_id: Uuid,
    today: Date,
) -> Result<Option<(Date, Vec<ReservedLine>)>, sqlx::Error> {
    let (rows, through) = current_rows(conn, org_id, reservation_id(owner_id)).await?;
    Ok(through.filter(|d| *d >= today).map(|through| {
        let lines = rows
            .into_iter()
            .map(|((variant_id, warehouse_id), quantity)| ReservedLine { variant_id, warehouse_id, quantity })
            .collect();
        (through, lines)
    }))
}

/// Records the expiry of reservations whose date has passed (`reserved_through` before `today`, the
/// organization's date): one `ReservationExpired` per reservation and its rows removed, up to `limit`
/// reservations in one transaction (rows another sweeper holds are skipped). Returns how many expired.
pub async fn expire_due(pool: &PgPool, today: Date, limit: i64) -> Result<usize, ExecuteError> {
    let mut tx = pool.begin().await?;
    let due: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "select distinct org_id, reservation_id from (
             select org_id, reservation_id from stock_reservations where reserved_through < $1
             order by reserved_through for update skip locked limit $2) due",
    )
    .bind(today)
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    let mut requests = Vec::with_capacity(due.len());
    for (org_id, reservation) in &due {
        let (_, through) = current_rows(&mut tx, *org_id, *reservation).await?;
        // A command may have moved the reservation's date forward since it was selected.
        if through.is_none_or(|d| d >= today) {
            continue;
        }
        sqlx::query("delete from stock_reservations where org_id = $1 and reservation_id = $2")
            .bind(org_id)
            .bind(reservation)
            .execute(&mut *tx)
            .await?;
        let version = stream_version(&mut tx, *org_id, *reservation).await?;
        let stream = StreamRef {
            org_id: *org_id,
            stream_type: StockReservationEvent::STREAM_TYPE,
            stream_id: *reservation,
            expected_version: version,
        };
        let event = StockReservationEvent::ReservationExpired.to_new_event()?;
        requests.push(AppendRequest { stream, events: vec![event], metadata: Metadata::system("reservation_sweeper") });
    }
    let expired = requests.len();
    crate::engine::append_together(&mut tx, &requests, Uuid::nil()).await?;
    tx.commit().await?;
    Ok(expired)
}

/// How often each command worker process records the expiry of reservations whose date has passed.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
/// Reservations expired per transaction.
const SWEEP_BATCH: i64 = 500;

/// The reservations' background job: [`sweep_forever`].
pub const SWEEP_RESERVATIONS: crate::handler::Job =
    crate::handler::Job { name: "reservation_expiry", run: |pool, _| Box::pin(sweep_forever(pool)) };

/// Records expiries every [`SWEEP_EVERY`], for ever (the first time shortly after start). Availability
/// ignores a past reservation at once; this only turns its end into events and removes its rows.
pub async fn sweep_forever(pool: PgPool) {
    let mut interval = tokio::time::interval(SWEEP_EVERY);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc());
        loop {
            match expire_due(&pool, today, SWEEP_BATCH).await {
                Ok(expired) if (expired as i64) < SWEEP_BATCH => {
                    if expired > 0 {
                        tracing::info!(expired, "reservations past their date recorded as expired");
                    }
                    break;
                }
                Ok(expired) => tracing::info!(expired, "reservations past their date recorded as expired"),
                Err(error) => {
                    tracing::warn!(%error, "could not record expired reservations");
                    break;
                }
            }
        }
    }
}
