//! Tests of the tax engine: hand-checked worked examples that pin the rounding, the errors, and
//! property tests of the invariants every document keeps on every price basis.

use super::*;
use proptest::prelude::*;

fn quantity(text: &str) -> Quantity {
    text.parse().expect("a quantity")
}

fn money(value: i64) -> Cents {
    Cents::new(value).expect("in range")
}

fn pct(text: &str) -> Option<Discount> {
    Some(Discount::Percentage(text.parse().expect("a percentage")))
}

fn fixed(value: i64) -> Option<Discount> {
    Some(Discount::Fixed(money(value)))
}

fn vat(code: i32) -> VatRate {
    VatRate::from_code(i64::from(code)).expect("a VAT rate code")
}

fn line(quantity_text: &str, unit_price: i64, vat_code: i32, discount: Option<Discount>) -> Line {
    Line { quantity: quantity(quantity_text), unit_price: money(unit_price), vat_code: vat(vat_code), discount }
}

fn no_adjustments() -> Adjustments {
    Adjustments::default()
}

/// One hand-checked document.
struct Example {
    name: &'static str,
    voucher: i32,
    lines: Vec<Line>,
    adjustments: Adjustments,
    /// Per line: amount, line discount, global share, net, VAT (the line total is net + VAT).
    lines_out: Vec<[i64; 5]>,
    /// Per VAT code: code, base, amount.
    breakdown: Vec<(i32, i64, i64)>,
    /// subtotal, tax_amount, discount_amount, total, taxed_net.
    header: [i64; 5],
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            name: "A invoice: two rates and line discounts",
            voucher: 1,
            lines: vec![
                // 2 × 1000.00 = 200000; 10% off = 20000; 180000 × 21% = 37800.
                line("2", 100_000, 5, pct("10")),
                // 3 × 333.33 = 99999; × 10.5% = 10499.895 → 10500.
                line("3", 33_333, 4, None),
                // 3 × 19.99 = 5997; 12.5% off = 749.625 → 750; 5247 × 21% = 1101.87 → 1102.
                line("3", 1_999, 5, pct("12.5")),
            ],
            adjustments: no_adjustments(),
            lines_out: vec![
                [200_000, 20_000, 0, 180_000, 37_800],
                [99_999, 0, 0, 99_999, 10_500],
                [5_997, 750, 0, 5_247, 1_102],
            ],
            breakdown: vec![(4, 99_999, 10_500), (5, 185_247, 38_902)],
            header: [285_246, 49_402, 20_750, 334_648, 285_246],
        },
        Example {
            name: "B invoice: 121.00 at 21% is 100.00 + 21.00",
            voucher: 6,
            lines: vec![line("1", 12_100, 5, None)],
            adjustments: no_adjustments(),
            lines_out: vec![[12_100, 0, 0, 10_000, 2_100]],
            breakdown: vec![(5, 10_000, 2_100)],
            header: [10_000, 2_100, 0, 12_100, 10_000],
        },
        Example {
            name: "B invoice: awkward splits",
            voucher: 6,
            lines: vec![
                // 3 × 3.33 = 999 gross; net = 999 / 1.21 = 825.619… → 826; VAT = 999 − 826 = 173.
                line("3", 333, 5, None),
                // 1.5 × 9.99 = 1498.5 → 1499 gross; net = 1499 / 1.105 = 1356.561… → 1357; VAT = 142.
                line("1.5", 999, 4, None),
            ],
            adjustments: no_adjustments(),
            lines_out: vec![[999, 0, 0, 826, 173], [1_499, 0, 0, 1_357, 142]],
            breakdown: vec![(4, 1_357, 142), (5, 826, 173)],
            header: [2_183, 315, 0, 2_498, 2_183],
        },
        Example {
            name: "C invoice: no VAT, subtotal is total, no breakdown",
            voucher: 11,
            lines: vec![line("2", 5_000, 5, None), line("1", 1_000, 4, pct("10"))],
            adjustments: no_adjustments(),
            lines_out: vec![[10_000, 0, 0, 10_000, 0], [1_000, 100, 0, 900, 0]],
            breakdown: vec![],
            header: [10_900, 0, 100, 10_900, 10_900],
        },
        Example {
            name: "B invoice: five lines of one rate, rounded once",
            voucher: 6,
            // 500 gross at 21%: net = 500 / 1.21 = 413.22… → 413, VAT 87 (413 × 21% = 86.73, within
            // the authority's cent; rounding each line, 5 × 83 = 415 and 85 would be 2.15 cents off).
            // 413 over five equal lines: 82.6 each, 82 down, the three missing cents to the earliest.
            lines: vec![line("1", 100, 5, None); 5],
            adjustments: no_adjustments(),
            lines_out: vec![
                [100, 0, 0, 83, 17],
                [100, 0, 0, 83, 17],
                [100, 0, 0, 83, 17],
                [100, 0, 0, 82, 18],
                [100, 0, 0, 82, 18],
            ],
            breakdown: vec![(5, 413, 87)],
            header: [413, 87, 0, 500, 413],
        },
        Example {
            name: "A invoice: three lines of one rate, rounded once",
            voucher: 1,
            // 3 × 1.02 net = 306 at 21%: VAT = 64.26 → 64 (rounding each line, 3 × 21 = 63).
            // 64 over three equal lines: 21.33 each, 21 down, the missing cent to the first.
            lines: vec![line("1", 102, 5, None); 3],
            adjustments: no_adjustments(),
            lines_out: vec![[102, 0, 0, 102, 22], [102, 0, 0, 102, 21], [102, 0, 0, 102, 21]],
            breakdown: vec![(5, 306, 64)],
            header: [306, 64, 0, 370, 306],
        },
        Example {
            name: "voucher 90: prices with VAT, a fixed line discount and a 0% line in the breakdown",
            voucher: 90,
            lines: vec![
                // 10000 gross; net = 10000 / 1.21 = 8264.46… → 8264; VAT 1736.
                line("1", 10_000, 5, None),
                // 2 × 25.00 = 5000; 5.00 off = 4500 gross; net = 3719.008… → 3719; VAT 781.
                line("2", 2_500, 5, fixed(500)),
                // Taxed at 0%: all of it is net.
                line("1", 500, 3, None),
            ],
            adjustments: no_adjustments(),
            lines_out: vec![[10_000, 0, 0, 8_264, 1_736], [5_000, 500, 0, 3_719, 781], [500, 0, 0, 500, 0]],
            breakdown: vec![(3, 500, 0), (5, 11_983, 2_517)],
            header: [12_483, 2_517, 500, 15_000, 12_483],
        },
        Example {
            name: "A invoice: a percentage global discount over three rates, one cent left to place",
            voucher: 1,
            lines: vec![line("1", 1_000, 5, None), line("2", 750, 4, None), line("1", 333, 6, None)],
            // 15% of 2833 = 424.95 → 425. Exact shares: 425 × 1000 / 2833 = 150.018 (remainder 50),
            // 425 × 1500 / 2833 = 225.026 (remainder 75), 425 × 333 / 2833 = 49.956 (remainder 2708).
            // Floors add to 424; the missing cent goes to the largest remainder, the third line.
            // VAT: 850 × 21% = 178.5 → 179; 1275 × 10.5% = 133.875 → 134; 283 × 27% = 76.41 → 76.
            adjustments: Adjustments { global_discount: pct("15"), ..no_adjustments() },
            lines_out: vec![[1_000, 0, 150, 850, 179], [1_500, 0, 225, 1_275, 134], [333, 0, 50, 283, 76]],
            breakdown: vec![(4, 1_275, 134), (5, 850, 179), (6, 283, 76)],
            header: [2_408, 389, 425, 2_797, 2_408],
        },
        Example {
            name: "B invoice: a fixed global discount, the tie going to the earliest line",
            voucher: 6,
            lines: vec![line("1", 1_000, 5, None), line("1", 1_000, 5, None), line("1", 1_000, 4, None)],
            // 100 over three equal lines: 33 each and one cent left, every remainder equal: line 0.
            // At 21%: gross 966 + 967 = 1933 → net 1597.52… → 1598, VAT 335; 1598 shared over 966 and
            // 967 is 798.59 and 799.41, 798 and 799 down, the missing cent to the larger remainder (the
            // first): 799 and 799. At 10.5%: 967 → 875.11… → 875, VAT 92.
            adjustments: Adjustments { global_discount: fixed(100), ..no_adjustments() },
            lines_out: vec![[1_000, 0, 34, 799, 167], [1_000, 0, 33, 799, 168], [1_000, 0, 33, 875, 92]],
            breakdown: vec![(4, 875, 92), (5, 1_598, 335)],
            header: [2_473, 427, 100, 2_900, 2_473],
        },
        Example {
            name: "A invoice: exempt and non-taxed amounts carry no VAT",
            voucher: 1,
            lines: vec![line("1", 10_000, 5, None)],
            adjustments: Adjustments { exempt: money(5_000), non_taxed: money(2_500), ..no_adjustments() },
            lines_out: vec![[10_000, 0, 0, 10_000, 2_100]],
            breakdown: vec![(5, 10_000, 2_100)],
            header: [17_500, 2_100, 0, 19_600, 10_000],
        },
        Example {
            name: "A invoice: line and global percentages together, half a cent rounding up",
            voucher: 2,
            // 2.5 × 1.01 = 2.525 → 253 (half a cent, away from zero); 0.005 × 100.00 = 50 exactly.
            // 253 with 10% off = 25.3 → 25, leaving 228; 50 stays 50. Sum 278; 50% = 139.
            // Shares: 139 × 228 / 278 = 114 exactly, 139 × 50 / 278 = 25 exactly.
            // VAT: 114 × 21% = 23.94 → 24; 25 × 2.5% = 0.625 → 1.
            lines: vec![line("2.5", 101, 5, pct("10")), line("0.005", 10_000, 9, None)],
            adjustments: Adjustments { global_discount: pct("50"), ..no_adjustments() },
            lines_out: vec![[253, 25, 114, 114, 24], [50, 0, 25, 25, 1]],
            breakdown: vec![(5, 114, 24), (9, 25, 1)],
            header: [139, 25, 164, 164, 139],
        },
    ]
}

