use super::*;
use serde_json::json;

fn facts(account: Uuid) -> MovementFacts {
    MovementFacts {
        location: Some(LocationFacts {
            currency: Currency::Pes,
            status: LocationStatus::Active,
            ledger_account_id: Uuid::from_u128(1),
            account_active: Some(true),
        }),
        accounts: BTreeMap::from([(account, (true, Currency::Pes))]),
        today: Some(Date::from_calendar_date(2026, time::Month::March, 2).expect("date")),
        ..MovementFacts::default()
    }
}

#[test]
fn an_expense_posts_the_location_out_and_its_counterparts_in() {
    let (register, account) = (Uuid::now_v7(), Uuid::now_v7());
    let body = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "expense",
        "amount": 1_000, "occurred_on": "2026-03-01", "lines": [{ "account_id": account, "amount": 600 },
        { "account_id": account, "amount": 400, "cost_center1_id": Uuid::now_v7() }] });
    let (input, _) = parse_movement(&body, false).expect("valid");
    let mut facts = facts(account);
    let center = input.counterparts[1].cost_center1_id.expect("center");
    let command = MovementCommand::Record { id: Uuid::now_v7(), input, created_by: None };
    assert!(matches!(decide(&command, &facts, 0), Err(Rejection::Invalid { .. })), "unknown cost center");
    facts.cost_centers.insert(center, true);
    let TreasuryMovementEvent::ManualMovementRecorded(movement) = decide(&command, &facts, 0).expect("decided")
    else {
        panic!("recorded")
    };
    assert!(movement.entry.is_balanced());
    let amounts: Vec<i64> = movement.entry.lines.iter().map(|l| l.functional.get()).collect();
    assert_eq!(amounts, [-1_000, 600, 400]);
}

#[test]
fn another_locations_account_is_no_counterpart() {
    let (register, safe_account) = (Uuid::now_v7(), Uuid::now_v7());
    let body = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "income",
        "amount": 1_000, "occurred_on": "2026-03-01", "account_id": safe_account });
    let (input, _) = parse_movement(&body, false).expect("valid");
    let mut facts = facts(safe_account);
    let command = MovementCommand::Record { id: Uuid::now_v7(), input, created_by: None };
    assert!(decide(&command, &facts, 0).is_ok(), "an account of no location");
    facts.location_accounts.insert(safe_account);
    match decide(&command, &facts, 0) {
        Err(Rejection::Unprocessable { code, details, .. }) => {
            assert_eq!(code, "LOCATION_ACCOUNT");
            assert_eq!(details[0].field.as_deref(), Some("account_id"));
        }
        other => panic!("refused as a location's account: {other:?}"),
    }
}

#[test]
fn bodies_follow_the_rules_of_the_spec() {
    let id = Uuid::now_v7();
    let bad = json!({ "balance_type": "safe", "balance_id": id, "direction": "sideways", "amount": 10,
        "occurred_on": "2026-03-01", "cost_center1_id": id, "lines": [{ "account_id": id, "amount": 5 }], "extra": 1 });
    let fields: Vec<String> =
        parse_movement(&bad, false).expect_err("invalid").into_iter().map(|e| e.field).collect();
    assert_eq!(fields, ["extra", "direction", "cost_center1_id", "lines"]);
    let no_version = json!({ "balance_type": "safe", "balance_id": id, "direction": "income", "amount": 10,
        "occurred_on": "2026-03-01", "account_id": id });
    let fields: Vec<String> =
        parse_movement(&no_version, true).expect_err("missing").into_iter().map(|e| e.field).collect();
    assert_eq!(fields, ["updated_at"]);
    let nulls = json!({ "balance_type": "safe", "balance_id": id, "direction": "income", "amount": 10,
        "occurred_on": "2026-03-01", "account_id": id, "lines": null, "distributions": null, "contact_id": null,
        "exchange_rate": null });
    let (input, _) = parse_movement(&nulls, false).expect("null is as good as absent");
    assert_eq!(
        (input.contact_id, input.exchange_rate, input.itemized),
        (FieldEdit::Clear, FieldEdit::Clear, false)
    );
    let most = Cents::MAX;
    let beyond = json!({ "balance_type": "safe", "balance_id": id, "direction": "income", "amount": 100,
        "occurred_on": "2026-03-01", "account_id": id, "distributions": [{ "cost_center1_id": id, "amount_cents": most },
        { "cost_center1_id": id, "amount_cents": most }] });
    let fields: Vec<String> =
        parse_movement(&beyond, false).expect_err("a sum past any amount").into_iter().map(|e| e.field).collect();
    assert_eq!(fields, ["distributions"]);
    assert!(parse_deletion(&json!({})).is_err());
    assert!(parse_deletion(&json!({ "updated_at": "2026-03-01T10:00:00-03:00", "note": "x" })).is_err());
}

