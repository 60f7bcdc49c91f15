use super::*;
use serde_json::json;

fn facts(contact: Uuid, method: Uuid, register: LocationRef, sale: Uuid) -> PaymentFacts {
    let card = MethodFacts {
        active: true,
        requires_reference: false,
        fee_percentage: Some(Percentage::from_hundredths(250).expect("2.5%")),
        fee_fixed: Cents::of(30),
    };
    let location = crate::treasury::LocationFacts {
        currency: Currency::Pes,
        status: LocationStatus::Active,
        ledger_account_id: Uuid::from_u128(1),
        account_active: Some(true),
    };
    PaymentFacts {
        contact_known: true,
        methods: BTreeMap::from([(method, card)]),
        locations: BTreeMap::from([(register, location)]),
        documents: BTreeMap::from([(sale, (contact, Cents::of(1_000)))]),
        contact_account: Some((Uuid::from_u128(2), true)),
        fees_account: Some((Uuid::from_u128(3), true)),
        today: Some(Date::from_calendar_date(2026, time::Month::March, 2).expect("date")),
        ..PaymentFacts::default()
    }
}

fn body(contact: Uuid, method: Uuid, register: LocationRef, sale: Uuid, allocated: i64) -> Value {
    json!({ "customer_id": contact, "occurred_on": "2026-03-01",
        "lines": [{ "payment_method_id": method, "amount": 1_000, "balance_type": "cash_register", "balance_id": register.id }],
        "allocations": [{ "sale_id": sale, "amount": allocated }] })
}

#[test]
fn a_customer_payment_posts_the_net_to_the_location_and_the_fee_to_its_account() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    let input = parse_payment(&body(contact, method, register, sale, 1_000), PaymentSide::Customer).expect("valid");
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id: Uuid::now_v7(), input, created_by: None };
    let PaymentFact::Recorded(payment) = decide(&command, &facts(contact, method, register, sale)).expect("ok") else {
        panic!("recorded")
    };
    // 2.5% of 1,000 cents is 25, plus 30 fixed: the register receives 945.
    let lines: Vec<(u128, i64)> =
        payment.entry.lines.iter().map(|l| (l.account_id.as_u128(), l.functional.get())).collect();
    assert_eq!(lines, [(1, 945), (3, 55), (2, -1_000)]);
    assert!(payment.entry.is_balanced());
    let supplier = PaymentCommand::Record {
        side: PaymentSide::Supplier,
        id: Uuid::now_v7(),
        input: parse_payment(
            &json!({ "supplier_id": contact, "occurred_on": "2026-03-01", "lines": [{ "payment_method_id": method,
                "amount": 1_000, "balance_type": "cash_register", "balance_id": register.id }] }),
            PaymentSide::Supplier,
        )
        .expect("valid"),
        created_by: None,
    };
    let PaymentFact::Recorded(paid) = decide(&supplier, &facts(contact, method, register, sale)).expect("ok") else {
        panic!("recorded")
    };
    let lines: Vec<i64> = paid.entry.lines.iter().map(|l| l.functional.get()).collect();
    assert_eq!(lines, [-1_055, 55, 1_000], "the location pays the fee on top");
}

#[test]
fn allocations_stay_within_the_payment_and_what_each_document_owes() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    let mut facts = facts(contact, method, register, sale);
    facts.documents.insert(sale, (contact, Cents::of(400)));
    let input = parse_payment(&body(contact, method, register, sale, 500), PaymentSide::Customer).expect("valid");
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id: Uuid::now_v7(), input, created_by: None };
    let refused = decide(&command, &facts).expect_err("owes 400");
    assert!(matches!(refused, Rejection::Unprocessable { ref code, .. } if code == "ALLOCATION_EXCEEDS_BALANCE"));
    facts.documents.insert(sale, (Uuid::now_v7(), Cents::of(4_000)));
    assert!(matches!(decide(&command, &facts), Err(Rejection::Invalid { .. })), "another customer's sale is unknown");
    let fields: Vec<String> =
        parse_payment(&json!({ "customer_id": contact, "lines": [], "purchase_id": 1 }), PaymentSide::Customer)
            .expect_err("invalid")
            .into_iter()
            .map(|e| e.field)
            .collect();
    assert_eq!(fields, ["purchase_id", "occurred_on", "lines"]);
}

#[test]
fn a_void_reverses_the_entry_and_gives_the_allocations_back_once() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    let mut facts = facts(contact, method, register, sale);
    let id = Uuid::now_v7();
    let input = parse_payment(&body(contact, method, register, sale, 600), PaymentSide::Customer).expect("valid");
    let record = PaymentCommand::Record { side: PaymentSide::Customer, id, input, created_by: None };
    let PaymentFact::Recorded(payment) = decide(&record, &facts).expect("ok") else { panic!("recorded") };
    facts.current = Some(*payment.clone());
    let void = PaymentCommand::Void { side: PaymentSide::Customer, id };
    let PaymentFact::Voided(voided) = decide(&void, &facts).expect("ok") else { panic!("voided") };
    assert_eq!(voided.allocations, payment.allocations);
    assert_eq!(voided.reversal.lines[0].functional, -payment.entry.lines[0].functional);
    facts.voided = true;
    assert!(matches!(decide(&void, &facts), Err(Rejection::StateConflict { .. })));
}

