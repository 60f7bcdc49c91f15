//! The tax engine: from a document's lines, discounts and adjustments to its line amounts, VAT breakdown
//! and header totals, the one calculation sales, quotes and purchases share.
//!
//! Everything here is pure integer arithmetic on cents, widened to `i128` where a product could
//! overflow, and rounds half away from zero to the cent at each step, in this order:
//!
//! 1. line amount = quantity × unit price;
//! 2. line discount = a percentage of the amount, or a fixed amount no larger than it;
//! 3. the global discount (a percentage of the discounted lines, or a fixed amount) is shared out
//!    over the discounted lines in proportion, by largest remainder, so the parts add up exactly;
//! 4. VAT per rate, by the document's [`PriceBasis`]: the rate's lines added up, then VAT added to
//!    that net once, or that gross split once into net and VAT (or no VAT at all); the rate's VAT (on
//!    a net basis) or net (on a gross one) is then shared out over its lines like the global discount.
//!
//! Rounding each rate's sum once, rather than each line and then adding, is what keeps every entry
//! of the breakdown the tax authority checks within its cent of base × rate (`AlicIva`, error 10051)
//! however many lines the rate has; sharing the sums out by largest remainder keeps every printed line
//! adding up to the printed totals.

use std::collections::BTreeMap;

use events::domain::{Cents, Percentage, Quantity, VatRate};
use serde::Serialize;

#[cfg(test)]
mod tests;

/// How a document's unit prices relate to VAT, which the voucher letter decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriceBasis {
    /// Unit prices exclude VAT, which is added per line (letters A and M).
    Net,
    /// Unit prices include VAT, which is split out of each line (letter B, the quote-type voucher 90).
    Gross,
    /// Unit prices are final and no VAT is computed or shown: the issuer is a Monotributista or
    /// exempt (letter C), or the voucher is an export (letter E).
    GrossWithoutVat,
}

impl PriceBasis {
    /// The basis of a voucher type code, from the voucher letter table of the fiscal reference:
    /// - A (1 to 5, 201 to 203) and M (51 to 54): [`PriceBasis::Net`];
    /// - C (11, 12, 13, 15, 211 to 213) and E (19 to 21): [`PriceBasis::GrossWithoutVat`];
    /// - B (6 to 10, 206 to 208), the quote-type voucher 90 and every other code: [`PriceBasis::Gross`].
    ///
    /// Unknown codes fall to `Gross` because the spec calls every voucher that is not type A
    /// "consumer-facing", with prices that include VAT. 14 is no voucher type, so it is one of them.
    pub fn of_voucher(code: i32) -> PriceBasis {
        match code {
            1..=5 | 51..=54 | 201..=203 => PriceBasis::Net,
            11..=13 | 15 | 19..=21 | 211..=213 => PriceBasis::GrossWithoutVat,
            _ => PriceBasis::Gross,
        }
    }
}

/// A discount: a percentage of what it applies to, or a fixed number of cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Discount {
    Percentage(Percentage),
    Fixed(Cents),
}

/// One line of a document, as the caller parsed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Line {
    /// Greater than zero.
    pub quantity: Quantity,
    /// Not negative; net or gross by the document's [`PriceBasis`].
    pub unit_price: Cents,
    /// The line's VAT rate.
    pub vat_code: VatRate,
    /// The line's own discount, applied before the global one.
    pub discount: Option<Discount>,
}

/// What a document's header adds to its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Adjustments {
    /// Shared out over the lines after their own discounts.
    pub global_discount: Option<Discount>,
    /// Exempt operations (ImpOpEx): added to subtotal and total, with no VAT. Not negative.
    pub exempt: Cents,
    /// Non-taxed concepts (ImpTotConc): added to subtotal and total, with no VAT. Not negative.
    pub non_taxed: Cents,
}

/// The amounts of one line, every one of them zero or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineAmounts {
    /// Quantity × unit price.
    pub amount: Cents,
    /// The line's own discount.
    pub discount: Cents,
    /// This line's part of the global discount.
    pub global_discount: Cents,
    /// What is left without VAT.
    pub net: Cents,
    pub vat: Cents,
    /// `net + vat`.
    pub total: Cents,
}

/// The lines of one VAT rate added up: one entry of the authority's `Iva` list (`AlicIva`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VatAmount {
    pub code: VatRate,
    /// The rate's taxed net (`BaseImp`).
    pub base: Cents,
    /// The VAT at that rate (`Importe`).
    pub amount: Cents,
}

/// A document's amounts: per line, per VAT rate and in its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Computed {
    /// In the order of the input lines.
    pub lines: Vec<LineAmounts>,
    /// One entry per VAT code the lines use, by code; a 0% rate is still listed. Empty for
    /// [`PriceBasis::GrossWithoutVat`], which shows no VAT.
    pub breakdown: Vec<VatAmount>,
    /// Σ line net + exempt + non-taxed.
    pub subtotal: Cents,
    /// Σ line VAT (`ImpIVA`).
    pub tax_amount: Cents,
    /// Σ line discounts + the global discount.
    pub discount_amount: Cents,
    /// `subtotal + tax_amount` (`ImpTotal`).
    pub total: Cents,
    /// Σ line net (`ImpNeto`). With VAT it equals Σ breakdown bases. Without VAT (class C) it is the
    /// lines' whole amount, the figure the authority takes as `ImpNeto` for that class.
    pub taxed_net: Cents,
    /// The exempt amount, as given (`ImpOpEx`).
    pub exempt: Cents,
    /// The non-taxed amount, as given (`ImpTotConc`).
    pub non_taxed: Cents,
}