#[test]
fn a_stale_replacement_or_deletion_is_refused_and_a_current_one_reverses_the_last_entry() {
    let (register, account, id) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let body = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "income",
        "amount": 500, "occurred_on": "2026-03-01", "account_id": account, "contact_id": Uuid::now_v7() });
    let (input, _) = parse_movement(&body, false).expect("valid");
    let mut facts = facts(account);
    facts.contact_known = true;
    let record = MovementCommand::Record { id, input: input.clone(), created_by: Some("ana".into()) };
    let TreasuryMovementEvent::ManualMovementRecorded(first) = decide(&record, &facts, 0).expect("recorded") else {
        panic!("recorded")
    };
    let read = OffsetDateTime::UNIX_EPOCH;
    facts.current = Some(*first.clone());
    facts.updated_at = Some(read);
    let mut again = input.clone();
    again.contact_id = FieldEdit::Keep;
    again.amount = Cents::of(700);
    again.counterparts[0].amount = Cents::of(700);
    let stale = MovementCommand::Replace { id, input: again.clone(), updated_at: read + time::Duration::SECOND };
    assert!(matches!(decide(&stale, &facts, 1), Err(Rejection::Conflict { .. })));
    let replace = MovementCommand::Replace { id, input: again, updated_at: read };
    let TreasuryMovementEvent::ManualMovementReplaced(replaced) = decide(&replace, &facts, 1).expect("replaced")
    else {
        panic!("replaced")
    };
    assert_eq!(replaced.reversal.lines[0].functional, Cents::of(-500), "the first version undone");
    assert_eq!(replaced.movement.entry.lines[0].functional, Cents::of(700));
    assert_eq!(replaced.movement.contact_id, first.contact_id, "an omitted contact is kept");
    assert_eq!(replaced.movement.created_by.as_deref(), Some("ana"));
    assert_ne!(replaced.reversal.id, replaced.movement.entry.id);
}

fn rate(text: &str) -> ExchangeRate {
    text.parse().expect("rate")
}

fn day(n: u8) -> Date {
    Date::from_calendar_date(2026, time::Month::March, n).expect("date")
}

/// A dollar bank account holding 200.00 dollars carried at 190,000.00 pesos (950 a dollar), the
/// central bank's rate of March 1st at 1,000, and an exchange-difference account.
fn dollar_facts(account: Uuid) -> MovementFacts {
    let mut facts = facts(account);
    if let Some(location) = facts.location.as_mut() {
        location.currency = Currency::Dol;
    }
    facts.holdings.insert(bank(), Holding { native: Cents::of(20_000), functional: Cents::of(19_000_000) });
    facts.central_rate = Some((day(1), rate("1000")));
    facts.exchange_account = Some((Uuid::from_u128(9), true));
    facts
}

/// The dollar bank account `dollar_facts` holds at and `dollar_body` names.
fn bank() -> LocationRef {
    LocationRef { kind: LocationKind::BankAccount, id: Uuid::from_u128(7) }
}

fn dollar_body(account: Uuid, direction: &str, amount: i64, extra: Value) -> MovementInput {
    let mut body = json!({ "balance_type": "bank_account", "balance_id": bank().id,
        "direction": direction, "amount": amount, "occurred_on": "2026-03-01", "account_id": account });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    parse_movement(&body, false).expect("valid").0
}