#[test]
fn worked_examples_come_out_as_hand_checked() {
    for example in examples() {
        let basis = PriceBasis::of_voucher(example.voucher);
        let lines = example
            .lines_out
            .iter()
            .map(|[amount, discount, share, net, vat]| LineAmounts {
                amount: money(*amount),
                discount: money(*discount),
                global_discount: money(*share),
                net: money(*net),
                vat: money(*vat),
                total: money(net + vat),
            })
            .collect();
        let breakdown = example
            .breakdown
            .iter()
            .map(|(code, base, amount)| VatAmount { code: vat(*code), base: money(*base), amount: money(*amount) })
            .collect();
        let [subtotal, tax_amount, discount_amount, total, taxed_net] = example.header.map(money);
        let expected = Computed {
            lines,
            breakdown,
            subtotal,
            tax_amount,
            discount_amount,
            total,
            taxed_net,
            exempt: example.adjustments.exempt,
            non_taxed: example.adjustments.non_taxed,
        };
        assert_eq!(compute(basis, &example.lines, &example.adjustments), Ok(expected), "{}", example.name);
    }
}

#[test]
fn each_voucher_letter_has_its_basis() {
    let net = [1, 2, 3, 4, 5, 51, 52, 53, 54, 201, 202, 203];
    let gross = [6, 7, 8, 9, 10, 206, 207, 208, 90, 14, 0, 95, -1, 999];
    let without_vat = [11, 12, 13, 15, 19, 20, 21, 211, 212, 213];
    for code in net {
        assert_eq!(PriceBasis::of_voucher(code), PriceBasis::Net, "{code}");
    }
    for code in gross {
        assert_eq!(PriceBasis::of_voucher(code), PriceBasis::Gross, "{code}");
    }
    for code in without_vat {
        assert_eq!(PriceBasis::of_voucher(code), PriceBasis::GrossWithoutVat, "{code}");
    }
}

