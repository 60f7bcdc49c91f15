//! The scopes an API credential can carry, one enum generated from one list.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::{DomainError, shown};

/// Defines [`Scope`], its strings and [`Scope::ALL`] from a single list, so that adding a scope in
/// one place adds it everywhere and none of the three can drift from the others.
macro_rules! scopes {
    ($($(#[$attribute:meta])* $variant:ident => $text:literal,)+) => {
        /// A permission of the form `<resource>:read` or `<resource>:write`. Reads need the read scope
        /// of their resource and writes the write scope. The interface names most of these; those it
        /// leaves open (`tags:*`, `inventory:*`, `orders:write`) are marked, and their strings are
        /// this service's choice.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Scope {
            $($(#[$attribute])* $variant,)+
        }

        impl Scope {
            /// Every scope, in declaration order.
            pub const ALL: &'static [Scope] = &[$(Scope::$variant,)+];

            /// The scope as credentials and the interface spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Scope::$variant => $text,)+
                }
            }
        }

        impl FromStr for Scope {
            type Err = DomainError;

            fn from_str(text: &str) -> Result<Self, DomainError> {
                match text {
                    $($text => Ok(Scope::$variant),)+
                    _ => Err(DomainError::UnknownScope(shown(text))),
                }
            }
        }
    };
}

scopes! {
    CustomersRead => "customers:read",
    CustomersWrite => "customers:write",
    CategoriesRead => "categories:read",
    CategoriesWrite => "categories:write",
    SuppliersRead => "suppliers:read",
    SuppliersWrite => "suppliers:write",
    ProductsRead => "products:read",
    ProductsWrite => "products:write",
    WarehousesRead => "warehouses:read",
    WarehousesWrite => "warehouses:write",
    PurchasesRead => "purchases:read",
    PurchasesWrite => "purchases:write",
    SalesRead => "sales:read",
    SalesWrite => "sales:write",
    TransfersRead => "transfers:read",
    TransfersWrite => "transfers:write",
    PriceListsRead => "price_lists:read",
    PriceListsWrite => "price_lists:write",
    PaymentMethodsRead => "payment_methods:read",
    PaymentMethodsWrite => "payment_methods:write",
    /// The interface names no `reports:write`: reports are only read.
    ReportsRead => "reports:read",
    QuotesRead => "quotes:read",
    QuotesWrite => "quotes:write",
    TreasuryRead => "treasury:read",
    TreasuryWrite => "treasury:write",
    WebhooksRead => "webhooks:read",
    WebhooksWrite => "webhooks:write",
    OrdersRead => "orders:read",
    /// Left open by the interface ("orders writes: not shown"); named after the read scope.
    OrdersWrite => "orders:write",
    /// Left open by the interface; the gateway already uses it for the tag endpoints.
    TagsRead => "tags:read",
    /// Left open by the interface; the gateway already uses it for the tag endpoints.
    TagsWrite => "tags:write",
    /// Left open by the interface ("inventory, stock movements: not shown"); for stock reads.
    InventoryRead => "inventory:read",
    /// Left open by the interface; for stock adjustments and movements.
    InventoryWrite => "inventory:write",
    /// Left open by the interface ("scopes of payments: not shown"); customer and supplier payments.
    PaymentsRead => "payments:read",
    /// Left open by the interface; recording and voiding payments.
    PaymentsWrite => "payments:write",
}

impl Scope {
    /// The resource before the colon: `products` for `products:write`.
    pub fn resource(self) -> &'static str {
        let text = self.as_str();
        text.split_once(':').map_or(text, |(resource, _)| resource)
    }

    /// Whether the scope grants writes rather than reads.
    pub fn is_write(self) -> bool {
        self.as_str().ends_with(":write")
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Owned, because escaped JSON strings cannot be borrowed from the input.
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The interface's list of scopes (section "Authorization is by scope"), copied verbatim.
    const NAMED_BY_THE_INTERFACE: &[&str] = &[
        "customers:read",
        "customers:write",
        "categories:read",
        "categories:write",
        "suppliers:read",
        "suppliers:write",
        "products:read",
        "products:write",
        "warehouses:read",
        "warehouses:write",
        "purchases:read",
        "purchases:write",
        "sales:read",
        "sales:write",
        "transfers:read",
        "transfers:write",
        "price_lists:read",
        "price_lists:write",
        "payment_methods:read",
        "payment_methods:write",
        "reports:read",
        "quotes:read",
        "quotes:write",
        "treasury:read",
        "treasury:write",
        "webhooks:read",
        "webhooks:write",
        "orders:read",
    ];

    #[test]
    fn every_scope_round_trips_through_its_string() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(*scope));
            assert_eq!(scope.to_string(), scope.as_str());
        }
    }

    #[test]
    fn all_has_no_duplicates_in_variants_or_strings() {
        let variants: HashSet<Scope> = Scope::ALL.iter().copied().collect();
        let strings: HashSet<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(variants.len(), Scope::ALL.len());
        assert_eq!(strings.len(), Scope::ALL.len());
    }

    #[test]
    fn every_scope_the_interface_names_is_known() {
        for text in NAMED_BY_THE_INTERFACE {
            assert!(text.parse::<Scope>().is_ok(), "{text}");
        }
        let extra: Vec<&str> =
            Scope::ALL.iter().map(|s| s.as_str()).filter(|s| !NAMED_BY_THE_INTERFACE.contains(s)).collect();
        assert_eq!(
            extra,
            [
                "orders:write",
                "tags:read",
                "tags:write",
                "inventory:read",
                "inventory:write",
                "payments:read",
                "payments:write"
            ]
        );
    }

    #[test]
    fn every_string_has_the_resource_access_shape() {
        for scope in Scope::ALL {
            let (resource, access) = scope.as_str().split_once(':').expect("a colon");
            assert!(!resource.is_empty() && resource.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{scope}");
            assert!(access == "read" || access == "write", "{scope}");
            assert_eq!(scope.resource(), resource);
            assert_eq!(scope.is_write(), access == "write");
        }
        assert_eq!(Scope::PriceListsWrite.resource(), "price_lists");
        assert!(Scope::InventoryWrite.is_write());
        assert!(!Scope::OrdersRead.is_write());
    }

    #[test]
    fn unknown_scopes_are_named_in_the_error() {
        assert_eq!("products:delete".parse::<Scope>(), Err(DomainError::UnknownScope("products:delete".into())));
        assert_eq!(
            "Products:read".parse::<Scope>().map_err(|e| e.to_string()),
            Err(r#"must be a known scope, not "Products:read""#.into())
        );
        for text in ["", "products", "products:", ":read", " products:read", "reports:write"] {
            assert!(text.parse::<Scope>().is_err(), "{text:?}");
        }
    }

    #[test]
    fn json_is_the_scope_string() {
        assert_eq!(serde_json::to_string(&Scope::PriceListsRead).expect("json"), r#""price_lists:read""#);
        assert_eq!(serde_json::from_str::<Scope>(r#""inventory:write""#).expect("json"), Scope::InventoryWrite);
        assert_eq!(serde_json::from_str::<Scope>(r#""tags:\u0072ead""#).expect("json"), Scope::TagsRead);
        let all: Vec<Scope> = serde_json::from_str(&serde_json::to_string(Scope::ALL).expect("json")).expect("json");
        assert_eq!(all, Scope::ALL);
        let error = serde_json::from_str::<Scope>(r#""stock:read""#).expect_err("unknown");
        assert!(error.to_string().contains(r#"must be a known scope, not "stock:read""#), "{error}");
        assert!(serde_json::from_str::<Scope>("1").is_err());
    }
}