fn recorded(input: MovementInput, facts: &MovementFacts) -> Result<ManualMovement, Rejection> {
    let command = MovementCommand::Record { id: Uuid::from_u128(5), input, created_by: None };
    match decide(&command, facts, 0)? {
        TreasuryMovementEvent::ManualMovementRecorded(movement) => Ok(*movement),
        other => panic!("recorded, not {other:?}"),
    }
}

/// Each line's account, pesos and dollars.
fn lines(movement: &ManualMovement) -> Vec<(u128, i64, Option<i64>)> {
    movement
        .entry
        .lines
        .iter()
        .map(|l| (l.account_id.as_u128(), l.functional.get(), l.native.map(Cents::get)))
        .collect()
}

#[test]
fn a_dollar_income_enters_at_the_rate_of_its_date() {
    let account = Uuid::from_u128(3);
    let income = recorded(dollar_body(account, "income", 10_000, json!({})), &dollar_facts(account)).expect("ok");
    // 100.00 dollars at the central bank's 1,000: 100,000.00 pesos, no exchange difference.
    assert_eq!(lines(&income), [(1, 10_000_000, Some(10_000)), (3, -10_000_000, None)]);
    assert_eq!(
        income.rate,
        Some(AppliedRate { value: rate("1000"), source: RateSource::CentralBank, rate_date: day(1) })
    );
    assert_eq!(income.exchange_difference, Some(Cents::ZERO));
    let manual = recorded(
        dollar_body(account, "income", 10_000, json!({ "exchange_rate": "1012.5" })),
        &dollar_facts(account),
    );
    let manual = manual.expect("ok");
    assert_eq!(lines(&manual)[0], (1, 10_125_000, Some(10_000)));
    assert_eq!(manual.rate.map(|r| (r.source, r.rate_date)), Some((RateSource::Manual, day(1))));
}

#[test]
fn a_dollar_expense_leaves_at_carrying_value_and_books_the_difference() {
    let account = Uuid::from_u128(3);
    // 50.00 of 200.00 dollars carried at 190,000.00 leave at 47,500.00 pesos; at the rate of 1,000 the
    // counterpart receives 50,000.00: a gain of 2,500.00, credited to the exchange-difference account.
    let gain = recorded(dollar_body(account, "expense", 5_000, json!({})), &dollar_facts(account)).expect("ok");
    assert_eq!(lines(&gain), [(1, -4_750_000, Some(-5_000)), (3, 5_000_000, None), (9, -250_000, None)]);
    assert_eq!(gain.exchange_difference, Some(Cents::of(250_000)));
    assert!(gain.entry.is_balanced());
    // At a manual 900 the counterpart receives 45,000.00: a loss of 2,500.00, debited.
    let loss =
        recorded(dollar_body(account, "expense", 5_000, json!({ "exchange_rate": 900 })), &dollar_facts(account));
    let loss = loss.expect("ok");
    assert_eq!(lines(&loss), [(1, -4_750_000, Some(-5_000)), (3, 4_500_000, None), (9, 250_000, None)]);
    assert_eq!(loss.exchange_difference, Some(Cents::of(-250_000)));
    // At the carrying rate there is no difference, and no account is needed.
    let mut facts = dollar_facts(account);
    facts.exchange_account = None;
    let even =
        recorded(dollar_body(account, "expense", 5_000, json!({ "exchange_rate": 950 })), &facts).expect("ok");
    assert_eq!(lines(&even), [(1, -4_750_000, Some(-5_000)), (3, 4_750_000, None)]);
    // Any difference without the account is refused.
    let refused = recorded(dollar_body(account, "expense", 5_000, json!({})), &facts).expect_err("no account");
    assert!(
        matches!(refused, Rejection::Unprocessable { ref code, .. } if code == "EXCHANGE_DIFFERENCE_ACCOUNT_MISSING")
    );
    // Dollars beyond the holdings leave at the rate: 200.00 at 190,000.00 and 50.00 more at 1,000.
    let beyond = recorded(dollar_body(account, "expense", 25_000, json!({})), &dollar_facts(account)).expect("ok");
    assert_eq!(lines(&beyond), [(1, -24_000_000, Some(-25_000)), (3, 25_000_000, None), (9, -1_000_000, None)]);
}

