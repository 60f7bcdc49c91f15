//! The product aggregate: a variant group (one stream) holding shared fields, options and up to 250
//! sellable variants. Creation takes a single product or an option matrix; a replace targets one
//! variant and may change shared fields, which touches every variant of the group.

mod handler;

pub use handler::BulkAdjustments;

use crate::aggregate::{Aggregate, Rejection};
use crate::metafields::valid_metafield_key;
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    ComboComponent, Metafield, OpeningStock, OptionValue, ProductCreated, ProductEvent, ProductGroup, ProductType,
    ProductUpdated, SharedFields, Variant, VariantChange, changed_fields, public_product,
};
use events::domain::{Adjustment, Cents, DomainError, FineAdjustment, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;
use time::OffsetDateTime;
use uuid::Uuid;

pub const MAX_VARIANTS: usize = 250;
pub const MAX_OPTIONS: usize = 3;
/// The most components one combo lists.
pub const MAX_COMPONENTS: usize = 50;
/// The largest cost or price, and the largest fixed amount of a bulk adjustment: the range of [`Cents`].
pub const MAX_CENTS: i64 = Cents::MAX;

/// The state of one variant group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Product {
    pub id: Uuid,
    pub group: ProductGroup,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The per-variant fields a replace sets on its variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantFields {
    pub sku: String,
    pub barcode: Option<String>,
    pub cost: Cents,
    pub price: Cents,
    pub is_active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProductCommand {
    Create {
        id: Uuid,
        group: ProductGroup,
        opening_stock: Vec<OpeningStock>,
    },
    /// Replaces the shared fields and one variant's own fields. The worker finds the group.
    Replace {
        variant_id: Uuid,
        shared: SharedFields,
        variant: VariantFields,
    },
    /// Assigns and deletes custom fields of the variant's group (they are shared by the group).
    SetMetafields {
        variant_id: Uuid,
        assign: Vec<Metafield>,
        delete: Vec<String>,
    },
}

impl ProductCommand {
    /// The group for a creation, the variant for a replace (the worker resolves its group).
    pub fn target_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } => *id,
            Self::Replace { variant_id, .. } | Self::SetMetafields { variant_id, .. } => *variant_id,
        }
    }

    /// The custom field values this command would store, with the request path of each.
    pub fn assigned_metafields(&self) -> Vec<(String, &Metafield)> {
        match self {
            Self::Create { group, .. } => {
                group.metafields.iter().enumerate().map(|(i, m)| (format!("metafields[{i}].value"), m)).collect()
            }
            Self::SetMetafields { assign, .. } => assign.iter().map(|m| (format!("entries.{}", m.key), m)).collect(),
            Self::Replace { .. } => Vec::new(),
        }
    }

    pub fn is_creation(&self) -> bool {
        matches!(self, Self::Create { .. })
    }

    /// The SKUs this command would store, with the variant each belongs to and the request path to
    /// blame when one is taken.
    pub fn skus(&self) -> Vec<(Uuid, String, String)> {
        match self {
            Self::Create { group, .. } => {
                let single = group.options.is_empty();
                group
                    .variants
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let path = if single { "sku".to_owned() } else { format!("variants[{i}].sku") };
                        (v.id, v.sku.clone(), path)
                    })
                    .collect()
            }
            Self::Replace { variant_id, variant, .. } => vec![(*variant_id, variant.sku.clone(), "sku".to_owned())],
            Self::SetMetafields { .. } => Vec::new(),
        }
    }

    /// The shared fields the command sets, if any.
    pub fn shared(&self) -> Option<&SharedFields> {
        match self {
            Self::Create { group, .. } => Some(&group.shared),
            Self::Replace { shared, .. } => Some(shared),
            Self::SetMetafields { .. } => None,
        }
    }
}

impl Aggregate for Product {
    type Command = ProductCommand;
    type Event = ProductEvent;

    fn decide(state: Option<&Self>, command: &ProductCommand) -> Result<Vec<ProductEvent>, Rejection> {
        match (state, command) {
            (None, ProductCommand::Create { group, opening_stock, .. }) => {
                Ok(vec![ProductEvent::ProductCreated(ProductCreated {
                    group: group.clone(),
                    opening_stock: opening_stock.clone(),
                })])
            }
            (Some(_), ProductCommand::Create { .. }) => {
                Err(Rejection::conflict("ALREADY_EXISTS", "the product already exists"))
            }
            (None, ProductCommand::Replace { .. } | ProductCommand::SetMetafields { .. }) => {
                Err(Rejection::not_found("product"))
            }
            (Some(current), ProductCommand::SetMetafields { variant_id, assign, delete }) => {
                if !current.group.variants.iter().any(|v| v.id == *variant_id) {
                    return Err(Rejection::not_found("product"));
                }
                let mut next = current.group.clone();
                next.metafields.retain(|m| !delete.contains(&m.key));
                for entry in assign {
                    match next.metafields.iter_mut().find(|m| m.key == entry.key) {
                        Some(existing) => existing.value = entry.value.clone(),
                        None => next.metafields.push(entry.clone()),
                    }
                }
                if next == current.group {
                    return Ok(vec![]);
                }
                // Custom fields are not part of the public object: no variant changes.
                let changes = variant_changes(current.id, &current.group, &next);
                Ok(vec![ProductEvent::ProductUpdated(ProductUpdated { group: next, changes })])
            }
            (Some(current), ProductCommand::Replace { variant_id, shared, variant }) => {
                let mut next = current.group.clone();
                next.shared = shared.clone();
                let Some(target) = next.variants.iter_mut().find(|v| v.id == *variant_id) else {
                    return Err(Rejection::not_found("product"));
                };
                target.sku = variant.sku.clone();
                target.barcode = variant.barcode.clone();
                target.cost = variant.cost;
                target.price = variant.price;
                target.is_active = variant.is_active;
                // A new markup (or cost) moves the prices of the whole group.
                next.reprice().map_err(|_| Rejection::invalid("cost", "out_of_range", price_out_of_range()))?;
                if next == current.group {
                    return Ok(vec![]);
                }
                let changes = variant_changes(current.id, &current.group, &next);
                Ok(vec![ProductEvent::ProductUpdated(ProductUpdated { group: next, changes })])
            }
        }
    }