#[test]
fn missing_cents_go_to_the_earliest_lines_among_equal_remainders() {
    let lines = [line("1", 1_000, 5, None), line("1", 1_000, 5, None), line("1", 1_000, 5, None)];
    let adjustments = Adjustments { global_discount: fixed(2), ..no_adjustments() };
    let computed = compute(PriceBasis::Net, &lines, &adjustments).expect("computes");
    let shares: Vec<i64> = computed.lines.iter().map(|line| line.global_discount.get()).collect();
    assert_eq!(shares, [1, 1, 0]);
}

#[test]
fn a_line_with_nothing_left_takes_no_share_of_the_global_discount() {
    let lines = [line("1", 1_000, 5, pct("100")), line("1", 0, 5, None), line("1", 999, 5, None)];
    let adjustments = Adjustments { global_discount: fixed(10), ..no_adjustments() };
    let computed = compute(PriceBasis::Net, &lines, &adjustments).expect("computes");
    let shares: Vec<i64> = computed.lines.iter().map(|line| line.global_discount.get()).collect();
    assert_eq!(shares, [0, 0, 10]);
    assert_eq!(computed.discount_amount, money(1_010));
}

#[test]
fn a_whole_global_discount_leaves_only_exempt_and_non_taxed() {
    let lines = [line("3", 333, 5, pct("7")), line("1.5", 999, 4, None)];
    for basis in [PriceBasis::Net, PriceBasis::Gross, PriceBasis::GrossWithoutVat] {
        let adjustments = Adjustments { global_discount: pct("100"), exempt: money(300), non_taxed: money(20) };
        let computed = compute(basis, &lines, &adjustments).expect("computes");
        assert!(computed.lines.iter().all(|line| line.net == Cents::ZERO && line.vat == Cents::ZERO), "{basis:?}");
        assert_eq!((computed.subtotal, computed.tax_amount, computed.total), (money(320), Cents::ZERO, money(320)));
        // 3 × 3.33 = 999, 7% off = 69.93 → 70; 1.5 × 9.99 = 1499; the global takes the remaining 929 + 1499.
        assert_eq!(computed.discount_amount, money(70 + 929 + 1_499));
    }
}

