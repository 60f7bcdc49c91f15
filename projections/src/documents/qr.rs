//! The QR code a printed voucher carries, as a plain grid of modules: the same symbol the `qrcode`
//! crate builds (level M, its mask choice included), with the eight masks scored over the grid itself.

/// The QR symbol of `text` at error correction level M: its width and its modules row by row (true
/// for dark). The same symbol as `qrcode::QrCode::with_error_correction_level`, mask included, but the
/// eight masks are scored over a plain grid: the crate's own scoring boxes a closure per module and
/// took half of a voucher's rendering time.
pub(super) fn qr_symbol(text: &[u8]) -> Result<(usize, Vec<bool>), qrcode::types::QrError> {
    use qrcode::canvas::{Canvas, MaskPattern};
    use qrcode::{Color, EcLevel};
    const MASKS: [MaskPattern; 8] = [
        MaskPattern::Checkerboard,
        MaskPattern::HorizontalLines,
        MaskPattern::VerticalLines,
        MaskPattern::DiagonalLines,
        MaskPattern::LargeCheckerboard,
        MaskPattern::Fields,
        MaskPattern::Diamonds,
        MaskPattern::Meadow,
    ];
    let bits = qrcode::bits::encode_auto(text, EcLevel::M)?;
    let version = bits.version();
    let (data, ec) = qrcode::ec::construct_codewords(&bits.into_bytes(), version, EcLevel::M)?;
    let mut canvas = Canvas::new(version, EcLevel::M);
    canvas.draw_all_functional_patterns();
    canvas.draw_data(&data, &ec);
    let width = usize::try_from(version.width()).map_err(|_| qrcode::types::QrError::InvalidVersion)?;
    let mut best: Option<(u16, Vec<bool>)> = None;
    for mask in MASKS {
        let mut masked = canvas.clone();
        masked.apply_mask(mask);
        let dark: Vec<bool> = masked.into_colors().into_iter().map(|c| c == Color::Dark).collect();
        let score = mask_penalty(&dark, width);
        // The first of equal scores wins, as in the crate.
        if best.as_ref().is_none_or(|(lowest, _)| score < *lowest) {
            best = Some((score, dark));
        }
    }
    best.map(|(_, dark)| (width, dark)).ok_or(qrcode::types::QrError::InvalidVersion)
}

/// A masked symbol's penalty, computed as the `qrcode` crate computes it (runs of five or more, 2×2
/// blocks, finder-like patterns, dark/light balance; u16 arithmetic included), so the same mask wins.
/// Columns are scored as the rows of the transposed grid, so every scan walks a slice.
fn mask_penalty(dark: &[bool], width: usize) -> u16 {
    let transposed: Vec<bool> = (0..width * width).map(|i| dark[(i % width) * width + i / width]).collect();
    let mut score: u16 = 0;
    for grid in [dark, &transposed[..]] {
        let mut finders: u16 = 0;
        for line in grid.chunks_exact(width) {
            // Runs of five or more modules of one color: 3 + (length - 5) each.
            let mut run: u16 = 1;
            for pair in line.windows(2) {
                if pair[0] == pair[1] {
                    run += 1;
                } else {
                    if run >= 5 {
                        score = score.wrapping_add(run - 2);
                    }
                    run = 1;
                }
            }
            if run >= 5 {
                score = score.wrapping_add(run - 2);
            }
            // `#.###.#` without four light modules on one side: 40 each.
            for (j, window) in line.windows(7).enumerate() {
                if window == [true, false, true, true, true, false, true] {
                    let dark_before = line[j.saturating_sub(4)..j].contains(&true);
                    let dark_after = line[j + 7..(j + 11).min(width)].contains(&true);
                    if !dark_before || !dark_after {
                        finders = finders.wrapping_add(40);
                    }
                }
            }
        }
        // The three finders themselves are discounted, per direction.
        score = score.wrapping_add(finders.wrapping_sub(360));
    }
    // Every 2×2 block of one color: 3.
    for (upper, lower) in dark.chunks_exact(width).zip(dark.chunks_exact(width).skip(1)) {
        for x in 0..width - 1 {
            let c = upper[x];
            if upper[x + 1] == c && lower[x] == c && lower[x + 1] == c {
                score = score.wrapping_add(3);
            }
        }
    }
    // Balance: the distance of the dark share from half, in half-percent steps.
    let ratio = dark.iter().filter(|d| **d).count() * 200 / dark.len();
    score.wrapping_add(ratio.abs_diff(100) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::tests::sample;
    use crate::documents::{QR_URL_PREFIX, qr_url};

    #[test]
    fn the_qr_symbol_is_the_one_the_qrcode_crate_builds() {
        let mut texts: Vec<String> =
            (0..40).map(|n| format!("{QR_URL_PREFIX}{}", "eyJ2ZXIiOjEsImZlY2hh".repeat(n % 17 + 1))).collect();
        texts.extend([
            "a".to_owned(),
            "1234567890".to_owned(),
            qr_url(&sample().authorization.expect("authorized").qr),
        ]);
        for text in texts {
            let expected =
                qrcode::QrCode::with_error_correction_level(text.as_bytes(), qrcode::EcLevel::M).expect("fits");
            let (width, dark) = qr_symbol(text.as_bytes()).expect("fits");
            assert_eq!(width, expected.width(), "{text}");
            let expected: Vec<bool> = expected.to_colors().into_iter().map(|c| c == qrcode::Color::Dark).collect();
            assert_eq!(dark, expected, "the modules of {text}");
        }
    }
}