    fn evolve(state: Option<Self>, event: &ProductEvent, at: OffsetDateTime) -> Option<Self> {
        match (state, event) {
            (_, ProductEvent::ProductCreated(created)) => {
                Some(Product { id: Uuid::nil(), group: created.group.clone(), created_at: at, updated_at: at })
            }
            (Some(current), ProductEvent::ProductUpdated(_) | ProductEvent::ProductVariantsUpdated(_)) => {
                let group = event.fold(Some(current.group))?;
                Some(Product { group, updated_at: at, ..current })
            }
            (None, ProductEvent::ProductUpdated(_) | ProductEvent::ProductVariantsUpdated(_)) => None,
        }
    }
}

/// The variants whose public object changed, active before or after, each with its changed fields.
/// The event recording that `group_id`, `before` as `state` holds it, is now `next` after a change of
/// some variants only (costs, prices): those variants alone, unless that is the whole group anyway (a
/// single product) or the stream's run of such events is due a whole group
/// ([`events::catalogue::WHOLE_GROUP_EVERY`]). None when nothing changed.
pub(crate) fn variants_updated(group_id: Uuid, state: &crate::lookups::GroupState, next: ProductGroup) -> Option<ProductEvent> {
    if next == state.group {
        return None;
    }
    let changes = variant_changes(group_id, &state.group, &next);
    let before = &state.group;
    let only_variants =
        next.shared == before.shared && next.options == before.options && next.metafields == before.metafields;
    // Every variant that changed is recorded, an inactive one too: `changes` (what webhooks announce)
    // leaves those out, but their new cost or price is still theirs.
    let moved: Vec<Uuid> = next
        .variants
        .iter()
        .filter(|variant| before.variants.iter().find(|v| v.id == variant.id) != Some(*variant))
        .map(|variant| variant.id)
        .collect();
    let part = next.part(&moved);
    let due = state.run_since_whole + 1 >= events::catalogue::WHOLE_GROUP_EVERY;
    Some(if !only_variants || due || part.variants.len() == next.variants.len() {
        ProductEvent::ProductUpdated(ProductUpdated { group: next, changes })
    } else {
        ProductEvent::ProductVariantsUpdated(ProductUpdated { group: part, changes })
    })
}

pub fn variant_changes(group_id: Uuid, before: &ProductGroup, after: &ProductGroup) -> Vec<VariantChange> {
    after
        .variants
        .iter()
        .filter_map(|variant| {
            let previous = before.variants.iter().find(|v| v.id == variant.id)?;
            if !previous.is_active && !variant.is_active {
                return None;
            }
            let fields =
                changed_fields(&public_product(group_id, before, previous), &public_product(group_id, after, variant));
            (!fields.is_empty()).then_some(VariantChange { variant_id: variant.id, changed_fields: fields })
        })
        .collect()
}

fn shared_fields(r: &mut ObjectReader<'_>) -> SharedFields {
    let name = r.required_str("name", 1, 150);
    let description = r.optional_str("description", 5000);
    let category_id = r.optional_uuid("categoryId");
    let oem_code = r.optional_str("oemCode", 60);
    let currency = r.optional_enum("currency", &["PES"]).unwrap_or_else(|| "PES".to_owned());
    let tax_rate_id = r.optional_vat_rate("taxRateId").unwrap_or(VatRate::GENERAL);
    let stock_minimum = r.optional_whole_units("stockMinimum");
    let default_supplier_id = r.optional_uuid("defaultSupplierId");
    // Absent: a product. A name outside the list was refused by `optional_named`.
    let product_type = r.optional_named::<ProductType>("productType").unwrap_or_default();
    let markup_hundredths = r.optional_adjustment("markupPercentage", 0, 1000);
    let components = combo_components(r, product_type);
    SharedFields {
        name,
        description,
        category_id,
        oem_code,
        currency,
        tax_rate_id,
        stock_minimum,
        default_supplier_id,
        product_type,
        markup_hundredths,
        components,
    }
}

/// A combo's `components` (1 to 50 variants of other products, each once, with a positive quantity,
/// decimals allowed); refused on any other product type.
fn combo_components(r: &mut ObjectReader<'_>, product_type: ProductType) -> Vec<ComboComponent> {
    if !product_type.is_combo() {
        if r.value("components").is_some() {
            r.reject("components", "not_allowed", "only a combo (productType combo) has components");
        }
        return Vec::new();
    }
    let mut out: Vec<ComboComponent> = Vec::new();
    for (i, item) in r.required_array("components", 1, MAX_COMPONENTS).iter().enumerate() {
        let mut c = ObjectReader::new(item, &r.path(&format!("components[{i}]")));
        let variant_id = c.required_uuid("productId");
        let quantity = c.required_quantity("quantity", true);
        if let Some(variant_id) = variant_id
            && out.iter().any(|o| o.variant_id == variant_id)
        {
            c.reject("productId", "duplicate", "each component may appear once");
        }
        r.errors.append(&mut c.errors);
        if let (Some(variant_id), Some(quantity)) = (variant_id, quantity) {
            out.push(ComboComponent { variant_id, quantity });
        }
    }
    out
}