#[test]
fn a_fixed_line_discount_may_take_the_whole_line() {
    let computed = compute(PriceBasis::Net, &[line("2", 500, 5, fixed(1_000))], &no_adjustments()).expect("computes");
    assert_eq!(computed.total, Cents::ZERO);
    assert_eq!(computed.breakdown, [VatAmount { code: VatRate::GENERAL, base: Cents::ZERO, amount: Cents::ZERO }]);
}

#[test]
fn a_document_without_lines_is_its_adjustments() {
    let adjustments = Adjustments { global_discount: pct("10"), exempt: money(7), non_taxed: money(3) };
    let computed = compute(PriceBasis::Net, &[], &adjustments).expect("computes");
    assert_eq!((computed.subtotal, computed.total, computed.discount_amount), (money(10), money(10), Cents::ZERO));
    assert!(computed.lines.is_empty() && computed.breakdown.is_empty());
}

#[test]
fn errors_name_the_offending_line() {
    let good = line("1", 1_000, 5, None);
    let cases: Vec<(Vec<Line>, Adjustments, TaxError)> = vec![
        (vec![good, good, line("0", 1_000, 5, None)], no_adjustments(), TaxError::QuantityNotPositive { line: 2 }),
        (vec![line("-1", 1_000, 5, None)], no_adjustments(), TaxError::QuantityNotPositive { line: 0 }),
        (vec![good, line("1", -1, 5, None)], no_adjustments(), TaxError::NegativeUnitPrice { line: 1 }),
        (vec![line("1", 1_000, 5, fixed(-1))], no_adjustments(), TaxError::NegativeLineDiscount { line: 0 }),
        (
            vec![good, line("2", 500, 5, fixed(1_001))],
            no_adjustments(),
            TaxError::LineDiscountTooLarge { line: 1, discount: money(1_001), amount: money(1_000) },
        ),
        (
            vec![line("1", 1_000, 5, pct("10")), good],
            Adjustments { global_discount: fixed(1_901), ..no_adjustments() },
            TaxError::GlobalDiscountTooLarge { discount: money(1_901), available: money(1_900) },
        ),
        (vec![], Adjustments { global_discount: fixed(1), ..no_adjustments() }, {
            TaxError::GlobalDiscountTooLarge { discount: money(1), available: Cents::ZERO }
        }),
        (vec![good], Adjustments { global_discount: fixed(-1), ..no_adjustments() }, TaxError::NegativeGlobalDiscount),
        (vec![good], Adjustments { exempt: money(-1), ..no_adjustments() }, TaxError::NegativeExempt),
        (vec![good], Adjustments { non_taxed: money(-1), ..no_adjustments() }, TaxError::NegativeNonTaxed),
    ];
    for (lines, adjustments, error) in cases {
        for basis in [PriceBasis::Net, PriceBasis::Gross, PriceBasis::GrossWithoutVat] {
            assert_eq!(compute(basis, &lines, &adjustments), Err(error.clone()), "{basis:?}");
        }
    }
}

