//! The voucher renderer: a [`VoucherDocument`] (or a [`DeliveryNoteDocument`], laid out the same way
//! without prices) to an A4 PDF, pure and synchronous (the worker runs it on a blocking thread, since
//! it is CPU work).
//!
//! Layout comes first, as drawing operations per page, so every page can say "Página i de n";
//! krilla then writes them. Text is shaped with rustybuzz against the embedded DejaVu Sans
//! Condensed (regular and bold, both under a free license, see `assets/fonts/`): shaping both
//! measures text for wrapping and alignment and gives krilla the glyphs it embeds, so what is
//! measured is exactly what is drawn, and every Spanish character (á, ñ, º, ü) has its glyph. The
//! QR code is drawn as vector squares, so it stays sharp at any zoom.

use super::delivery_notes::DeliveryNoteDocument;
use super::qr::qr_symbol;
use super::{Authorization, DocumentLine, Party, QR_URL_PREFIX, VoucherDocument, argentine_decimal, money, qr_url};
use events::domain::Cents;
use krilla::Document;
use krilla::color::luma;
use krilla::geom::{PathBuilder, Point, Rect, Transform};
use krilla::metadata::Metadata;
use krilla::num::NormalizedF32;
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::surface::Surface;
use krilla::text::{Font, GlyphId, KrillaGlyph};
use std::sync::LazyLock;

const FONT_REGULAR: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansCondensed.ttf");
const FONT_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansCondensed-Bold.ttf");

/// A4 in points.
const PAGE_W: f32 = 595.28;
const PAGE_H: f32 = 841.89;
const MARGIN: f32 = 36.0;
const LEFT: f32 = MARGIN;
const RIGHT: f32 = PAGE_W - MARGIN;
/// Content ends here; the page footer sits below.
const BOTTOM: f32 = PAGE_H - 48.0;

/// The lines table: the description's left edge and right limit, then each number column's right
/// edge (numbers are right-aligned).
const COL_DESC: f32 = LEFT + 4.0;
const COL_DESC_END: f32 = LEFT + 226.0;
const COL_QTY: f32 = 318.0;
const COL_UNIT: f32 = 392.0;
const COL_DISC: f32 = 436.0;
const COL_VAT: f32 = 478.0;
const COL_AMOUNT: f32 = RIGHT - 4.0;

const BODY: f32 = 8.5;
const LINE: f32 = 11.0;

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the embedded fonts cannot be read")]
    Font,
    #[error("the document cannot be printed: {0}")]
    Invalid(String),
    #[error("the QR code cannot be built: {0}")]
    Qr(String),
    #[error("the PDF cannot be written: {0}")]
    Pdf(String),
}

/// Renders `doc` as an A4 PDF.
pub fn render_pdf(doc: &VoucherDocument) -> Result<Vec<u8>, RenderError> {
    check(doc)?;
    let fonts = FONTS.as_ref().ok_or(RenderError::Font)?;
    let kind = Kind::Voucher { number: doc.number_text() };
    let pages = layout(doc, &kind, fonts)?;
    draw(doc, &kind, fonts, &pages)
}

/// Renders a delivery note (remito) as an A4 PDF: a voucher's head, receiver, lines and notes, each
/// line with its description and quantity only; no prices, amounts or totals.
pub fn render_delivery_note_pdf(note: &DeliveryNoteDocument) -> Result<Vec<u8>, RenderError> {
    note.check()?;
    let fonts = FONTS.as_ref().ok_or(RenderError::Font)?;
    // The layout's input; what it would print of prices is never drawn for a delivery note.
    let doc = VoucherDocument {
        title: "REMITO".into(),
        letter: None,
        voucher_code: None,
        point_of_sale: note.point_of_sale,
        number: note.number,
        date: note.date,
        issuer: note.issuer.clone(),
        receiver: note.receiver.clone(),
        lines: note
            .lines
            .iter()
            .map(|l| DocumentLine {
                description: l.description.clone(),
                quantity: l.quantity.clone(),
                unit_price_cents: Cents::ZERO,
                discount: None,
                vat_label: None,
                amount_cents: Cents::ZERO,
            })
            .collect(),
        vat_breakdown: Vec::new(),
        subtotal_cents: Cents::ZERO,
        tax_cents: Cents::ZERO,
        total_cents: Cents::ZERO,
        currency: "PES".into(),
        exchange_rate: None,
        authorization: None,
        notes: note.notes.clone(),
        reference: None,
    };
    let kind = Kind::DeliveryNote { number: note.number_text() };
    let pages = layout(&doc, &kind, fonts)?;
    draw(&doc, &kind, fonts, &pages)
}

/// What is being printed, with its number as printed.
enum Kind {
    /// Prices, amounts and totals.
    Voucher { number: String },
    /// Descriptions and quantities only.
    DeliveryNote { number: String },
}

impl Kind {
    fn number(&self) -> &str {
        match self {
            Kind::Voucher { number } | Kind::DeliveryNote { number } => number,
        }
    }

    fn priced(&self) -> bool {
        matches!(self, Kind::Voucher { .. })
    }
}

