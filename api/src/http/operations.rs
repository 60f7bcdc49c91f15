//! Every operation of the HTTP interface, listed once: its `operationId`, the scope it needs, how it
//! uses `Idempotency-Key`, and the command it sends. Handlers name their [`Operation`]; the OpenAPI
//! document publishes the table (`x-required-scopes`, `x-idempotency`); a test holds the table, the
//! routes and the command registry to each other.

use commands::protocol::CommandKind;
use events::domain::Scope;

/// How an operation uses `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    Required,
    Optional,
    NotUsed,
}

impl Idempotency {
    pub fn as_str(self) -> &'static str {
        match self {
            Idempotency::Required => "required",
            Idempotency::Optional => "optional",
            Idempotency::NotUsed => "not_used",
        }
    }
}

macro_rules! operations {
    ($($variant:ident => $id:literal, $scope:expr, $key:ident, $command:expr;)+) => {
        /// An operation of the interface.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation {
            $($variant,)+
        }

        impl Operation {
            /// Every operation, in table order.
            pub const ALL: &[Operation] = &[$(Operation::$variant,)+];

            /// The `operationId` (also what an idempotency claim names).
            pub fn id(self) -> &'static str {
                match self {
                    $(Operation::$variant => $id,)+
                }
            }

            /// The scope a credential needs (none: any valid credential).
            pub fn scope(self) -> Option<Scope> {
                match self {
                    $(Operation::$variant => $scope,)+
                }
            }

            pub fn idempotency(self) -> Idempotency {
                match self {
                    $(Operation::$variant => Idempotency::$key,)+
                }
            }

            /// The command the operation sends to the workers, if it writes.
            pub fn command(self) -> Option<CommandKind> {
                match self {
                    $(Operation::$variant => $command,)+
                }
            }

            pub fn from_id(id: &str) -> Option<Operation> {
                match id {
                    $($id => Some(Operation::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

use CommandKind as C;
use Scope as S;

operations! {
    GetOrganization => "getOrganization", None, NotUsed, None;
    ListTaxRates => "listTaxRates", None, NotUsed, None;
    ListVoucherTypes => "listVoucherTypes", None, NotUsed, None;
    CreateCustomer => "createCustomer", Some(S::CustomersWrite), Optional, Some(C::Customer);
    ReplaceCustomer => "replaceCustomer", Some(S::CustomersWrite), Optional, Some(C::Customer);
    GetCustomer => "getCustomer", Some(S::CustomersRead), NotUsed, None;
    ListCustomers => "listCustomers", Some(S::CustomersRead), NotUsed, None;
    CreateSupplier => "createSupplier", Some(S::SuppliersWrite), Optional, Some(C::Supplier);
    ReplaceSupplier => "replaceSupplier", Some(S::SuppliersWrite), Optional, Some(C::Supplier);
    GetSupplier => "getSupplier", Some(S::SuppliersRead), NotUsed, None;
    ListSuppliers => "listSuppliers", Some(S::SuppliersRead), NotUsed, None;
    CreateProduct => "createProduct", Some(S::ProductsWrite), Required, Some(C::Product);
    ReplaceProduct => "replaceProduct", Some(S::ProductsWrite), Optional, Some(C::Product);
    GetProduct => "getProduct", Some(S::ProductsRead), NotUsed, None;
    ListProducts => "listProducts", Some(S::ProductsRead), NotUsed, None;
    PatchProductMetafields => "patchProductMetafields", Some(S::ProductsWrite), Optional, Some(C::Product);
    CreateBulkAdjustment => "createBulkAdjustment", Some(S::ProductsWrite), Required, Some(C::BulkAdjustProducts);
    ListMetafieldDefinitions => "listMetafieldDefinitions", Some(S::ProductsRead), NotUsed, None;
    CreateMetafieldDefinition => "createMetafieldDefinition", Some(S::ProductsWrite), Optional,
        Some(C::MetafieldDefinition);
    ListPriceLists => "listPriceLists", Some(S::PriceListsRead), NotUsed, None;
    CreatePriceList => "createPriceList", Some(S::PriceListsWrite), Optional, Some(C::PriceList);
    GetPriceList => "getPriceList", Some(S::PriceListsRead), NotUsed, None;
    ReplacePriceList => "replacePriceList", Some(S::PriceListsWrite), Optional, Some(C::PriceList);
    ListPriceListPrices => "listPriceListPrices", Some(S::PriceListsRead), NotUsed, None;
    GetPriceListPrice => "getPriceListPrice", Some(S::PriceListsRead), NotUsed, None;
    ListTags => "listTags", Some(S::TagsRead), NotUsed, None;
    CreateTag => "createTag", Some(S::TagsWrite), Optional, Some(C::Tag);
    GetTag => "getTag", Some(S::TagsRead), NotUsed, None;
    UpdateTag => "updateTag", Some(S::TagsWrite), Optional, Some(C::Tag);
    ApplyCustomerTags => "applyCustomerTags", Some(S::CustomersWrite), Optional, Some(C::ApplyTags);
    ApplySupplierTags => "applySupplierTags", Some(S::SuppliersWrite), Optional, Some(C::ApplyTags);
    ApplyProductTags => "applyProductTags", Some(S::ProductsWrite), Optional, Some(C::ApplyTags);
    ApplySaleTags => "applySaleTags", Some(S::SalesWrite), Optional, Some(C::ApplyTags);
    ListPaymentMethods => "listPaymentMethods", Some(S::PaymentMethodsRead), NotUsed, None;
    CreatePaymentMethod => "createPaymentMethod", Some(S::PaymentMethodsWrite), Optional, Some(C::PaymentMethod);
    GetPaymentMethod => "getPaymentMethod", Some(S::PaymentMethodsRead), NotUsed, None;
    ReplacePaymentMethod => "replacePaymentMethod", Some(S::PaymentMethodsWrite), Optional, Some(C::PaymentMethod);
    ListWarehouses => "listWarehouses", Some(S::WarehousesRead), NotUsed, None;
    CreateWarehouse => "createWarehouse", Some(S::WarehousesWrite), Optional, Some(C::Warehouse);
    GetWarehouse => "getWarehouse", Some(S::WarehousesRead), NotUsed, None;
    ReplaceWarehouse => "replaceWarehouse", Some(S::WarehousesWrite), Optional, Some(C::Warehouse);
    ListCategories => "listCategories", Some(S::CategoriesRead), NotUsed, None;
    CreateCategory => "createCategory", Some(S::CategoriesWrite), Optional, Some(C::Category);
    GetCategory => "getCategory", Some(S::CategoriesRead), NotUsed, None;
    ReplaceCategory => "replaceCategory", Some(S::CategoriesWrite), Optional, Some(C::Category);
    ListPointsOfSale => "listPointsOfSale", Some(S::SalesRead), NotUsed, None;
    CreateWebhookEndpoint => "createWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    UpdateWebhookEndpoint => "updateWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    PauseWebhookEndpoint => "pauseWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    ResumeWebhookEndpoint => "resumeWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    DisableWebhookEndpoint => "disableWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    RotateWebhookEndpointSecret => "rotateWebhookEndpointSecret", Some(S::WebhooksWrite), Required,
        Some(C::Webhook);
    TestWebhookEndpoint => "testWebhookEndpoint", Some(S::WebhooksWrite), Required, Some(C::Webhook);
    ListWebhookEndpoints => "listWebhookEndpoints", Some(S::WebhooksRead), NotUsed, None;
    GetWebhookEndpoint => "getWebhookEndpoint", Some(S::WebhooksRead), NotUsed, None;
    ListWebhookDeliveries => "listWebhookDeliveries", Some(S::WebhooksRead), NotUsed, None;
    ListWebhookEventTypes => "listWebhookEventTypes", Some(S::WebhooksRead), NotUsed, None;
    V2ListWarehouses => "v2ListWarehouses", Some(S::WarehousesRead), NotUsed, None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every route of the document is in the table and every entry of the table is a route.
    #[test]
    fn the_table_and_the_routes_name_the_same_operations() {
        let document: serde_json::Value =
            serde_json::from_str(&crate::http::api_service().spec()).expect("the generated document");
        let mut routed = HashSet::new();
        for operations in document["paths"].as_object().expect("paths").values() {
            for operation in operations.as_object().expect("operations").values() {
                let id = operation["operationId"].as_str().expect("every operation has an id");
                assert!(Operation::from_id(id).is_some(), "{id} is routed but missing from the table");
                routed.insert(id.to_owned());
            }
        }
        for operation in Operation::ALL {
            assert!(routed.contains(operation.id()), "{} is in the table but not routed", operation.id());
        }
        let ids: HashSet<&str> = Operation::ALL.iter().map(|o| o.id()).collect();
        assert_eq!(ids.len(), Operation::ALL.len(), "operation ids are unique");
    }

    /// Every command the workers run is sent by some operation, and only writes send commands.
    #[test]
    fn every_command_is_sent_by_an_operation() {
        let sent: HashSet<CommandKind> = Operation::ALL.iter().filter_map(|o| o.command()).collect();
        for kind in CommandKind::ALL {
            assert!(sent.contains(kind), "no operation sends {kind:?}");
        }
        for operation in Operation::ALL {
            if operation.command().is_some() {
                assert!(operation.scope().is_some_and(Scope::is_write), "{} writes with a write scope", operation.id());
            } else {
                assert_eq!(operation.idempotency(), Idempotency::NotUsed, "{} reads take no key", operation.id());
            }
        }
    }
}