#[test]
fn amounts_beyond_the_money_range_are_refused_not_wrapped() {
    let max = Cents::new(Cents::MAX).expect("max");
    let most = Line { quantity: Quantity::ONE, unit_price: max, vat_code: VatRate::GENERAL, discount: None };
    let huge = Line { quantity: Quantity::from_units(Quantity::MAX_UNITS).expect("max"), ..most };
    for basis in [PriceBasis::Net, PriceBasis::Gross, PriceBasis::GrossWithoutVat] {
        assert_eq!(compute(basis, &[most, huge], &no_adjustments()), Err(TaxError::LineOutOfRange { line: 1 }));
        let zero_rate = Line { vat_code: VatRate::ZERO, ..most };
        assert_eq!(compute(basis, &[zero_rate, zero_rate], &no_adjustments()), Err(TaxError::TotalsOutOfRange));
        let adjustments = Adjustments { exempt: money(1), ..no_adjustments() };
        assert_eq!(compute(basis, &[zero_rate], &adjustments), Err(TaxError::TotalsOutOfRange));
    }
    // The largest line with VAT added goes beyond the range by itself.
    assert_eq!(compute(PriceBasis::Net, &[most], &no_adjustments()), Err(TaxError::LineOutOfRange { line: 0 }));
    assert!(compute(PriceBasis::Gross, &[most], &no_adjustments()).is_ok());
    // Lines that add up beyond the range are fine when the global discount brings them back.
    let half_off = Adjustments { global_discount: pct("50"), ..no_adjustments() };
    let zero_rate = Line { vat_code: VatRate::ZERO, ..most };
    let computed = compute(PriceBasis::Net, &[zero_rate, zero_rate], &half_off).expect("computes");
    assert_eq!(computed.total, max);
}

#[test]
fn errors_read_as_sentences() {
    let error = TaxError::LineDiscountTooLarge { line: 2, discount: money(1_001), amount: money(1_000) };
    assert_eq!(error.to_string(), "line 2: the discount of 1001 cents is larger than the line amount of 1000 cents");
}

#[test]
fn the_result_serializes_with_integer_cents() {
    let computed = compute(PriceBasis::Gross, &[line("1", 12_100, 5, None)], &no_adjustments()).expect("computes");
    let json = serde_json::to_value(&computed).expect("json");
    assert_eq!(json["tax_amount"], 2_100);
    assert_eq!(json["breakdown"][0], serde_json::json!({"code": 5, "base": 10_000, "amount": 2_100}));
    assert_eq!(
        json["lines"][0],
        serde_json::json!({"amount": 12_100, "discount": 0, "global_discount": 0, "net": 10_000, "vat": 2_100, "total": 12_100})
    );
}

// Property tests.

/// A discount as generated: a percentage, or a fixed fraction (in hundredths of a percent) of what it
/// applies to, so fixed discounts stay within their line and the global one within the lines.
#[derive(Debug, Clone, Copy)]
enum Off {
    Nothing,
    Percentage(u16),
    Fraction(u16),
}

fn off() -> impl Strategy<Value = Off> {
    prop_oneof![Just(Off::Nothing), (0..=10_000u16).prop_map(Off::Percentage), (0..=10_000u16).prop_map(Off::Fraction)]
}

fn discount_of(off: Off, base: i128) -> Option<Discount> {
    match off {
        Off::Nothing => None,
        Off::Percentage(hundredths) => {
            Some(Discount::Percentage(Percentage::from_hundredths(i64::from(hundredths)).expect("0 to 100")))
        }
        Off::Fraction(hundredths) => {
            let part = base * i128::from(hundredths) / 10_000;
            let part = i64::try_from(part).expect("small").min(Cents::MAX);
            Some(Discount::Fixed(money(part)))
        }
    }
}

fn basis() -> impl Strategy<Value = PriceBasis> {
    prop_oneof![Just(PriceBasis::Net), Just(PriceBasis::Gross), Just(PriceBasis::GrossWithoutVat)]
}

fn raw_line() -> impl Strategy<Value = (i64, i64, VatRate, Off)> {
    // Small values too, so rounding at the cent is exercised and not only large amounts.
    let thousandths = prop_oneof![1..=10_000_000i64, 1..=5_000i64];
    let price = prop_oneof![0..=10_000_000i64, 0..=1_000i64];
    let code = prop::sample::select(VatRate::all().collect::<Vec<_>>());
    (thousandths, price, code, off())
}

