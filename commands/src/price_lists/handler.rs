//! How the workers run price lists: the name is the list's own in the organization, and explicit
//! prices name the organization's variants. A list may carry thousands of prices, so it travels alone.

use crate::engine::{Conn, ExecuteError, name_taken, reject_fields};
use crate::handler::Batching;
use crate::records::RecordRules;
use crate::validate::FieldError;
use events::catalogue::{PriceListEvent, PriceListFields};
use std::collections::HashSet;
use uuid::Uuid;

impl RecordRules for PriceListEvent {
    const BATCHING: Batching = Batching::Alone;

    async fn check_references(
        id: Uuid,
        fields: &PriceListFields,
        conn: &mut Conn<'_>,
        org_id: Uuid,
    ) -> Result<(), ExecuteError> {
        let conn = conn.get().await?;
        let mut errors = Vec::new();
        if name_taken(conn, org_id, "price_list", &["PriceListCreated", "PriceListReplaced"], &fields.name, id).await? {
            errors.push(FieldError::new("name", "already_exists", "another price list has this name"));
        }
        let ids: Vec<Uuid> = fields.prices.iter().map(|p| p.product_id).collect();
        if !ids.is_empty() {
            let found: Vec<Uuid> = sqlx::query_scalar(
                "select variant_id from product_variants where org_id = $1 and variant_id = any($2)",
            )
            .bind(org_id)
            .bind(&ids)
            .fetch_all(&mut *conn)
            .await?;
            let found: HashSet<Uuid> = found.into_iter().collect();
            for (i, id) in ids.iter().enumerate() {
                if !found.contains(id) {
                    errors.push(FieldError::new(
                        format!("prices[{i}].product_id"),
                        "not_found",
                        "no product of this organization has this id",
                    ));
                }
            }
        }
        reject_fields(errors)
    }
}
