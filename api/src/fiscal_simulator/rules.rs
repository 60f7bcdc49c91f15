//! What the authority checks, as pure functions of the request, the series' last voucher and the
//! day: no IO, so every rule is tested on its own. The codes are WSFEv1's (see the table in
//! `mod.rs`); every amount comparison is in integer cents.

use commands::fiscal::Rate;
use commands::fiscal::wire::{Auth, CabRequest, DetRequest, Message};
use time::{Date, Duration};

/// The highest voucher number (`CbteDesde`).
pub const MAX_NUMBER: i64 = 99_999_999;
/// The most vouchers one `FECAESolicitar` may carry (`FECompTotXRequest`'s `RegXReq`).
pub const MAX_BATCH: i32 = 250;

/// One cent: the tolerance of every amount comparison.
const TOLERANCE: i128 = 1;

/// The voucher classes that decide VAT detail and the receivers allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    A,
    B,
    C,
    /// "A con leyenda operación sujeta a retención": A's rules for receivers.
    M,
}

/// The class of a voucher type WSFEv1 authorizes; `None` for any other (export vouchers 19–21 belong to
/// another service).
pub fn class_of(voucher_type: i32) -> Option<Class> {
    match voucher_type {
        1..=5 | 201..=203 => Some(Class::A),
        6..=10 | 206..=208 => Some(Class::B),
        11..=13 | 15 | 211..=213 => Some(Class::C),
        51..=54 => Some(Class::M),
        _ => None,
    }
}

/// Debit and credit notes, which must name the vouchers they correct.
fn is_note(voucher_type: i32) -> bool {
    matches!(voucher_type, 2 | 3 | 7 | 8 | 12 | 13 | 52 | 53 | 202 | 203 | 207 | 208 | 212 | 213)
}

/// The voucher types a voucher may associate (`CbtesAsoc`).
fn associable(voucher_type: i32) -> &'static [i32] {
    match voucher_type {
        2 | 3 => &[1, 2, 3, 4, 5],
        7 | 8 => &[6, 7, 8, 9, 10],
        12 | 13 => &[11, 12, 13, 15],
        52 | 53 => &[51, 52, 53, 54],
        202 | 203 => &[201, 202, 203],
        207 | 208 => &[206, 207, 208],
        212 | 213 => &[211, 212, 213],
        // Invoices associate only delivery documents (remitos).
        1 | 6 | 51 => &[88, 991],
        201 | 206 | 211 => &[91, 990, 991, 993, 994, 995],
        _ => &[],
    }
}

/// Receiver VAT conditions (`CondicionIVAReceptorId`) the authority knows.
const RECEIVER_CONDITIONS: [i32; 11] = [1, 4, 5, 6, 7, 8, 9, 10, 13, 15, 16];

/// The receiver conditions an A (or M) voucher may go to; B vouchers go to the rest.
const A_RECEIVERS: [i32; 4] = [1, 6, 13, 16];

/// What the simulator knows of a series before a voucher: its last number (0 when none) and date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Series {
    pub last_number: i64,
    pub last_date: Option<Date>,
}

/// The authority's verdict on one voucher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Approved, with its non-blocking observations.
    Approved { observations: Vec<Message> },
    /// Rejected: `errors` answer in `Errors[]`, `observations` in the voucher's `Observaciones[]`.
    Rejected { errors: Vec<Message>, observations: Vec<Message> },
}

impl Verdict {
    /// Every code of the verdict, errors first.
    pub fn codes(&self) -> Vec<i64> {
        match self {
            Verdict::Approved { observations } => observations.iter().map(|m| m.code).collect(),
            Verdict::Rejected { errors, observations } => errors.iter().chain(observations).map(|m| m.code).collect(),
        }
    }
}

/// The message of 10016 when the number or date does not follow the series.
pub const NOT_NEXT: &str = "El numero o fecha del comprobante no se corresponde con el proximo a autorizar. Consultar metodo FECompUltimoAutorizado.";