/// The amount of a line and what is left after its own discount, computed apart from the engine.
fn line_amounts(line: &Line) -> (i128, i128) {
    let amount = line.quantity.checked_mul_cents(line.unit_price).expect("10^11 cents at most");
    let discount = match line.discount {
        None => Cents::ZERO,
        Some(Discount::Percentage(percentage)) => percentage.apply_to(amount),
        Some(Discount::Fixed(fixed)) => fixed,
    };
    (i128::from(amount.get()), i128::from(amount.get() - discount.get()))
}

fn document() -> impl Strategy<Value = (PriceBasis, Vec<Line>, Adjustments)> {
    let extra = prop_oneof![Just(0i64), 0..=1_000_000_000i64];
    (basis(), prop::collection::vec(raw_line(), 1..=20), off(), extra.clone(), extra).prop_map(
        |(basis, raw, global, exempt, non_taxed)| {
            let lines: Vec<Line> = raw
                .into_iter()
                .map(|(thousandths, price, vat_code, off)| {
                    let quantity = Quantity::from_thousandths(thousandths).expect("in range");
                    let unit_price = money(price);
                    let amount = quantity.checked_mul_cents(unit_price).expect("in range");
                    Line { quantity, unit_price, vat_code, discount: discount_of(off, i128::from(amount.get())) }
                })
                .collect();
            let available = lines.iter().map(|line| line_amounts(line).1).sum();
            let adjustments = Adjustments {
                global_discount: discount_of(global, available),
                exempt: money(exempt),
                non_taxed: money(non_taxed),
            };
            (basis, lines, adjustments)
        },
    )
}

/// `numerator / denominator` rounded half up, for the non-negative values here; written apart from
/// the engine's own rounding.
fn half_up(numerator: i128, denominator: i128) -> i128 {
    (2 * numerator + denominator) / (2 * denominator)
}

