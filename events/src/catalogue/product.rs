//! Events of the product aggregate (stream type `product`, one stream per variant group). Every event
//! carries the group's whole state after it, so subscribers (read models, the webhook sender) need no
//! history; updates also name, per variant, the public fields that changed.

use crate::domain::{Adjustment, Cents, Quantity, VatRate, WholeUnits};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

/// Fields every variant of a group shares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedFields {
    pub name: String,
    pub description: Option<String>,
    pub category_id: Option<Uuid>,
    pub oem_code: Option<String>,
    /// Always `PES` (Argentine pesos).
    pub currency: String,
    /// A VAT rate code of the tax authority (5 is 21%).
    pub tax_rate_id: VatRate,
    pub stock_minimum: Option<WholeUnits>,
    pub default_supplier_id: Option<Uuid>,
    pub product_type: ProductType,
    /// Automatic margin pricing: when set, every variant's price is its cost plus this many hundredths
    /// of a percent (4000 = 40%), recomputed whenever the cost changes.
    #[serde(default)]
    pub markup_hundredths: Option<Adjustment>,
    /// A combo's components (`product_type` `combo`): variants of other products, each with the
    /// quantity one combo holds. A combo holds no stock of its own; moving it moves these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ComboComponent>,
}

named_enum! {
    /// What a product is. Stored and shown as its name (`product`, `service`, `combo`), as it always
    /// was; a stored name the type does not know is a decoding error.
    #[derive(Default)]
    pub enum ProductType {
        /// Goods stocked as themselves (the default).
        #[default]
        Product = "product",
        /// Never stocked.
        Service = "service",
        /// Stocked as its components, never as itself.
        Combo = "combo",
    }
}

impl ProductType {
    /// Moves stock, as itself or through its components: anything but a service.
    pub const fn is_stocked(self) -> bool {
        !matches!(self, ProductType::Service)
    }

    pub const fn is_combo(self) -> bool {
        matches!(self, ProductType::Combo)
    }

    /// Goods held as themselves: a line of this product reserves and delivers its own stock.
    pub const fn is_physical(self) -> bool {
        matches!(self, ProductType::Product)
    }
}

/// One component of a combo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComboComponent {
    pub variant_id: Uuid,
    pub quantity: Quantity,
}

/// One option value of a variant (`Talle` = `M`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptionValue {
    pub name: String,
    pub value: String,
}

/// Opening stock of a variant in one warehouse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpeningStock {
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    /// Written as a decimal string; events from before exact quantities hold a whole number, which
    /// reads the same.
    pub quantity: Quantity,
}

/// One sellable variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub id: Uuid,
    pub sku: String,
    pub barcode: Option<String>,
    pub cost: Cents,
    pub price: Cents,
    pub option_values: Vec<OptionValue>,
    pub is_active: bool,
}

/// A custom field value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metafield {
    pub key: String,
    pub value: String,
}

/// The whole stored state of a variant group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductGroup {
    pub shared: SharedFields,
    /// Option names (empty for a single product).
    pub options: Vec<String>,
    pub variants: Vec<Variant>,
    pub metafields: Vec<Metafield>,
}

