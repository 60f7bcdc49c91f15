//! Movements as reads show them (one ledger line of a location, with a manual movement's own fields),
//! and manual movements' bodies.

use super::locations::BalanceType;
use super::locations::LocationCurrency;
use crate::http::ar_time;
use crate::http::presence::{Nullable, Optional};
use crate::http::schema::{Blank, ExchangeRateIn, Int};
use poem_openapi::{Enum, Object};
use projections::treasury::{ManualDoc, MovementRow};
use serde::{Deserialize, Serialize};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The rate a functional amount came from.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct RateData {
    /// Pesos per unit, exact decimal text (`"1"` for pesos).
    pub value: String,
    #[serde(with = "events::catalogue::iso_date")]
    pub rate_date: Date,
    /// `functional_currency` (a peso amount, one to one), `manual` or `central_bank`.
    pub source: String,
}

/// A movement: one ledger line of a location, as it stands.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct MovementData {
    /// Always `treasury_movement`.
    pub object: String,
    /// The ledger line, while the movement exists: use it to reconcile a local copy.
    pub id: Uuid,
    /// The movement (a transfer's effect: the id its `accounting_effects` name).
    pub treasury_movement_id: Uuid,
    pub balance_type: BalanceType,
    pub balance_id: Uuid,
    pub currency: LocationCurrency,
    /// `transfer_out` or `transfer_in` (a funds transfer's effects at its source and destination).
    pub movement_type: String,
    /// Integer minor units in `currency` (null when unknown).
    pub native_amount: Nullable<i64>,
    /// Integer cents ARS: positive increases the balance, negative reduces it.
    pub functional_amount: i64,
    /// `rate`, `carrying_value` or `legacy_unknown`.
    pub functional_amount_origin: String,
    /// Present when the origin is `rate`.
    pub rate: Nullable<RateData>,
    /// The operating date.
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    /// The transfer it belongs to (null otherwise).
    pub funds_transfer_id: Nullable<Uuid>,
    /// When it was persisted.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Manual movements: `income` or `expense`.
    pub direction: Option<String>,
    /// Manual movements: the amount as sent (integer minor units in `currency`).
    pub amount: Option<i64>,
    /// Manual movements: the counterpart account when there are no `lines`.
    pub account_id: Option<Nullable<Uuid>>,
    pub note: Option<Nullable<String>>,
    pub contact_id: Option<Nullable<Uuid>>,
    /// Manual movements without `lines`: the cost centers of the single counterpart.
    pub cost_center1_id: Option<Nullable<Uuid>>,
    pub cost_center2_id: Option<Nullable<Uuid>>,
    pub cost_center3_id: Option<Nullable<Uuid>>,
    /// Manual movements: the itemized counterparts (empty when one `account_id` was sent).
    pub lines: Option<Vec<CounterLineData>>,
    pub distributions: Option<Vec<DistributionData>>,
    /// Manual movements: pesos per dollar of a dollar movement (null on peso locations).
    pub exchange_rate: Option<Nullable<String>>,
    /// `manual` or `central_bank` (null on peso locations).
    pub exchange_rate_source: Option<Nullable<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::http::presence::optional_date_nullable")]
    pub exchange_rate_date: Option<Nullable<Date>>,
    /// Integer cents ARS: positive a gain, negative a loss, zero none (always zero on peso locations);
    /// null for old entries without a counterpart rate.
    pub exchange_difference_amount: Option<Nullable<i64>>,
    /// Manual movements: send it back in a `PUT` or `DELETE` body.
    #[serde(skip_serializing_if = "Option::is_none", with = "optional_rfc3339")]
    pub updated_at: Option<OffsetDateTime>,
}

pub mod optional_rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(at: &Option<OffsetDateTime>, serializer: S) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => time::serde::rfc3339::serialize(at, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<OffsetDateTime>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| {
                OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339)
                    .map_err(serde::de::Error::custom)
            })
            .transpose()
    }
}

/// A counterpart line of a manual movement.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct CounterLineData {
    pub account_id: Uuid,
    /// Integer minor units in the movement's currency.
    pub amount: i64,
    pub cost_center1_id: Nullable<Uuid>,
    pub cost_center2_id: Nullable<Uuid>,
    pub cost_center3_id: Nullable<Uuid>,
}

