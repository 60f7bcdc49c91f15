//! The command side: imperative commands, pure aggregates (`decide`/`evolve`), the validation of
//! everything a command carries, the engine that runs each command (in one statement or one Postgres
//! transaction), and the protocol the gateway uses to reach it over NATS.
//!
//! Layers, each importing only those below it: the pure parts (`aggregate`, `validate`, `reply`, `tax`,
//! `fiscal`, the tax authority's adapter); the engine's machinery (`engine/`, no domain code); what a
//! command declares (`handler`); the domains, each with one home (`contacts`, `products`, `metafields`,
//! `price_lists`, `records`, `tags`, `webhooks`, `inventory`, `purchases`, `sales`, `quotes`): its
//! aggregate and parsing in `mod.rs`, its [`handler::Handler`] in `handler.rs`; the one list of
//! commands (`registry`, written below); the wire requests (`protocol`); and on top the worker that serves them
//! (`worker/`) and the gateway's sender (`client`).

pub mod admin;
pub mod aggregate;
pub mod client;
pub mod document;
pub mod engine;
pub mod fiscal;
pub mod handler;
pub mod idempotency;
pub mod lookups;
pub mod organization;
pub mod protocol;
mod registry;
pub mod reply;
pub mod tax;
pub mod validate;
pub mod worker;

pub use aggregate::{Aggregate, BusinessDetail, Rejection};
pub use validate::FieldError;

// Every domain and its commands: the module, then each command kind and its handler.
registry::commands! {
    mod contacts {
        Customer => Customer,
        Supplier => Supplier,
    }
    mod products {
        Product => Product,
        BulkAdjustProducts => BulkAdjustments,
    }
    mod metafields {
        MetafieldDefinition => MetafieldDefinition,
    }
    mod tags {
        Tag => Tag,
        ApplyTags => TagApplications,
    }
    mod records {
        PaymentMethod => PaymentMethod,
        Warehouse => Warehouse,
        Category => Category,
    }
    mod price_lists {
        PriceList => PriceList,
    }
    mod webhooks {
        Webhook => WebhookEndpoint,
    }
    mod inventory {
        StockMovement => StockMovements,
        StockTransfer => StockTransfers,
    }
    mod purchases {
        Purchase => Purchases,
        PurchaseOrder => PurchaseOrders,
    }
    mod sales {
        Sale => Sales,
        InvoiceSale => InvoiceSales,
    }
    mod quotes {
        Quote => Quotes,
    }
    mod orders {
        Order => Orders,
    }
    mod delivery_notes {
        DeliveryNote => DeliveryNotes,
    }
    mod treasury {
        FundsTransfer => FundsTransfers,
        TreasuryMovement => ManualMovements,
    }
    mod payments {
        CustomerPayment => CustomerPayments,
        SupplierPayment => SupplierPayments,
    }
}