/// A variant's cost and price. Under automatic margin pricing (`markupPercentage`) the price follows
/// the cost: the cost is required and a price is refused.
fn cost_and_price(r: &mut ObjectReader<'_>, markup: Option<Adjustment>) -> (Cents, Cents) {
    match markup {
        None => (r.optional_cents_count("cost").unwrap_or(Cents::ZERO), required_cents(r, "price")),
        Some(markup) => {
            if r.has("price") {
                r.reject("price", "not_allowed", "follows the cost when markupPercentage is set");
            }
            let cost = required_cents(r, "cost");
            let price = markup.apply_to(cost).unwrap_or_else(|| {
                r.reject("cost", "out_of_range", price_out_of_range());
                Cents::ZERO
            });
            (cost, price)
        }
    }
}

/// Why a cost was refused whose price under the markup would pass [`Cents::MAX`].
fn price_out_of_range() -> String {
    format!("with markupPercentage, the price it gives must be at most {} cents", Cents::MAX)
}

fn required_cents(r: &mut ObjectReader<'_>, name: &str) -> Cents {
    if r.value(name).is_none() {
        r.reject(name, "required", "is required (integer cents)");
        return Cents::ZERO;
    }
    r.optional_cents_count(name).unwrap_or(Cents::ZERO)
}

fn metafields(r: &mut ObjectReader<'_>) -> Vec<Metafield> {
    let Some(value) = r.value("metafields") else { return Vec::new() };
    let Some(items) = value.as_array() else {
        r.reject("metafields", "invalid_type", "must be an array of {key, value}");
        return Vec::new();
    };
    let mut out: Vec<Metafield> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut m = ObjectReader::new(item, &r.path(&format!("metafields[{i}]")));
        let key = m.required_str("key", 1, 64);
        if !key.is_empty() && !valid_metafield_key(&key) {
            m.reject("key", "invalid_format", "use lowercase letters, digits, '_', '-' and '.'");
        }
        if out.iter().any(|existing| existing.key == key) {
            m.reject("key", "duplicate", "each key may appear once");
        }
        let value = match m.value("value") {
            Some(Value::String(text)) if text.trim().is_empty() => {
                m.reject("value", "too_short", "must not be empty (omit the entry instead)");
                String::new()
            }
            Some(Value::String(text)) if text.chars().count() > 1000 => {
                m.reject("value", "too_long", "must be at most 1000 characters");
                String::new()
            }
            Some(Value::String(text)) => text.trim().to_owned(),
            Some(_) => {
                m.reject("value", "invalid_type", "must be a string");
                String::new()
            }
            None => {
                m.reject("value", "required", "is required");
                String::new()
            }
        };
        r.errors.append(&mut m.errors);
        out.push(Metafield { key, value });
    }
    out
}

/// Reads `optionValues` of one variant: either `{"Talle": "M"}` or `[{"name": "Talle", "value": "M"}]`,
/// with exactly one value per declared option, returned in the options' order.
fn option_values(v: &mut ObjectReader<'_>, options: &[String]) -> Vec<OptionValue> {
    let Some(raw) = v.value("optionValues") else {
        v.reject("optionValues", "required", "needs one value for every option");
        return Vec::new();
    };
    let mut pairs: Vec<(String, Value)> = Vec::new();
    match raw {
        Value::Object(map) => pairs.extend(map.iter().map(|(k, val)| (k.clone(), val.clone()))),
        Value::Array(items) => {
            for item in items {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                pairs.push((name, item.get("value").cloned().unwrap_or(Value::Null)));
            }
        }
        _ => {
            v.reject("optionValues", "invalid_type", "must map every option to its value");
            return Vec::new();
        }
    }
    let mut out = Vec::new();
    for option in options {
        let given: Vec<&(String, Value)> = pairs.iter().filter(|(name, _)| name == option).collect();
        match given.as_slice() {
            [] => v.reject("optionValues", "missing_option", format!("has no value for option {option:?}")),
            [(_, Value::String(text))] if !text.trim().is_empty() && text.chars().count() <= 60 => {
                out.push(OptionValue { name: option.clone(), value: text.trim().to_owned() })
            }
            [_] => {
                v.reject("optionValues", "invalid_value", format!("the value of {option:?} must be 1 to 60 characters"))
            }
            _ => v.reject("optionValues", "duplicate_option", format!("gives option {option:?} more than once")),
        }
    }
    for (name, _) in &pairs {
        if !options.contains(name) {
            v.reject("optionValues", "unknown_option", format!("names {name:?}, which is not one of the options"));
        }
    }
    out
}