/// A share of a manual movement assigned to a cost center.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct DistributionData {
    pub cost_center1_id: Uuid,
    /// Integer minor units in the account's currency.
    pub amount_cents: i64,
}

/// A manual movement's own fields on its row (`manual`: what the movement says; `None`: a transfer's
/// effect, which has none of them).
pub fn with_manual(mut data: MovementData, manual: Option<&ManualDoc>, dollars: bool) -> MovementData {
    let Some(m) = manual else { return data };
    let single = (!m.itemized).then(|| m.counterparts.first()).flatten();
    data.direction = Some(m.direction.as_str().to_owned());
    data.amount = Some(m.amount.into());
    data.account_id = Some(single.map(|c| c.account_id).into());
    data.note = Some(m.note.clone().into());
    data.contact_id = Some(m.contact_id.into());
    data.cost_center1_id = Some(single.and_then(|c| c.cost_center1_id).into());
    data.cost_center2_id = Some(single.and_then(|c| c.cost_center2_id).into());
    data.cost_center3_id = Some(single.and_then(|c| c.cost_center3_id).into());
    data.lines = Some(if m.itemized {
        m.counterparts
            .iter()
            .map(|c| CounterLineData {
                account_id: c.account_id,
                amount: c.amount.into(),
                cost_center1_id: c.cost_center1_id.into(),
                cost_center2_id: c.cost_center2_id.into(),
                cost_center3_id: c.cost_center3_id.into(),
            })
            .collect()
    } else {
        Vec::new()
    });
    data.distributions = Some(
        m.distributions
            .iter()
            .map(|d| DistributionData { cost_center1_id: d.cost_center1_id, amount_cents: d.amount_cents.into() })
            .collect(),
    );
    data.exchange_rate = Some(m.rate.map(|r| r.value.to_string()).into());
    data.exchange_rate_source = Some(m.rate.map(|r| r.source.as_str().to_owned()).into());
    data.exchange_rate_date = Some(m.rate.map(|r| r.rate_date).into());
    data.exchange_difference_amount =
        Some(if dollars { m.exchange_difference.map(i64::from).into() } else { Nullable(Some(0)) });
    data.updated_at = Some(ar_time(m.updated_at));
    data
}

pub fn movement(row: &MovementRow) -> MovementData {
    let m = &row.movement;
    let data = MovementData {
        object: "treasury_movement".into(),
        id: m.id,
        treasury_movement_id: m.treasury_movement_id,
        balance_type: m.balance_type.into(),
        balance_id: m.balance_id,
        currency: m.currency.into(),
        movement_type: m.movement_type.clone(),
        native_amount: m.native_amount.map(i64::from).into(),
        functional_amount: m.functional_amount.into(),
        functional_amount_origin: m.functional_amount_origin.clone(),
        rate: m
            .rate
            .as_ref()
            .map(|r| RateData { value: r.value.clone(), rate_date: r.rate_date, source: r.source.clone() })
            .into(),
        occurred_on: m.occurred_on,
        funds_transfer_id: m.funds_transfer_id.into(),
        created_at: ar_time(row.created_at),
        direction: None,
        amount: None,
        account_id: None,
        note: None,
        contact_id: None,
        cost_center1_id: None,
        cost_center2_id: None,
        cost_center3_id: None,
        lines: None,
        distributions: None,
        exchange_rate: None,
        exchange_rate_source: None,
        exchange_rate_date: None,
        exchange_difference_amount: None,
        updated_at: None,
    };
    with_manual(data, m.manual.as_ref(), m.currency == events::catalogue::Currency::Dol)
}

#[derive(Debug, Serialize, Object)]
pub struct MovementEnvelope {
    pub request_id: String,
    pub data: MovementData,
}

/// A counterpart line as sent.
#[derive(Debug, Object)]
pub struct CounterLineInput {
    /// An active ledger account of the organization.
    pub account_id: Uuid,
    /// Integer minor units in the location's currency, at least 1.
    pub amount: Int<1, 1_000_000_000_000>,
    pub cost_center1_id: Optional<Uuid>,
    pub cost_center2_id: Optional<Uuid>,
    pub cost_center3_id: Optional<Uuid>,
}