fn check_invariants(
    basis: PriceBasis,
    lines: &[Line],
    adjustments: &Adjustments,
    computed: &Computed,
) -> Result<(), TestCaseError> {
    let get = |cents: Cents| i128::from(cents.get());
    prop_assert_eq!(computed.lines.len(), lines.len());
    let available: i128 = lines.iter().map(|line| line_amounts(line).1).sum();
    let global = match adjustments.global_discount {
        None => 0,
        Some(Discount::Percentage(percentage)) => half_up(available * i128::from(percentage.hundredths()), 10_000),
        Some(Discount::Fixed(fixed)) => get(fixed),
    };

    let (mut nets, mut vats, mut shares, mut line_discounts) = (0i128, 0i128, 0i128, 0i128);
    for (index, (line, out)) in lines.iter().zip(&computed.lines).enumerate() {
        let (amount, after) = line_amounts(line);
        let [amount_out, discount, share, net, vat, total] =
            [out.amount, out.discount, out.global_discount, out.net, out.vat, out.total].map(get);
        prop_assert!([amount_out, discount, share, net, vat].iter().all(|value| *value >= 0), "line {index}: {out:?}");
        prop_assert_eq!(amount_out, amount, "line {}", index);
        prop_assert_eq!(amount - discount, after, "line {}", index);
        prop_assert_eq!(total, net + vat, "line {}", index);
        prop_assert!(share <= after, "line {index}: share {share} of {after}");
        // Largest remainder: each share is its exact proportion rounded down or up.
        if available > 0 {
            prop_assert!((share * available - global * after).abs() < available, "line {index}: share {share}");
        }
        let left = after - share;
        match basis {
            // How a rate's VAT or net falls on its lines is checked with the breakdown below.
            PriceBasis::Net => prop_assert_eq!(net, left, "line {}", index),
            PriceBasis::Gross => prop_assert_eq!(net + vat, left, "line {}", index),
            PriceBasis::GrossWithoutVat => {
                prop_assert_eq!((net, vat), (left, 0), "line {}", index);
            }
        }
        nets += net;
        vats += vat;
        shares += share;
        line_discounts += discount;
    }

    let extras = get(adjustments.exempt) + get(adjustments.non_taxed);
    prop_assert_eq!(shares, global);
    prop_assert_eq!(get(computed.total), get(computed.subtotal) + get(computed.tax_amount));
    prop_assert_eq!(get(computed.subtotal), nets + extras);
    prop_assert_eq!(get(computed.tax_amount), vats);
    prop_assert_eq!(get(computed.taxed_net), nets);
    prop_assert_eq!(get(computed.discount_amount), line_discounts + global);
    prop_assert_eq!((computed.exempt, computed.non_taxed), (adjustments.exempt, adjustments.non_taxed));
    if basis != PriceBasis::Net {
        // Prices with VAT: what the lines charge is what the document totals, VAT or not.
        prop_assert_eq!(get(computed.total), available - global + extras);
    }

    let bases: i128 = computed.breakdown.iter().map(|entry| get(entry.base)).sum();
    let amounts: i128 = computed.breakdown.iter().map(|entry| get(entry.amount)).sum();
    let codes: Vec<VatRate> = computed.breakdown.iter().map(|entry| entry.code).collect();
    if basis == PriceBasis::GrossWithoutVat {
        prop_assert!(computed.breakdown.is_empty());
        prop_assert_eq!(computed.tax_amount, Cents::ZERO);
    } else {
        let mut used: Vec<VatRate> = lines.iter().map(|line| line.vat_code).collect();
        used.sort_unstable();
        used.dedup();
        prop_assert_eq!(codes, used);
        prop_assert_eq!(amounts, vats);
        prop_assert_eq!(bases, nets);
        for entry in &computed.breakdown {
            let of_code: Vec<&LineAmounts> = lines
                .iter()
                .zip(&computed.lines)
                .filter(|(line, _)| line.vat_code == entry.code)
                .map(|(_, out)| out)
                .collect();
            let (base, amount) =
                of_code.iter().fold((0, 0), |(base, amount), out| (base + get(out.net), amount + get(out.vat)));
            let (entry_base, entry_amount) = (get(entry.base), get(entry.amount));
            prop_assert_eq!((entry_base, entry_amount), (base, amount), "code {:?}", entry.code);
            // One rounding per rate: the authority's check of each entry, base × rate within a cent.
            let rate = i128::from(entry.code.hundredths());
            prop_assert!(
                (entry_amount * 10_000 - entry_base * rate).abs() <= 10_000,
                "code {:?}: {entry_amount} against {entry_base} × {rate}",
                entry.code
            );
            let gross = entry_base + entry_amount;
            match basis {
                PriceBasis::Net => prop_assert_eq!(entry_amount, half_up(entry_base * rate, 10_000)),
                _ => prop_assert_eq!(entry_base, half_up(gross * 10_000, 10_000 + rate)),
            }
            // Shared over the lines by largest remainder: each line's part is its exact proportion
            // rounded down or up.
            for out in of_code {
                let (part, whole, weight, of) = match basis {
                    PriceBasis::Net => (get(out.vat), entry_amount, get(out.net), entry_base),
                    _ => (get(out.net), entry_base, get(out.total), gross),
                };
                if of > 0 {
                    prop_assert!((part * of - whole * weight).abs() < of, "code {:?}: {out:?}", entry.code);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_document_keeps_the_invariants((basis, lines, adjustments) in document()) {
        match compute(basis, &lines, &adjustments) {
            Ok(computed) => {
                check_invariants(basis, &lines, &adjustments, &computed)?;
                // Nothing but the input decides the result.
                prop_assert_eq!(compute(basis, &lines.clone(), &adjustments.clone()), Ok(computed));
            }
            Err(TaxError::TotalsOutOfRange) => {
                // Only a document whose amounts, VAT at the highest rate included, may leave the range.
                let amounts: i128 = lines.iter().map(|line| line_amounts(line).0).sum();
                let extras = i128::from(adjustments.exempt.get()) + i128::from(adjustments.non_taxed.get());
                prop_assert!(amounts * 127 / 100 + extras > i128::from(Cents::MAX), "{amounts} {extras}");
            }
            Err(error) => prop_assert!(false, "{error}"),
        }
    }

    #[test]
    fn a_fixed_global_discount_is_shared_out_exactly(
        afters in prop::collection::vec(0..=1_000_000_000_000i128, 1..=20),
        fraction in 0..=10_000i128,
    ) {
        let sum: i128 = afters.iter().sum();
        let discount = sum * fraction / 10_000;
        let shares = share_out(discount, &afters).expect("in range");
        prop_assert_eq!(shares.iter().sum::<i128>(), discount);
        for (share, after) in shares.iter().zip(&afters) {
            prop_assert!(*share >= 0 && share <= after);
            prop_assert!(sum == 0 || (share * sum - discount * after).abs() < sum);
        }
    }
}