/// `Auth`, checked by every operation but `FEDummy`. The simulator accepts any non-empty ticket.
pub fn check_auth(auth: Option<&Auth>) -> Vec<Message> {
    let Some(auth) = auth else {
        return vec![Message::new(500, "Campo Auth no fue ingresado o esta mal formado.")];
    };
    let mut errors = Vec::new();
    if auth.token.trim().is_empty() {
        errors.push(Message::new(600, "ValidacionDeToken: Parametro nulo o vacio (token)"));
    } else if auth.sign.trim().is_empty() {
        errors.push(Message::new(600, "ValidacionDeToken: Parametro nulo o vacio (sign)"));
    } else if !commands::contacts::is_valid_cuit(&auth.cuit.to_string()) {
        errors.push(Message::new(
            600,
            format!("ValidacionDeToken: No aparecio CUIT en lista de relaciones: {}", auth.cuit),
        ));
    }
    errors
}

/// `FeCabReq` against the vouchers sent: these reject the whole request. A request carries at most
/// [`MAX_BATCH`] vouchers (`FECompTotXRequest`'s `RegXReq`).
pub fn check_header(header: &CabRequest, details: usize) -> Vec<Message> {
    let mut errors = Vec::new();
    if details == 0 || header.count < 1 {
        errors.push(Message::new(10001, "Campo CantReg debe estar comprendido entre 1 y 9998."));
    } else if usize::try_from(header.count).ok() != Some(details) {
        errors.push(Message::new(
            10002,
            format!(
                "Campo CantReg debe ser igual a lo informado en detalle. Informado: {}, Enviado:{details}",
                header.count
            ),
        ));
    } else if details > MAX_BATCH as usize {
        errors.push(Message::new(
            10003,
            format!("La cantidad de registros supera el maximo permitido por requerimiento ({MAX_BATCH})."),
        ));
    }
    if !(1..=99_998).contains(&header.point_of_sale) {
        errors.push(Message::new(10004, "Campo PtoVta debe estar comprendido entre 1 y 99998."));
    }
    if header.voucher_type <= 0 {
        errors.push(Message::new(10006, "Campo CbteTipo debe ser un valor numerico mayor a 0."));
    } else if class_of(header.voucher_type).is_none() {
        errors.push(Message::new(
            10007,
            "Campo CbteTipo no es un tipo habilitado. Consultar metodo FEParamGetTiposCbte.",
        ));
    }
    errors
}