/// Why a document's amounts cannot be computed. Lines are counted from 0, in input order; the first
/// offence found is reported (field-by-field reporting belongs to the parsers in front of this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaxError {
    #[error("line {line}: the quantity must be greater than zero")]
    QuantityNotPositive { line: usize },
    #[error("line {line}: the unit price must not be negative")]
    NegativeUnitPrice { line: usize },
    #[error("line {line}: a fixed discount must not be negative")]
    NegativeLineDiscount { line: usize },
    #[error("line {line}: the discount of {discount} cents is larger than the line amount of {amount} cents")]
    LineDiscountTooLarge { line: usize, discount: Cents, amount: Cents },
    #[error("the global discount must not be negative")]
    NegativeGlobalDiscount,
    #[error("the global discount of {discount} cents is larger than the {available} cents of the lines")]
    GlobalDiscountTooLarge { discount: Cents, available: Cents },
    #[error("the exempt amount must not be negative")]
    NegativeExempt,
    #[error("the non-taxed amount must not be negative")]
    NegativeNonTaxed,
    #[error("line {line}: an amount is beyond the range of money")]
    LineOutOfRange { line: usize },
    #[error("the document's totals are beyond the range of money")]
    TotalsOutOfRange,
}

/// Hundredths of a percent in a whole: the scale of VAT rates and percentages.
const WHOLE: i128 = 10_000;

/// The amounts of a document whose unit prices are on `basis`.
pub fn compute(basis: PriceBasis, lines: &[Line], adjustments: &Adjustments) -> Result<Computed, TaxError> {
    if adjustments.exempt.is_negative() {
        return Err(TaxError::NegativeExempt);
    }
    if adjustments.non_taxed.is_negative() {
        return Err(TaxError::NegativeNonTaxed);
    }
    let discounted =
        lines.iter().enumerate().map(|(index, line)| discount_line(index, line)).collect::<Result<Vec<_>, _>>()?;
    let afters: Vec<i128> = discounted.iter().map(|line| line.after).collect();
    let global = global_discount(adjustments.global_discount, afters.iter().sum())?;
    let shares = share_out(global, &afters)?;
    let lefts: Vec<i128> = afters.iter().zip(&shares).map(|(after, share)| after - share).collect();
    let split = split_vat(basis, &discounted, &lefts)?;

    let mut amounts = Vec::with_capacity(lines.len());
    let mut breakdown: BTreeMap<VatRate, (i128, i128)> = BTreeMap::new();
    let (mut net_sum, mut vat_sum, mut line_discounts) = (0i128, 0i128, 0i128);
    for (index, ((line, share), (net, vat))) in discounted.iter().zip(shares).zip(split).enumerate() {
        let out_of_range = || TaxError::LineOutOfRange { line: index };
        amounts.push(LineAmounts {
            amount: cents(line.amount).ok_or_else(out_of_range)?,
            discount: cents(line.discount).ok_or_else(out_of_range)?,
            global_discount: cents(share).ok_or_else(out_of_range)?,
            net: cents(net).ok_or_else(out_of_range)?,
            vat: cents(vat).ok_or_else(out_of_range)?,
            total: cents(net + vat).ok_or_else(out_of_range)?,
        });
        if basis != PriceBasis::GrossWithoutVat {
            let rate = breakdown.entry(line.code).or_default();
            *rate = (rate.0 + net, rate.1 + vat);
        }
        net_sum += net;
        vat_sum += vat;
        line_discounts += line.discount;
    }

    let total = |value: i128| cents(value).ok_or(TaxError::TotalsOutOfRange);
    let extras = i128::from(adjustments.exempt.get()) + i128::from(adjustments.non_taxed.get());
    let breakdown = breakdown
        .into_iter()
        .map(|(code, (base, amount))| Ok(VatAmount { code, base: total(base)?, amount: total(amount)? }))
        .collect::<Result<Vec<_>, TaxError>>()?;
    Ok(Computed {
        lines: amounts,
        breakdown,
        subtotal: total(net_sum + extras)?,
        tax_amount: total(vat_sum)?,
        discount_amount: total(line_discounts + global)?,
        total: total(net_sum + extras + vat_sum)?,
        taxed_net: total(net_sum)?,
        exempt: adjustments.exempt,
        non_taxed: adjustments.non_taxed,
    })
}

/// A line after steps 1 and 2, with its rate looked up.
struct Discounted {
    code: VatRate,
    amount: i128,
    discount: i128,
    /// `amount - discount`, what the global discount is shared over.
    after: i128,
}

