//! Purchases and purchase orders, v1 (Style B, camelCase; the snake_case spellings of the guide are
//! accepted in bodies). The purchase objects here are shared with the v2 surface (`v2.rs`).
//!
//! This file holds the routes (the operations, the kinds and every handler); the rest is by resource:
//! `invoices.rs` (purchases proper: the object, its body, rendering, the list's filters), `outcome.rs`
//! (what recording a purchase does, also answered by v2), `orders.rs` (purchase orders) and `data.rs`
//! (what they share, a leaf). None of them imports this file.

pub mod data;
pub mod invoices;
pub mod orders;
pub mod outcome;

pub use data::{
    ExchangeRateIn, ProductRef, PurchaseCurrency, PurchaseItemData, PurchaseItemInput, SupplierRef, today, v1_refusal,
};
pub use invoices::{
    PurchaseCreatedData, PurchaseCreatedEnvelope, PurchaseData, PurchaseDocument, PurchaseDocumentState,
    PurchaseEnvelope, PurchaseInput, camel_parameter, purchase_filter, purchase_shapes, render_purchases,
};
pub use orders::{
    OrderLineData, OrderState, PurchaseOrderData, PurchaseOrderEnvelope, PurchaseOrderInput, ReceiptData, ReceiptInput,
    ReceiptLineInput, ReceivedLineData,
};
pub use outcome::{
    CostUpdateData, NormalizedPurchaseData, ProjectedEffectsData, PurchaseWarningData, StockEntryData,
    SupplierBalanceData, normalized_and_effects, outcome_names,
};

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::error::ApiError;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::routes_group::routes;
use crate::http::resource::{Call, Kind, PageParams, decode_state};
use crate::http::shared_filters::{date_schema, id_filter, one_of, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::{ApiTags, RequestId, Style};
use crate::state::AppState;
use commands::protocol::{Command, CommandKind};
use commands::purchases::orders::{OrderCommand, PurchaseOrderStatus, parse_order, parse_receipt};
use commands::purchases::{Mode, PurchaseCommand, PurchaseOutcome, parse_purchase};
use events::domain::Scope;
use invoices::{DocumentRedirect, PurchaseCreated, PurchaseList, PurchaseRead};
use orders::{OrderCreated, OrderList, OrderRead, order_shapes, order_write, render_order};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use projections::ProjectionId;
use projections::purchases::{self as read, PurchaseRow};
use std::sync::Arc;
use uuid::Uuid;

const WHY_BLOCKED: &str = "A purchase order's receipt asks more than is pending on a line without `allowOverReceipt` \
                           (`RECEIPT_EXCEEDS_PENDING`, one detail per line with the pending and received quantities); \
                           nothing was received";

// The operations this module serves (see `operations.rs`).
operations! {
    PurchasesApi, INPUT_RULES;
    LIST_PURCHASES = read("listPurchases", Some(Scope::PurchasesRead));
    CREATE_PURCHASE = write("createPurchase", Scope::PurchasesWrite, Idempotency::Required, CommandKind::Purchase);
    GET_PURCHASE = read("getPurchase", Some(Scope::PurchasesRead));
    GET_PURCHASE_DOCUMENT = read("getPurchaseDocument", Some(Scope::PurchasesRead));
    LIST_PURCHASE_ORDERS = read("listPurchaseOrders", Some(Scope::PurchasesRead));
    CREATE_PURCHASE_ORDER =
        write("createPurchaseOrder", Scope::PurchasesWrite, Idempotency::Required, CommandKind::PurchaseOrder);
    GET_PURCHASE_ORDER = read("getPurchaseOrder", Some(Scope::PurchasesRead));
    CONFIRM_PURCHASE_ORDER =
        write("confirmPurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
    CLOSE_PURCHASE_ORDER =
        write("closePurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
    REOPEN_PURCHASE_ORDER =
        write("reopenPurchaseOrder", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::PurchaseOrder);
    RECEIVE_PURCHASE_ORDER =
        write("receivePurchaseOrder", Scope::PurchasesWrite, Idempotency::Required, CommandKind::PurchaseOrder)
            .unprocessable(WHY_BLOCKED);
}

pub const PURCHASES: Kind = Kind::new("purchase", ProjectionId::Purchases, "/api/v1/purchases", "purchases");

const ORDERS: Kind = Kind::new("purchase order", ProjectionId::Purchases, "/api/v1/purchase-orders", "purchase_orders");

pub struct PurchasesApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "PurchaseInput", rule: purchase_shapes },
    InputRule::Body { schema: "PurchaseOrderInput", rule: order_shapes },
    InputRule::Query { operation: "listPurchases", parameter: "supplier_id", schema: uuid_schema },
    InputRule::Query { operation: "listPurchases", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listPurchases", parameter: "date_to", schema: date_schema },
    InputRule::Query { operation: "listPurchaseOrders", parameter: "supplier_id", schema: uuid_schema },
    InputRule::Query {
        operation: "listPurchaseOrders",
        parameter: "status",
        schema: || serde_json::json!({ "type": "string", "enum": PurchaseOrderStatus::NAMES }),
    },
];

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Purchases")]
    PurchasesApi {
        /// Download a purchase's PDF
        ///
        /// Scope `purchases:read`. The stable, authenticated path to the purchase's PDF: 302 to a signed link,
        /// `/documents/{token}`, valid five minutes and served without a credential (do not store it; an
        /// expired or altered link answers 403); 404 while the document is missing.
        #[oai(path = "/purchases/:purchase_id/document", method = "get", operation_id = "getPurchaseDocument")]
        async fn document(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            purchase_id: Path<IdText>,
        ) -> Result<DocumentRedirect, ApiError> {
            let call = Call::new(GET_PURCHASE_DOCUMENT, &state, &auth, request_id)?;
            let id = call.id(&PURCHASES, &purchase_id.0)?;
            if read::get(&state.pool, call.org_id(), id).await?.is_none() {
                return Err(ApiError::not_found("purchase"));
            }
            let location =
                crate::http::documents::link(&state, call.org_id(), projections::documents::OwnerKind::Purchase, id)
                    .await?;
            Ok(DocumentRedirect::Found(location))
        }
    }
    writes: {
        /// Record a purchase
        ///
        /// Scope `purchases:write`; `Idempotency-Key` required. Records a supplier's invoice with canonical
        /// amounts (in its currency and in pesos); when `productsReceived` is true, stock rises in
        /// `warehouseId` in the same transaction. Each product's cost becomes its line's net unit cost in
        /// pesos. A supplier, product or warehouse that does not exist or is inactive answers 404; a
        /// supplier invoice number already recorded for the supplier and voucher type answers 409.
        create("/purchases", "createPurchase", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> PurchaseCreated::Created = CREATE_PURCHASE, |call, write, body: PurchaseInput| {
                let input = parse_purchase(&body.value, today()).map_err(ApiError::validation)?;
                let command = Command::Purchase(PurchaseCommand { id: Uuid::now_v7(), mode: Mode::Commit, input });
                call
                    .write_then_read(&PURCHASES, write, command, async |accepted| {
                        // The stock and the costs it moved are readable at once too.
                        call.await_reads(&accepted, [ProjectionId::Inventory, ProjectionId::Products]).await?;
                        let outcome: PurchaseOutcome = decode_state(accepted.state, "purchase")?;
                        let id = outcome.id.ok_or_else(ApiError::internal)?;
                        let row =
                            read::get(&call.state.pool, call.org_id(), id).await?.ok_or_else(|| ApiError::not_found("purchase"))?;
                        let purchase = render_purchases(call.state, call.org_id(), vec![row]).await?.remove(0);
                        let names = outcome_names(call.state, call.org_id(), &outcome).await?;
                        let (normalized, effects) = normalized_and_effects(&outcome, &names);
                        let data = PurchaseCreatedData {
                            purchase,
                            normalized_purchase: normalized,
                            projected_effects: effects,
                            warnings: outcome.warnings.into_iter().map(Into::into).collect(),
                            idempotent_replay: accepted.replayed,
                        };
                        Style::b(&PurchaseCreatedEnvelope { success: true, data })
                    })
                    .await
                    .map_err(v1_refusal)?
            }

        /// Create a purchase order
        ///
        /// Scope `purchases:write`; `Idempotency-Key` required. A draft, numbered gap-free per organization
        /// (a refused request takes no number). Then: `confirm`, receipts, `close`, `reopen`.
        create_order("/purchase-orders", "createPurchaseOrder", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> OrderCreated::Created = CREATE_PURCHASE_ORDER, |call, write, body: PurchaseOrderInput| {
                let input = parse_order(&body.value).map_err(ApiError::validation)?;
                let command = Command::PurchaseOrder(OrderCommand::Create { id: Uuid::now_v7(), input });
                order_write(&call, write, command).await?
            }

        /// Receive goods of a purchase order
        ///
        /// Scope `purchases:write`; `Idempotency-Key` required. Records what arrived of a confirmed or
        /// partially received order and raises the stock (in the order's warehouse unless the receipt names
        /// another); the order becomes `received` once nothing is pending. A line beyond what is pending is
        /// 422 `RECEIPT_EXCEEDS_PENDING` unless `allowOverReceipt` is true; another state is 409.
        receive("/purchase-orders/:purchase_order_id/receipts", "receivePurchaseOrder", "post")
            (purchase_order_id, "Required: a retry with the same key and body returns the first outcome.")
            -> OrderCreated::Created = RECEIVE_PURCHASE_ORDER, |call, write, body: ReceiptInput| {
                let id = call.id(&ORDERS, &purchase_order_id.0)?;
                let input = parse_receipt(&body.value, today()).map_err(ApiError::validation)?;
                let command = Command::PurchaseOrder(OrderCommand::Receive { id, receipt_id: Uuid::now_v7(), input });
                order_write(&call, write, command).await?
            }
    }
    cursor_lists: {
        /// List purchases
        ///
        /// Scope `purchases:read`. A cursor list, oldest first. `date_from` and `date_to` (inclusive) filter
        /// on the invoice date; `query` matches the supplier invoice number or the supplier's name.
        list("/purchases", "listPurchases") -> PurchaseList = LIST_PURCHASES, purchases {
            supplier_id: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
            query: Query<Option<String>>,
        };

        /// List purchase orders
        ///
        /// Scope `purchases:read`. A cursor list, oldest first; filters `supplier_id` and `status`.
        list_orders("/purchase-orders", "listPurchaseOrders") -> OrderList = LIST_PURCHASE_ORDERS, purchase_orders {
            supplier_id: Query<Option<String>>,
            status: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a purchase
        ///
        /// Scope `purchases:read`. `document` tells whether its PDF can be downloaded; `pdfPath` is
        /// deprecated and never a download route.
        get("/purchases/:purchase_id", "getPurchase") -> PurchaseRead = GET_PURCHASE, PURCHASES, purchase_id
            => purchase;

        /// Get a purchase order
        ///
        /// Scope `purchases:read`. With ordered, received and pending quantities per product, and every
        /// receipt.
        get_order("/purchase-orders/:purchase_order_id", "getPurchaseOrder")
            -> OrderRead = GET_PURCHASE_ORDER, ORDERS, purchase_order_id => purchase_order;
    }
    actions: {
        /// Confirm a purchase order
        ///
        /// Scope `purchases:write`. A draft becomes `confirmed` and can receive goods; any other state is 409
        /// `STATE_CONFLICT` naming it.
        confirm("/purchase-orders/:purchase_order_id/confirm", "confirmPurchaseOrder", key optional)
            -> OrderRead = CONFIRM_PURCHASE_ORDER, ORDERS, purchase_order_id
            => order_write(|id| Command::PurchaseOrder(OrderCommand::Confirm { id }));

        /// Close a purchase order
        ///
        /// Scope `purchases:write`. A draft, confirmed or partially received order becomes `closed`: nothing
        /// more arrives. A received or closed order is 409 `STATE_CONFLICT`.
        close("/purchase-orders/:purchase_order_id/close", "closePurchaseOrder", key optional)
            -> OrderRead = CLOSE_PURCHASE_ORDER, ORDERS, purchase_order_id
            => order_write(|id| Command::PurchaseOrder(OrderCommand::Close { id, reason: None }));

        /// Reopen a purchase order
        ///
        /// Scope `purchases:write`. A closed order returns to the state it was closed from; any other state
        /// is 409 `STATE_CONFLICT`.
        reopen("/purchase-orders/:purchase_order_id/reopen", "reopenPurchaseOrder", key optional)
            -> OrderRead = REOPEN_PURCHASE_ORDER, ORDERS, purchase_order_id
            => order_write(|id| Command::PurchaseOrder(OrderCommand::Reopen { id }));
    }
}

/// One purchase, in its envelope.
async fn purchase(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::get(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let data = render_purchases(call.state, call.org_id(), vec![row]).await?.remove(0);
    Ok(Some(Style::b(&PurchaseEnvelope { success: true, data })?))
}

/// One purchase order, in its envelope.
async fn purchase_order(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::order(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let data = render_order(call.state, call.org_id(), &row.state, row.supplier_name).await?;
    Ok(Some(Style::b(&PurchaseOrderEnvelope { success: true, data })?))
}

/// A page of purchases, oldest first.
async fn purchases(
    call: &Call<'_>,
    params: PageParams,
    supplier_id: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    query: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let filter = purchase_filter(supplier_id, date_from, date_to, query)?;
    let bound = format!("purchases{:?}", (&filter.supplier_id, &filter.date_from, &filter.date_to, &filter.query));
    call.cursor_list(
        params,
        PURCHASES.list.bound(&bound),
        async |after, n| Ok(read::list(&state.pool, call.org_id(), &filter, after, n).await?),
        |row: &PurchaseRow| row.id,
        async |rows| render_purchases(state, call.org_id(), rows).await,
    )
    .await
}

/// A page of purchase orders.
async fn purchase_orders(
    call: &Call<'_>,
    params: PageParams,
    supplier_id: Option<String>,
    status: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let supplier = id_filter(supplier_id, "supplier_id")?;
    let status = one_of(status, "status", PurchaseOrderStatus::NAMES)?;
    let bound = format!("purchase_orders{:?}", (&supplier, &status));
    call.cursor_list(
        params,
        ORDERS.list.bound(&bound),
        async |after, n| {
            Ok(read::orders(&state.pool, call.org_id(), supplier, status.as_deref(), after, n).await?)
        },
        |row: &read::OrderRow| row.state.id,
        async |rows| {
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                out.push(render_order(state, call.org_id(), &row.state, row.supplier_name).await?);
            }
            Ok(out)
        },
    )
    .await
}