/// Variants whose public object changed, with the changed fields in the spec's fixed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantChange {
    pub variant_id: Uuid,
    pub changed_fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductCreated {
    #[serde(flatten)]
    pub group: ProductGroup,
    /// Opening stock recorded with the creation.
    #[serde(default)]
    pub opening_stock: Vec<OpeningStock>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductUpdated {
    #[serde(flatten)]
    pub group: ProductGroup,
    pub changes: Vec<VariantChange>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProductEvent {
    ProductCreated(ProductCreated),
    /// The whole group after a change.
    ProductUpdated(ProductUpdated),
    /// Some variants changed and nothing else (costs a purchase moved, a bulk adjustment): `group`
    /// carries the group's shared fields, options and metafields, and only the variants that changed,
    /// each whole. The others stay as the events before left them. A group's stream has a whole group
    /// at least every [`WHOLE_GROUP_EVERY`] events.
    ProductVariantsUpdated(ProductUpdated),
}

/// A product stream carries its whole group (`ProductCreated` or `ProductUpdated`) at least once in
/// every run of this many events, so a group's state is the fold of its latest events up to this many:
/// a writer records the whole group instead of a [`ProductEvent::ProductVariantsUpdated`] when its
/// stream's run of those would reach it.
pub const WHOLE_GROUP_EVERY: usize = 16;

impl ProductEvent {
    /// The group as the event carries it: whole, or for [`ProductEvent::ProductVariantsUpdated`] with
    /// only the variants that changed.
    pub fn group(&self) -> &ProductGroup {
        match self {
            Self::ProductCreated(e) => &e.group,
            Self::ProductUpdated(e) | Self::ProductVariantsUpdated(e) => &e.group,
        }
    }

    /// Whether the event carries the group's whole state.
    pub fn is_whole(&self) -> bool {
        match self {
            Self::ProductCreated(_) | Self::ProductUpdated(_) => true,
            Self::ProductVariantsUpdated(_) => false,
        }
    }

    /// The group after this event: the one it carries when whole, else `before` with the variants
    /// it carries put in place (none before a whole group: a stream cannot start with a part).
    pub fn fold(&self, before: Option<ProductGroup>) -> Option<ProductGroup> {
        match self {
            Self::ProductCreated(_) | Self::ProductUpdated(_) => Some(self.group().clone()),
            Self::ProductVariantsUpdated(part) => {
                let mut group = before?;
                group.merge(&part.group);
                Some(group)
            }
        }
    }
}

payloads!(ProductEvent, "product", ProductCreated(_), ProductUpdated(_), ProductVariantsUpdated(_));

/// The public fields of a product event object, in the fixed order `changed_fields` uses.
pub const PUBLIC_PRODUCT_FIELDS: &[&str] = &[
    "name",
    "description",
    "image_url",
    "category_id",
    "sku",
    "barcode",
    "variant_options",
    "unit_of_measure",
    "currency",
    "cost",
    "price",
    "promotional_price",
    "markup_percentage",
    "tax_rate_id",
    "is_exempt",
    "product_type",
    "visibility",
    "is_active",
    "default_supplier_id",
];

impl ProductGroup {
    /// Puts `part`'s variants (whole, each replacing the one with its id) and its shared fields, options
    /// and metafields in place.
    pub fn merge(&mut self, part: &ProductGroup) {
        self.shared = part.shared.clone();
        self.options = part.options.clone();
        self.metafields = part.metafields.clone();
        for variant in &part.variants {
            match self.variants.iter_mut().find(|v| v.id == variant.id) {
                Some(current) => *current = variant.clone(),
                None => self.variants.push(variant.clone()),
            }
        }
    }

    /// This group with only the variants `changed` names: what a
    /// [`ProductEvent::ProductVariantsUpdated`] carries.
    pub fn part(&self, changed: &[Uuid]) -> ProductGroup {
        ProductGroup {
            shared: self.shared.clone(),
            options: self.options.clone(),
            variants: self.variants.iter().filter(|v| changed.contains(&v.id)).cloned().collect(),
            metafields: self.metafields.clone(),
        }
    }

    /// Under automatic margin pricing, sets every variant's price from its cost; the number of prices
    /// that moved, or the first variant whose price would leave the range of [`Cents`] (the group is
    /// then left partly repriced: the caller refuses the change).
    pub fn reprice(&mut self) -> Result<usize, PriceOutOfRange> {
        let Some(markup) = self.shared.markup_hundredths else { return Ok(0) };
        let mut moved = 0;
        for variant in &mut self.variants {
            let price = markup.apply_to(variant.cost).ok_or(PriceOutOfRange { variant_id: variant.id })?.max(Cents::ZERO);
            if price != variant.price {
                variant.price = price;
                moved += 1;
            }
        }
        Ok(moved)
    }
}

/// A variant whose cost under the group's markup gives a price beyond [`Cents::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriceOutOfRange {
    pub variant_id: Uuid,
}

/// The public object of one variant (webhook `data.object`): its final stored state, amounts in cents.
pub fn public_product(group_id: Uuid, group: &ProductGroup, variant: &Variant) -> Value {
    let shared = &group.shared;
    json!({
        "object": "product",
        "id": variant.id,
        "variant_group_id": group_id,
        "name": shared.name,
        "description": shared.description,
        // No images are stored yet: the variant image, else the group image, is none.
        "image_url": Value::Null,
        "category_id": shared.category_id,
        "sku": variant.sku,
        "barcode": variant.barcode,
        "variant_options": variant.option_values,
        "unit_of_measure": "unit",
        "currency": shared.currency,
        "cost": variant.cost,
        "price": variant.price,
        "promotional_price": Value::Null,
        "markup_percentage": shared.markup_hundredths.map(|markup| markup.to_string()),
        "tax_rate_id": shared.tax_rate_id,
        "is_exempt": shared.tax_rate_id == VatRate::ZERO,
        "product_type": shared.product_type,
        "visibility": "visible",
        "is_active": variant.is_active,
        "default_supplier_id": shared.default_supplier_id,
    })
}

/// The public fields that differ between two objects of one variant, in the fixed order.
pub fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
    PUBLIC_PRODUCT_FIELDS
        .iter()
        .filter(|field| before.get(**field) != after.get(**field))
        .map(|f| (*f).to_owned())
        .collect()
}