/// Parses a creation body: a single product, or `options` with `variants`. Ids are assigned here.
pub fn parse_create(body: &Value) -> Result<(ProductGroup, Vec<OpeningStock>), Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let shared = shared_fields(&mut r);
    let metafields = metafields(&mut r);
    let mut variants = Vec::new();
    let mut opening_stock = Vec::new();
    let mut options: Vec<String> = Vec::new();
    if shared.product_type.is_combo() {
        for field in ["options", "variants", "warehouseStocks"] {
            if r.has(field) {
                r.reject(field, "not_allowed", "a combo is a single product that holds no stock of its own");
            }
        }
    }
    if r.has("options") || r.has("variants") {
        for field in ["sku", "barcode", "cost", "price", "warehouseStocks"] {
            if r.has(field) {
                r.reject(field, "not_allowed", "goes on each variant when the product has variants");
            }
        }
        match r.value("options").map(Value::as_array) {
            Some(Some(names)) if (1..=MAX_OPTIONS).contains(&names.len()) => {
                for (i, name) in names.iter().enumerate() {
                    match name.as_str().map(str::trim) {
                        Some(text) if !text.is_empty() && text.chars().count() <= 40 => {
                            if options.iter().any(|o| o == text) {
                                r.reject(&format!("options[{i}]"), "duplicate", "option names must differ");
                            }
                            options.push(text.to_owned());
                        }
                        _ => {
                            r.reject(&format!("options[{i}]"), "invalid_value", "must be a name of 1 to 40 characters")
                        }
                    }
                }
            }
            Some(Some(_)) => r.reject("options", "invalid_count", "must name 1 to 3 options"),
            _ => r.reject("options", "required", "must name 1 to 3 options when variants are given"),
        }
        let items = match r.value("variants").map(Value::as_array) {
            Some(Some(items)) if items.is_empty() => {
                r.reject("variants", "invalid_count", "needs at least one variant");
                &[][..]
            }
            Some(Some(items)) if items.len() > MAX_VARIANTS => {
                r.reject("variants", "too_many", format!("at most {MAX_VARIANTS} variants per request"));
                &[][..]
            }
            Some(Some(items)) => items.as_slice(),
            _ => {
                r.reject("variants", "required", "must list the variants");
                &[][..]
            }
        };
        let options_valid = r.errors.iter().all(|e| !e.field.starts_with("options"));
        let mut combos: HashSet<Vec<String>> = HashSet::new();
        let mut skus: HashSet<String> = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let mut v = ObjectReader::new(item, &format!("variants[{i}]"));
            let id = Uuid::now_v7();
            // With unusable options, the variants' option values cannot be judged.
            let values = if options_valid { option_values(&mut v, &options) } else { Vec::new() };
            if values.len() == options.len() && !options.is_empty() {
                let combo: Vec<String> = values.iter().map(|o| o.value.to_lowercase()).collect();
                if !combos.insert(combo) {
                    v.reject("optionValues", "duplicate_combination", "another variant has the same option values");
                }
            }
            let sku = v.required_str("sku", 1, 60);
            if !sku.is_empty() && !skus.insert(sku.to_lowercase()) {
                v.reject("sku", "duplicate", "another variant of this request has the same SKU");
            }
            let barcode = v.optional_str("barcode", 60);
            let (cost, price) = cost_and_price(&mut v, shared.markup_hundredths);
            let before = opening_stock.len();
            opening_stock.extend(warehouse_stocks(&mut v, id, shared.product_type));
            refuse_beyond_the_ledger(&mut v, before, opening_stock.len());
            r.errors.append(&mut v.errors);
            variants.push(Variant { id, sku, barcode, cost, price, option_values: values, is_active: true });
        }
    } else {
        let id = Uuid::now_v7();
        let sku = r.required_str("sku", 1, 60);
        let barcode = r.optional_str("barcode", 60);
        let (cost, price) = cost_and_price(&mut r, shared.markup_hundredths);
        opening_stock.extend(warehouse_stocks(&mut r, id, shared.product_type));
        refuse_beyond_the_ledger(&mut r, 0, opening_stock.len());
        variants.push(Variant { id, sku, barcode, cost, price, option_values: Vec::new(), is_active: true });
    }
    let group = ProductGroup { shared, options, variants, metafields };
    r.finish((group, opening_stock))
}

/// Refuses, on the `warehouseStocks` of the reader whose levels take a creation's opening stock past
/// [`MAX_STOCK_CHANGES`](events::catalogue::MAX_STOCK_CHANGES) (`before` levels were listed ahead of
/// them, `after` with them): each level is a row of the inventory ledger, which numbers an event's rows
/// from its position × that limit, so one more would share its number with a row of the next event and
/// one of the two would be lost, as a stock command of more changes is refused.
fn refuse_beyond_the_ledger(r: &mut ObjectReader<'_>, before: usize, after: usize) {
    let most = events::catalogue::MAX_STOCK_CHANGES;
    if before <= most && after > most {
        r.reject(
            "warehouseStocks",
            "too_many_changes",
            format!("a product's creation records at most {most} opening stock levels, its variants' together"),
        );
    }
}