/// What cannot be printed faithfully is refused rather than printed wrong.
fn check(doc: &VoucherDocument) -> Result<(), RenderError> {
    if !(0..=99_999).contains(&doc.point_of_sale) {
        return Err(RenderError::Invalid(format!("point of sale {} has more than 5 digits", doc.point_of_sale)));
    }
    if !(0..=99_999_999).contains(&doc.number) {
        return Err(RenderError::Invalid(format!("number {} has more than 8 digits", doc.number)));
    }
    if let Some(authorization) = &doc.authorization
        && (authorization.cae.len() != 14 || !authorization.cae.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(RenderError::Invalid("the CAE is not 14 digits".into()));
    }
    Ok(())
}

/// One embedded font: what krilla embeds and what rustybuzz shapes with.
struct Face {
    font: Font,
    shaper: rustybuzz::Face<'static>,
}

impl Face {
    fn load(data: &'static [u8]) -> Option<Self> {
        Some(Face { font: Font::new(data.into(), 0)?, shaper: rustybuzz::Face::from_slice(data, 0)? })
    }

    /// The glyphs of `text` on one line, left to right, with advances in ems, and its width in ems.
    fn shape(&self, text: &str) -> (Vec<KrillaGlyph>, f32) {
        let mut buffer = rustybuzz::UnicodeBuffer::new();
        buffer.push_str(text);
        buffer.set_direction(rustybuzz::Direction::LeftToRight);
        buffer.guess_segment_properties();
        let output = rustybuzz::shape(&self.shaper, &[], buffer);
        let em = self.shaper.units_per_em() as f32;
        let (infos, positions) = (output.glyph_infos(), output.glyph_positions());
        let mut glyphs = Vec::with_capacity(infos.len());
        let mut width = 0.0;
        for (i, (info, position)) in infos.iter().zip(positions).enumerate() {
            // A glyph stands for the text of its cluster: up to where the next cluster starts.
            let start = info.cluster as usize;
            let end = infos[i + 1..]
                .iter()
                .map(|next| next.cluster as usize)
                .find(|&cluster| cluster != start)
                .unwrap_or(text.len());
            let advance = position.x_advance as f32 / em;
            width += advance;
            glyphs.push(KrillaGlyph::new(
                GlyphId::new(info.glyph_id),
                advance,
                position.x_offset as f32 / em,
                position.y_offset as f32 / em,
                position.y_advance as f32 / em,
                start..end,
                None,
            ));
        }
        (glyphs, width)
    }
}

struct Fonts {
    regular: Face,
    bold: Face,
}

static FONTS: LazyLock<Option<Fonts>> =
    LazyLock::new(|| Some(Fonts { regular: Face::load(FONT_REGULAR)?, bold: Face::load(FONT_BOLD)? }));

impl Fonts {
    fn face(&self, weight: Weight) -> &Face {
        match weight {
            Weight::Regular => &self.regular,
            Weight::Bold => &self.bold,
        }
    }

    fn width(&self, text: &str, size: f32, weight: Weight) -> f32 {
        self.face(weight).shape(text).1 * size
    }

