//! What a report query may say: its documented schema (every enum and combination rule, from the
//! same lists the parser checks) and the parser the gateway and the CLI share.

use crate::http::presence::Optional;
use crate::http::schema::schema_only;
use commands::validate::FieldError;
use poem_openapi::Object;
use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use projections::reports::query::{AsOf, Group, Metric, Query, Report, SortKey};
use serde_json::{Value, json};
use std::borrow::Cow;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// Groups one query may have.
pub const MAX_GROUPS: usize = 4;
/// Keys one filter may name.
pub const MAX_FILTER_KEYS: usize = 100;
/// Groups a JSON page holds at most.
pub const MAX_LIMIT: i64 = 1_000;
/// The largest `as_of` position (10^15: exact as the document's floating-point maximum).
pub const MAX_POSITION: i64 = 1_000_000_000_000_000;

/// The names of `values` as JSON strings.
fn names<T: Copy>(values: &[T], name: fn(T) -> &'static str) -> Vec<Value> {
    values.iter().map(|v| Value::from(name(*v))).collect()
}

/// A report's name.
pub struct ReportName;
schema_only!(ReportName, MetaSchema { enum_items: names(&Report::ALL, Report::as_str), ..MetaSchema::new("string") });

/// A group's name.
pub struct GroupName;
schema_only!(GroupName, MetaSchema { enum_items: names(&Group::ALL, Group::as_str), ..MetaSchema::new("string") });

/// A metric's name.
pub struct MetricName;
schema_only!(MetricName, MetaSchema { enum_items: names(&Metric::ALL, Metric::as_str), ..MetaSchema::new("string") });

/// A group or metric of the query, `-` before it for descending.
pub struct SortField;
schema_only!(
    SortField,
    MetaSchema {
        pattern: Some(format!(
            "^-?(?:{})$",
            Group::ALL.iter().map(|g| g.as_str()).chain(Metric::ALL.iter().map(|m| m.as_str())).collect::<Vec<_>>().join("|")
        )),
        ..MetaSchema::new("string")
    }
);

/// A status facts count under.
pub struct StatusName;
schema_only!(
    StatusName,
    MetaSchema {
        enum_items: {
            let mut all: Vec<&str> = Report::ALL.iter().flat_map(|r| r.statuses().iter().copied()).collect();
            all.dedup();
            all.into_iter().map(Value::from).collect()
        },
        ..MetaSchema::new("string")
    }
);

/// An event-store position or an instant.
pub struct AsOfIn;
schema_only!(
    AsOfIn,
    MetaSchema {
        one_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema {
                format: Some("int64"),
                minimum: Some(0.0),
                maximum: Some(MAX_POSITION as f64),
                ..MetaSchema::new("integer")
            })),
            MetaSchemaRef::Inline(Box::new(MetaSchema { format: Some("date-time"), ..MetaSchema::new("string") })),
        ],
        ..MetaSchema::ANY
    }
);