/// The opening stock of one variant, its reader's `warehouseStocks`. A service holds no stock, so it
/// opens with none: the field is refused on it and on each of its variants, even empty, as a combo's is.
fn warehouse_stocks(v: &mut ObjectReader<'_>, variant_id: Uuid, product_type: ProductType) -> Vec<OpeningStock> {
    if !product_type.is_stocked() {
        if v.has("warehouseStocks") {
            v.reject("warehouseStocks", "not_allowed", "a service holds no stock: it has no opening stock");
        }
        return Vec::new();
    }
    let Some(raw) = v.value("warehouseStocks") else { return Vec::new() };
    let Some(items) = raw.as_array() else {
        v.reject("warehouseStocks", "invalid_type", "must be an array of {warehouseId, quantity}");
        return Vec::new();
    };
    let mut out: Vec<OpeningStock> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut s = ObjectReader::new(item, &v.path(&format!("warehouseStocks[{i}]")));
        let warehouse_id = s.optional_uuid("warehouseId");
        if s.value("warehouseId").is_none() {
            s.reject("warehouseId", "required", "is required");
        }
        let quantity = match s.value("quantity") {
            Some(_) => s.required_quantity("quantity", false).unwrap_or_default(),
            None => Quantity::ZERO,
        };
        if quantity.is_negative() {
            s.reject("quantity", "negative", "opening stock cannot be negative");
        }
        if let Some(warehouse_id) = warehouse_id {
            if out.iter().any(|o| o.warehouse_id == warehouse_id) {
                s.reject("warehouseId", "duplicate", "each warehouse may appear once");
            }
            out.push(OpeningStock { variant_id, warehouse_id, quantity });
        }
        v.errors.append(&mut s.errors);
    }
    out
}

/// Parses a custom fields patch: `entries` maps keys to a string (assign) or null (delete); an empty
/// string is refused.
pub fn parse_metafield_patch(body: &Value) -> Result<(Vec<Metafield>, Vec<String>), Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let mut assign = Vec::new();
    let mut delete = Vec::new();
    match r.value("entries").map(Value::as_object) {
        Some(Some(entries)) if !entries.is_empty() => {
            for (key, value) in entries {
                let path = format!("entries.{key}");
                if !valid_metafield_key(key) {
                    r.reject(&path, "invalid_format", "keys use lowercase letters, digits, '_', '-' and '.'");
                    continue;
                }
                match value {
                    Value::Null => delete.push(key.clone()),
                    Value::String(text) if text.trim().is_empty() => {
                        r.reject(&path, "too_short", "must not be empty (send null to delete the key)")
                    }
                    Value::String(text) if text.chars().count() > 1000 => {
                        r.reject(&path, "too_long", "must be at most 1000 characters")
                    }
                    Value::String(text) => assign.push(Metafield { key: key.clone(), value: text.trim().to_owned() }),
                    _ => r.reject(&path, "invalid_type", "must be a string, or null to delete the key"),
                }
            }
        }
        Some(Some(_)) => r.reject("entries", "too_short", "must name at least one key"),
        Some(None) => r.reject("entries", "invalid_type", "must map keys to a string or null"),
        None => r.reject("entries", "required", "is required"),
    }
    r.finish((assign, delete))
}