    /// `text` broken into lines no wider than `width`: at spaces, inside a word only when the word
    /// alone is wider. Line breaks in the text are kept. Each word is measured once and a line's
    /// width is the sum of its words and spaces (the font kerns no pair across a space).
    fn wrap(&self, text: &str, size: f32, weight: Weight, width: f32) -> Vec<String> {
        let space = self.width(" ", size, weight);
        let mut lines = Vec::new();
        for paragraph in text.lines() {
            let (mut line, mut used) = (String::new(), 0.0);
            for word in paragraph.split_whitespace() {
                let measured = self.width(word, size, weight);
                if !line.is_empty() && used + space + measured <= width {
                    line.push(' ');
                    line.push_str(word);
                    used += space + measured;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                if measured <= width {
                    (line, used) = (word.to_owned(), measured);
                    continue;
                }
                // A word wider than the line is cut where it no longer fits.
                for c in word.chars() {
                    line.push(c);
                    if line.chars().nth(1).is_some() && self.width(&line, size, weight) > width {
                        line.pop();
                        lines.push(std::mem::replace(&mut line, c.to_string()));
                    }
                }
                used = self.width(&line, size, weight);
            }
            lines.push(line);
        }
        if lines.is_empty() {
            lines.push(String::new());
        }
        lines
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weight {
    Regular,
    Bold,
}

/// One drawing operation; coordinates in points from the page's top left, text at its baseline.
enum Op {
    /// Shaped once, when laid out: the glyphs measured are the glyphs drawn.
    Text {
        x: f32,
        y: f32,
        size: f32,
        weight: Weight,
        text: String,
        glyphs: Vec<KrillaGlyph>,
    },
    Fill {
        rect: Rect,
        gray: u8,
    },
    Frame {
        rect: Rect,
        width: f32,
    },
    Line {
        from: Point,
        to: Point,
        width: f32,
        gray: u8,
    },
    Qr {
        x: f32,
        y: f32,
        module: f32,
        width: usize,
        dark: Vec<bool>,
    },
}

/// The pages being laid out and where the next content goes.
struct Layout<'a> {
    doc: &'a VoucherDocument,
    kind: &'a Kind,
    fonts: &'a Fonts,
    pages: Vec<Vec<Op>>,
    y: f32,
}

impl Layout<'_> {
    fn push(&mut self, op: Op) {
        if let Some(page) = self.pages.last_mut() {
            page.push(op);
        }
    }

    /// One line of text whose left edge is `x` plus `align` times its width (0 left-aligned at `x`,
    /// -1 right-aligned, -0.5 centred).
    fn aligned(&mut self, x: f32, align: f32, y: f32, size: f32, weight: Weight, text: &str) {
        let text = single_line(text);
        if text.is_empty() {
            return;
        }
        let (glyphs, width) = self.fonts.face(weight).shape(&text);
        self.push(Op::Text { x: x + align * width * size, y, size, weight, text, glyphs });
    }

    fn text(&mut self, x: f32, y: f32, size: f32, weight: Weight, text: &str) {
        self.aligned(x, 0.0, y, size, weight, text);
    }

    fn text_right(&mut self, right: f32, y: f32, size: f32, weight: Weight, text: &str) {
        self.aligned(right, -1.0, y, size, weight, text);
    }

    fn text_center(&mut self, center: f32, y: f32, size: f32, weight: Weight, text: &str) {
        self.aligned(center, -0.5, y, size, weight, text);
    }

    /// Wrapped text from `x` at most `width` wide, its first baseline at `y`; returns the baseline
    /// after its last line.
    fn paragraph(&mut self, x: f32, mut y: f32, width: f32, size: f32, weight: Weight, text: &str) -> f32 {
        for line in self.fonts.wrap(text, size, weight, width) {
            self.text(x, y, size, weight, &line);
            y += size * 1.3;
        }
        y
    }

    fn fill(&mut self, x: f32, y: f32, w: f32, h: f32, gray: u8) {
        if let Some(rect) = Rect::from_xywh(x, y, w, h) {
            self.push(Op::Fill { rect, gray });
        }
    }

    fn frame(&mut self, x: f32, y: f32, w: f32, h: f32) {
        if let Some(rect) = Rect::from_xywh(x, y, w, h) {
            self.push(Op::Frame { rect, width: 0.8 });
        }
    }

    fn line(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, gray: u8) {
        self.push(Op::Line { from: Point::from_xy(x1, y1), to: Point::from_xy(x2, y2), width: 0.5, gray });
    }

    /// Starts a page that continues the document, under a line naming it.
    fn continuation_page(&mut self) {
        self.pages.push(Vec::new());
        let name = format!("{} — continuación", self.doc_name());
        self.text(LEFT, MARGIN + 10.0, 10.0, Weight::Bold, &name);
        self.y = MARGIN + 22.0;
    }

    /// Moves to a new page unless `height` more points fit on this one.
    fn room_for(&mut self, height: f32) {
        if self.y + height > BOTTOM {
            self.continuation_page();
        }
    }

    fn doc_name(&self) -> String {
        let letter = self.doc.letter.as_deref().map(|l| format!(" {l}")).unwrap_or_default();
        format!("{}{letter} Nº {}", self.doc.title, self.kind.number())
    }
}

fn layout(doc: &VoucherDocument, kind: &Kind, fonts: &Fonts) -> Result<Vec<Vec<Op>>, RenderError> {
    let mut layout = Layout { doc, kind, fonts, pages: vec![Vec::new()], y: MARGIN };
    header(&mut layout);
    receiver(&mut layout);
    lines_table(&mut layout);
    if kind.priced() {
        summary(&mut layout);
    }
    notes(&mut layout);
    if let Some(authorization) = &doc.authorization {
        authorized(&mut layout, authorization)?;
    }
    // Every page gets its footer once the count is known.
    let count = layout.pages.len();
    let name = layout.doc_name();
    let mut pages = std::mem::take(&mut layout.pages);
    for (i, page) in pages.iter_mut().enumerate() {
        layout.pages.push(std::mem::take(page));
        let y = PAGE_H - 24.0;
        layout.line(LEFT, y - 10.0, RIGHT, y - 10.0, 160);
        layout.text(LEFT, y, 7.5, Weight::Regular, &name);
        layout.text_right(RIGHT, y, 7.5, Weight::Regular, &format!("Página {} de {count}", i + 1));
    }
    Ok(layout.pages)
}

/// The voucher's head: the issuer on the left, the kind of document, its number and date on the
/// right, and the letter boxed between them.
fn header(l: &mut Layout) {
    let doc = l.doc;
    let top = MARGIN;
    let mid = PAGE_W / 2.0;
    let (lx, lw) = (LEFT + 10.0, mid - 30.0 - (LEFT + 10.0));
    let (rx, rw) = (mid + 30.0, RIGHT - 10.0 - (mid + 30.0));

    // The copy this is (the service prints the original; a customer may print it again).
    l.text_right(RIGHT - 10.0, top + 12.0, 9.0, Weight::Bold, "ORIGINAL");
    let mut left = l.paragraph(lx, top + 26.0, lw, 13.0, Weight::Bold, &doc.issuer.name) + 4.0;
    if let Some(address) = &doc.issuer.address {
        left = l.paragraph(lx, left, lw, BODY, Weight::Regular, &format!("Domicilio comercial: {address}"));
    }
    if let Some(category) = &doc.issuer.tax_category {
        left = l.paragraph(lx, left, lw, BODY, Weight::Regular, &format!("Condición frente al IVA: {category}"));
    }

    let mut right = l.paragraph(rx, top + 26.0, rw, 15.0, Weight::Bold, &doc.title) + 2.0;
    l.text(rx, right, 11.0, Weight::Bold, &format!("Nº {}", l.kind.number()));
    right += 16.0;
    let point_of_sale = match l.kind {
        Kind::Voucher { .. } => format!("{:05}", doc.point_of_sale),
        Kind::DeliveryNote { .. } => format!("{:04}", doc.point_of_sale),
    };
    l.text(rx, right, BODY, Weight::Regular, &format!("Punto de venta: {point_of_sale}"));
    right += LINE;
    l.text(rx, right, BODY, Weight::Regular, &format!("Comprobante Nº: {:08}", doc.number));
    right += LINE;
    l.text(rx, right, BODY, Weight::Regular, &format!("Fecha de emisión: {}", date_text(doc.date)));
    right += LINE;
    if !l.kind.priced() {
        l.text(rx, right, BODY, Weight::Regular, "Documento no válido como factura");
        right += LINE;
    }
    if let Some(tax_id) = &doc.issuer.tax_id {
        l.text(rx, right, BODY, Weight::Regular, &format!("CUIT: {}", tax_id_text(tax_id)));
        right += LINE;
    }
    if let Some(number) = &doc.issuer.gross_income_number {
        right = l.paragraph(rx, right, rw, BODY, Weight::Regular, &format!("Ingresos Brutos: {number}"));
    }
    if let Some(start) = doc.issuer.activity_start {
        l.text(rx, right, BODY, Weight::Regular, &format!("Inicio de actividades: {}", date_text(start)));
        right += LINE;
    }

    let bottom = left.max(right).max(top + 92.0) + 2.0;
    l.frame(LEFT, top, RIGHT - LEFT, bottom - top);
    match &doc.letter {
        Some(letter) => {
            let (size, x) = (44.0, mid - 22.0);
            l.fill(x, top, size, size + 4.0, 255);
            l.frame(x, top, size, size + 4.0);
            l.text_center(mid, top + 30.0, 26.0, Weight::Bold, letter);
            if let Some(code) = doc.voucher_code {
                l.text_center(mid, top + 43.0, 6.5, Weight::Bold, &format!("COD. {code:02}"));
            }
            l.line(mid, top + size + 4.0, mid, bottom, 0);
        }
        None => l.line(mid, top, mid, bottom, 0),
    }
    l.y = bottom + 6.0;
}

/// Who the document is for, and the currency and reference when there are any.
fn receiver(l: &mut Layout) {
    let doc = l.doc;
    let Party { name, tax_id, tax_category, address, .. } = &doc.receiver;
    let top = l.y;
    let mid = LEFT + 300.0;
    let mut left = l.paragraph(LEFT + 10.0, top + 14.0, 280.0, BODY, Weight::Regular, &format!("Razón social: {name}"));
    if let Some(address) = address {
        left = l.paragraph(LEFT + 10.0, left, 280.0, BODY, Weight::Regular, &format!("Domicilio: {address}"));
    }
    let mut right = top + 14.0;
    if let Some(tax_id) = tax_id {
        let label = if tax_id_digits(tax_id).is_some() { "CUIT" } else { "Documento" };
        l.text(mid, right, BODY, Weight::Regular, &format!("{label}: {}", tax_id_text(tax_id)));
        right += LINE;
    }
    if let Some(category) = tax_category {
        let width = RIGHT - 10.0 - mid;
        right = l.paragraph(mid, right, width, BODY, Weight::Regular, &format!("Condición frente al IVA: {category}"));
    }
    let mut y = left.max(right);
    if doc.currency != "PES" || doc.exchange_rate.is_some() {
        let rate = doc.exchange_rate.as_deref().map(|r| format!(" — Cotización: {}", argentine_decimal(r)));
        l.text(LEFT + 10.0, y, BODY, Weight::Regular, &format!("Moneda: {}{}", doc.currency, rate.unwrap_or_default()));
        y += LINE;
    }
    if let Some(reference) = &doc.reference {
        y = l.paragraph(
            LEFT + 10.0,
            y,
            RIGHT - LEFT - 20.0,
            BODY,
            Weight::Regular,
            &format!("Referencia: {reference}"),
        );
    }
    l.frame(LEFT, top, RIGHT - LEFT, y - 4.0 - top);
    l.y = y + 4.0;
}

fn table_head(l: &mut Layout) {
    let y = l.y;
    l.fill(LEFT, y, RIGHT - LEFT, 16.0, 225);
    let base = y + 11.0;
    l.text(COL_DESC, base, 8.0, Weight::Bold, "Descripción");
    if !l.kind.priced() {
        l.text_right(COL_AMOUNT, base, 8.0, Weight::Bold, "Cantidad");
        l.y = y + 18.0;
        return;
    }
    for (right, title) in [
        (COL_QTY, "Cantidad"),
        (COL_UNIT, "Precio unit."),
        (COL_DISC, "Bonif."),
        (COL_VAT, "IVA"),
        (COL_AMOUNT, "Importe"),
    ] {
        l.text_right(right, base, 8.0, Weight::Bold, title);
    }
    l.y = y + 18.0;
}

fn lines_table(l: &mut Layout) {
    let doc = l.doc;
    table_head(l);
    // A delivery note's description runs up to its quantity, the one number it prints.
    let description_end = if l.kind.priced() { COL_DESC_END } else { COL_AMOUNT - 80.0 };
    for line in &doc.lines {
        let description = l.fonts.wrap(&line.description, BODY, Weight::Regular, description_end - COL_DESC);
        let height = description.len() as f32 * LINE + 5.0;
        if l.y + height > BOTTOM {
            l.continuation_page();
            table_head(l);
        }
        let base = l.y + 9.0;
        for (i, text) in description.iter().enumerate() {
            l.text(COL_DESC, base + i as f32 * LINE, BODY, Weight::Regular, text);
        }
        if !l.kind.priced() {
            l.text_right(COL_AMOUNT, base, BODY, Weight::Regular, &argentine_decimal(&line.quantity));
            l.y += height;
            l.line(LEFT, l.y - 2.0, RIGHT, l.y - 2.0, 200);
            continue;
        }
        l.text_right(COL_QTY, base, BODY, Weight::Regular, &argentine_decimal(&line.quantity));
        l.text_right(COL_UNIT, base, BODY, Weight::Regular, &super::amount(line.unit_price_cents.get().into()));
        l.text_right(COL_DISC, base, BODY, Weight::Regular, line.discount.as_deref().unwrap_or(""));
        l.text_right(COL_VAT, base, BODY, Weight::Regular, line.vat_label.as_deref().unwrap_or(""));
        l.text_right(COL_AMOUNT, base, BODY, Weight::Regular, &super::amount(line.amount_cents.get().into()));
        l.y += height;
        l.line(LEFT, l.y - 2.0, RIGHT, l.y - 2.0, 200);
    }
    l.y += 8.0;
}

/// The VAT breakdown by rate (when given) beside the totals, kept together on one page.
fn summary(l: &mut Layout) {
    let doc = l.doc;
    let currency = doc.currency.as_str();
    let mut totals: Vec<(&str, String, Weight, f32)> = Vec::new();
    if !doc.vat_breakdown.is_empty() {
        totals.push(("Subtotal", money(doc.subtotal_cents.get(), currency), Weight::Regular, BODY + 0.5));
        totals.push(("IVA", money(doc.tax_cents.get(), currency), Weight::Regular, BODY + 0.5));
    }
    totals.push(("Total", money(doc.total_cents.get(), currency), Weight::Bold, 11.0));
    if doc.vat_breakdown.is_empty() && doc.tax_cents != events::domain::Cents::ZERO {
        // Vouchers that carry prices with VAT state the VAT they contain (Ley 27.743).
        totals.push(("IVA contenido", money(doc.tax_cents.get(), currency), Weight::Regular, BODY));
    }
    let totals_height = totals.len() as f32 * 15.0 + 8.0;
    let vat_height =
        if doc.vat_breakdown.is_empty() { 0.0 } else { 18.0 + doc.vat_breakdown.len() as f32 * 12.0 + 4.0 };
    l.room_for(totals_height.max(vat_height) + 8.0);
    let top = l.y;

    if !doc.vat_breakdown.is_empty() {
        let (x, end) = (LEFT, LEFT + 260.0);
        l.fill(x, top, end - x, 16.0, 225);
        l.text(x + 4.0, top + 11.0, 8.0, Weight::Bold, "Alícuota IVA");
        l.text_right(x + 170.0, top + 11.0, 8.0, Weight::Bold, "Base imponible");
        l.text_right(end - 4.0, top + 11.0, 8.0, Weight::Bold, "Importe IVA");
        let mut y = top + 16.0;
        for vat in &doc.vat_breakdown {
            l.text(x + 4.0, y + 9.0, BODY, Weight::Regular, &vat.label);
            l.text_right(x + 170.0, y + 9.0, BODY, Weight::Regular, &money(vat.base_cents.get(), currency));
            l.text_right(end - 4.0, y + 9.0, BODY, Weight::Regular, &money(vat.amount_cents.get(), currency));
            y += 12.0;
        }
        l.frame(x, top, end - x, y + 4.0 - top);
    }

    let x = RIGHT - 220.0;
    let mut y = top + 4.0;
    for (label, value, weight, size) in &totals {
        y += 15.0;
        l.text(x + 8.0, y - 4.0, *size, *weight, label);
        l.text_right(RIGHT - 8.0, y - 4.0, *size, *weight, value);
    }
    l.frame(x, top, RIGHT - x, totals_height);
    l.y = top + totals_height.max(vat_height) + 10.0;
}

fn notes(l: &mut Layout) {
    let Some(notes) = l.doc.notes.as_deref().filter(|n| !n.trim().is_empty()) else { return };
    l.room_for(2.0 * LINE + 4.0);
    l.text(LEFT, l.y + 9.0, BODY, Weight::Bold, "Observaciones");
    l.y += 9.0 + LINE;
    for line in l.fonts.wrap(notes, BODY, Weight::Regular, RIGHT - LEFT) {
        l.room_for(LINE);
        l.text(LEFT, l.y, BODY, Weight::Regular, &line);
        l.y += LINE;
    }
    l.y += 4.0;
}

/// The authority's QR code, the CAE and its due date.
fn authorized(l: &mut Layout, authorization: &Authorization) -> Result<(), RenderError> {
    let url = qr_url(&authorization.qr);
    debug_assert!(url.starts_with(QR_URL_PREFIX));
    let (width, dark) = qr_symbol(url.as_bytes()).map_err(|e| RenderError::Qr(e.to_string()))?;
    let (size, quiet) = (92.0, 4.0);
    let module = size / (width as f32 + 2.0 * quiet);
    l.room_for(size + 8.0);
    let top = l.y;
    l.push(Op::Qr { x: LEFT + quiet * module, y: top + quiet * module, module, width, dark });
    let x = LEFT + size + 12.0;
    l.text(x, top + 26.0, 10.0, Weight::Bold, "Comprobante autorizado");
    l.text(x, top + 44.0, 9.5, Weight::Bold, &format!("CAE Nº: {}", authorization.cae));
    l.text(x, top + 59.0, 9.0, Weight::Regular, &format!("Fecha de vto. de CAE: {}", date_text(authorization.cae_due)));
    l.text(x, top + 74.0, 7.5, Weight::Regular, "Verifique este comprobante leyendo el código QR con su teléfono.");
    l.frame(LEFT, top, RIGHT - LEFT, size);
    l.y = top + size + 8.0;
    Ok(())
}

fn draw(doc: &VoucherDocument, kind: &Kind, fonts: &Fonts, pages: &[Vec<Op>]) -> Result<Vec<u8>, RenderError> {
    let mut document = Document::new();
    let letter = doc.letter.as_deref().map(|l| format!(" {l}")).unwrap_or_default();
    document.set_metadata(
        Metadata::new()
            .title(format!("{}{letter} {}", doc.title, kind.number()))
            .creator("backoffice".to_owned())
            .language("es-AR".to_owned()),
    );
    let settings = PageSettings::from_wh(PAGE_W, PAGE_H).ok_or_else(|| RenderError::Pdf("page size".into()))?;
    for ops in pages {
        let mut page = document.start_page_with(settings.clone());
        let mut surface = page.surface();
        for op in ops {
            draw_op(&mut surface, fonts, op);
        }
        surface.finish();
        page.finish();
    }
    document.finish().map_err(|e| RenderError::Pdf(e.to_string()))
}

fn fill(gray: u8) -> Fill {
    Fill { paint: luma::Color::new(gray).into(), opacity: NormalizedF32::ONE, rule: Default::default() }
}

fn draw_op(surface: &mut Surface, fonts: &Fonts, op: &Op) {
    match op {
        Op::Text { x, y, size, weight, text, glyphs } => {
            surface.set_stroke(None);
            surface.set_fill(Some(fill(0)));
            surface.draw_glyphs(Point::from_xy(*x, *y), glyphs, fonts.face(*weight).font.clone(), text, *size, false);
        }
        Op::Fill { rect, gray } => {
            let mut path = PathBuilder::new();
            path.push_rect(*rect);
            if let Some(path) = path.finish() {
                surface.set_stroke(None);
                surface.set_fill(Some(fill(*gray)));
                surface.draw_path(&path);
            }
        }
        Op::Frame { rect, width } => {
            let mut path = PathBuilder::new();
            path.push_rect(*rect);
            if let Some(path) = path.finish() {
                surface.set_fill(None);
                surface.set_stroke(Some(Stroke { width: *width, ..Default::default() }));
                surface.draw_path(&path);
            }
        }
        Op::Line { from, to, width, gray } => {
            let mut path = PathBuilder::new();
            path.move_to(from.x, from.y);
            path.line_to(to.x, to.y);
            if let Some(path) = path.finish() {
                surface.set_fill(None);
                surface.set_stroke(Some(Stroke {
                    width: *width,
                    paint: luma::Color::new(*gray).into(),
                    ..Default::default()
                }));
                surface.draw_path(&path);
            }
        }
        Op::Qr { x, y, module, width, dark } => {
            // Drawn in module units (short integer coordinates), one rectangle per horizontal run of
            // dark modules: far less content than a square per module.
            let mut path = PathBuilder::new();
            for (row, modules) in dark.chunks(*width).enumerate() {
                let mut column = 0;
                while column < modules.len() {
                    if !modules[column] {
                        column += 1;
                        continue;
                    }
                    let start = column;
                    while column < modules.len() && modules[column] {
                        column += 1;
                    }
                    // Rows overlap a hair so viewers leave no seams between them.
                    if let Some(rect) = Rect::from_xywh(start as f32, row as f32, (column - start) as f32, 1.05) {
                        path.push_rect(rect);
                    }
                }
            }
            if let Some(path) = path.finish() {
                surface.push_transform(&Transform::from_row(*module, 0.0, 0.0, *module, *x, *y));
                surface.set_stroke(None);
                surface.set_fill(Some(fill(0)));
                surface.draw_path(&path);
                surface.pop();
            }
        }
    }
}

/// Control characters (line breaks included) become spaces on one-line texts.
fn single_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// `dd/mm/yyyy`, as Argentine documents print dates.
fn date_text(date: time::Date) -> String {
    format!("{:02}/{:02}/{}", date.day(), u8::from(date.month()), date.year())
}

/// The 11 digits of a CUIT written with or without dashes.
fn tax_id_digits(text: &str) -> Option<String> {
    let digits: String = text.chars().filter(|c| *c != '-').collect();
    (digits.len() == 11 && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// A CUIT as `30-71234567-8`; any other identifier as given.
fn tax_id_text(text: &str) -> String {
    match tax_id_digits(text) {
        Some(d) => format!("{}-{}-{}", &d[..2], &d[2..10], &d[10..]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::documents::tests::sample;
    use crate::documents::{DocumentLine, money};

    /// The text a PDF reader extracts, with runs of whitespace made single spaces.
    pub(crate) fn text_of(pdf: &[u8]) -> String {
        let text = pdf_extract::extract_text_from_mem(pdf).expect("the PDF's text reads back");
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn page_count(pdf: &[u8]) -> usize {
        pdf_extract::extract_text_from_mem_by_pages(pdf).expect("pages read back").len()
    }

    #[test]
    fn a_voucher_is_a_valid_pdf_whose_text_reads_back_with_its_accents() {
        let doc = sample();
        let pdf = render_pdf(&doc).expect("renders");
        assert!(pdf.starts_with(b"%PDF-1."), "a PDF header");
        let tail = String::from_utf8_lossy(&pdf[pdf.len().saturating_sub(64)..]).into_owned();
        assert!(tail.contains("startxref") && tail.trim_end().ends_with("%%EOF"), "a PDF trailer: {tail}");
        assert_eq!(page_count(&pdf), 1);
        let text = text_of(&pdf);
        for expected in [
            "ORIGINAL",
            "Ingresos Brutos: 901-123456-7",
            "Inicio de actividades: 01/03/2015",
            "FACTURA",
            "Nº 00001-00000042",
            "COD. 01",
            "Almacén de Prueba S.R.L.",
            "Razón social: José Peñalver Muñoz",
            "Domicilio: Calle Güemes 55, Córdoba",
            "Av. Corrientes 1234, 3º B",
            "CUIT: 30-71234567-8",
            "CUIT: 20-12345678-6",
            "Fecha de emisión: 20/08/2026",
            "Señalador de cortesía",
            "Yerba mate orgánica",
            "1,5",
            "5.000,00",
            "6.750,00",
            "Base imponible",
            "10,5%",
            "$ 1.417,50",
            "$ 9.750,00",
            "$ 1.732,50",
            "$ 12.345,67",
            "CAE Nº: 74123456789012",
            "Fecha de vto. de CAE: 30/08/2026",
            "Entrega en depósito Nº 2.",
            "Página 1 de 1",
        ] {
            assert!(text.contains(expected), "{expected:?} is missing from the text: {text}");
        }
        assert!(!text.contains("IVA contenido"), "{text}");
    }

    #[test]
    fn a_voucher_without_breakdown_shows_its_total_and_the_vat_it_contains() {
        let mut doc = sample();
        doc.title = "NOTA DE CRÉDITO".into();
        doc.letter = Some("B".into());
        doc.voucher_code = Some(8);
        doc.vat_breakdown.clear();
        doc.currency = "DOL".into();
        doc.exchange_rate = Some("1045.5".into());
        doc.reference = Some("Factura B 00001-00000041".into());
        let text = text_of(&render_pdf(&doc).expect("renders"));
        for expected in [
            "NOTA DE CRÉDITO",
            "COD. 08",
            "Moneda: DOL — Cotización: 1.045,5",
            "Referencia: Factura B 00001-00000041",
            "US$ 12.345,67",
            "IVA contenido",
        ] {
            assert!(text.contains(expected), "{expected:?} is missing from the text: {text}");
        }
        assert!(!text.contains("Base imponible"), "{text}");
    }

    #[test]
    fn an_unauthorized_purchase_prints_without_cae_or_qr() {
        let mut doc = sample();
        doc.title = "COMPRA".into();
        doc.letter = None;
        doc.voucher_code = None;
        doc.authorization = None;
        doc.notes = None;
        let text = text_of(&render_pdf(&doc).expect("renders"));
        assert!(text.contains("COMPRA"), "{text}");
        assert!(!text.contains("CAE"), "{text}");
    }

    #[test]
    fn many_lines_continue_on_numbered_pages_with_the_totals_at_the_end() {
        let mut doc = sample();
        let line = doc.lines[1].clone();
        doc.lines =
            (1..=120).map(|i| DocumentLine { description: format!("Artículo Nº {i}"), ..line.clone() }).collect();
        let pdf = render_pdf(&doc).expect("renders");
        let pages = pdf_extract::extract_text_from_mem_by_pages(&pdf).expect("pages");
        assert!(pages.len() >= 3, "{} pages", pages.len());
        let count = pages.len();
        for (i, page) in pages.iter().enumerate() {
            let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(page.contains(&format!("Página {} de {count}", i + 1)), "{page}");
            assert_eq!(i > 0, page.contains("continuación"), "{page}");
            // A page that continues the lines repeats the table's head.
            assert_eq!(page.contains("Artículo"), page.contains("Descripción"), "{page}");
        }
        let all = text_of(&pdf);
        let first = all.find("Artículo Nº 1 ").expect("the first line");
        let last = all.find("Artículo Nº 120 ").expect("the last line");
        let total = all.find(&money(doc.total_cents.get(), "PES")).expect("the total");
        let cae = all.find("CAE Nº").expect("the CAE");
        assert!(first < last && last < total && total < cae, "{all}");
        let end = pages[count - 1].split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(end.contains("CAE"), "{end}");
    }

    #[test]
    fn long_words_and_long_notes_wrap_inside_the_page() {
        let fonts = FONTS.as_ref().expect("fonts");
        let word = "Supercalifragilísticoespialidoso".repeat(4);
        let lines = fonts.wrap(&format!("a {word} b"), BODY, Weight::Regular, 100.0);
        assert!(lines.len() > 2, "{lines:?}");
        assert!(lines.iter().all(|l| fonts.width(l, BODY, Weight::Regular) <= 100.0), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', ""), format!("a{word}b"));
        let mut doc = sample();
        doc.notes = Some("Texto largo de observaciones. ".repeat(400));
        let pdf = render_pdf(&doc).expect("renders");
        assert!(page_count(&pdf) >= 2);
    }

    #[test]
    fn what_cannot_be_printed_faithfully_is_refused() {
        let mut doc = sample();
        doc.number = 123_456_789;
        assert!(matches!(render_pdf(&doc), Err(RenderError::Invalid(_))));
        let mut doc = sample();
        if let Some(authorization) = doc.authorization.as_mut() {
            authorization.cae = "12345".into();
        }
        assert!(matches!(render_pdf(&doc), Err(RenderError::Invalid(_))));
    }

    #[test]
    fn tax_ids_and_dates_print_as_in_argentina() {
        assert_eq!(tax_id_text("30712345678"), "30-71234567-8");
        assert_eq!(tax_id_text("30-71234567-8"), "30-71234567-8");
        assert_eq!(tax_id_text("12345678"), "12345678");
        assert_eq!(date_text(time::macros::date!(2026 - 01 - 05)), "05/01/2026");
    }

    #[test]
    fn a_delivery_note_prints_names_and_quantities_and_no_prices() {
        use crate::documents::delivery_notes::{DeliveredLine, DeliveryNoteDocument};
        let voucher = sample();
        let mut note = DeliveryNoteDocument {
            point_of_sale: 3,
            number: 42,
            date: voucher.date,
            issuer: voucher.issuer,
            receiver: voucher.receiver,
            lines: vec![
                DeliveredLine { description: "Yerba mate orgánica 1 kg".into(), quantity: "2.5".into() },
                DeliveredLine { description: "Señalador de cortesía".into(), quantity: "1000".into() },
            ],
            notes: Some("Entregar por la tarde".into()),
        };
        let pdf = render_delivery_note_pdf(&note).expect("renders");
        assert!(pdf.starts_with(b"%PDF-"));
        let text = text_of(&pdf);
        for printed in [
            "REMITO",
            "Nº R-0003-00000042",
            "Punto de venta: 0003",
            "Fecha de emisión: 20/08/2026",
            "Documento no válido como factura",
            "Almacén de Prueba S.R.L.",
            "José Peñalver Muñoz",
            "Yerba mate orgánica 1 kg 2,5",
            "Señalador de cortesía 1.000",
            "Entregar por la tarde",
            "Página 1 de 1",
        ] {
            assert!(text.contains(printed), "{printed:?} in {text}");
        }
        for absent in ["$", "Precio", "Importe", "Total", "IVA 21"] {
            assert!(!text.contains(absent), "{absent:?} in {text}");
        }
        assert_eq!(note.file_name(), "remito-r-0003-00000042.pdf");

        note.point_of_sale = 10_000;
        assert!(matches!(render_delivery_note_pdf(&note), Err(RenderError::Invalid(_))));
        note.point_of_sale = 1;
        note.number = 100_000_000;
        assert!(matches!(render_delivery_note_pdf(&note), Err(RenderError::Invalid(_))));
    }
}