/// A distribution as sent.
#[derive(Debug, Object)]
pub struct DistributionInput {
    /// An active cost center of the organization.
    pub cost_center1_id: Uuid,
    /// Integer minor units in the location's currency, at least 1.
    pub amount_cents: Int<1, 1_000_000_000_000>,
}

/// `income` or `expense`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum DirectionInput {
    Income,
    Expense,
}

/// A manual movement: one counterpart `account_id` (cost centers at the root) or `lines` (cost centers
/// on each line), not both. A counterpart account that backs a register, safe or bank account is 422
/// `LOCATION_ACCOUNT`: money between locations is a funds transfer. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct MovementInput {
    pub balance_type: BalanceType,
    /// A location of the organization the credential sees.
    pub balance_id: Uuid,
    pub direction: DirectionInput,
    /// Integer minor units in the location's currency, at least 1.
    pub amount: Int<1, 1_000_000_000_000>,
    /// The operating date, `YYYY-MM-DD`, not after today (UTC-3).
    pub occurred_on: Date,
    pub account_id: Optional<Uuid>,
    #[oai(validator(min_items = 1, max_items = 100))]
    pub lines: Optional<Vec<CounterLineInput>>,
    pub cost_center1_id: Optional<Uuid>,
    pub cost_center2_id: Optional<Uuid>,
    pub cost_center3_id: Optional<Uuid>,
    #[oai(validator(max_items = 100))]
    pub distributions: Optional<Vec<DistributionInput>>,
    pub note: Optional<Blank<2000>>,
    /// A customer or supplier of the organization; null clears it on a replacement, omitted keeps it.
    pub contact_id: Optional<Nullable<Uuid>>,
    /// Dollar locations only (400 on a peso location): pesos per dollar the counterparts are converted
    /// at, recorded as `manual`. Omitted or null: the central bank's rate of `occurred_on` (or the latest
    /// earlier one loaded; none at all is 422 `EXCHANGE_RATE_NOT_FOUND`).
    pub exchange_rate: Optional<Nullable<ExchangeRateIn>>,
}

/// A manual movement's replacement: the whole movement and the `updated_at` of the detail read.
#[derive(Debug, Object)]
pub struct MovementReplacement {
    pub balance_type: BalanceType,
    pub balance_id: Uuid,
    pub direction: DirectionInput,
    pub amount: Int<1, 1_000_000_000_000>,
    pub occurred_on: Date,
    pub account_id: Optional<Uuid>,
    #[oai(validator(min_items = 1, max_items = 100))]
    pub lines: Optional<Vec<CounterLineInput>>,
    pub cost_center1_id: Optional<Uuid>,
    pub cost_center2_id: Optional<Uuid>,
    pub cost_center3_id: Optional<Uuid>,
    #[oai(validator(max_items = 100))]
    pub distributions: Optional<Vec<DistributionInput>>,
    pub note: Optional<Blank<2000>>,
    pub contact_id: Optional<Nullable<Uuid>>,
    /// Dollar locations only (400 on a peso location). With the same amount, date, location and
    /// direction, omitted keeps the stored rate (an income also keeps it when the same rate is sent);
    /// null takes the central bank's rate of the date; on an expense that changes any of those four,
    /// omitted takes the central bank's rate again. Any other rate sent is recorded as `manual`.
    pub exchange_rate: Optional<Nullable<ExchangeRateIn>>,
    /// The `updated_at` of the detail read (RFC 3339).
    pub updated_at: OffsetDateTime,
}

/// A manual movement's deletion: the `updated_at` of the detail read, and nothing else.
#[derive(Debug, Object)]
pub struct MovementDeletion {
    pub updated_at: OffsetDateTime,
}

/// What deleting a movement did.
#[derive(Debug, Serialize, Object)]
pub struct MovementDeletedData {
    /// Always `treasury_movement`.
    pub object: String,
    pub id: Uuid,
    /// Always true.
    pub deleted: bool,
}

#[derive(Debug, Serialize, Object)]
pub struct MovementDeletedEnvelope {
    pub request_id: String,
    pub data: MovementDeletedData,
}
