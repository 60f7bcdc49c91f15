//! New sales waiting on one series are authorized together: one `FECAESolicitar` carries every voucher
//! queued for the series (up to the authority's `RegXReq`), so a series is no longer bound to one
//! authority round trip per sale.
//!
//! Per series (organization, point of sale, voucher type) this process keeps a queue and a turn. A
//! sale queues its voucher and waits for either its verdict or the turn; whoever gets the turn with
//! vouchers still queued leads the next batch: on its own sale's transaction it locks the series (the
//! `document_numbers` row, so batches of several processes and the retry worker take turns), numbers
//! the queued vouchers consecutively from the last the authority approved to us, asks for them in one
//! request and hands each sale its verdict. Its own voucher is always in the batch it leads: the lock
//! stays with its transaction until that commits, so a leader left waiting for a later batch would
//! wait on that batch's leader, who waits on the lock. Each sale records only its own voucher, in its
//! own transaction, once its verdict came.
//!
//! Numbers follow dates: the authority refuses a voucher dated before the last of its series (10016,
//! as for a number that is not next), so a batch takes the earliest-dated vouchers queued and numbers
//! them in date order (the queue's order among those of one date). Numbered in the queue's order, a
//! sale dated yesterday that queued after one dated today was refused in every round and deferred, and
//! its retry then refused for good.
//!
//! Exactly once, as for one voucher: a lost reply leaves each voucher of the batch `deferred` with its
//! number unconfirmed, and the retry worker consults each number before asking again; a batch whose
//! first number proves not to be the next (10016) approved nothing and is numbered again from the
//! authority's last; vouchers after one rejected in the middle are asked again in the next round. A
//! voucher whose sale ran out of time before its batch began is deferred without being asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use events::catalogue::SaleRecorded;
use sqlx::PgConnection;
use tokio::sync::oneshot;
use tokio::time::Instant;
use uuid::Uuid;

use super::invoicing::{self, Outcome};
use crate::aggregate::Rejection;
use crate::engine::ExecuteError;
use crate::fiscal::{AUTHORITY_BUDGET, AssociatedVoucher, FiscalClient, FiscalError, Issuer, VoucherRequest};

/// The most numbering rounds one batch takes before deferring what is left.
const ROUNDS: usize = 3;
/// A voucher with less of its command's time left than this is deferred without being asked.
const LEAST_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// A voucher waiting for its batch.
struct Waiting {
    voucher: VoucherRequest,
    deadline: Instant,
    reply: oneshot::Sender<Result<Outcome, Rejection>>,
    /// The number it was last asked for, once its batch was sent.
    asked: Arc<Mutex<Option<i64>>>,
}

/// One series' queue and turn in this process.
#[derive(Default)]
struct Series {
    waiting: Mutex<Vec<Waiting>>,
    turn: tokio::sync::Mutex<()>,
    /// `RegXReq`, once asked.
    limit: tokio::sync::OnceCell<usize>,
}

type Key = (Uuid, Uuid, i32);

fn series(key: Key) -> Arc<Series> {
    static SERIES: OnceLock<Mutex<HashMap<Key, Arc<Series>>>> = OnceLock::new();
    let all = SERIES.get_or_init(Default::default);
    all.lock().unwrap_or_else(PoisonError::into_inner).entry(key).or_default().clone()
}