impl super::MovesStock for ProductEvent {
    const CAUSES: &'static [&'static str] = &[super::cause::OPENING_STOCK];

    fn stock_effect(self) -> Option<super::StockEffect> {
        match self {
            ProductEvent::ProductCreated(created) if !created.opening_stock.is_empty() => {
                Some(super::StockEffect::Opening(created.opening_stock))
            }
            ProductEvent::ProductCreated(_)
            | ProductEvent::ProductUpdated(_)
            | ProductEvent::ProductVariantsUpdated(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::EventPayload;

    #[test]
    fn a_product_type_is_stored_as_the_name_a_request_sends() {
        let names: Vec<&str> = ProductType::ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(names, ProductType::NAMES);
        for kind in ProductType::ALL {
            assert_eq!(serde_json::to_value(kind).expect("serialize"), json!(kind.as_str()));
            assert_eq!(ProductType::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ProductType::parse("kit"), None);
        assert!(serde_json::from_value::<ProductType>(json!("kit")).is_err());
        let stocked: Vec<bool> = ProductType::ALL.iter().map(|kind| kind.is_stocked()).collect();
        assert_eq!(stocked, [true, false, true]);
    }

    fn group() -> ProductGroup {
        ProductGroup {
            shared: SharedFields {
                name: "Remera".into(),
                description: None,
                category_id: None,
                oem_code: None,
                currency: "PES".into(),
                tax_rate_id: VatRate::GENERAL,
                stock_minimum: None,
                default_supplier_id: None,
                product_type: ProductType::Product,
                markup_hundredths: None,
                components: Vec::new(),
            },
            options: vec!["Talle".into()],
            variants: vec![Variant {
                id: Uuid::now_v7(),
                sku: "REM-M".into(),
                barcode: None,
                cost: Cents::of(1000),
                price: Cents::of(2500),
                option_values: vec![OptionValue { name: "Talle".into(), value: "M".into() }],
                is_active: true,
            }],
            metafields: vec![],
        }
    }

    #[test]
    fn changed_fields_follow_the_fixed_order() {
        let id = Uuid::now_v7();
        let before = group();
        let mut after = before.clone();
        after.shared.default_supplier_id = Some(Uuid::now_v7());
        after.variants[0].price = Cents::of(2600);
        after.shared.name = "Remera lisa".into();
        let (a, b) = (public_product(id, &before, &before.variants[0]), public_product(id, &after, &after.variants[0]));
        assert_eq!(changed_fields(&a, &b), ["name", "price", "default_supplier_id"]);
        assert!(changed_fields(&a, &a).is_empty());
    }

    #[test]
    fn events_round_trip_through_storage() {
        let event = ProductEvent::ProductUpdated(ProductUpdated {
            group: group(),
            changes: vec![VariantChange { variant_id: Uuid::now_v7(), changed_fields: vec!["price".into()] }],
        });
        let stored = event.to_data().expect("encodes");
        assert_eq!(ProductEvent::decode("ProductUpdated", 1, stored).expect("decodes"), event);
    }

    #[test]
    fn a_part_folds_onto_the_group_before_it_and_nothing_else() {
        let mut whole = group();
        let mut second = whole.variants[0].clone();
        second.id = Uuid::now_v7();
        second.sku = "REM-2".into();
        whole.variants.push(second);
        let mut next = whole.clone();
        next.variants[1].cost = Cents::of(777);
        next.variants[1].price = Cents::of(999);
        let changes = vec![VariantChange { variant_id: next.variants[1].id, changed_fields: vec!["cost".into()] }];
        let part = ProductEvent::ProductVariantsUpdated(ProductUpdated { group: next.part(&[next.variants[1].id]), changes });
        assert_eq!(part.group().variants.len(), 1, "only the changed variant is recorded");
        assert!(!part.is_whole());
        assert_eq!(part.fold(Some(whole.clone())), Some(next));
        assert_eq!(part.fold(None), None, "a part needs the group before it");
        let decoded = ProductEvent::decode("ProductVariantsUpdated", 1, part.to_data().expect("encodes")).expect("decodes");
        assert_eq!(decoded, part);
    }
}