/// What a report counts. Unknown fields are refused.
#[derive(Debug, Object)]
pub struct ReportFiltersInput {
    /// `YYYY-MM-DD`: the first business date counted (Argentine calendar). Not with `on_hand` or
    /// `value`, which are levels at the end of the range.
    pub date_from: Optional<time::Date>,
    /// `YYYY-MM-DD`: the last business date counted; not before `date_from`.
    pub date_to: Optional<time::Date>,
    /// Sales and payments: facts of these customers.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub customer: Optional<Vec<Uuid>>,
    /// Purchases and payments: facts of these suppliers.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub supplier: Optional<Vec<Uuid>>,
    /// Sales, purchases, inventory: lines of these products (variants).
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub product: Optional<Vec<Uuid>>,
    /// Sales, purchases, inventory: lines of products that were in these categories when recorded.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub category: Optional<Vec<Uuid>>,
    /// Sales, purchases, inventory: lines of products that carried any of these tags when recorded.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub tag: Optional<Vec<Uuid>>,
    /// Sales, purchases, inventory: lines of these warehouses.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub warehouse: Optional<Vec<Uuid>>,
    /// Sales: of these points of sale.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub point_of_sale: Optional<Vec<Uuid>>,
    /// Sales and purchases: of these voucher type codes.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub voucher_type: Optional<Vec<crate::http::schema::Int<1, 999>>>,
    /// Payments: lines of these payment methods.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub payment_method: Optional<Vec<Uuid>>,
    /// Payments: lines landing in (or leaving from) these bank accounts, registers or safes.
    #[oai(validator(min_items = 1, max_items = 100, unique_items))]
    pub location: Optional<Vec<Uuid>>,
    /// Sales, purchases, payments: `PES` or `DOL`.
    #[oai(validator(min_items = 1, max_items = 2, unique_items))]
    pub currency: Optional<Vec<CurrencyName>>,
    /// Payments: `customer` (received) or `supplier` (paid).
    #[oai(validator(min_items = 1, max_items = 2, unique_items))]
    pub side: Optional<Vec<SideName>>,
    /// Sales: the fiscal status the lines count under (`not_invoiced`, `issued`, `deferred`,
    /// `rejected`, `internal`); payments: `recorded` (the payments as recorded) or `voided` (the voids
    /// that took them back, negative). Not for purchases or inventory.
    #[oai(validator(min_items = 1, max_items = 5, unique_items))]
    pub status: Optional<Vec<StatusName>>,
}

/// A currency code.
pub struct CurrencyName;
schema_only!(CurrencyName, MetaSchema { enum_items: vec![json!("PES"), json!("DOL")], ..MetaSchema::new("string") });

/// A side of payments.
pub struct SideName;
schema_only!(SideName, MetaSchema { enum_items: vec![json!("customer"), json!("supplier")], ..MetaSchema::new("string") });

/// A grouped report query. Unknown fields are refused; the groups, metrics and filters that apply to
/// each report are stated in the schema (and an unsupported combination is 400 naming it).
#[derive(Debug, Object)]
pub struct ReportQueryInput {
    /// `sales`, `purchases`, `payments` or `inventory`.
    pub report: ReportName,
    /// Up to four groups, each once: periods of the business date (`day`, `week` as ISO `2026-W48`,
    /// `month` as `2026-11`, `year`) and dimensions. Sales: `customer`, `product`, `category`, `tag`,
    /// `warehouse`, `point_of_sale`, `voucher_type`, `currency`. Purchases: `supplier`, `product`,
    /// `category`, `tag`, `warehouse`, `voucher_type`, `currency`. Payments: `customer`, `supplier`,
    /// `payment_method`, `location`, `currency`, `side`. Inventory: `product`, `category`, `tag`,
    /// `warehouse`. A line counts under each tag its product carried (and under a null tag when none),
    /// so the groups of `tag` may add up to more than the totals. None: one group of everything.
    #[oai(validator(max_items = 4, unique_items))]
    pub group_by: Optional<Vec<GroupName>>,
    /// One or more metrics, each once. Sales: `count` (lines), `quantity`, `net`, `tax`, `total`,
    /// `cost` (each line's quantity times the unit cost it was sold with; nothing for a line sold
    /// without one), `margin` (`net` less `cost`); a sale's exempt and non-taxed amounts, on no line,
    /// count in its `net`, `total` and `margin` under no product, category, tag or warehouse. Purchases: `count`, `quantity`, `net`, `tax`, `total` (pesos). Payments: `count`
    /// (payment lines), `amount` (pesos), `fee`. Inventory: `count` (changes of stock), `quantity`
    /// (the net change within the range), `on_hand` and `value` (the level at the end of the range:
    /// not with a period group nor `date_from`; `value` is each change at the variant's cost when it
    /// moved). Credit notes and voids subtract. Amounts are integer cents; quantities exact decimal
    /// text.
    #[oai(validator(min_items = 1, max_items = 11, unique_items))]
    pub metrics: Vec<MetricName>,
    pub filters: Optional<ReportFiltersInput>,
    /// Groups and metrics of the query, `-` before one for descending; then the groups' keys
    /// ascending (nulls last). Default: the groups' keys ascending.
    #[oai(validator(max_items = 15, unique_items))]
    pub sort: Optional<Vec<SortField>>,
    /// Groups per page, 1 to 1000 (default 100). With `Accept: text/csv`, every group is sent unless
    /// the query sets a limit.
    pub limit: Optional<crate::http::schema::Int<1, 1000>>,
    /// The `next_cursor` of the previous page of the same query: it answers at the same position.
    pub cursor: Optional<String>,
    /// The history as it stood at an event-store position (an integer: every event at or below it) or
    /// at an instant (RFC 3339, not in the future: every event at or below the last position recorded
    /// by then). Default: everything folded so far. The answer names the position it reflects.
    pub as_of: Optional<AsOfIn>,
}