/// Authorizes a new `sale`'s voucher in the next batch of its series; `conn` is the sale's own
/// transaction, which locks the series if this sale leads the batch.
pub async fn authorize(
    conn: &mut PgConnection,
    org_id: Uuid,
    issuer: Issuer,
    sale: &SaleRecorded,
    associated: Option<AssociatedVoucher>,
) -> Result<Outcome, ExecuteError> {
    let client = match invoicing::authority() {
        Ok(client) => client,
        Err(deferred) => return Ok(deferred),
    };
    let queue = series((org_id, sale.point_of_sale_id, sale.voucher_type));
    let (reply, mut answer) = oneshot::channel();
    let asked = Arc::new(Mutex::new(None));
    let voucher = invoicing::voucher_request(sale, 0, associated)?;
    let deadline = Instant::now() + AUTHORITY_BUDGET;
    queue.waiting.lock().unwrap_or_else(PoisonError::into_inner).push(Waiting {
        voucher,
        deadline,
        reply,
        asked: asked.clone(),
    });
    loop {
        tokio::select! {
            biased;
            answered = &mut answer => return settled(answered.ok(), &asked),
            turn = queue.turn.lock() => {
                if let Some(settled) = arrived(&mut answer, &asked) {
                    return settled;
                }
                let limit = *queue
                    .limit
                    .get_or_try_init(|| async {
                        client.batch_limit(issuer).await.map(|limit| usize::try_from(limit).unwrap_or(1).max(1))
                    })
                    .await
                    .unwrap_or(&1);
                let batch = take_batch(&mut queue.waiting.lock().unwrap_or_else(PoisonError::into_inner), &asked, limit);
                lead(conn, org_id, issuer, &client, sale, batch).await?;
                drop(turn);
                // The leader's own voucher rode in its batch, so its verdict has come.
                if let Some(settled) = arrived(&mut answer, &asked) {
                    return settled;
                }
            }
        }
    }
}

/// The next batch, in date order, which [`lead`] numbers it in: the `limit` earliest-dated queued
/// vouchers (in queue order among those of one date), the leader's own (`own`) always among them. The
/// leader locks the series on its own transaction, held until that commits; a leader whose voucher
/// waited for a later batch would wait on that batch's leader, who waits on its lock. So when its own
/// is not among the earliest (more than `limit` wait), it takes the place of the latest of them, which
/// waits first in line; should that one be dated before the leader's, the authority refuses it in the
/// next batch (10016), as it refuses any voucher dated before its series' last.
fn take_batch(waiting: &mut Vec<Waiting>, own: &Arc<Mutex<Option<i64>>>, limit: usize) -> Vec<Waiting> {
    // A stable sort: vouchers of one date keep the queue's order.
    waiting.sort_by_key(|w| w.voucher.date);
    let take = waiting.len().min(limit);
    let mut batch: Vec<Waiting> = waiting.drain(..take).collect();
    if !batch.iter().any(|w| Arc::ptr_eq(&w.asked, own))
        && let Some(at) = waiting.iter().position(|w| Arc::ptr_eq(&w.asked, own))
    {
        // Dated no earlier than any in the batch, so it goes last and the batch stays in date order.
        let mine = waiting.remove(at);
        if let Some(latest) = batch.pop() {
            waiting.insert(0, latest);
        }
        batch.push(mine);
    }
    batch
}

/// What [`settled`] makes of the sale's answer if it has come or its leader stopped; none while it is
/// still to come.
fn arrived(
    answer: &mut oneshot::Receiver<Result<Outcome, Rejection>>,
    asked: &Mutex<Option<i64>>,
) -> Option<Result<Outcome, ExecuteError>> {
    match answer.try_recv() {
        Ok(answered) => Some(settled(Some(answered), asked)),
        Err(oneshot::error::TryRecvError::Closed) => Some(settled(None, asked)),
        Err(oneshot::error::TryRecvError::Empty) => None,
    }
}

/// A sale's verdict, or, when its batch's leader stopped before answering, deferral with the number
/// it may have been asked for.
fn settled(answered: Option<Result<Outcome, Rejection>>, asked: &Mutex<Option<i64>>) -> Result<Outcome, ExecuteError> {
    match answered {
        Some(verdict) => Ok(verdict?),
        None => Ok(Outcome::Deferred {
            unconfirmed: *asked.lock().unwrap_or_else(PoisonError::into_inner),
            reason: "the batch carrying this voucher was interrupted".into(),
        }),
    }
}

