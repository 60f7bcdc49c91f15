//! Delivery notes (remitos) in print: what one shows (the issuer, the customer, `R-PPPP-NNNNNNNN`, the
//! date and each line's name and quantity; never a price). The delivery notes projection asks for a
//! note's document when it folds its `DeliveryNoteCreated`, as the sales projection does for a sale (a
//! request with the same input changes nothing, so a rebuild asks again harmlessly); a deleted note's
//! document stays stored, and the API answers 404 for it.

use super::{Party, RenderError, store};
use events::catalogue::{DeliveryNoteState, iso_date};
use serde::{Deserialize, Serialize};
use time::Date;

/// A printed delivery note: every text it shows. Stored as JSON (the store's `input`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNoteDocument {
    /// The point of sale's number (at most 4 digits as remitos print it).
    pub point_of_sale: i32,
    /// At most 8 digits.
    pub number: i64,
    #[serde(with = "iso_date")]
    pub date: Date,
    /// The organization.
    pub issuer: Party,
    /// The customer.
    pub receiver: Party,
    pub lines: Vec<DeliveredLine>,
    pub notes: Option<String>,
}

/// One delivered line: what and how much, never a price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveredLine {
    pub description: String,
    /// Exact decimal text (`1.5`), printed with a decimal comma.
    pub quantity: String,
}

impl DeliveryNoteDocument {
    /// The document of `note`, issued by `issuer`.
    pub fn of(note: &DeliveryNoteState, issuer: &Party) -> Self {
        DeliveryNoteDocument {
            point_of_sale: note.point_of_sale_number,
            number: note.number,
            date: note.date,
            issuer: issuer.clone(),
            receiver: Party { name: note.customer_name.clone(), ..Party::default() },
            lines: note
                .lines
                .iter()
                .map(|l| DeliveredLine { description: l.name.clone(), quantity: l.quantity.to_string() })
                .collect(),
            notes: note.notes.clone(),
        }
    }

    /// `R-PPPP-NNNNNNNN`, as the note's `formatted_number`.
    pub fn number_text(&self) -> String {
        format!("R-{:04}-{:08}", self.point_of_sale, self.number)
    }

    /// A file name for downloads: `remito-r-0001-00000042.pdf`.
    pub fn file_name(&self) -> String {
        format!("remito-{}.pdf", self.number_text().to_ascii_lowercase())
    }

    /// What cannot be printed faithfully is refused rather than printed wrong.
    pub(crate) fn check(&self) -> Result<(), RenderError> {
        if !(0..=9_999).contains(&self.point_of_sale) {
            return Err(RenderError::Invalid(format!("point of sale {} has more than 4 digits", self.point_of_sale)));
        }
        if !(0..=99_999_999).contains(&self.number) {
            return Err(RenderError::Invalid(format!("number {} has more than 8 digits", self.number)));
        }
        Ok(())
    }
}

impl store::Printable for DeliveryNoteDocument {
    fn file_name(&self) -> String {
        DeliveryNoteDocument::file_name(self)
    }
}