/// The combination rules: which groups, metrics and filters apply to each report, and the levels
/// (`on_hand`, `value`) that take no period and no `date_from`.
pub(super) fn combinations() -> Value {
    let shapes: Vec<Value> = Report::ALL
        .iter()
        .map(|report| {
            let groups = names(report.groups(), Group::as_str);
            let metrics = names(report.metrics(), Metric::as_str);
            let mut filters: Vec<Value> = report.groups().iter().filter(|g| !g.is_period()).map(|g| json!(g.as_str())).collect();
            filters.extend([json!("date_from"), json!("date_to")]);
            if !report.statuses().is_empty() {
                filters.push(json!("status"));
            }
            let sortable: Vec<&str> = report
                .groups()
                .iter()
                .map(|g| g.as_str())
                .chain(report.metrics().iter().map(|m| m.as_str()))
                .collect();
            // Filters that do not apply are refused (OpenAPI 3.0 has no `propertyNames`).
            let refused: Vec<Value> = FILTER_FIELDS
                .iter()
                .filter(|f| !filters.contains(&json!(f)))
                .map(|f| json!({ "not": { "required": [f] } }))
                .collect();
            let mut shape = json!({
                "properties": {
                    "report": { "enum": [report.as_str()] },
                    "group_by": { "items": { "enum": groups } },
                    "metrics": { "items": { "enum": metrics } },
                    "filters": { "allOf": refused },
                    "sort": { "items": { "pattern": format!("^-?(?:{})$", sortable.join("|")) } }
                }
            });
            if !report.statuses().is_empty() {
                shape["properties"]["filters"]["properties"] =
                    json!({ "status": { "items": { "enum": report.statuses() } } });
            }
            shape
        })
        .collect();
    // "Contains one of" written as "not every item is none of" (OpenAPI 3.0 has no `contains`).
    let contains = |names: Vec<Value>| json!({ "not": { "items": { "not": { "enum": names } } } });
    let periods = names(&[Group::Day, Group::Week, Group::Month, Group::Year], Group::as_str);
    let levels = names(&[Metric::OnHand, Metric::Value], Metric::as_str);
    json!({
        "anyOf": shapes,
        "not": { "anyOf": [
            { "required": ["metrics", "group_by"], "properties": {
                "metrics": contains(levels.clone()),
                "group_by": contains(periods) } },
            { "required": ["metrics", "filters"], "properties": {
                "metrics": contains(levels),
                "filters": { "type": "object", "required": ["date_from"],
                             "properties": { "date_from": { "type": "string" } } } } }
        ] }
    })
}

/// A report request as parsed: the query, and how it pages.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    pub query: Query,
    pub limit: Option<i64>,
    pub cursor: Option<String>,
}

const FIELDS: &[&str] = &["report", "group_by", "metrics", "filters", "sort", "limit", "cursor", "as_of"];
const FILTER_FIELDS: &[&str] = &[
    "date_from",
    "date_to",
    "customer",
    "supplier",
    "product",
    "category",
    "tag",
    "warehouse",
    "point_of_sale",
    "voucher_type",
    "payment_method",
    "location",
    "currency",
    "side",
    "status",
];