/// The voucher's own rules, given its `series` and the authority's `today` (Argentine calendar).
pub fn check_voucher(issuer: i64, header: &CabRequest, detail: &DetRequest, series: &Series, today: Date) -> Verdict {
    let mut errors = Vec::new();
    let mut blocking = Vec::new();
    let mut observations = Vec::new();
    let class = class_of(header.voucher_type);
    let date = detail.date.unwrap_or(today);

    // Numbering: the next number of the series, never dated before its last voucher.
    if !(1..=MAX_NUMBER).contains(&detail.number_from) {
        blocking.push(Message::new(10008, "Campo CbteDesde debe estar comprendido entre 1 y 99999999."));
    }
    if detail.number_to != detail.number_from {
        blocking
            .push(Message::new(10012, "Campo CbteHasta debe ser igual a CbteDesde para un comprobante individual."));
    }
    if detail.number_from != series.last_number + 1 || series.last_date.is_some_and(|last| date < last) {
        errors.push(Message::new(10016, NOT_NEXT));
    }

    // Dates: around the day of sending, wider for services, whose periods must be stated.
    let window = match detail.concept {
        1 => Some(5),
        2 | 3 => Some(10),
        _ => {
            blocking.push(Message::new(10030, "El campo Concepto es obligatorio y debe ser 1, 2 o 3."));
            None
        }
    };
    if let Some(days) = window {
        let (earliest, latest) =
            (today.saturating_sub(Duration::days(days)), today.saturating_add(Duration::days(days)));
        if date < earliest || date > latest {
            blocking.push(Message::new(
                10016,
                format!(
                    "Campo CbteFch debe estar comprendido en el rango N-{days} y N+{days} siendo N la fecha de envio del pedido de autorizacion para concepto {}",
                    detail.concept
                ),
            ));
        }
    }
    if matches!(detail.concept, 2 | 3) {
        match (detail.service_from, detail.service_to, detail.payment_due) {
            (Some(from), Some(to), Some(due)) => {
                if from > to {
                    blocking.push(Message::new(10032, "El campo FchServDesde no puede ser posterior a FchServHasta."));
                }
                if due < date {
                    blocking.push(Message::new(
                        10036,
                        "El campo FchVtoPago no puede ser anterior a la fecha del comprobante.",
                    ));
                }
            }
            _ => blocking.push(Message::new(
                10049,
                "Los campos FchServDesde, FchServHasta y FchVtoPago son obligatorios para Concepto 2 o 3.",
            )),
        }
    }

    // The receiver: identified as the class requires, with a VAT condition that fits the letter.
    let a_like = matches!(class, Some(Class::A | Class::M));
    if a_like && detail.doc_type != 80 {
        blocking.push(Message::new(10013, "Para comprobantes clase A el campo DocTipo debe ser 80 (CUIT)."));
    }
    if detail.doc_type == 80 && !commands::contacts::is_valid_cuit(&detail.doc_number.to_string()) {
        blocking.push(Message::new(10015, "El campo DocNro no es una CUIT valida."));
    }
    if detail.doc_type == 99 && detail.doc_number != 0 {
        blocking.push(Message::new(10015, "Si DocTipo es 99 el campo DocNro debe ser 0."));
    }
    if matches!(detail.doc_type, 80 | 86) && detail.doc_number == issuer {
        blocking.push(Message::new(10069, "El numero de documento del receptor no puede ser igual al del emisor."));
    }
    match detail.receiver_vat_condition {
        None => observations.push(Message::new(
            10246,
            "Campo Condicion Frente al IVA del receptor es obligatorio conforme a lo reglamentado por la Resolucion General Nro 5616.",
        )),
        Some(condition) if !RECEIVER_CONDITIONS.contains(&condition) => blocking.push(Message::new(
            10242,
            "El campo CondicionIVAReceptorId no es un valor permitido. Consultar metodo FEParamGetCondicionIvaReceptor.",
        )),
        Some(condition) => {
            let fits = match class {
                Some(Class::A | Class::M) => A_RECEIVERS.contains(&condition),
                Some(Class::B) => !A_RECEIVERS.contains(&condition),
                Some(Class::C) | None => true,
            };
            if !fits {
                blocking.push(Message::new(
                    10243,
                    "El campo CondicionIVAReceptorId no es valido para la clase de comprobante informado.",
                ));
            }
        }
    }

    // Currency.
    let rate = detail.rate.map(Rate::units);
    match detail.currency.as_str() {
        "PES" if rate != Some(Rate::ONE.units()) => {
            blocking.push(Message::new(10039, "El campo MonCotiz es obligatorio e igual a 1 cuando MonId es PES."))
        }
        "PES" => {}
        "DOL" | "060" if rate.is_none_or(|r| r <= 0) => {
            blocking.push(Message::new(10038, "El campo MonCotiz es obligatorio y debe ser mayor a 0."))
        }
        "DOL" | "060" => {}
        _ => {
            blocking.push(Message::new(10037, "El campo MonId debe ser un valor devuelto por FEParamGetTiposMonedas."))
        }
    }

    check_amounts(class, detail, &mut blocking);
    check_associated(header.voucher_type, detail, &mut blocking);

    if errors.is_empty() && blocking.is_empty() {
        Verdict::Approved { observations }
    } else {
        blocking.extend(observations);
        Verdict::Rejected { errors, observations: blocking }
    }
}

