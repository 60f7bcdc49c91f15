//! Tests of the sale parser and decision: both contracts, their bounds, what a sale records and what a
//! credit note un-bills of an order.

use super::*;
use serde_json::json;

const TODAY: Date = time::macros::date!(2026 - 11 - 25);

fn body() -> Value {
    json!({"voucherType": 6, "pointOfSaleId": Uuid::now_v7(), "invoiceDate": "2026-11-25",
           "items": [{"productId": Uuid::now_v7(), "quantity": 2, "unitPrice": 12100}], "total": 24200})
}

#[test]
fn the_dated_contract_refuses_computed_and_unknown_fields_in_both_spellings() {
    let mut sent = body();
    sent["tax_amount"] = json!(4200);
    sent["subtotal"] = json!(20000);
    sent["color"] = json!("rojo");
    sent["items"][0]["tributes"] = json!(1);
    let errors = parse_sale(&sent, Some(DATED_CONTRACT), TODAY).expect_err("refused");
    let fields: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
    assert!(fields.contains(&("taxAmount", "forbidden")), "{fields:?}");
    assert!(fields.contains(&("subtotal", "forbidden")), "{fields:?}");
    assert!(fields.contains(&("color", "unknown_field")), "{fields:?}");
    assert!(fields.contains(&("items[0].tributes", "unknown_field")), "{fields:?}");
    let mut no_total = body();
    no_total.as_object_mut().map(|o| o.remove("total"));
    let errors = parse_sale(&no_total, Some(DATED_CONTRACT), TODAY).expect_err("refused");
    assert_eq!(errors[0].field, "total");
    // The historical contract reads the same body without the header, totals optional.
    let mut historical = no_total.clone();
    historical["subtotal"] = json!(20000);
    historical["color"] = json!("rojo");
    let input = parse_sale(&historical, None, TODAY).expect("historical");
    assert_eq!((input.contract.as_str(), input.invoice, input.total), ("historical", true, None));
}

#[test]
fn amounts_keep_the_interfaces_bound_and_only_recorded_ones_are_held_to_the_range_of_money() {
    let beyond_money = Cents::MAX + 1;
    // The historical contract's compatibility amounts are never stored: anything the interface
    // allows is accepted, and the total is not kept.
    let mut historical = body();
    for name in ["subtotal", "taxAmount", "discountAmount", "total"] {
        historical[name] = json!(MAX_SAFE);
    }
    let input = parse_sale(&historical, None, TODAY).expect("compatibility amounts");
    assert_eq!(input.total, None);
    historical["taxAmount"] = json!(MAX_SAFE + 1);
    let errors = parse_sale(&historical, None, TODAY).expect_err("beyond the interface");
    assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("taxAmount", "out_of_range"));
    // Exempt and non-taxed amounts are recorded: beyond the money a sale holds is refused, naming it.
    let mut recorded = body();
    recorded["nonTaxedAmount"] = json!(beyond_money);
    recorded["exemptAmount"] = json!(Cents::MAX);
    let errors = parse_sale(&recorded, None, TODAY).expect_err("beyond money");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("nonTaxedAmount", "out_of_range"));
    assert!(errors[0].message.contains("at most 1000000000000 cents"), "{}", errors[0].message);
    // So is the dated contract's expected total, which is compared with the canonical one.
    let mut dated = body();
    dated["total"] = json!(beyond_money);
    let errors = parse_sale(&dated, Some(DATED_CONTRACT), TODAY).expect_err("beyond money");
    assert_eq!((errors[0].field.as_str(), errors[0].code.as_str()), ("total", "out_of_range"));
}

#[test]
fn notes_need_their_sale_and_lines_need_a_product_or_a_name() {
    let mut note = body();
    note["voucherType"] = json!(8);
    note["items"] = json!([{"quantity": 1, "unitPrice": 100}]);
    let errors = parse_sale(&note, None, TODAY).expect_err("refused");
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["items[0].name", "associatedSaleId"]);
    assert_eq!(formatted_number(Some("B"), 3, Some(42)).as_deref(), Some("B 00003-00000042"));
    assert!(voucher_kind(4).is_none(), "receipts are not sales");
}

#[test]
fn export_vouchers_are_refused_before_anything_is_decided() {
    // WSFEv1 does not authorize E vouchers: the authority would refuse such a sale every time.
    for code in [19, 20, 21] {
        let mut sent = body();
        sent["voucherType"] = json!(code);
        sent["associatedSaleId"] = json!(Uuid::now_v7());
        for dated in [Some(DATED_CONTRACT), None] {
            let errors = parse_sale(&sent, dated, TODAY).expect_err("refused");
            let fields: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
            assert_eq!(fields, [("voucherType", "invalid_value")], "{code}");
            assert!(errors[0].message.contains("export voucher"), "{}", errors[0].message);
        }
        assert!(voucher_kind(code).is_none(), "{code}");
    }
}