/// Reads the names of an array field (each once, at most `max`), reporting each bad one.
fn name_list<T: std::str::FromStr + PartialEq + Copy>(
    body: &Value,
    field: &str,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let value = body.get(field).filter(|v| !v.is_null())?;
    let Some(items) = value.as_array() else {
        errors.push(FieldError::new(field, "invalid_type", "must be an array of names"));
        return None;
    };
    if items.len() > max {
        errors.push(FieldError::new(field, "too_many", format!("at most {max} items")));
    }
    let mut names: Vec<T> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("{field}[{i}]");
        match item.as_str().map(str::parse::<T>) {
            Some(Ok(name)) if names.contains(&name) => {
                errors.push(FieldError::new(path, "duplicate", "is named twice"));
            }
            Some(Ok(name)) => names.push(name),
            Some(Err(e)) => errors.push(FieldError::new(path, "invalid_value", e.to_string())),
            None => errors.push(FieldError::new(path, "invalid_type", "must be a string")),
        }
    }
    Some(names)
}

/// Parses a report query, reporting every offending field at once. `now` bounds `as_of`.
pub fn parse(body: &Value, now: OffsetDateTime) -> Result<ReportRequest, Vec<FieldError>> {
    let mut errors = Vec::new();
    let Some(object) = body.as_object() else {
        return Err(vec![FieldError::new("body", "invalid_type", "must be a JSON object")]);
    };
    for key in object.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        errors.push(FieldError::new(key.as_str(), "unknown_field", "is not a field of a report query"));
    }
    let report = match body.get("report").filter(|v| !v.is_null()) {
        None => {
            errors.push(FieldError::new("report", "required", "name the report: sales, purchases, payments or inventory"));
            None
        }
        Some(value) => match value.as_str().map(str::parse::<Report>) {
            Some(Ok(report)) => Some(report),
            Some(Err(e)) => {
                errors.push(FieldError::new("report", "invalid_value", e.to_string()));
                None
            }
            None => {
                errors.push(FieldError::new("report", "invalid_type", "must be a string"));
                None
            }
        },
    };
    let group_by: Vec<Group> = name_list(body, "group_by", MAX_GROUPS, &mut errors).unwrap_or_default();
    let metrics: Vec<Metric> = name_list(body, "metrics", Metric::ALL.len(), &mut errors).unwrap_or_default();
    let named = body.get("metrics").and_then(Value::as_array).is_some_and(|items| !items.is_empty());
    if !named && !body.get("metrics").is_some_and(|v| !v.is_null() && !v.is_array()) {
        errors.push(FieldError::new("metrics", "required", "name at least one metric"));
    }
    if let Some(report) = report {
        for (i, group) in group_by.iter().enumerate() {
            if !report.groups().contains(group) {
                errors.push(FieldError::new(
                    format!("group_by[{i}]"),
                    "not_applicable",
                    format!("the {report} report cannot be grouped by {group}"),
                ));
            }
        }
        for (i, metric) in metrics.iter().enumerate() {
            if !report.metrics().contains(metric) {
                errors.push(FieldError::new(
                    format!("metrics[{i}]"),
                    "not_applicable",
                    format!("{metric} is not a metric of the {report} report"),
                ));
            }
        }
    }
    let filters = parse_filters(body.get("filters").filter(|v| !v.is_null()), report, &mut errors);
    let (date_from, date_to, filters, statuses) = filters;
    if let Some(level) = metrics.iter().find(|m| m.is_level()) {
        if let Some(period) = group_by.iter().find(|g| g.is_period()) {
            errors.push(FieldError::new(
                "group_by",
                "unsupported_combination",
                format!("{level} is the level at the end of the range: it cannot be grouped by {period} (use quantity)"),
            ));
        }
        if date_from.is_some() {
            errors.push(FieldError::new(
                "filters.date_from",
                "unsupported_combination",
                format!("{level} is the level at the end of the range: it takes no date_from"),
            ));
        }
    }
    let sort = parse_sort(body.get("sort").filter(|v| !v.is_null()), &group_by, &metrics, &mut errors);
    let limit = match body.get("limit").filter(|v| !v.is_null()) {
        None => None,
        Some(value) => match value.as_i64().filter(|l| (1..=MAX_LIMIT).contains(l)) {
            Some(limit) => Some(limit),
            None => {
                errors.push(FieldError::new("limit", "out_of_range", format!("a whole number from 1 to {MAX_LIMIT}")));
                None
            }
        },
    };
    let cursor = match body.get("cursor").filter(|v| !v.is_null()) {
        None => None,
        Some(Value::String(cursor)) => Some(cursor.clone()),
        Some(_) => {
            errors.push(FieldError::new("cursor", "invalid_type", "must be a string"));
            None
        }
    };
    let as_of = match body.get("as_of").filter(|v| !v.is_null()) {
        None => AsOf::Now,
        Some(Value::String(text)) => match OffsetDateTime::parse(text, &Rfc3339) {
            Ok(at) if at > now => {
                errors.push(FieldError::new("as_of", "future", "as_of cannot be in the future"));
                AsOf::Now
            }
            Ok(at) => AsOf::Instant(at),
            Err(_) => {
                errors.push(FieldError::new(
                    "as_of",
                    "invalid_format",
                    "an event-store position (integer) or an RFC 3339 instant such as 2026-01-31T23:59:59-03:00",
                ));
                AsOf::Now
            }
        },
        Some(value) => match value.as_i64().filter(|p| (0..=MAX_POSITION).contains(p)) {
            Some(position) => AsOf::Position(position),
            None => {
                errors.push(FieldError::new(
                    "as_of",
                    "invalid_value",
                    "an event-store position (a whole number from 0 to 10^15) or an RFC 3339 instant",
                ));
                AsOf::Now
            }
        },
    };
    match (report, errors.is_empty()) {
        (Some(report), true) => Ok(ReportRequest {
            query: Query {
                report,
                group_by,
                metrics,
                date_from,
                date_to,
                filters,
                statuses,
                sort,
                as_of,
                visibility: Default::default(),
            },
            limit,
            cursor,
        }),
        _ => Err(errors),
    }
}