/// Totals, VAT detail and other taxes, all in cents (i128, so no sum of i64s can overflow).
fn check_amounts(class: Option<Class>, detail: &DetRequest, blocking: &mut Vec<Message>) {
    let cents = |amount: commands::fiscal::Amount| i128::from(amount.cents());
    let (total, non_taxed, net, exempt, other, vat) = (
        cents(detail.total),
        cents(detail.non_taxed),
        cents(detail.net),
        cents(detail.exempt),
        cents(detail.other_taxes),
        cents(detail.vat),
    );
    let class_c = class == Some(Class::C);
    let mut refuse = |code: i64, msg: &str| blocking.push(Message::new(code, msg));
    if non_taxed < 0 || (class_c && non_taxed != 0) {
        refuse(10043, "El campo ImpTotConc no puede ser menor a 0; para comprobantes tipo C debe ser 0.");
    }
    if exempt < 0 || (class_c && exempt != 0) {
        refuse(10044, "El campo ImpOpEx no puede ser menor a 0; para comprobantes tipo C debe ser 0.");
    }
    if net < 0 {
        refuse(10045, "El campo ImpNeto no puede ser menor a 0.");
    }
    if other < 0 {
        refuse(10046, "El campo ImpTrib no puede ser menor a 0.");
    }
    if vat < 0 || (class_c && vat != 0) {
        refuse(10047, "El campo ImpIVA no puede ser menor a 0; para comprobantes tipo C debe ser 0.");
    }
    if total < 0 {
        refuse(10065, "El campo ImpTotal no puede ser menor a 0.");
    }
    if (total - (non_taxed + net + exempt + other + vat)).abs() > TOLERANCE {
        refuse(
            10048,
            "El campo ImpTotal debe ser igual a la suma de ImpTotConc + ImpNeto + ImpOpEx + ImpTrib + ImpIVA.",
        );
    }

    if class_c {
        if !detail.vat_lines.is_empty() {
            refuse(10071, "Si el tipo de comprobante es C, el array de IVA no debe informarse.");
        }
    } else if detail.vat_lines.is_empty() {
        if net > 0 {
            refuse(10070, "Si ImpNeto es mayor a 0 es obligatorio informar el array de IVA.");
        }
        if vat > 0 {
            refuse(10018, "Si ImpIVA es mayor a 0 el array de IVA es obligatorio.");
        }
    } else {
        let mut seen = Vec::new();
        for line in &detail.vat_lines {
            if seen.contains(&line.code) {
                refuse(10022, "El campo Id en AlicIva no debe repetirse.");
            }
            seen.push(line.code);
            let (base, amount) = (cents(line.base), cents(line.amount));
            if base < 0 {
                refuse(10020, "El campo BaseImp en AlicIva debe ser mayor o igual a 0.");
            }
            if amount < 0 {
                refuse(10021, "El campo Importe en AlicIva debe ser mayor o igual a 0.");
            }
            match events::domain::VatRate::from_code(i64::from(line.code)) {
                Err(_) => refuse(10019, "El campo Id en AlicIva debe ser un valor devuelto por FEParamGetTiposIva."),
                // amount = base × rate within a cent, compared in ten-thousandths of a cent.
                Ok(rate) => {
                    if (amount * 10_000 - base * i128::from(rate.hundredths())).abs() > TOLERANCE * 10_000 {
                        refuse(10051, "Los importes informados en AlicIva no se corresponden con el tipo de IVA.");
                    }
                }
            }
        }
        let (bases, amounts): (i128, i128) =
            detail.vat_lines.iter().fold((0, 0), |(b, a), line| (b + cents(line.base), a + cents(line.amount)));
        if (amounts - vat).abs() > TOLERANCE {
            refuse(10023, "La suma de los Importe en AlicIva debe ser igual a ImpIVA.");
        }
        if (bases - net).abs() > TOLERANCE {
            refuse(10061, "La suma de los BaseImp en AlicIva debe ser igual a ImpNeto.");
        }
    }

    let taxes: i128 = detail.other_tax_lines.iter().map(|t| cents(t.amount)).sum();
    if (other > 0 && detail.other_tax_lines.is_empty()) || (other == 0 && !detail.other_tax_lines.is_empty()) {
        refuse(10024, "Si ImpTrib es mayor a 0 el array Tributos es obligatorio; si es 0 no debe enviarse.");
    } else if !detail.other_tax_lines.is_empty() && (taxes - other).abs() > TOLERANCE {
        refuse(10029, "La suma de los Importe en Tributos debe ser igual a ImpTrib.");
    }
}