/// Parses a replace body: the single-product fields (shared and this variant's own). `metafields`,
/// `options`, `variants` and opening stock are refused.
pub fn parse_replace(body: &Value) -> Result<(SharedFields, VariantFields), Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    for (field, why) in [
        ("metafields", "are changed with PATCH /api/v1/products/{id}/metafields"),
        ("options", "cannot be changed by a replace"),
        ("variants", "cannot be changed by a replace"),
        ("warehouseStocks", "opening stock is recorded only at creation"),
    ] {
        if r.has(field) {
            r.reject(field, "not_allowed", why);
        }
    }
    let shared = shared_fields(&mut r);
    let sku = r.required_str("sku", 1, 60);
    let barcode = r.optional_str("barcode", 60);
    let (cost, price) = cost_and_price(&mut r, shared.markup_hundredths);
    let is_active = r.optional_bool("isActive").unwrap_or(true);
    r.finish((shared, VariantFields { sku, barcode, cost, price, is_active }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A bulk percentage as a client's JSON number reaches the command.
    fn percent(value: f64) -> Change {
        Change::Percentage(FineAdjustment::parse(&json!(value)).expect("in range"))
    }

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        let mut f: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        f.sort_unstable();
        f
    }

    #[test]
    fn a_matrix_parses_in_option_order() {
        let body = json!({"name": "Remera", "options": ["Talle", "Color"], "variants": [
            {"optionValues": {"Color": "Rojo", "Talle": "M"}, "sku": "R-M", "price": 2500, "cost": 1000},
            {"optionValues": [{"name": "Talle", "value": "L"}, {"name": "Color", "value": "Rojo"}], "sku": "R-L", "price": 2600}
        ]});
        let (group, _) = parse_create(&body).expect("valid");
        assert_eq!(group.variants.len(), 2);
        assert_eq!(group.variants[0].option_values[0], OptionValue { name: "Talle".into(), value: "M".into() });
        assert_eq!(group.variants[1].option_values[1].value, "Rojo");
    }

    #[test]
    fn matrix_rules_are_reported_by_path() {
        let body = json!({"name": "Remera", "options": ["Talle"], "variants": [
            {"optionValues": {"Talle": "M"}, "sku": "A", "price": 1},
            {"optionValues": {"Talle": "m"}, "sku": "a", "price": 1},
            {"optionValues": {}, "sku": "B", "price": 1},
            {"optionValues": [{"name": "Talle", "value": "S"}, {"name": "Talle", "value": "XS"}], "sku": "C", "price": 1},
            {"optionValues": {"Talle": "XL", "Color": "Rojo"}, "sku": "D"}
        ]});
        let errors = parse_create(&body).expect_err("invalid");
        assert_eq!(
            fields(&errors),
            [
                "variants[1].optionValues",
                "variants[1].sku",
                "variants[2].optionValues",
                "variants[3].optionValues",
                "variants[4].optionValues",
                "variants[4].price"
            ]
        );
        let four = json!({"name": "x", "options": ["a", "b", "c", "d"], "variants": [{"sku": "x", "price": 1}]});
        assert!(parse_create(&four).expect_err("invalid").iter().any(|e| e.field == "options"));
        let many: Vec<Value> = (0..251)
            .map(|i| json!({"optionValues": {"a": i.to_string()}, "sku": format!("s{i}"), "price": 1}))
            .collect();
        let body = json!({"name": "x", "options": ["a"], "variants": many});
        assert!(
            parse_create(&body).expect_err("invalid").iter().any(|e| e.field == "variants" && e.code == "too_many")
        );
    }

    #[test]
    fn changes_round_half_away_from_zero_and_never_go_negative() {
        let moved = |change: Change, cents: i64| change.apply(Cents::of(cents)).map(Cents::get);
        assert_eq!(moved(percent(10.0), 1005), Some(1106));
        // Exact halves that binary floating point puts just below .5.
        assert_eq!(moved(percent(15.0), 50), Some(58));
        assert_eq!(moved(percent(2.5), 60), Some(62));
        assert_eq!(moved(percent(0.1), 500), Some(501));
        assert_eq!(moved(percent(-12.5), 4), Some(4));
        assert_eq!(moved(percent(-0.5), 100), Some(100));
        assert_eq!(moved(percent(33.333), 300_000), Some(399_999));
        assert_eq!(moved(percent(1000.0), MAX_CENTS / 11), Some(MAX_CENTS / 11 * 11));
        // Beyond the range of cents there is no amount to give: the caller refuses it.
        assert_eq!(moved(percent(1000.0), MAX_CENTS), None);
        assert_eq!(moved(percent(0.012345678901234567), MAX_CENTS), None);
        assert_eq!(moved(percent(-50.0), 3), Some(2));
        assert_eq!(moved(percent(-100.0), 999), Some(0));
        assert_eq!(moved(Change::Amount(Cents::of(-500)), 300), Some(0));
        assert_eq!(moved(Change::Amount(Cents::of(250)), 300), Some(550));
        assert_eq!(moved(Change::Amount(Cents::of(1)), MAX_CENTS), None);
        let errors =
            parse_bulk_adjustment(&json!({"target": "margin", "percentage": 5, "amount": 3})).expect_err("invalid");
        assert_eq!(fields(&errors), ["amount", "filter", "target"]);
    }

    #[test]
    fn a_service_opens_with_no_stock_as_a_combo_does() {
        let stock = json!([{"warehouseId": Uuid::now_v7(), "quantity": 2}]);
        let single =
            json!({"name": "Flete", "sku": "F", "price": 1, "productType": "service", "warehouseStocks": stock});
        let errors = parse_create(&single).expect_err("refused");
        assert_eq!((fields(&errors), errors[0].code.as_str()), (vec!["warehouseStocks"], "not_allowed"));
        let empty = json!({"name": "Flete", "sku": "F", "price": 1, "productType": "service", "warehouseStocks": []});
        assert_eq!(fields(&parse_create(&empty).expect_err("refused")), ["warehouseStocks"]);
        let matrix = json!({"name": "Instalación", "productType": "service", "options": ["Zona"], "variants": [
            {"optionValues": {"Zona": "N"}, "sku": "I-N", "price": 1},
            {"optionValues": {"Zona": "S"}, "sku": "I-S", "price": 1, "warehouseStocks": stock}
        ]});
        assert_eq!(fields(&parse_create(&matrix).expect_err("refused")), ["variants[1].warehouseStocks"]);
        let combo = json!({"name": "Kit", "sku": "K", "price": 1, "productType": "combo",
            "components": [{"productId": Uuid::now_v7(), "quantity": 1}], "warehouseStocks": stock});
        assert_eq!(fields(&parse_create(&combo).expect_err("refused")), ["warehouseStocks"]);
        // Without opening stock a service is created; a product still opens with its stock.
        let (group, opening) = parse_create(&json!({"name": "Flete", "sku": "F", "price": 1, "productType": "service"}))
            .expect("valid");
        assert_eq!((group.shared.product_type, opening.len()), (ProductType::Service, 0));
        let goods = json!({"name": "Yerba", "sku": "Y", "price": 1, "warehouseStocks": stock});
        assert_eq!(parse_create(&goods).expect("valid").1.len(), 1);
    }

    #[test]
    fn replace_refuses_metafields_and_structure() {
        let errors =
            parse_replace(&json!({"name": "x", "sku": "a", "price": 1, "metafields": []})).expect_err("invalid");
        assert_eq!(fields(&errors), ["metafields"]);
        let errors =
            parse_create(&json!({"name": "x", "sku": "a", "price": 1, "metafields": [{"key": "k", "value": ""}]}))
                .expect_err("invalid");
        assert_eq!(fields(&errors), ["metafields[0].value"]);
    }

    #[test]
    fn a_price_beyond_the_range_of_cents_is_refused_never_stored() {
        // Under a 1000% markup, a cost above a tenth of the maximum gives a price beyond it.
        let high = json!({"name": "x", "sku": "a", "markupPercentage": 1000, "cost": Cents::MAX / 10 + 1});
        let errors = parse_create(&high).expect_err("out of range");
        assert_eq!((fields(&errors), errors[0].code.as_str()), (vec!["cost"], "out_of_range"));
        let fits = json!({"name": "x", "sku": "a", "markupPercentage": 1000, "cost": Cents::MAX / 11});
        let (group, _) = parse_create(&fits).expect("in range");
        assert_eq!(group.variants[0].price, Cents::of(Cents::MAX / 11 * 11));
        // A bulk adjustment that would pass the maximum refuses the whole group.
        let (plain, _) = parse_create(&json!({"name": "y", "sku": "b", "price": Cents::MAX})).expect("valid");
        let chosen = [plain.variants[0].id];
        let refused = adjust_group(&plain, &chosen, AdjustmentTarget::Price, Change::Amount(Cents::of(1))).expect_err("out of range");
        let Rejection::Invalid { errors } = refused else { panic!("a field error: {refused:?}") };
        assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("amount", "out_of_range"));
        let (lowered, adjusted) = adjust_group(&plain, &chosen, AdjustmentTarget::Price, percent(-50.0)).expect("in range");
        assert_eq!((lowered.variants[0].price, adjusted.changed), (Cents::of(Cents::MAX / 2), 1));
        // A cost moved under the markup takes the price past the maximum: refused, naming the percentage.
        let (marked, _) = parse_create(&fits).expect("in range");
        let chosen = [marked.variants[0].id];
        let refused = adjust_group(&marked, &chosen, AdjustmentTarget::Cost, percent(10.0)).expect_err("out of range");
        assert!(matches!(&refused, Rejection::Invalid { errors } if errors[0].field == "percentage"), "{refused:?}");
    }

    #[test]
    fn shared_changes_update_every_active_variant_once() {
        let body = json!({"name": "Remera", "options": ["Talle"], "variants": [
            {"optionValues": {"Talle": "M"}, "sku": "R-M", "price": 2500},
            {"optionValues": {"Talle": "L"}, "sku": "R-L", "price": 2600}
        ]});
        let (group, _) = parse_create(&body).expect("valid");
        let state = Product {
            id: Uuid::now_v7(),
            group: group.clone(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        };
        let first = &group.variants[0];
        let same = VariantFields {
            sku: first.sku.clone(),
            barcode: None,
            cost: first.cost,
            price: first.price,
            is_active: true,
        };
        let unchanged =
            ProductCommand::Replace { variant_id: first.id, shared: group.shared.clone(), variant: same.clone() };
        assert_eq!(Product::decide(Some(&state), &unchanged), Ok(vec![]), "same stored values: no event");
        let mut renamed = group.shared.clone();
        renamed.name = "Remera lisa".into();
        let command = ProductCommand::Replace {
            variant_id: first.id,
            shared: renamed,
            variant: VariantFields { price: Cents::of(2700), ..same },
        };
        let events = Product::decide(Some(&state), &command).expect("decided");
        let ProductEvent::ProductUpdated(updated) = &events[0] else { panic!("an update") };
        assert_eq!(updated.changes.len(), 2);
        assert_eq!(updated.changes[0].changed_fields, ["name", "price"]);
        assert_eq!(updated.changes[1].changed_fields, ["name"]);
    }

    #[test]
    fn variant_changes_record_the_variants_alone_until_a_whole_group_is_due() {
        let body = json!({"name": "Remera", "options": ["Talle"], "variants": [
            {"optionValues": {"Talle": "M"}, "sku": "R-M", "cost": 1000, "price": 2500},
            {"optionValues": {"Talle": "L"}, "sku": "R-L", "cost": 1000, "price": 2600}
        ]});
        let (group, _) = parse_create(&body).expect("valid");
        let id = Uuid::now_v7();
        let mut next = group.clone();
        next.variants[1].cost = Cents::of(1100);
        let at = |run| crate::lookups::GroupState { version: 3, group: group.clone(), run_since_whole: run };
        assert_eq!(variants_updated(id, &at(0), group.clone()), None, "nothing changed");

        let Some(ProductEvent::ProductVariantsUpdated(part)) = variants_updated(id, &at(14), next.clone()) else {
            panic!("a part")
        };
        assert_eq!(part.group.variants, [next.variants[1].clone()]);
        assert_eq!(part.changes[0].changed_fields, ["cost"]);
        // The sixteenth event since the whole group carries it whole again.
        let due = variants_updated(id, &at(15), next.clone());
        assert!(matches!(&due, Some(ProductEvent::ProductUpdated(whole)) if whole.group == next), "{due:?}");
        // A change beyond the variants is recorded whole, whatever the run.
        let mut renamed = next.clone();
        renamed.shared.name = "Remera lisa".into();
        assert!(matches!(variants_updated(id, &at(0), renamed), Some(ProductEvent::ProductUpdated(_))));
        // So is a change of every variant: the part would be the whole.
        let mut every = next.clone();
        every.variants[0].cost = Cents::of(1200);
        assert!(matches!(variants_updated(id, &at(0), every), Some(ProductEvent::ProductUpdated(_))));
    }
}

