//! Price lists: the configuration record that names a price per variant, or moves the base price by a
//! percentage. Its field rules here; how the workers run it in `handler.rs`.

mod handler;

use crate::records::Record;
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{ListPrice, PriceListEvent, PriceListFields};
use serde_json::Value;

pub type PriceList = Record<PriceListEvent>;

/// The one automatic pricing mode: the variant's base price moved by a percentage.
pub const AUTOMATIC_PRICING_MODES: &[&str] = &["base_price_adjustment"];

/// Most explicit prices one list holds.
pub const MAX_LIST_PRICES: usize = 5_000;

/// Price list body (snake_case): `name` 1–100, `description` ≤ 500, `is_automatic` (false),
/// `automatic_pricing_mode` and `adjustment_percentage` (-99 to 1000, two decimals; both required on
/// an automatic list, refused on a manual one), `tax_inclusive` (false), `is_active` (true), and
/// `prices`: explicit `{product_id, unit_price}` entries, one per variant, at most 5000.
pub fn parse_price_list(body: &Value) -> Result<PriceListFields, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    let name = r.required_str("name", 1, 100);
    let description = r.optional_str("description", 500);
    let is_automatic = r.optional_bool("is_automatic").unwrap_or(false);
    let automatic_pricing_mode = r.optional_enum("automatic_pricing_mode", AUTOMATIC_PRICING_MODES);
    let adjustment_hundredths = r.optional_adjustment("adjustment_percentage", -99, 1000);
    if is_automatic {
        for field in ["automatic_pricing_mode", "adjustment_percentage"] {
            if r.value(field).is_none() {
                r.reject(field, "required", "is required on an automatic price list");
            }
        }
    } else {
        for field in ["automatic_pricing_mode", "adjustment_percentage"] {
            if r.value(field).is_some() {
                r.reject(field, "not_allowed", "only automatic price lists (is_automatic: true) have it");
            }
        }
    }
    let tax_inclusive = r.optional_bool("tax_inclusive").unwrap_or(false);
    let is_active = r.optional_bool("is_active").unwrap_or(true);
    let mut prices: Vec<ListPrice> = Vec::new();
    match r.value("prices").map(Value::as_array) {
        None => {}
        Some(Some(items)) if items.len() > MAX_LIST_PRICES => {
            r.reject("prices", "too_many", format!("at most {MAX_LIST_PRICES} prices per list"))
        }
        Some(Some(items)) => {
            let mut seen = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let mut p = ObjectReader::new(item, &format!("prices[{i}]"));
                let product_id = p.optional_uuid("product_id");
                if product_id.is_none() && p.value("product_id").is_none() {
                    p.reject("product_id", "required", "is required");
                }
                if p.value("unit_price").is_none() {
                    p.reject("unit_price", "required", "is required (integer cents)");
                }
                let unit_price = p.optional_cents_count("unit_price");
                if let Some(product_id) = product_id {
                    if seen.contains(&product_id) {
                        p.reject("product_id", "duplicate", "each product may have one price in a list");
                    }
                    seen.push(product_id);
                    if let Some(unit_price) = unit_price {
                        prices.push(ListPrice { product_id, unit_price });
                    }
                }
                r.errors.append(&mut p.errors);
            }
        }
        Some(None) => r.reject("prices", "invalid_type", "must be an array of {product_id, unit_price}"),
    }
    r.finish(PriceListFields {
        name,
        description,
        is_automatic,
        automatic_pricing_mode,
        adjustment_hundredths,
        tax_inclusive,
        is_active,
        prices,
    })
}
