//! Purchases: a supplier's invoice recorded with its lines (canonical amounts from the tax engine, in the
//! invoice's currency and in pesos), raising stock when the goods arrived with it and moving each
//! product's last cost. The same assessment serves the v1 write, the v2 preview (which writes nothing)
//! and the v2 commit, so a commit identical to a clean preview records exactly what was previewed.
//! Purchase orders (`orders.rs`) reuse the lines and their amounts.

pub(crate) mod checks;
mod handler;
pub mod orders;

pub use crate::lookups::VariantFacts;
pub use handler::{PurchaseOrders, Purchases};

use crate::aggregate::{BusinessDetail, Rejection};
use crate::tax::{self, PriceBasis};
use crate::validate::{FieldError, ObjectReader, camel_case_keys};
use events::catalogue::{CostUpdate, PurchaseAmounts, PurchaseLine, StockChange, iso_date, iso_date_option};
use events::domain::{Cents, ExchangeRate, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines one purchase or purchase order lists.
pub const MAX_LINES: usize = 200;
/// The currencies a purchase may be in.
pub const CURRENCIES: &[&str] = &["PES", "DOL"];

/// A line as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemInput {
    pub variant_id: Uuid,
    pub quantity: Quantity,
    /// Of the purchase's currency.
    pub unit_cost: Cents,
    /// The product's VAT rate when omitted.
    pub tax_rate_id: Option<VatRate>,
}

/// A purchase as sent (after the parser's checks of each field on its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseInput {
    pub supplier_id: Uuid,
    pub voucher_type: i32,
    pub supplier_invoice_number: String,
    #[serde(with = "iso_date")]
    pub invoice_date: Date,
    #[serde(default, with = "iso_date_option")]
    pub due_date: Option<Date>,
    pub currency: String,
    pub exchange_rate: Option<ExchangeRate>,
    pub products_received: bool,
    pub warehouse_id: Option<Uuid>,
    pub notes: Option<String>,
    pub items: Vec<ItemInput>,
}

/// Whether a purchase is recorded or only assessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Commit,
    /// Assess and answer what a commit would record; write nothing.
    Preview,
}

/// The command the workers run for `POST /api/v1/purchases` and `POST /api/v2/purchases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseCommand {
    pub id: Uuid,
    pub mode: Mode,
    pub input: PurchaseInput,
}

/// Something that keeps a purchase from being recorded: where it is (`path`, a request field), what
/// kind of problem (`code`: `SUPPLIER`, `INVENTORY`, `CURRENCY`, `DUPLICATE`) and why (`reason`:
/// `not_found`, `inactive`, `required`, `invalid`, `already_exists`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    pub path: String,
    pub code: String,
    pub reason: String,
    pub message: String,
}

impl Blocker {
    pub fn new(path: impl Into<String>, code: &str, reason: &str, message: impl Into<String>) -> Self {
        Self { path: path.into(), code: code.to_owned(), reason: reason.to_owned(), message: message.into() }
    }
}

/// Something worth a second look that does not stop the purchase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseWarning {
    pub path: String,
    pub code: String,
    pub message: String,
}

/// The purchase as it would be (or was) stored: defaults applied, canonical amounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NormalizedPurchase {
    pub supplier_id: Uuid,
    pub voucher_type: i32,
    pub supplier_invoice_number: String,
    #[serde(with = "iso_date")]
    pub invoice_date: Date,
    #[serde(default, with = "iso_date_option")]
    pub due_date: Option<Date>,
    pub currency: String,
    pub exchange_rate: ExchangeRate,
    pub products_received: bool,
    pub warehouse_id: Option<Uuid>,
    pub notes: Option<String>,
    pub lines: Vec<PurchaseLine>,
    pub amounts: PurchaseAmounts,
}

/// Stock a purchase raises in one warehouse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockEntry {
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    pub quantity: Quantity,
    /// On hand after the entry.
    pub on_hand: Quantity,
}

/// What recording a purchase does beside storing it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProjectedEffects {
    pub stock_entries: Vec<StockEntry>,
    pub cost_updates: Vec<CostUpdate>,
    /// Owed to the supplier: the total in the purchase's currency and in pesos.
    pub supplier_balance: PurchaseAmountOwed,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PurchaseAmountOwed {
    pub currency: String,
    pub amount: Cents,
    pub amount_ars: Cents,
}