/// Which variants a bulk adjustment touches (every given criterion must hold).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkFilter {
    pub default_supplier_id: Option<Uuid>,
    pub category_id: Option<Uuid>,
    pub tag_id: Option<Uuid>,
    pub product_ids: Vec<Uuid>,
}

/// A percentage (`10` adds 10%, `-5` takes 5% off) or a fixed amount in cents (negative takes off).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Change {
    Percentage(FineAdjustment),
    Amount(Cents),
}

impl Change {
    /// The adjusted amount, never below zero; `None` beyond [`Cents::MAX`]. A percentage is applied
    /// exactly as the decimal the client wrote ([`FineAdjustment::apply_to`]), rounded half away from
    /// zero to the cent.
    pub fn apply(self, amount: Cents) -> Option<Cents> {
        let next = match self {
            Change::Percentage(percentage) => percentage.apply_to(amount),
            Change::Amount(delta) => amount.checked_add(delta),
        }?;
        Some(if next.is_negative() { Cents::ZERO } else { next })
    }
}

events::named_enum! {
    /// What a bulk adjustment moves.
    pub enum AdjustmentTarget { Cost = "cost", Price = "price" }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkAdjustment {
    pub id: Uuid,
    pub target: AdjustmentTarget,
    pub filter: BulkFilter,
    pub change: Change,
}

/// Parses a bulk adjustment body: `target`, at least one filter (`default_supplier_id`,
/// `category_id`, `tag_id`, `product_ids`), and exactly one of `percentage` and `amount`.
pub fn parse_bulk_adjustment(body: &Value) -> Result<BulkAdjustment, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let target = r.optional_named::<AdjustmentTarget>("target");
    if r.value("target").is_none() {
        r.reject("target", "required", "is required: cost or price");
    }
    let default_supplier_id = r.optional_uuid("default_supplier_id");
    let category_id = r.optional_uuid("category_id");
    let tag_id = r.optional_uuid("tag_id");
    let mut product_ids = Vec::new();
    match r.value("product_ids").map(Value::as_array) {
        None => {}
        Some(Some(items)) if items.len() <= 10_000 => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str().map(Uuid::parse_str) {
                    Some(Ok(id)) => product_ids.push(id),
                    _ => r.reject(&format!("product_ids[{i}]"), "invalid_format", "must be a product id (UUID)"),
                }
            }
        }
        Some(Some(_)) => r.reject("product_ids", "too_many", "at most 10000 ids"),
        Some(None) => r.reject("product_ids", "invalid_type", "must be an array of product ids"),
    }
    let filtered = ["default_supplier_id", "category_id", "tag_id", "product_ids"].iter().any(|f| r.value(f).is_some());
    if !filtered {
        r.reject("filter", "required", "name default_supplier_id, category_id, tag_id or product_ids");
    } else if r.value("product_ids").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        r.reject("product_ids", "too_short", "name at least one product, or leave product_ids out");
    }
    let percentage = r.optional_number("percentage").map(|n| FineAdjustment::parse(&Value::Number(n)));
    let amount = r.value("amount").map(|v| v.as_i64().and_then(|cents| Cents::new(cents).ok()));
    let change = match (percentage, amount) {
        (Some(Ok(percentage)), None) => Some(Change::Percentage(percentage)),
        (Some(Err(DomainError::OutOfRange { .. })), None) => {
            r.reject("percentage", "out_of_range", "must be between -100 and 1000");
            None
        }
        (Some(Err(error)), None) => {
            r.reject("percentage", "invalid_value", error.to_string());
            None
        }
        (None, Some(Some(cents))) => Some(Change::Amount(cents)),
        (None, Some(_)) => {
            r.reject("amount", "invalid_value", "must be a whole number of cents");
            None
        }
        (Some(_), Some(_)) => {
            r.reject("amount", "not_allowed", "send either percentage or amount, not both");
            None
        }
        (None, None) => {
            r.reject("percentage", "required", "send percentage or amount");
            None
        }
    };
    let filter = BulkFilter { default_supplier_id, category_id, tag_id, product_ids };
    r.finish(())?;
    // Every way of leaving `target` or `change` unset rejected a field above.
    let target = target.ok_or_else(|| vec![FieldError::new("target", "required", "is required: cost or price")])?;
    let change = change.ok_or_else(|| vec![FieldError::new("percentage", "required", "send percentage or amount")])?;
    Ok(BulkAdjustment { id: Uuid::now_v7(), target, filter, change })
}