type ParsedFilters = (Option<time::Date>, Option<time::Date>, Vec<(Group, Vec<String>)>, Vec<String>);

fn parse_filters(value: Option<&Value>, report: Option<Report>, errors: &mut Vec<FieldError>) -> ParsedFilters {
    let mut parsed = (None, None, Vec::new(), Vec::new());
    let Some(value) = value else { return parsed };
    let Some(object) = value.as_object() else {
        errors.push(FieldError::new("filters", "invalid_type", "must be a JSON object"));
        return parsed;
    };
    let date = |name: &str, errors: &mut Vec<FieldError>| {
        let text = object.get(name).filter(|v| !v.is_null())?;
        match text.as_str().and_then(events::catalogue::parse_date) {
            Some(date) => Some(date),
            _ => {
                errors.push(FieldError::new(format!("filters.{name}"), "invalid_format", "a date, YYYY-MM-DD"));
                None
            }
        }
    };
    parsed.0 = date("date_from", errors);
    parsed.1 = date("date_to", errors);
    if let (Some(from), Some(to)) = (parsed.0, parsed.1)
        && from > to
    {
        errors.push(FieldError::new("filters.date_from", "invalid_range", "date_from is after date_to"));
    }
    for (key, keys) in object {
        let path = format!("filters.{key}");
        if !FILTER_FIELDS.contains(&key.as_str()) {
            errors.push(FieldError::new(path, "unknown_field", "is not a filter of report queries"));
            continue;
        }
        if key == "date_from" || key == "date_to" {
            continue;
        }
        // A filter that does not apply is refused even when null.
        let group = key.parse::<Group>().ok();
        if let (Some(report), Some(group)) = (report, group)
            && !report.groups().contains(&group)
        {
            errors.push(FieldError::new(path, "not_applicable", format!("the {report} report has no {group}")));
            continue;
        }
        let allowed = report.map(Report::statuses).unwrap_or_default();
        if key == "status" && report.is_some() && allowed.is_empty() {
            errors.push(FieldError::new(path, "not_applicable", "this report takes no status filter"));
            continue;
        }
        if keys.is_null() {
            continue;
        }
        let items = match keys.as_array() {
            Some(items) if (1..=MAX_FILTER_KEYS).contains(&items.len()) => items,
            _ => {
                errors.push(FieldError::new(path, "invalid_type", format!("an array of 1 to {MAX_FILTER_KEYS} values")));
                continue;
            }
        };
        if key == "status" {
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(status) if allowed.contains(&status) || report.is_none() => {
                        if parsed.3.iter().any(|s: &String| s == status) {
                            errors.push(FieldError::new(format!("{path}[{i}]"), "duplicate", "is named twice"));
                        } else {
                            parsed.3.push(status.to_owned());
                        }
                    }
                    _ => errors.push(FieldError::new(
                        format!("{path}[{i}]"),
                        "invalid_value",
                        format!("one of {}", allowed.join(", ")),
                    )),
                }
            }
            continue;
        }
        let Some(group) = group else { continue };
        let mut values: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let value = match group {
                Group::VoucherType => item.as_i64().filter(|code| (1..=999).contains(code)).map(|code| code.to_string()),
                Group::Currency => item.as_str().filter(|c| ["PES", "DOL"].contains(c)).map(str::to_owned),
                Group::Side => item.as_str().filter(|s| ["customer", "supplier"].contains(s)).map(str::to_owned),
                _ => item.as_str().and_then(|id| Uuid::parse_str(id).ok()).map(|id| id.to_string()),
            };
            match value {
                Some(value) if values.contains(&value) => {
                    errors.push(FieldError::new(format!("{path}[{i}]"), "duplicate", "is named twice"));
                }
                Some(value) => values.push(value),
                None => errors.push(FieldError::new(
                    format!("{path}[{i}]"),
                    "invalid_value",
                    match group {
                        Group::VoucherType => "a voucher type code (1 to 999)",
                        Group::Currency => "PES or DOL",
                        Group::Side => "customer or supplier",
                        _ => "an id",
                    },
                )),
            }
        }
        parsed.2.push((group, values));
    }
    parsed
}

