//! Funds transfers as reads show them, with their accounting effects, and their body.

use super::locations::BalanceType;
use crate::http::ar_time;
use crate::http::error::ApiError;
use crate::http::resource::decode_state;
use crate::http::schema::Int;
use events::catalogue::{FundsTransfer, LocationKind, LocationRef};
use poem_openapi::Object;
use projections::treasury::TransferRow;
use serde::{Deserialize, Serialize};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A transfer's endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct EndpointData {
    pub balance_type: BalanceType,
    pub balance_id: Uuid,
}

impl From<LocationRef> for EndpointData {
    fn from(at: LocationRef) -> Self {
        Self { balance_type: at.kind.into(), balance_id: at.id }
    }
}

/// One side of a transfer in the ledger: the source's first (negative), then the destination's.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct AccountingEffectData {
    /// The movement's id in the movements list.
    pub treasury_movement_id: Uuid,
    pub balance_type: BalanceType,
    pub balance_id: Uuid,
    /// Integer cents ARS: negative at the source, positive at the destination; the two sum to zero.
    pub amount: i64,
}

/// Money moved between two peso locations. A transfer has no status and is never updated, cancelled
/// or deleted.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct FundsTransferData {
    /// Always `funds_transfer`.
    pub object: String,
    pub id: Uuid,
    pub source: EndpointData,
    pub destination: EndpointData,
    /// Integer cents ARS.
    pub amount: i64,
    /// The business date (Argentine calendar).
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Detail and creation only: the two effects, source first.
    pub accounting_effects: Option<Vec<AccountingEffectData>>,
    /// Creation only: true when this is the stored outcome of an earlier request with the same key and
    /// body.
    pub idempotent_replay: Option<bool>,
}

pub fn effects(transfer: &FundsTransfer) -> Vec<AccountingEffectData> {
    transfer
        .entry
        .lines
        .iter()
        .filter_map(|line| {
            let side = line.location?;
            Some(AccountingEffectData {
                treasury_movement_id: side.movement_id,
                balance_type: side.location.kind.into(),
                balance_id: side.location.id,
                amount: line.functional.into(),
            })
        })
        .collect()
}

pub fn transfer_data(
    id: Uuid,
    transfer: &FundsTransfer,
    created_at: OffsetDateTime,
    detail: bool,
) -> FundsTransferData {
    FundsTransferData {
        object: "funds_transfer".into(),
        id,
        source: transfer.source.into(),
        destination: transfer.destination.into(),
        amount: transfer.amount.into(),
        occurred_on: transfer.occurred_on,
        created_at: ar_time(created_at),
        accounting_effects: detail.then(|| effects(transfer)),
        idempotent_replay: None,
    }
}

pub fn transfer_row(row: &TransferRow, detail: bool) -> Result<FundsTransferData, ApiError> {
    let doc: TransferDoc = decode_state(row.doc.clone(), "funds_transfer")?;
    Ok(FundsTransferData {
        object: "funds_transfer".into(),
        id: row.id,
        source: doc.source.into(),
        destination: doc.destination.into(),
        amount: doc.amount,
        occurred_on: row.occurred_on,
        created_at: ar_time(row.created_at),
        accounting_effects: detail.then(|| {
            doc.accounting_effects
                .iter()
                .map(|e| AccountingEffectData {
                    treasury_movement_id: e.treasury_movement_id,
                    balance_type: e.balance_type.into(),
                    balance_id: e.balance_id,
                    amount: e.amount,
                })
                .collect()
        }),
        idempotent_replay: None,
    })
}

/// A transfer as its read model stores it.
#[derive(Debug, Deserialize)]
pub struct TransferDoc {
    source: LocationRef,
    destination: LocationRef,
    amount: i64,
    accounting_effects: Vec<EffectDoc>,
}

#[derive(Debug, Deserialize)]
pub struct EffectDoc {
    treasury_movement_id: Uuid,
    balance_type: LocationKind,
    balance_id: Uuid,
    amount: i64,
}

/// A transfer's endpoint as sent.
#[derive(Debug, Object)]
pub struct EndpointInput {
    pub balance_type: BalanceType,
    /// A location of the organization the credential sees.
    pub balance_id: Uuid,
}

/// A funds transfer. `currency` must not be sent (a transfer is in pesos); unknown fields are refused.
#[derive(Debug, Object)]
pub struct FundsTransferInput {
    pub source: EndpointInput,
    /// Another location than the source.
    pub destination: EndpointInput,
    /// Integer cents ARS, at least 1.
    pub amount: Int<1, 1_000_000_000_000>,
    /// The business date, `YYYY-MM-DD` (Argentine calendar), not after today.
    pub occurred_on: Date,
}

#[derive(Debug, Serialize, Object)]
pub struct FundsTransferEnvelope {
    pub request_id: String,
    pub data: FundsTransferData,
}