/// Credit and debit notes name what they correct; nothing else associates vouchers but remitos.
fn check_associated(voucher_type: i32, detail: &DetRequest, blocking: &mut Vec<Message>) {
    if is_note(voucher_type) && detail.associated.is_empty() {
        blocking.push(Message::new(
            10197,
            "Si el comprobante es Debito o Credito, debe informar al menos un comprobante asociado.",
        ));
    }
    let allowed = associable(voucher_type);
    let mut seen = Vec::new();
    for associated in &detail.associated {
        let key = (associated.voucher_type, associated.point_of_sale, associated.number);
        if associated.voucher_type <= 0 {
            blocking.push(Message::new(10057, "De enviarse CbteAsoc debe enviarse Tipo mayor a 0."));
        } else if !allowed.contains(&associated.voucher_type) {
            blocking.push(Message::new(10040, "El tipo de comprobante asociado no corresponde al tipo a autorizar."));
        }
        if !(1..=99_999).contains(&associated.point_of_sale) {
            blocking.push(Message::new(10058, "De enviarse CbteAsoc debe enviarse PtoVta entre 1 y 99999."));
        }
        if !(1..=MAX_NUMBER).contains(&associated.number) {
            blocking.push(Message::new(10059, "De enviarse CbteAsoc debe enviarse Nro entre 1 y 99999999."));
        }
        if seen.contains(&key) {
            blocking.push(Message::new(10060, "Los comprobantes asociados no deben repetirse."));
        }
        seen.push(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commands::fiscal::Amount;
    use commands::fiscal::wire::{AssociatedVoucher, OtherTax, VatRate};
    use time::macros::date;

    const ISSUER: i64 = 20267565393;
    const RECEIVER: i64 = 20055361682;
    const TODAY: Date = date!(2025 - 03 - 07);

    fn header(voucher_type: i32) -> CabRequest {
        CabRequest { count: 1, point_of_sale: 3, voucher_type }
    }

    /// Invoice A #1 for 100.00 + 21% to a Responsable Inscripto, today.
    fn invoice_a() -> DetRequest {
        DetRequest {
            concept: 1,
            doc_type: 80,
            doc_number: RECEIVER,
            number_from: 1,
            number_to: 1,
            date: Some(TODAY),
            total: Amount::from_cents(12100),
            non_taxed: Amount::ZERO,
            net: Amount::from_cents(10000),
            exempt: Amount::ZERO,
            other_taxes: Amount::ZERO,
            vat: Amount::from_cents(2100),
            service_from: None,
            service_to: None,
            payment_due: None,
            currency: "PES".into(),
            rate: Some(Rate::ONE),
            receiver_vat_condition: Some(1),
            associated: vec![],
            other_tax_lines: vec![],
            vat_lines: vec![VatRate { code: 5, base: Amount::from_cents(10000), amount: Amount::from_cents(2100) }],
        }
    }

    fn invoice_c() -> DetRequest {
        DetRequest {
            doc_type: 99,
            doc_number: 0,
            total: Amount::from_cents(12100),
            net: Amount::from_cents(12100),
            vat: Amount::ZERO,
            vat_lines: vec![],
            receiver_vat_condition: Some(5),
            ..invoice_a()
        }
    }

    fn verdict(voucher_type: i32, detail: &DetRequest) -> Verdict {
        check_voucher(ISSUER, &header(voucher_type), detail, &Series::default(), TODAY)
    }

    fn codes(voucher_type: i32, detail: &DetRequest) -> Vec<i64> {
        match verdict(voucher_type, detail) {
            Verdict::Approved { .. } => vec![],
            rejected => rejected.codes(),
        }
    }

    #[test]
    fn a_well_formed_voucher_is_approved() {
        assert_eq!(verdict(1, &invoice_a()), Verdict::Approved { observations: vec![] });
        assert_eq!(verdict(11, &invoice_c()), Verdict::Approved { observations: vec![] });
    }

    #[test]
    fn only_the_next_number_on_or_after_the_last_date_is_accepted() {
        let series = Series { last_number: 4, last_date: Some(TODAY.saturating_sub(Duration::days(1))) };
        let numbered =
            |n: i64, date: Date| DetRequest { number_from: n, number_to: n, date: Some(date), ..invoice_a() };
        let check = |detail: &DetRequest| check_voucher(ISSUER, &header(1), detail, &series, TODAY);
        assert!(matches!(check(&numbered(5, TODAY)), Verdict::Approved { .. }));
        for (n, date) in [(4, TODAY), (6, TODAY), (1, TODAY), (5, TODAY.saturating_sub(Duration::days(2)))] {
            let Verdict::Rejected { errors, .. } = check(&numbered(n, date)) else { panic!("{n} {date} approved") };
            assert_eq!(errors, vec![Message::new(10016, NOT_NEXT)]);
        }
        // The first voucher of a series is number 1.
        assert_eq!(codes(1, &DetRequest { number_from: 2, number_to: 2, ..invoice_a() }), vec![10016]);
        assert_eq!(codes(1, &DetRequest { number_to: 2, ..invoice_a() }), vec![10012]);
        assert_eq!(codes(1, &DetRequest { number_from: 0, number_to: 0, ..invoice_a() }), vec![10016, 10008]);
    }

    #[test]
    fn dates_stay_within_five_days_for_products_and_ten_for_services() {
        let dated = |concept: i32, offset: i64| {
            let date = TODAY.saturating_add(Duration::days(offset));
            let services = matches!(concept, 2 | 3);
            DetRequest {
                concept,
                date: Some(date),
                service_from: services.then_some(date),
                service_to: services.then_some(date),
                payment_due: services.then_some(date),
                ..invoice_a()
            }
        };
        for offset in [-5, 0, 5] {
            assert_eq!(codes(1, &dated(1, offset)), Vec::<i64>::new(), "{offset}");
        }
        for offset in [-6, 6] {
            assert_eq!(codes(1, &dated(1, offset)), vec![10016], "{offset}");
        }
        for concept in [2, 3] {
            for offset in [-10, 10] {
                assert_eq!(codes(1, &dated(concept, offset)), Vec::<i64>::new(), "{concept} {offset}");
            }
            for offset in [-11, 11] {
                assert_eq!(codes(1, &dated(concept, offset)), vec![10016], "{concept} {offset}");
            }
        }
        // No date means today.
        assert_eq!(codes(1, &DetRequest { date: None, ..invoice_a() }), Vec::<i64>::new());
        assert_eq!(codes(1, &DetRequest { concept: 4, ..invoice_a() }), vec![10030]);
    }

    #[test]
    fn services_state_their_period_and_due_date() {
        let services = DetRequest {
            concept: 2,
            service_from: Some(date!(2025 - 02 - 01)),
            service_to: Some(date!(2025 - 02 - 28)),
            payment_due: Some(date!(2025 - 03 - 17)),
            ..invoice_a()
        };
        assert_eq!(codes(1, &services), Vec::<i64>::new());
        assert_eq!(codes(1, &DetRequest { payment_due: None, ..services.clone() }), vec![10049]);
        assert_eq!(codes(1, &DetRequest { service_from: None, ..services.clone() }), vec![10049]);
        assert_eq!(
            codes(1, &DetRequest { service_from: Some(date!(2025 - 03 - 01)), ..services.clone() }),
            vec![10032]
        );
        assert_eq!(codes(1, &DetRequest { payment_due: Some(date!(2025 - 03 - 06)), ..services.clone() }), vec![10036]);
        // Due on the voucher date is fine.
        assert_eq!(codes(1, &DetRequest { payment_due: Some(TODAY), ..services }), Vec::<i64>::new());
    }

    #[test]
    fn totals_add_up_within_a_cent() {
        let total = |cents: i64| DetRequest { total: Amount::from_cents(cents), ..invoice_a() };
        assert_eq!(codes(1, &total(12101)), Vec::<i64>::new());
        assert_eq!(codes(1, &total(12099)), Vec::<i64>::new());
        assert_eq!(codes(1, &total(12102)), vec![10048]);
        let everything = DetRequest {
            total: Amount::from_cents(12100 + 500 + 700 + 300),
            non_taxed: Amount::from_cents(500),
            exempt: Amount::from_cents(700),
            other_taxes: Amount::from_cents(300),
            other_tax_lines: vec![OtherTax {
                code: 7,
                description: Some("Percepcion IIBB".into()),
                base: Amount::from_cents(10000),
                rate: Amount::from_cents(300),
                amount: Amount::from_cents(300),
            }],
            ..invoice_a()
        };
        assert_eq!(codes(1, &everything), Vec::<i64>::new());
        assert_eq!(codes(1, &DetRequest { other_tax_lines: vec![], ..everything.clone() }), vec![10024]);
        let mut off = everything.clone();
        off.other_tax_lines[0].amount = Amount::from_cents(298);
        assert_eq!(codes(1, &off), vec![10029]);
        assert_eq!(codes(1, &DetRequest { net: Amount::from_cents(-1), ..invoice_a() }), vec![10045, 10048, 10061]);
    }

    #[test]
    fn vat_lines_use_known_rates_and_add_up() {
        let lines = |lines: Vec<(i32, i64, i64)>| {
            let vat_lines: Vec<VatRate> = lines
                .into_iter()
                .map(|(code, base, amount)| VatRate {
                    code,
                    base: Amount::from_cents(base),
                    amount: Amount::from_cents(amount),
                })
                .collect();
            let net: i64 = vat_lines.iter().map(|l| l.base.cents()).sum();
            let vat: i64 = vat_lines.iter().map(|l| l.amount.cents()).sum();
            DetRequest {
                net: Amount::from_cents(net),
                vat: Amount::from_cents(vat),
                total: Amount::from_cents(net + vat),
                vat_lines,
                ..invoice_a()
            }
        };
        // 10.5% of 33.33 is 3.49965: 3.50 and 3.49 are both within a cent, 3.51 is not.
        assert_eq!(codes(1, &lines(vec![(5, 10000, 2100), (4, 3333, 350)])), Vec::<i64>::new());
        assert_eq!(codes(1, &lines(vec![(4, 3333, 349)])), Vec::<i64>::new());
        assert_eq!(codes(1, &lines(vec![(4, 3333, 351)])), vec![10051]);
        assert_eq!(
            codes(1, &lines(vec![(3, 5000, 0), (9, 10000, 250), (8, 10000, 500), (6, 10000, 2700)])),
            Vec::<i64>::new()
        );
        assert_eq!(codes(1, &lines(vec![(7, 10000, 2100)])), vec![10019]);
        assert_eq!(codes(1, &lines(vec![(5, 10000, 2100), (5, 100, 21)])), vec![10022]);
        // Totals that disagree with their lines.
        assert_eq!(
            codes(1, &DetRequest { vat: Amount::from_cents(2000), total: Amount::from_cents(12000), ..invoice_a() }),
            vec![10023]
        );
        assert_eq!(
            codes(1, &DetRequest { net: Amount::from_cents(9000), total: Amount::from_cents(11100), ..invoice_a() }),
            vec![10061]
        );
        assert_eq!(codes(1, &DetRequest { vat_lines: vec![], ..invoice_a() }), vec![10070, 10018]);
    }

    #[test]
    fn class_c_carries_no_vat() {
        assert_eq!(codes(11, &DetRequest { vat_lines: invoice_a().vat_lines, ..invoice_c() }), vec![10071]);
        let with_vat = DetRequest { net: Amount::from_cents(10000), vat: Amount::from_cents(2100), ..invoice_c() };
        assert_eq!(codes(11, &with_vat), vec![10047]);
        let exempt = DetRequest { net: Amount::from_cents(12000), exempt: Amount::from_cents(100), ..invoice_c() };
        assert_eq!(codes(11, &exempt), vec![10044]);
        // C goes to any receiver.
        for condition in RECEIVER_CONDITIONS {
            let receiver = DetRequest { receiver_vat_condition: Some(condition), ..invoice_c() };
            assert_eq!(codes(11, &receiver), Vec::<i64>::new(), "{condition}");
        }
    }

    #[test]
    fn the_receivers_condition_fits_the_letter() {
        for condition in RECEIVER_CONDITIONS {
            let a = DetRequest { receiver_vat_condition: Some(condition), ..invoice_a() };
            let b = DetRequest { doc_type: 99, doc_number: 0, ..a.clone() };
            let (expected_a, expected_b) =
                if A_RECEIVERS.contains(&condition) { (vec![], vec![10243]) } else { (vec![10243], vec![]) };
            assert_eq!(codes(1, &a), expected_a, "A to {condition}");
            assert_eq!(codes(51, &a), expected_a, "M to {condition}");
            assert_eq!(codes(6, &b), expected_b, "B to {condition}");
        }
        assert_eq!(codes(1, &DetRequest { receiver_vat_condition: Some(2), ..invoice_a() }), vec![10242]);
        // Missing: approved, observed.
        let missing = verdict(1, &DetRequest { receiver_vat_condition: None, ..invoice_a() });
        assert!(matches!(&missing, Verdict::Approved { observations } if observations[0].code == 10246), "{missing:?}");
    }

    #[test]
    fn receivers_are_identified_as_the_class_requires() {
        assert_eq!(codes(1, &DetRequest { doc_type: 96, doc_number: 30123456, ..invoice_a() }), vec![10013]);
        assert_eq!(codes(1, &DetRequest { doc_number: 20055361681, ..invoice_a() }), vec![10015]);
        assert_eq!(codes(1, &DetRequest { doc_number: ISSUER, ..invoice_a() }), vec![10069]);
        assert_eq!(codes(11, &DetRequest { doc_number: 5, ..invoice_c() }), vec![10015]);
        assert_eq!(codes(11, &DetRequest { doc_type: 96, doc_number: 30123456, ..invoice_c() }), Vec::<i64>::new());
    }

    #[test]
    fn pesos_have_rate_one_and_currencies_are_known() {
        let currency = |id: &str, rate: Option<i64>| DetRequest {
            currency: id.into(),
            rate: rate.map(Rate::from_units),
            ..invoice_a()
        };
        assert_eq!(codes(1, &currency("PES", Some(2_000_000))), vec![10039]);
        assert_eq!(codes(1, &currency("PES", None)), vec![10039]);
        assert_eq!(codes(1, &currency("PES", Some(1_000_001))), vec![10039]);
        assert_eq!(codes(1, &currency("DOL", Some(1_050_250_000))), Vec::<i64>::new());
        assert_eq!(codes(1, &currency("DOL", Some(0))), vec![10038]);
        assert_eq!(codes(1, &currency("XYZ", Some(1_000_000))), vec![10037]);
    }

    #[test]
    fn notes_name_the_vouchers_they_correct() {
        let associated = |voucher_type: i32, number: i64| AssociatedVoucher {
            voucher_type,
            point_of_sale: 3,
            number,
            cuit: None,
            date: Some(TODAY),
        };
        let note = DetRequest { associated: vec![associated(1, 7)], ..invoice_a() };
        assert_eq!(codes(3, &note), Vec::<i64>::new());
        assert_eq!(codes(3, &invoice_a()), vec![10197]);
        assert_eq!(codes(3, &DetRequest { associated: vec![associated(6, 7)], ..invoice_a() }), vec![10040]);
        assert_eq!(codes(1, &note), vec![10040], "an invoice associates no invoice");
        assert_eq!(
            codes(3, &DetRequest { associated: vec![associated(1, 7), associated(1, 7)], ..invoice_a() }),
            vec![10060]
        );
        assert_eq!(codes(3, &DetRequest { associated: vec![associated(1, 0)], ..invoice_a() }), vec![10059]);
        let credit_c = DetRequest { associated: vec![associated(11, 7)], ..invoice_c() };
        assert_eq!(codes(13, &credit_c), Vec::<i64>::new());
    }

    #[test]
    fn requests_are_refused_before_their_vouchers() {
        let auth = |token: &str, sign: &str, cuit: i64| Auth { token: token.into(), sign: sign.into(), cuit };
        assert_eq!(check_auth(Some(&auth("t", "s", ISSUER))), vec![]);
        assert_eq!(check_auth(None)[0].code, 500);
        assert_eq!(check_auth(Some(&auth("", "s", ISSUER)))[0].code, 600);
        assert_eq!(check_auth(Some(&auth("t", " ", ISSUER)))[0].code, 600);
        assert_eq!(check_auth(Some(&auth("t", "s", 20267565392)))[0].code, 600);
        let header_codes = |count: i32, pos: i32, voucher_type: i32, details: usize| -> Vec<i64> {
            check_header(&CabRequest { count, point_of_sale: pos, voucher_type }, details)
                .iter()
                .map(|m| m.code)
                .collect()
        };
        assert_eq!(header_codes(1, 1, 1, 1), Vec::<i64>::new());
        assert_eq!(header_codes(0, 1, 1, 0), vec![10001]);
        assert_eq!(header_codes(2, 1, 1, 1), vec![10002]);
        assert_eq!(header_codes(2, 1, 1, 2), Vec::<i64>::new(), "a batch");
        assert_eq!(header_codes(251, 1, 1, 251), vec![10003]);
        assert_eq!(header_codes(1, 0, 1, 1), vec![10004]);
        assert_eq!(header_codes(1, 99_999, 1, 1), vec![10004]);
        assert_eq!(header_codes(1, 1, 0, 1), vec![10006]);
        assert_eq!(header_codes(1, 1, 19, 1), vec![10007]);
        assert_eq!(header_codes(1, 1, 90, 1), vec![10007]);
    }
}