fn discount_line(index: usize, line: &Line) -> Result<Discounted, TaxError> {
    if !line.quantity.is_positive() {
        return Err(TaxError::QuantityNotPositive { line: index });
    }
    if line.unit_price.is_negative() {
        return Err(TaxError::NegativeUnitPrice { line: index });
    }
    let amount = line.quantity.checked_mul_cents(line.unit_price).ok_or(TaxError::LineOutOfRange { line: index })?;
    let discount = match line.discount {
        None => Cents::ZERO,
        Some(Discount::Percentage(percentage)) => percentage.apply_to(amount),
        Some(Discount::Fixed(fixed)) if fixed.is_negative() => {
            return Err(TaxError::NegativeLineDiscount { line: index });
        }
        Some(Discount::Fixed(fixed)) if fixed > amount => {
            return Err(TaxError::LineDiscountTooLarge { line: index, discount: fixed, amount });
        }
        Some(Discount::Fixed(fixed)) => fixed,
    };
    let (amount, discount) = (i128::from(amount.get()), i128::from(discount.get()));
    Ok(Discounted { code: line.vat_code, amount, discount, after: amount - discount })
}

/// The global discount in cents, given the sum of the discounted lines it applies to.
fn global_discount(discount: Option<Discount>, available: i128) -> Result<i128, TaxError> {
    match discount {
        None => Ok(0),
        Some(Discount::Percentage(percentage)) => Ok(round_div(available * i128::from(percentage.hundredths()), WHOLE)),
        Some(Discount::Fixed(fixed)) if fixed.is_negative() => Err(TaxError::NegativeGlobalDiscount),
        Some(Discount::Fixed(fixed)) if i128::from(fixed.get()) > available => {
            // Less than a fixed amount in range, so in range too.
            let available = cents(available).ok_or(TaxError::TotalsOutOfRange)?;
            Err(TaxError::GlobalDiscountTooLarge { discount: fixed, available })
        }
        Some(Discount::Fixed(fixed)) => Ok(i128::from(fixed.get())),
    }
}

/// Each line's (net, VAT) from what is `left` of it after the discounts: step 4, one rounding per rate.
fn split_vat(basis: PriceBasis, lines: &[Discounted], left: &[i128]) -> Result<Vec<(i128, i128)>, TaxError> {
    let mut split: Vec<(i128, i128)> = left.iter().map(|left| (*left, 0)).collect();
    if basis == PriceBasis::GrossWithoutVat {
        return Ok(split);
    }
    let mut rates: BTreeMap<VatRate, Vec<usize>> = BTreeMap::new();
    for (index, line) in lines.iter().enumerate() {
        rates.entry(line.code).or_default().push(index);
    }
    for (code, indexes) in rates {
        let weights: Vec<i128> = indexes.iter().map(|index| left[*index]).collect();
        let sum: i128 = weights.iter().sum();
        let rate = i128::from(code.hundredths());
        let parts = match basis {
            // The rate's VAT on its whole net, shared over the lines' nets.
            PriceBasis::Net => share_out(round_div(sum * rate, WHOLE), &weights)?,
            // The rate's net out of its whole gross, shared over the lines' grosses.
            _ => share_out(round_div(sum * WHOLE, WHOLE + rate), &weights)?,
        };
        for (index, part) in indexes.into_iter().zip(parts) {
            split[index] = match basis {
                PriceBasis::Net => (left[index], part),
                _ => (part, left[index] - part),
            };
        }
    }
    Ok(split)
}

/// `whole` shared over `weights` in proportion by the largest remainder method: each part is the
/// exact share rounded down, and the cents still missing go one each to the parts that lost the most,
/// the earliest line first among equals. The parts add up to `whole` exactly and, where `whole` is at
/// most the sum (a discount, a net inside a gross), none is larger than its weight.
fn share_out(whole: i128, weights: &[i128]) -> Result<Vec<i128>, TaxError> {
    let sum: i128 = weights.iter().sum();
    if whole == 0 || sum == 0 {
        return Ok(vec![0; weights.len()]);
    }
    let mut shares = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    for (index, weight) in weights.iter().enumerate() {
        // Only a document with more lines than memory holds could overflow here.
        let exact = whole.checked_mul(*weight).ok_or(TaxError::TotalsOutOfRange)?;
        shares.push(exact / sum);
        remainders.push((exact % sum, index));
    }
    // Largest remainder first; among equals the earliest line, so the result depends on the input only.
    remainders.sort_by(|(a, a_index), (b, b_index)| b.cmp(a).then(a_index.cmp(b_index)));
    // Fewer cents are missing than there are lines, each remainder being less than one cent.
    let mut missing = whole - shares.iter().sum::<i128>();
    for (_, index) in remainders {
        if missing == 0 {
            break;
        }
        shares[index] += 1;
        missing -= 1;
    }
    Ok(shares)
}

/// `numerator / denominator` rounded half away from zero; `denominator` is positive.
fn round_div(numerator: i128, denominator: i128) -> i128 {
    let half = denominator / 2;
    if numerator >= 0 { (numerator + half) / denominator } else { (numerator - half) / denominator }
}

fn cents(value: i128) -> Option<Cents> {
    i64::try_from(value).ok().and_then(|value| Cents::new(value).ok())
}
