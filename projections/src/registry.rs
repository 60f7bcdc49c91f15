//! The read side's names, each defined once: the cached resources projector batches make stale and the
//! aggregates each projection folds (the projections themselves are listed in `lib.rs`, with what runs
//! them). Their strings are part of the product's contract
//! (the CLI's `--only`, progress subjects and messages, checkpoint rows): never rename one.

use events::EventPayload;

/// A name that is none of the strings of an enum `names!` made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {name:?} (known: {known})")]
pub struct UnknownName {
    pub kind: &'static str,
    pub name: String,
    pub known: String,
}

/// An enum of fixed names, declared through [`events::named_enum!`] (which gives serde, `Display`, `ALL`,
/// `NAMES` and `parse` from the one list) with an order and a [`FromStr`] whose error lists the known
/// names, for the CLI's arguments and the query strings the read side answers.
///
/// [`FromStr`]: std::str::FromStr
macro_rules! names {
    ($(#[$meta:meta])* $name:ident ($kind:literal) { $($(#[$variant_meta:meta])* $variant:ident = $text:literal,)+ }) => {
        events::named_enum! {
            $(#[$meta])*
            #[derive(PartialOrd, Ord)]
            pub enum $name {
                $($(#[$variant_meta])* $variant = $text,)+
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::registry::UnknownName;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::parse(text).ok_or_else(|| $crate::registry::UnknownName {
                    kind: $kind,
                    name: text.to_owned(),
                    known: Self::NAMES.join(", "),
                })
            }
        }
    };
}

pub(crate) use names;

names! {
    /// A resource whose single reads a gateway may cache: projectors name it in the invalidations
    /// their progress carries. Tag events store the customer, supplier and product names too.
    CacheResource ("cached resource") {
        Organization = "organization",
        Customer = "customer",
        Supplier = "supplier",
        Product = "product",
        PaymentMethod = "payment_method",
        Warehouse = "warehouse",
        Category = "category",
        PointOfSale = "point_of_sale",
        MetafieldDefinition = "metafield_definition",
        PriceList = "price_list",
        Tag = "tag",
        WebhookEndpoint = "webhook_endpoint",
    }
}

/// An aggregate's stream type. It can only be made from a payload enum of the events catalogue, so a
/// projection cannot declare a name that no event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamType(&'static str);

impl StreamType {
    /// The stream type of the aggregate whose events are `E`.
    pub const fn of<E: EventPayload>() -> Self {
        Self(E::STREAM_TYPE)
    }

    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// The aggregates whose events may move or reserve stock: the events catalogue's one list of them
    /// ([`events::catalogue::MovesStock`]).
    pub fn stock_moving() -> &'static [StreamType] {
        static STOCK: std::sync::LazyLock<Vec<StreamType>> = std::sync::LazyLock::new(|| {
            events::catalogue::STOCK_STREAM_TYPES.iter().map(|stream_type| StreamType(stream_type)).collect()
        });
        &STOCK
    }
}

/// The aggregates a projection folds. Its consumer receives only their subjects where the server can
/// filter them, and the projector passes over anything else undecoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folds {
    /// Every aggregate, including ones added later (the webhook sender: any event may have a public
    /// form).
    Every,
    /// These aggregates only (never an empty list: that would fold nothing).
    Only(&'static [StreamType]),
}

impl Folds {
    /// Whether events of `stream_type` (as read off a subject or an event row) are folded.
    pub fn includes(self, stream_type: &str) -> bool {
        match self {
            Folds::Every => true,
            Folds::Only(types) => types.iter().any(|t| t.0 == stream_type),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProjectionId;
    use serde::Serialize;
    use std::collections::HashSet;

    #[test]
    fn every_name_round_trips_through_serde_and_from_str_and_is_unique() {
        fn check<T>(all: &[T], as_str: fn(&T) -> &'static str)
        where
            T: Serialize + serde::de::DeserializeOwned + std::str::FromStr + PartialEq + std::fmt::Debug,
            T::Err: std::fmt::Debug,
        {
            let mut seen = HashSet::new();
            for value in all {
                let text = as_str(value);
                assert!(seen.insert(text), "{text} is used twice");
                assert_eq!(serde_json::to_value(value).expect("json"), serde_json::Value::from(text));
                assert_eq!(&serde_json::from_value::<T>(text.into()).expect("json"), value);
                assert_eq!(&text.parse::<T>().expect("parsed"), value);
            }
        }
        check(&ProjectionId::ALL, |p| p.as_str());
        check(&CacheResource::ALL, |r| r.as_str());
        let unknown = "customer".parse::<ProjectionId>().expect_err("a resource is no projection");
        assert!(unknown.to_string().contains("customers"), "lists the known names: {unknown}");
    }

    #[test]
    fn folds_include_their_aggregates_only() {
        use events::catalogue::{CustomerEvent, SupplierEvent};
        const CUSTOMERS: Folds = Folds::Only(&[StreamType::of::<CustomerEvent>()]);
        let customers = CUSTOMERS;
        assert!(customers.includes("customer"));
        assert!(!customers.includes(SupplierEvent::STREAM_TYPE));
        assert!(!customers.includes(""));
        assert!(Folds::Every.includes("anything"));
    }
}