fn sale_facts(input: &SaleInput) -> SaleFacts {
    let fields = events::catalogue::CustomerFields { name: "Ana".into(), ..Default::default() };
    let customer: Customer = serde_json::from_value(json!({"id": Uuid::now_v7(), "fields": fields,
        "is_active": true, "created_at": "2026-11-25T12:00:00Z", "updated_at": "2026-11-25T12:00:00Z"}))
    .expect("a customer");
    let warehouse = Uuid::now_v7();
    let products = input
        .items
        .iter()
        .filter_map(|item| item.variant_id)
        .map(|id| (id, VariantFacts::plain_product(Uuid::now_v7())))
        .collect();
    SaleFacts {
        org: OrgFacts { negative_stock: NegativeStock::Allow, prices_include_tax: true, default_customer: None },
        point: Some((3, "manual".into())),
        customer: Some(customer),
        products,
        groups: Groups::new(),
        default_warehouse: Some(warehouse),
        warehouses: BTreeMap::from([(warehouse, true)]),
        payment_methods: BTreeMap::new(),
        associated: None,
        components: BTreeMap::new(),
        retired_components: BTreeMap::new(),
        order: None,
    }
}

#[test]
fn a_sale_is_decided_from_the_facts_alone() {
    let input = parse_sale(&body(), Some("2026-08-20"), TODAY).expect("a sale");
    let command = SaleCommand { id: Uuid::now_v7(), input, created_by: None };
    let mut facts = sale_facts(&command.input);
    let decided = decide(&command, &facts).expect("decided");
    assert_eq!(decided.sale.total.get(), 24200);
    assert_eq!(decided.sale.customer.name, "Ana");
    assert_eq!(decided.sale.point_of_sale_number, 3);
    assert!(!decided.fiscal_voucher, "a manual point of sale numbers its own vouchers");
    assert_eq!(decided.moves.len(), 1, "the product leaves the default warehouse");
    // References the facts lack are named, and nothing else is decided.
    facts.customer = None;
    facts.point = None;
    let Err(Rejection::Invalid { errors }) = decide(&command, &facts) else { panic!("refused") };
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["pointOfSaleId", "customerId"]);
}

#[test]
fn a_credit_note_unbills_only_what_its_sale_billed_and_reopens_an_order_its_lines_completed() {
    use events::catalogue::{FulfillmentStatus, OrderLine};
    let (order_id, line_id, variant) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let sale = |voucher: i64, quantity: i64, corrected: Option<Uuid>| {
        let mut sent = json!({"voucherType": voucher, "pointOfSaleId": Uuid::now_v7(), "invoiceDate": "2026-11-25",
            "orderId": order_id, "items": [{"productId": variant, "quantity": quantity, "unitPrice": 1210,
            "orderLineId": line_id}]});
        if let Some(corrected) = corrected {
            sent["associatedSaleId"] = json!(corrected);
        }
        SaleCommand { id: Uuid::now_v7(), input: parse_sale(&sent, None, TODAY).expect("a sale"), created_by: None }
    };
    let five = Quantity::from_units(5).expect("5");
    let billing = sale(6, 5, None);
    let mut facts = sale_facts(&billing.input);
    let customer_id = facts.customer.as_ref().map(|c| c.id).expect("a customer");
    // Delivered in full, billed by this sale in full: completed by its lines.
    let line = OrderLine {
        id: line_id,
        variant_id: Some(variant),
        name: None,
        quantity: five,
        unit_price: Cents::ZERO,
        tax_rate_id: VatRate::GENERAL,
        warehouse_id: None,
        discount: None,
        physical: true,
        delivered: five,
        billed: Quantity::ZERO,
    };
    let order = OrderState {
        number: 1,
        status: OrderStatus::Open,
        fulfillment_status: FulfillmentStatus::Fulfilled,
        customer_id,
        customer_name: "Ana".into(),
        assigned_warehouse_id: facts.default_warehouse,
        delivery_method: None,
        notes: None,
        global_discount_amount: None,
        lines: vec![line],
        reservation: None,
        quote_id: None,
        prices_include_tax: false,
        subtotal: Cents::ZERO,
        tax_amount: Cents::ZERO,
        discount_amount: Cents::ZERO,
        total: Cents::ZERO,
    };
    facts.order = Some((order, 1));
    let billed = decide(&billing, &facts).expect("billed");
    let (events, _) = billed.order.clone().expect("the order's events");
    let completed = events.last().expect("an event").state().clone();
    assert_eq!(completed.status, OrderStatus::Completed);

    // Its credit note un-bills 2: open again.
    facts.order = Some((completed, 3));
    facts.associated = Some((billed.sale.clone(), 0));
    let credit = sale(8, 2, Some(billing.id));
    let (events, _) = decide(&credit, &facts).expect("credited").order.expect("the order's events");
    let after = events.last().expect("an event").state();
    assert_eq!((after.status, after.lines[0].billed), (OrderStatus::Open, Quantity::from_units(3).expect("3")));

    // Correcting a sale that billed no order, or billed 1 of the line, it un-bills nothing.
    let mut one = billed.sale.clone();
    one.lines[0].quantity = Quantity::ONE;
    for (corrected, field) in
        [(SaleRecorded { order_id: None, ..billed.sale.clone() }, "orderId"), (one, "items[0].quantity")]
    {
        facts.associated = Some((corrected, 0));
        let Err(Rejection::Unprocessable { code, details, .. }) = decide(&credit, &facts) else { panic!("refused") };
        assert_eq!(code, "PRECONDITION_FAILED");
        assert_eq!((details[0].code.as_str(), details[0].field.as_deref()), ("ASSOCIATED_SALE_ORDER", Some(field)));
    }
}