/// What the workers answer for a purchase: the id (none for a preview), what was (or would be)
/// stored, its effects, warnings and blockers (always empty once recorded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseOutcome {
    pub id: Option<Uuid>,
    pub normalized: NormalizedPurchase,
    pub effects: ProjectedEffects,
    pub warnings: Vec<PurchaseWarning>,
    pub blocking_issues: Vec<Blocker>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
}

fn parse_rate(r: &mut ObjectReader<'_>, name: &str) -> Option<ExchangeRate> {
    let value = r.value(name)?;
    match ExchangeRate::parse(value) {
        Ok(rate) => Some(rate),
        Err(error) => {
            r.reject(name, "invalid_value", error.to_string());
            None
        }
    }
}

/// Reads the lines of a purchase or purchase order under `items`.
pub fn parse_items(r: &mut ObjectReader<'_>) -> Vec<ItemInput> {
    let mut items = Vec::new();
    for (i, item) in r.required_array("items", 1, MAX_LINES).iter().enumerate() {
        let mut line = ObjectReader::new(item, &r.path(&format!("items[{i}]")));
        let variant_id = line.required_uuid("productId");
        let quantity = line.required_quantity("quantity", true);
        let unit_cost = line.required_cents("unitCost");
        let tax_rate_id = line.optional_vat_rate("taxRateId");
        r.errors.append(&mut line.errors);
        if let (Some(variant_id), Some(quantity), Some(unit_cost)) = (variant_id, quantity, unit_cost) {
            items.push(ItemInput { variant_id, quantity, unit_cost, tax_rate_id });
        }
    }
    items
}

/// Parses a purchase (camelCase; the snake_case spellings of the guide are accepted too). Each field is
/// checked on its own here; what depends on the organization's data or on other fields (the supplier,
/// products and warehouse, the exchange rate against the currency, a missing warehouse) is assessed by
/// the worker, so a v2 preview can report it as a blocking issue.
pub fn parse_purchase(body: &Value, today: Date) -> Result<PurchaseInput, Vec<FieldError>> {
    let (body, mut spelled) = camel_case_keys(body, "");
    let mut r = ObjectReader::new(&body, "");
    r.errors.append(&mut spelled);
    let supplier_id = r.required_uuid("supplierId");
    let voucher_type = r.required_int("voucherType", 1, 95).map(|v| v as i32);
    let supplier_invoice_number = r.required_str("supplierInvoiceNumber", 1, 50);
    let invoice_date = r.required_date("invoiceDate");
    if invoice_date.is_some_and(|d| d > today) {
        r.reject("invoiceDate", "in_future", format!("must not be after today ({today})"));
    }
    let due_date = r.optional_date("dueDate");
    if let (Some(due), Some(invoiced)) = (due_date, invoice_date)
        && due < invoiced
    {
        r.reject("dueDate", "before_invoice_date", "must not be before invoiceDate");
    }
    let currency = r.optional_enum("currency", CURRENCIES).unwrap_or_else(|| "PES".to_owned());
    let exchange_rate = parse_rate(&mut r, "exchangeRate");
    let products_received = r.optional_bool("productsReceived").unwrap_or(false);
    let warehouse_id = r.optional_uuid("warehouseId");
    let notes = r.optional_str("notes", 1000);
    let items = parse_items(&mut r);
    let input = PurchaseInput {
        supplier_id: supplier_id.unwrap_or_default(),
        voucher_type: voucher_type.unwrap_or(1),
        supplier_invoice_number,
        invoice_date: invoice_date.unwrap_or(today),
        due_date,
        currency,
        exchange_rate,
        products_received,
        warehouse_id,
        notes,
        items,
    };
    r.finish(input)
}

/// The currency and rate a document is kept in: pesos at 1, or dollars at the rate sent. A missing or
/// contradictory rate is a blocker.
pub fn currency_rate(currency: &str, rate: Option<ExchangeRate>, blockers: &mut Vec<Blocker>) -> ExchangeRate {
    match (currency, rate) {
        ("PES", None) => ExchangeRate::ONE,
        ("PES", Some(rate)) if rate.is_one() => rate,
        ("PES", Some(_)) => {
            blockers.push(Blocker::new(
                "exchangeRate",
                "CURRENCY",
                "invalid",
                "a purchase in PES has an exchange rate of 1",
            ));
            ExchangeRate::ONE
        }
        (_, Some(rate)) => rate,
        (_, None) => {
            blockers.push(Blocker::new(
                "exchangeRate",
                "CURRENCY",
                "required",
                format!("a purchase in {currency} needs its exchange rate to pesos"),
            ));
            ExchangeRate::ONE
        }
    }
}