/// Runs one batch on the leader's transaction: every member is answered, whatever happens.
async fn lead(
    conn: &mut PgConnection,
    org_id: Uuid,
    issuer: Issuer,
    client: &FiscalClient,
    sale: &SaleRecorded,
    batch: Vec<Waiting>,
) -> Result<(), ExecuteError> {
    let now = Instant::now();
    let (mut pending, late): (Vec<Waiting>, Vec<Waiting>) =
        batch.into_iter().partition(|w| w.deadline > now + LEAST_TIME);
    for waiting in late {
        let reason = "the command's time for the authority ran out waiting for its series".to_owned();
        let _ = waiting.reply.send(Ok(Outcome::Deferred { unconfirmed: None, reason }));
    }
    if pending.is_empty() {
        return Ok(());
    }
    let deadline = pending.iter().map(|w| w.deadline).min().unwrap_or(now);
    let known = match invoicing::lock_series(conn, org_id, sale).await {
        Ok(known) => known,
        Err(error) => {
            for waiting in pending {
                let reason = format!("the series could not be locked: {error}");
                let _ = waiting.reply.send(Ok(Outcome::Deferred { unconfirmed: None, reason }));
            }
            return Err(error.into());
        }
    };
    let mut last = (known > 0).then_some(known);
    for _ in 0..ROUNDS {
        if pending.is_empty() {
            break;
        }
        // Numbered from the authority's own last: a first voucher refused as not next is refused for
        // its date, finally.
        let fresh = last.is_none();
        let base = match last {
            Some(last) => last,
            None => {
                let asked = client.last_authorized(issuer, sale.point_of_sale_number, sale.voucher_type);
                let lookup = || FiscalError::Unavailable("the command's time for the authority ran out".into());
                match invoicing::within(deadline, asked, lookup).await {
                    Ok(last) => last,
                    Err(error) => {
                        for waiting in pending {
                            let _ = waiting.reply.send(invoicing::deferral(error.clone(), None, None));
                        }
                        return Ok(());
                    }
                }
            }
        };
        // Consecutive numbers in the batch's order, which is by date: a date never goes back as the
        // number goes up.
        let vouchers: Vec<VoucherRequest> = pending
            .iter()
            .zip(1..)
            .map(|(waiting, offset)| VoucherRequest { number: base + offset, ..waiting.voucher.clone() })
            .collect();
        for (waiting, voucher) in pending.iter().zip(&vouchers) {
            *waiting.asked.lock().unwrap_or_else(PoisonError::into_inner) = Some(voucher.number);
        }
        let lost = || FiscalError::NoReply("the command's time for the authority ran out".into());
        let verdicts = match tokio::time::timeout_at(deadline, client.authorize_batch(issuer, &vouchers)).await {
            Ok(verdicts) => verdicts,
            Err(_) => vouchers.iter().map(|_| Err(lost())).collect(),
        };
        let first_not_next = verdicts.first().is_some_and(|v| v.as_ref().is_err_and(invoicing::not_next));
        let mut approved = None;
        let mut again = Vec::new();
        for (index, ((waiting, voucher), verdict)) in pending.into_iter().zip(&vouchers).zip(verdicts).enumerate() {
            match verdict {
                Ok(auth) => {
                    approved = Some(auth.number);
                    let _ = waiting.reply.send(Ok(Outcome::Issued(auth.into())));
                }
                // Not the next number: nothing was approved for it; it is numbered again.
                Err(error) if invoicing::not_next(&error) && error.codes() == [10016] && !(fresh && index == 0) => {
                    again.push(waiting)
                }
                Err(error) => {
                    let _ = waiting.reply.send(invoicing::deferral(error, Some(voucher.number), None));
                }
            }
        }
        if let Some(number) = approved {
            invoicing::approved(conn, org_id, sale, number).await?;
            last = Some(number);
        } else if first_not_next {
            // The number remembered was not the authority's last: ask it.
            last = None;
        }
        pending = again;
    }
    for waiting in pending {
        let reason = "the series' numbering did not settle in this batch".to_owned();
        let _ = waiting.reply.send(Ok(Outcome::Deferred { unconfirmed: None, reason }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting() -> Waiting {
        let voucher = crate::fiscal::voucher::tests::invoice();
        let (reply, _) = oneshot::channel();
        Waiting { voucher, deadline: Instant::now(), reply, asked: Arc::new(Mutex::new(None)) }
    }

    #[test]
    fn the_leader_always_carries_its_own_voucher_even_past_the_limit() {
        let queued = || (0..3).map(|_| waiting()).collect::<Vec<_>>();
        let ids = |batch: &[Waiting]| batch.iter().map(|w| Arc::as_ptr(&w.asked)).collect::<Vec<_>>();
        // Queued third, with room for one: the leader's voucher goes, the two before it wait.
        let mut queue = queued();
        let (first, second, own) = (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone());
        let batch = take_batch(&mut queue, &own, 1);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&own)]);
        assert_eq!(ids(&queue), vec![Arc::as_ptr(&first), Arc::as_ptr(&second)]);
        // With room for two: the first queued, then the leader's.
        let mut queue = queued();
        let (first, second, own) = (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone());
        let batch = take_batch(&mut queue, &own, 2);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&first), Arc::as_ptr(&own)]);
        assert_eq!(ids(&queue), vec![Arc::as_ptr(&second)]);
        // Within the limit, the queue's order stands.
        let mut queue = queued();
        let (first, own, third) = (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone());
        let batch = take_batch(&mut queue, &own, 2);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&first), Arc::as_ptr(&own)]);
        assert_eq!(ids(&queue), vec![Arc::as_ptr(&third)]);
    }

    #[test]
    fn a_batch_takes_the_earliest_dated_vouchers_and_numbers_them_in_date_order() {
        let dated = |days: i64| {
            let mut queued = waiting();
            queued.voucher.date = queued.voucher.date.saturating_add(time::Duration::days(days));
            queued
        };
        let ids = |batch: &[Waiting]| batch.iter().map(|w| Arc::as_ptr(&w.asked)).collect::<Vec<_>>();
        let dates = |batch: &[Waiting]| batch.iter().map(|w| w.voucher.date).collect::<Vec<_>>();
        // Queued later-dated first, as sales sent a day apart arrive: the batch is in date order, those
        // of one date in the queue's.
        let mut queue = vec![dated(2), dated(0), dated(1), dated(0)];
        let (late, early, middle, own) =
            (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone(), queue[3].asked.clone());
        let batch = take_batch(&mut queue, &own, 4);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&early), Arc::as_ptr(&own), Arc::as_ptr(&middle), Arc::as_ptr(&late)]);
        assert!(dates(&batch).is_sorted(), "{:?}", dates(&batch));
        assert!(queue.is_empty());

        // With room for two, the two earliest go and the later-dated wait: no later batch carries a
        // voucher dated before this one's.
        let mut queue = vec![dated(2), dated(0), dated(1), dated(0)];
        let (late, early, middle, own) =
            (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone(), queue[3].asked.clone());
        let batch = take_batch(&mut queue, &own, 2);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&early), Arc::as_ptr(&own)]);
        assert_eq!(ids(&queue), vec![Arc::as_ptr(&middle), Arc::as_ptr(&late)]);

        // The leader's own, dated last, still goes, last; the latest of the earliest waits first in line.
        let mut queue = vec![dated(2), dated(0), dated(1)];
        let (own, early, middle) = (queue[0].asked.clone(), queue[1].asked.clone(), queue[2].asked.clone());
        let batch = take_batch(&mut queue, &own, 2);
        assert_eq!(ids(&batch), vec![Arc::as_ptr(&early), Arc::as_ptr(&own)]);
        assert!(dates(&batch).is_sorted(), "{:?}", dates(&batch));
        assert_eq!(ids(&queue), vec![Arc::as_ptr(&middle)]);
    }
}
