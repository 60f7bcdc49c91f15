//! The tax authority's VAT rates: the one table the catalogue, the pricing rules and the reference
//! endpoint read.

/// VAT rates: code, percentage in hundredths (2100 = 21%), description.
pub const VAT_RATES: &[(i32, i64, &str)] = &[
    (3, 0, "IVA 0%"),
    (4, 1050, "IVA 10,5%"),
    (5, 2100, "IVA 21%"),
    (6, 2700, "IVA 27%"),
    (8, 500, "IVA 5%"),
    (9, 250, "IVA 2,5%"),
];

/// The percentage of a VAT rate code, in hundredths of a percent; `None` for an unknown code.
pub fn vat_hundredths(code: i32) -> Option<i64> {
    VAT_RATES.iter().find(|(c, _, _)| *c == code).map(|(_, hundredths, _)| *hundredths)
}

/// The percentage of a VAT rate code (`21.0`, `10.5`); `None` for an unknown code.
pub fn vat_percentage(code: i32) -> Option<f64> {
    vat_hundredths(code).map(|h| h as f64 / 100.0)
}