fn parse_sort(
    value: Option<&Value>,
    group_by: &[Group],
    metrics: &[Metric],
    errors: &mut Vec<FieldError>,
) -> Vec<(SortKey, bool)> {
    let mut sort = Vec::new();
    let Some(value) = value else { return sort };
    let Some(items) = value.as_array().filter(|items| items.len() <= 15) else {
        errors.push(FieldError::new("sort", "invalid_type", "an array of at most 15 groups or metrics"));
        return sort;
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("sort[{i}]");
        let Some(text) = item.as_str() else {
            errors.push(FieldError::new(path, "invalid_type", "must be a string"));
            continue;
        };
        let (descending, name) = match text.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, text),
        };
        let key = match (name.parse::<Group>(), name.parse::<Metric>()) {
            (Ok(group), _) if group_by.contains(&group) => SortKey::Group(group),
            (_, Ok(metric)) if metrics.contains(&metric) => SortKey::Metric(metric),
            _ => {
                errors.push(FieldError::new(path, "invalid_value", "sort by a group or a metric of the query"));
                continue;
            }
        };
        if sort.iter().any(|(k, _)| *k == key) {
            errors.push(FieldError::new(path, "duplicate", "is named twice"));
            continue;
        }
        sort.push((key, descending));
    }
    sort
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_filter_lists_are_refused() {
        let now = OffsetDateTime::now_utc();
        let body = json!({ "report": "purchases", "metrics": ["tax"], "filters": { "currency": [], "supplier": [] } });
        let errors = parse(&body, now).expect_err("empty lists are refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["filters.currency", "filters.supplier"]);
    }
}