#[test]
fn an_inactive_method_is_not_found_and_an_inactive_location_a_state_conflict() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    let input = parse_payment(&body(contact, method, register, sale, 1_000), PaymentSide::Customer).expect("valid");
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id: Uuid::now_v7(), input, created_by: None };
    let code = |facts: &PaymentFacts| match decide(&command, facts) {
        Err(Rejection::StateConflict { details, .. }) => details.first().map(|d| d.code.clone()),
        other => panic!("expected a state conflict, got {other:?}"),
    };
    let not_found = |facts: &PaymentFacts| match decide(&command, facts) {
        Err(Rejection::Invalid { errors }) => {
            errors.iter().map(|e| (e.field.clone(), e.code.clone())).collect::<Vec<(String, String)>>()
        }
        other => panic!("expected an unknown reference, got {other:?}"),
    };
    let mut stopped = facts(contact, method, register, sale);
    stopped.methods.get_mut(&method).expect("method").active = false;
    assert_eq!(not_found(&stopped), [("lines[0].payment_method_id".to_owned(), "not_found".to_owned())]);
    let mut gone = facts(contact, method, register, sale);
    gone.contact_known = false;
    assert_eq!(not_found(&gone), [("customer_id".to_owned(), "not_found".to_owned())]);
    let mut closed = facts(contact, method, register, sale);
    closed.locations.get_mut(&register).expect("location").status = LocationStatus::Inactive;
    assert_eq!(code(&closed).as_deref(), Some("LOCATION_INACTIVE"));
    let mut unlinked = facts(contact, method, register, sale);
    unlinked.locations.get_mut(&register).expect("location").account_active = Some(false);
    assert_eq!(code(&unlinked).as_deref(), Some("LOCATION_INACTIVE"));
}

#[test]
fn a_dollar_line_enters_at_its_rate_with_its_fee_in_dollars() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let bank = LocationRef { kind: LocationKind::BankAccount, id: Uuid::now_v7() };
    let mut facts = facts(contact, method, bank, sale);
    facts.locations.get_mut(&bank).expect("location").currency = Currency::Dol;
    facts.central_rate = Some((Date::from_calendar_date(2026, time::Month::March, 1).expect("date"), "1000".parse().expect("rate")));
    let body = json!({ "customer_id": contact, "occurred_on": "2026-03-01",
        "lines": [{ "payment_method_id": method, "amount": 10_000, "balance_type": "bank_account", "balance_id": bank.id }] });
    let input = parse_payment(&body, PaymentSide::Customer).expect("valid");
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id: Uuid::now_v7(), input, created_by: None };
    let PaymentFact::Recorded(payment) = decide(&command, &facts).expect("ok") else { panic!("recorded") };
    // 100.00 dollars at 1,000: 100,000.00 pesos. The fee, 2.5% of 10,000 cents plus 30, is 280 cents of
    // dollars: the bank receives 97.20 dollars, carried at 97,200.00 pesos; the fee is 2,800.00 pesos.
    assert_eq!((payment.total.get(), payment.lines[0].pesos.get(), payment.lines[0].fee.get()), (10_000_000, 10_000_000, 280_000));
    let lines: Vec<(i64, Option<i64>)> =
        payment.entry.lines.iter().map(|l| (l.functional.get(), l.native.map(Cents::get))).collect();
    assert_eq!(lines, [(9_720_000, Some(9_720)), (280_000, None), (-10_000_000, None)]);
    assert!(payment.entry.is_balanced());
}

#[test]
fn missing_references_and_malformed_lines_are_named_together() {
    let (contact, method, sale) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let register = LocationRef { kind: LocationKind::CashRegister, id: Uuid::now_v7() };
    // The first line's method is unknown; the second is at a peso register with a rate: one 400 names both.
    let line = |method: Uuid| {
        json!({ "payment_method_id": method, "amount": 1_000,
            "balance_type": "cash_register", "balance_id": register.id })
    };
    let mut dated = line(method);
    dated["exchange_rate"] = json!("1000");
    let body = json!({ "customer_id": contact, "occurred_on": "2026-03-01", "lines": [line(Uuid::now_v7()), dated] });
    let input = parse_payment(&body, PaymentSide::Customer).expect("valid");
    let command = PaymentCommand::Record { side: PaymentSide::Customer, id: Uuid::now_v7(), input, created_by: None };
    let Err(Rejection::Invalid { errors }) = decide(&command, &facts(contact, method, register, sale)) else {
        panic!("refused field by field")
    };
    let named: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
    assert_eq!(named, [("lines[0].payment_method_id", "not_found"), ("lines[1].exchange_rate", "not_allowed")]);
}