#[test]
fn dollars_need_a_rate_and_pesos_refuse_one() {
    let account = Uuid::from_u128(3);
    let mut facts = dollar_facts(account);
    facts.central_rate = None;
    let refused = recorded(dollar_body(account, "income", 100, json!({})), &facts).expect_err("no rate");
    let Rejection::Unprocessable { code, details, .. } = refused else { panic!("422") };
    assert_eq!(code, "EXCHANGE_RATE_NOT_FOUND");
    assert!(details[0].message.contains("2026-03-01"), "names the date: {}", details[0].message);
    assert!(recorded(dollar_body(account, "income", 100, json!({ "exchange_rate": "1" })), &facts).is_ok());
    let pesos = facts_with_rate_on_pesos(account);
    assert!(matches!(pesos, Err(Rejection::Invalid { ref errors }) if errors[0].field == "exchange_rate"));
}

fn facts_with_rate_on_pesos(account: Uuid) -> Result<ManualMovement, Rejection> {
    recorded(dollar_body(account, "income", 100, json!({ "exchange_rate": "1000" })), &facts(account))
}

/// Replaces `previous` with `input` and answers the new version's rate.
fn replaced_rate(previous: &ManualMovement, input: MovementInput, facts: &MovementFacts) -> AppliedRate {
    let mut facts = facts.clone();
    facts.current = Some(previous.clone());
    facts.updated_at = Some(OffsetDateTime::UNIX_EPOCH);
    let command =
        MovementCommand::Replace { id: Uuid::from_u128(5), input, updated_at: OffsetDateTime::UNIX_EPOCH };
    match decide(&command, &facts, 1).expect("replaced") {
        TreasuryMovementEvent::ManualMovementReplaced(replaced) => replaced.movement.rate.expect("a dollar rate"),
        other => panic!("replaced, not {other:?}"),
    }
}

#[test]
fn a_dollar_replacement_keeps_or_resolves_its_rate_as_the_spec_says() {
    let account = Uuid::from_u128(3);
    let mut facts = dollar_facts(account);
    let sent = |direction, amount, extra| dollar_body(account, direction, amount, extra);
    let expense = recorded(sent("expense", 5_000, json!({ "exchange_rate": 990 })), &facts).expect("ok");
    // The central bank has since published 1,010 for that date.
    facts.central_rate = Some((day(1), rate("1010")));
    let manual_990 = AppliedRate { value: rate("990"), source: RateSource::Manual, rate_date: day(1) };
    let central = AppliedRate { value: rate("1010"), source: RateSource::CentralBank, rate_date: day(1) };
    // Unchanged amount, date, location and direction: omitted keeps the stored rate, null re-resolves.
    assert_eq!(replaced_rate(&expense, sent("expense", 5_000, json!({ "note": "x" })), &facts), manual_990);
    assert_eq!(replaced_rate(&expense, sent("expense", 5_000, json!({ "exchange_rate": null })), &facts), central);
    // A changed amount on an expense: omitted re-resolves; sending the rate keeps it, as manual.
    assert_eq!(replaced_rate(&expense, sent("expense", 6_000, json!({})), &facts), central);
    assert_eq!(
        replaced_rate(&expense, sent("expense", 6_000, json!({ "exchange_rate": "990" })), &facts),
        manual_990
    );
    // An income at the central bank's rate keeps its origin and date when the amount changes and the
    // rate is omitted or the same; another rate is manual.
    facts.central_rate = Some((day(1), rate("1000")));
    let income = recorded(sent("income", 5_000, json!({})), &facts).expect("ok");
    let first = income.rate.expect("rate");
    facts.central_rate = Some((day(1), rate("1010")));
    assert_eq!(replaced_rate(&income, sent("income", 7_000, json!({})), &facts), first);
    assert_eq!(replaced_rate(&income, sent("income", 7_000, json!({ "exchange_rate": "1000" })), &facts), first);
    let other = replaced_rate(&income, sent("income", 7_000, json!({ "exchange_rate": "1005" })), &facts);
    assert_eq!((other.value, other.source), (rate("1005"), RateSource::Manual));
    assert_eq!(replaced_rate(&income, sent("income", 7_000, json!({ "exchange_rate": null })), &facts), central);
}