/// What adjusting one group did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Adjusted {
    /// Variants whose target value changed.
    pub changed: usize,
    /// Prices recalculated from new costs under automatic margin pricing.
    pub repriced: usize,
    /// Chosen variants left alone: their price follows their cost.
    pub skipped: usize,
}

/// The group after adjusting `target` of the variants in `chosen` by `change`. Under automatic margin
/// pricing a cost change moves the price with it, and prices are not adjusted by hand. A cost or price
/// the change would take beyond [`Cents::MAX`] refuses the whole adjustment, naming the variant.
pub fn adjust_group(
    group: &ProductGroup,
    chosen: &[Uuid],
    target: AdjustmentTarget,
    change: Change,
) -> Result<(ProductGroup, Adjusted), Rejection> {
    let refused = |variant_id: Uuid| {
        let field = match change {
            Change::Percentage(_) => "percentage",
            Change::Amount(_) => "amount",
        };
        let why = format!("would take the cost or price of product {variant_id} beyond {} cents", Cents::MAX);
        Rejection::invalid(field, "out_of_range", why)
    };
    let mut next = group.clone();
    let mut outcome = Adjusted::default();
    for variant in next.variants.iter_mut().filter(|v| chosen.contains(&v.id)) {
        if target == AdjustmentTarget::Price && group.shared.markup_hundredths.is_some() {
            outcome.skipped += 1;
            continue;
        }
        let slot = match target {
            AdjustmentTarget::Cost => &mut variant.cost,
            AdjustmentTarget::Price => &mut variant.price,
        };
        let adjusted = change.apply(*slot).ok_or_else(|| refused(variant.id))?;
        if adjusted != *slot {
            *slot = adjusted;
            outcome.changed += 1;
        }
    }
    outcome.repriced = next.reprice().map_err(|out| refused(out.variant_id))?;
    Ok((next, outcome))
}