/// The lines with their canonical amounts (the tax engine's, on the voucher's price basis) in the
/// document's currency and in pesos, and the totals. Each product must be known in `facts`; a line
/// without a VAT rate takes its product's.
pub fn price_lines(
    voucher_type: i32,
    rate: ExchangeRate,
    items: &[ItemInput],
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Result<(Vec<PurchaseLine>, PurchaseAmounts), Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut lines = Vec::with_capacity(items.len());
    for item in items {
        let code = item.tax_rate_id.or_else(|| facts.get(&item.variant_id).map(|f| f.tax_rate_id)).unwrap_or(VatRate::GENERAL);
        lines.push(tax::Line { quantity: item.quantity, unit_price: item.unit_cost, vat_code: code, discount: None });
    }
    let computed = tax::compute(PriceBasis::of_voucher(voucher_type), &lines, &tax::Adjustments::default())
        .map_err(|e| vec![FieldError::new("items", "out_of_range", e.to_string())])?;
    let mut stored = Vec::with_capacity(items.len());
    let mut amounts = PurchaseAmounts::default();
    for (i, (item, line)) in items.iter().zip(&computed.lines).enumerate() {
        let (net, vat) = (line.net, line.vat);
        let summed = (|| {
            let (net_ars, vat_ars) = (rate.to_pesos(net)?, rate.to_pesos(vat)?);
            amounts.subtotal = amounts.subtotal.checked_add(net)?;
            amounts.tax_amount = amounts.tax_amount.checked_add(vat)?;
            amounts.subtotal_ars = amounts.subtotal_ars.checked_add(net_ars)?;
            amounts.tax_amount_ars = amounts.tax_amount_ars.checked_add(vat_ars)?;
            Some(PurchaseLine {
                variant_id: item.variant_id,
                quantity: item.quantity,
                unit_cost: item.unit_cost,
                tax_rate_id: lines[i].vat_code,
                net,
                vat,
                total: net.checked_add(vat)?,
                net_ars,
                vat_ars,
                total_ars: net_ars.checked_add(vat_ars)?,
            })
        })();
        match summed {
            Some(line) => stored.push(line),
            None => errors.push(FieldError::new(format!("items[{i}].unitCost"), "out_of_range", "too large in pesos")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (Some(total), Some(total_ars)) =
        (amounts.subtotal.checked_add(amounts.tax_amount), amounts.subtotal_ars.checked_add(amounts.tax_amount_ars))
    else {
        return Err(vec![FieldError::new("items", "out_of_range", "the purchase's total is too large")]);
    };
    amounts.total = total;
    amounts.total_ars = total_ars;
    Ok((stored, amounts))
}

/// The last cost each product takes from the purchase: its line's net amount in pesos per unit (VAT
/// excluded where the voucher discriminates it), rounded to the cent; the last line of a product wins.
/// Only products whose cost changes are listed. A cost per unit beyond [`Cents::MAX`] is refused,
/// naming its line.
pub fn cost_updates(
    lines: &[PurchaseLine],
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Result<Vec<CostUpdate>, Vec<FieldError>> {
    let mut latest: BTreeMap<Uuid, Cents> = BTreeMap::new();
    let mut order = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(fact) = facts.get(&line.variant_id) else { continue };
        if fact.product_type.is_combo() {
            continue;
        }
        let exact = i128::from(line.net_ars.get()) * i128::from(Quantity::SCALE);
        let per_unit = round_half_away(exact, i128::from(line.quantity.thousandths()));
        if !order.contains(&line.variant_id) {
            order.push(line.variant_id);
        }
        let Some(cost) = i64::try_from(per_unit).ok().and_then(|cents| Cents::new(cents).ok()) else {
            return Err(vec![FieldError::new(
                format!("items[{i}].unitCost"),
                "out_of_range",
                "the cost per unit in pesos is too large",
            )]);
        };
        if fact.markup.is_some_and(|markup| markup.apply_to(cost).is_none()) {
            return Err(vec![FieldError::new(
                format!("items[{i}].unitCost"),
                "out_of_range",
                "the cost per unit in pesos, under the product's markupPercentage, gives a price too large",
            )]);
        }
        latest.insert(line.variant_id, cost);
    }
    Ok(order
        .into_iter()
        .filter_map(|variant| {
            let current = latest.get(&variant).copied()?;
            let previous = facts.get(&variant)?.cost;
            (current != previous).then_some(CostUpdate { variant_id: variant, previous, current })
        })
        .collect())
}

fn round_half_away(numerator: i128, denominator: i128) -> i128 {
    if denominator <= 0 {
        return 0;
    }
    let half = denominator / 2;
    if numerator >= 0 { (numerator + half) / denominator } else { (numerator - half) / denominator }
}

/// Stock entries from the changes a purchase makes.
pub fn stock_entries(changes: &[StockChange]) -> Vec<StockEntry> {
    changes
        .iter()
        .map(|c| StockEntry {
            variant_id: c.variant_id,
            warehouse_id: c.warehouse_id,
            quantity: c.quantity,
            on_hand: c.on_hand,
        })
        .collect()
}

/// Each line's product must be an active product variant of the organization.
pub(crate) fn product_blockers(
    variants: impl Iterator<Item = Uuid>,
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Vec<Blocker> {
    variants
        .enumerate()
        .filter_map(|(i, variant)| {
            let path = format!("items[{i}].productId");
            match facts.get(&variant) {
                None => {
                    Some(Blocker::new(path, "INVENTORY", "not_found", "no product of this organization has this id"))
                }
                Some(f) if !f.is_active => Some(Blocker::new(path, "INVENTORY", "inactive", "the product is inactive")),
                Some(_) => None,
            }
        })
        .collect()
}

/// The refusal of a command with blockers: 422 `PRECONDITION_FAILED`, one detail per blocker (its
/// `code` the blocker's, `metadata.reason` why), as the v2 commit answers; the v1 gateway words it as
/// 404, 409 or 400 by the reasons.
pub(crate) fn blocked(blockers: Vec<Blocker>) -> Rejection {
    Rejection::Unprocessable {
        code: "PRECONDITION_FAILED".into(),
        message: "the purchase cannot be recorded; see details (a preview lists the same blocking issues)".into(),
        details: blockers
            .into_iter()
            .map(|b| BusinessDetail {
                field: Some(b.path),
                code: b.code,
                message: b.message,
                metadata: BTreeMap::from([("reason".to_owned(), serde_json::Value::String(b.reason))]),
            })
            .collect(),
    }
}

/// Everything outside the command that assessing a purchase reads, loaded by the handler.
#[derive(Debug, Clone, Default)]
pub struct PurchaseFacts {
    /// The facts of each product variant the purchase names that is the organization's, and the latest
    /// state of their groups (whose costs the purchase moves).
    pub products: BTreeMap<Uuid, VariantFacts>,
    pub groups: crate::lookups::Groups,
    /// What keeps the supplier from being used, if anything.
    pub supplier: Option<Blocker>,
    /// For received goods with a warehouse: what keeps the warehouse from being used, if anything.
    pub warehouse: Option<Option<Blocker>>,
    /// Whether this supplier's invoice of this voucher type is already recorded.
    pub duplicate: bool,
}

/// What assessing a purchase decided: what it records, its warnings and blocking issues, the products'
/// new costs, and the warehouse whose stock it raises (none: it raises none).
#[derive(Debug, Clone)]
pub struct PurchaseDecision {
    pub normalized: NormalizedPurchase,
    pub warnings: Vec<PurchaseWarning>,
    pub blockers: Vec<Blocker>,
    pub updates: Vec<CostUpdate>,
    pub stock_warehouse: Option<Uuid>,
}

/// The blocker of a supplier's invoice already recorded.
pub(crate) fn duplicate_blocker() -> Blocker {
    Blocker::new(
        "supplierInvoiceNumber",
        "DUPLICATE",
        "already_exists",
        "this supplier's invoice of this voucher type is already recorded",
    )
}

/// Assesses a purchase against the facts: pure. A commit with blocking issues is refused with them; a
/// preview answers them.
pub fn decide(command: &PurchaseCommand, facts: &PurchaseFacts) -> Result<PurchaseDecision, Rejection> {
    let input = &command.input;
    let commit = command.mode == Mode::Commit;
    let mut blockers: Vec<Blocker> = facts.supplier.iter().cloned().collect();
    blockers.extend(product_blockers(input.items.iter().map(|i| i.variant_id), &facts.products));
    let warehouse = match (input.products_received, input.warehouse_id, &facts.warehouse) {
        (true, None, _) => {
            blockers.push(Blocker::new(
                "warehouseId",
                "INVENTORY",
                "required",
                "a purchase whose products were received names the warehouse",
            ));
            None
        }
        (received, Some(id), Some(blocker)) => {
            blockers.extend(blocker.iter().cloned());
            (received && blocker.is_none()).then_some(id)
        }
        _ => None,
    };
    let rate = currency_rate(&input.currency, input.exchange_rate, &mut blockers);
    if facts.duplicate {
        blockers.push(duplicate_blocker());
    }
    let (lines, amounts) = price_lines(input.voucher_type, rate, &input.items, &facts.products)
        .map_err(|errors| Rejection::Invalid { errors })?;
    let mut warnings: Vec<PurchaseWarning> = input
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.unit_cost == Cents::ZERO)
        .map(|(i, _)| PurchaseWarning {
            path: format!("items[{i}].unitCost"),
            code: "ZERO_COST".into(),
            message: "the unit cost is zero; the product's last cost becomes zero".into(),
        })
        .collect();
    if input.products_received {
        for (i, item) in input.items.iter().enumerate() {
            if facts.products.get(&item.variant_id).is_some_and(|f| !f.product_type.is_stocked()) {
                warnings.push(PurchaseWarning {
                    path: format!("items[{i}].productId"),
                    code: "NOT_STOCKED".into(),
                    message: "a service holds no stock: receiving it raises none".into(),
                });
            }
        }
    }
    if commit && !blockers.is_empty() {
        return Err(blocked(blockers));
    }
    let normalized = NormalizedPurchase {
        supplier_id: input.supplier_id,
        voucher_type: input.voucher_type,
        supplier_invoice_number: input.supplier_invoice_number.clone(),
        invoice_date: input.invoice_date,
        due_date: input.due_date,
        currency: input.currency.clone(),
        exchange_rate: rate,
        products_received: input.products_received,
        warehouse_id: input.warehouse_id,
        notes: input.notes.clone(),
        lines,
        amounts,
    };
    let updates = cost_updates(&normalized.lines, &facts.products).map_err(|errors| Rejection::Invalid { errors })?;
    let stock_warehouse = warehouse.filter(|_| blockers.iter().all(|b| b.code != "INVENTORY"));
    Ok(PurchaseDecision { normalized, warnings, blockers, updates, stock_warehouse })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TODAY: Date = time::macros::date!(2026 - 11 - 25);

    fn facts(variant: Uuid, cost: i64) -> BTreeMap<Uuid, VariantFacts> {
        BTreeMap::from([(variant, VariantFacts { cost: Cents::of(cost), ..VariantFacts::plain_product(Uuid::now_v7()) })])
    }

    #[test]
    fn both_spellings_are_read_and_every_bad_field_is_named() {
        let (supplier, product) = (Uuid::now_v7(), Uuid::now_v7());
        let snake = json!({"supplier_id": supplier, "voucher_type": 1, "supplier_invoice_number": "0001-00000042",
            "invoice_date": "2026-11-20", "products_received": false,
            "items": [{"product_id": product, "quantity": "1.5", "unit_cost": 1000}]});
        let camel = json!({"supplierId": supplier, "voucherType": 1, "supplierInvoiceNumber": "0001-00000042",
            "invoiceDate": "2026-11-20", "productsReceived": false,
            "items": [{"productId": product, "quantity": 1.5, "unitCost": 1000}]});
        assert_eq!(parse_purchase(&snake, TODAY).expect("snake"), parse_purchase(&camel, TODAY).expect("camel"));
        let errors = parse_purchase(
            &json!({"supplierId": "x", "supplier_id": supplier, "voucherType": 96, "invoiceDate": "2099-01-01",
                "currency": "EUR", "items": [{"productId": product, "quantity": 0, "unitCost": 1.5}]}),
            TODAY,
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        for field in [
            "supplierId",
            "voucherType",
            "supplierInvoiceNumber",
            "invoiceDate",
            "currency",
            "items[0].quantity",
            "items[0].unitCost",
        ] {
            assert!(fields.contains(&field), "{field} in {fields:?}");
        }
    }

    #[test]
    fn dollar_lines_keep_both_currencies_exactly_and_costs_follow_in_pesos() {
        let product = Uuid::now_v7();
        let rate: ExchangeRate = "1050.5".parse().expect("rate");
        let items = [ItemInput {
            variant_id: product,
            quantity: "3".parse().expect("q"),
            unit_cost: Cents::of(1999),
            tax_rate_id: None,
        }];
        let known = facts(product, 100);
        let (lines, amounts) = price_lines(1, rate, &items, &known).expect("priced");
        // A voucher: 3 × 19.99 = 59.97 net, VAT 21% = 12.59 (1259.37 rounded); in pesos each at 1050.5.
        assert_eq!((lines[0].net.get(), lines[0].vat.get(), lines[0].total.get()), (5997, 1259, 7256));
        assert_eq!(lines[0].net_ars.get(), 6_299_849); // 5997 × 1050.5 = 6,299,848.5 → half away
        assert_eq!(lines[0].vat_ars.get(), 1_322_580); // 1259 × 1050.5 = 1,322,579.5 → half away
        assert_eq!(amounts.total_ars.get(), amounts.subtotal_ars.get() + amounts.tax_amount_ars.get());
        let updates = cost_updates(&lines, &known).expect("costs in range");
        assert_eq!(updates, [CostUpdate { variant_id: product, previous: Cents::of(100), current: Cents::of(2_099_950) }]);
        let mut blockers = Vec::new();
        assert_eq!(currency_rate("DOL", None, &mut blockers), ExchangeRate::ONE);
        assert_eq!(currency_rate("PES", Some(rate), &mut blockers), ExchangeRate::ONE);
        assert_eq!(blockers.iter().map(|b| b.reason.as_str()).collect::<Vec<_>>(), ["required", "invalid"]);
    }

    #[test]
    fn a_purchase_is_assessed_from_the_facts_alone() {
        let (supplier, product, warehouse) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let input = parse_purchase(
            &json!({"supplierId": supplier, "voucherType": 1, "supplierInvoiceNumber": "0001-00000042",
                    "invoiceDate": "2026-11-20", "productsReceived": true, "warehouseId": warehouse,
                    "items": [{"productId": product, "quantity": 2, "unitCost": 1000}]}),
            TODAY,
        )
        .expect("a purchase");
        let facts = PurchaseFacts { products: facts(product, 400), warehouse: Some(None), ..PurchaseFacts::default() };
        let preview = PurchaseCommand { id: Uuid::now_v7(), mode: Mode::Preview, input };
        let decided = decide(&preview, &facts).expect("assessed");
        assert!(decided.blockers.is_empty(), "{:?}", decided.blockers);
        assert_eq!(decided.stock_warehouse, Some(warehouse));
        assert_eq!(decided.normalized.amounts.total.get(), 2420);
        assert_eq!(decided.updates, [CostUpdate { variant_id: product, previous: Cents::of(400), current: Cents::of(1000) }]);
        // A recorded invoice and an inactive warehouse block a commit and show in a preview.
        let blocked_facts = PurchaseFacts {
            duplicate: true,
            warehouse: Some(Some(Blocker::new("warehouseId", "INVENTORY", "inactive", "inactive"))),
            ..facts
        };
        let decided = decide(&preview, &blocked_facts).expect("a preview answers");
        let reasons: Vec<&str> = decided.blockers.iter().map(|b| b.code.as_str()).collect();
        assert_eq!(reasons, ["INVENTORY", "DUPLICATE"]);
        assert_eq!(decided.stock_warehouse, None);
        let commit = PurchaseCommand { mode: Mode::Commit, ..preview };
        let refused = decide(&commit, &blocked_facts).expect_err("blocked");
        assert!(matches!(refused, Rejection::Unprocessable { ref code, .. } if code == "PRECONDITION_FAILED"));
    }
}