#[test]
fn a_replacement_on_the_same_location_first_gives_back_what_it_moved() {
    let account = Uuid::from_u128(3);
    let mut facts = dollar_facts(account);
    let expense = recorded(dollar_body(account, "expense", 5_000, json!({})), &facts).expect("ok");
    // The write model now holds 150.00 dollars at 142,500.00; replacing with 100.00 dollars values them
    // against the 200.00 held before the first version: 95,000.00.
    facts.holdings.insert(bank(), Holding { native: Cents::of(15_000), functional: Cents::of(14_250_000) });
    facts.current = Some(expense);
    facts.updated_at = Some(OffsetDateTime::UNIX_EPOCH);
    let input = dollar_body(account, "expense", 10_000, json!({}));
    let command =
        MovementCommand::Replace { id: Uuid::from_u128(5), input, updated_at: OffsetDateTime::UNIX_EPOCH };
    let TreasuryMovementEvent::ManualMovementReplaced(replaced) = decide(&command, &facts, 1).expect("ok") else {
        panic!("replaced")
    };
    assert_eq!(replaced.reversal.lines[0].functional, Cents::of(4_750_000));
    assert_eq!(lines(&replaced.movement)[0], (1, -9_500_000, Some(-10_000)));
}

#[test]
fn undoing_a_version_keeps_what_it_gives_back_within_the_range_of_money() {
    fn out_of_range(decided: Result<TreasuryMovementEvent, Rejection>) -> bool {
        matches!(decided, Err(Rejection::Unprocessable { ref code, .. }) if code == "OUT_OF_RANGE")
    }
    let account = Uuid::from_u128(3);
    let mut facts = dollar_facts(account);
    // 100.00 dollars in at 1,000: 100,000.00 pesos.
    let income = recorded(dollar_body(account, "income", 10_000, json!({})), &facts).expect("ok");
    // Since then the bank spent past what it held, to 50,000.00 pesos above the lowest amount of money:
    // giving the income back would carry its dollars below it.
    let spent = Holding { native: Cents::of(-10_000), functional: Cents::of(5_000_000 - Cents::MAX) };
    facts.holdings.insert(bank(), spent);
    facts.current = Some(income);
    facts.updated_at = Some(OffsetDateTime::UNIX_EPOCH);
    let delete = MovementCommand::Delete { id: Uuid::from_u128(5), updated_at: OffsetDateTime::UNIX_EPOCH };
    assert!(out_of_range(decide(&delete, &facts, 1)), "a deletion gives the income back");
    // Moved to a peso register, the income leaves the bank just the same.
    let body = json!({ "balance_type": "cash_register", "balance_id": Uuid::from_u128(8), "direction": "income",
        "amount": 10_000, "occurred_on": "2026-03-01", "account_id": account });
    let (input, _) = parse_movement(&body, false).expect("valid");
    if let Some(location) = facts.location.as_mut() {
        location.currency = Currency::Pes;
    }
    let moved = MovementCommand::Replace { id: Uuid::from_u128(5), input, updated_at: OffsetDateTime::UNIX_EPOCH };
    assert!(out_of_range(decide(&moved, &facts, 1)), "a replacement elsewhere gives it back too");
    // With the bank holding no more than the income brought, both go through.
    facts.holdings.insert(bank(), Holding { native: Cents::of(10_000), functional: Cents::of(10_000_000) });
    assert!(matches!(decide(&delete, &facts, 1), Ok(TreasuryMovementEvent::ManualMovementDeleted(_))));
    assert!(matches!(decide(&moved, &facts, 1), Ok(TreasuryMovementEvent::ManualMovementReplaced(_))));
}
