//! `/api/v1/products/metafield-definitions`: the custom fields an organization defines for its
//! products (Style B objects); product writes validate values under a defined key against it.

use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::InputRule;
use crate::http::operations::{Idempotency, Operation};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, decode_state};
use crate::http::routes_group::api_group;
use crate::http::schema::{Blank, Int, MetafieldKey, MetafieldValueType, Text};
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, Style, ar_time};
use crate::state::AppState;
use commands::metafields::{MetafieldDefinition, parse_metafield_definition};
use commands::protocol::{Command, CommandKind};
use commands::records::RecordCommand;
use events::catalogue::MetafieldDefinitionFields;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::Object;
use projections::ProjectionId;
use serde::Serialize;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The operations this module serves (see `operations.rs`).
pub const LIST_METAFIELD_DEFINITIONS: Operation =
    Operation::read("listMetafieldDefinitions", Some(Scope::ProductsRead));
pub const CREATE_METAFIELD_DEFINITION: Operation = Operation::write(
    "createMetafieldDefinition",
    Scope::ProductsWrite,
    Idempotency::Optional,
    CommandKind::MetafieldDefinition,
);

/// A custom field definition: values stored under `key` must satisfy it.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct MetafieldDefinitionData {
    pub id: Uuid,
    pub key: String,
    pub name: String,
    /// `text`, `integer`, `decimal`, `boolean`, `date` (YYYY-MM-DD) or `choice`.
    pub value_type: String,
    /// The allowed values of a `choice` field.
    pub choices: Vec<String>,
    /// The longest `text` value.
    pub max_length: Nullable<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Definition write body.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct MetafieldDefinitionInput {
    /// Lowercase letters, digits, `_`, `-` and `.` (1 to 64); unique in the organization.
    pub key: MetafieldKey,
    /// At most 100 characters; the key when not set.
    pub name: Optional<Blank<100>>,
    /// `text` by default.
    pub value_type: Optional<MetafieldValueType>,
    /// The allowed values of a `choice` field (required there, refused otherwise): distinct, 1 to 100
    /// characters each.
    pub choices: Optional<Vec<Text<100>>>,
    /// Longest value of a `text` field, 0 (no limit) to 1000.
    pub max_length: Optional<Int<0, 1000>>,
}

#[derive(Debug, Serialize, Object)]
pub struct MetafieldDefinitionEnvelope {
    pub success: bool,
    pub data: MetafieldDefinitionData,
}

responses! {
    DefinitionCreated: Created(RawJson<MetafieldDefinitionEnvelope>) = 201, "The definition.";
    Definitions: Ok(RawJson<ListEnvelope<MetafieldDefinitionData>>) = 200, "Every definition of the organization, oldest first.";
}

fn definition_data(id: Uuid, fields: MetafieldDefinitionFields, created_at: OffsetDateTime) -> MetafieldDefinitionData {
    MetafieldDefinitionData {
        id,
        key: fields.key,
        name: fields.name,
        value_type: fields.value_type,
        choices: fields.choices,
        max_length: fields.max_length.into(),
        created_at: ar_time(created_at),
    }
}

/// Metafield definitions, as the shared handler sequence sees them (listed whole, never cached).
const DEFINITIONS: Kind = Kind {
    label: "metafield definition",
    projection: ProjectionId::MetafieldDefinitions,
    cache: None,
    list: ListAt { url: "/api/v1/products/metafield-definitions", binding: "/api/v1/products/metafield-definitions" },
};

/// `choice` fields list their choices and have no maximum length; `text` fields have no choices; the
/// other types have neither.
fn value_type_rule() -> serde_json::Value {
    let no_max = serde_json::json!({ "nullable": true, "enum": [0, null] });
    serde_json::json!({ "anyOf": [
        {
            "required": ["valueType", "choices"],
            "properties": { "valueType": { "enum": ["choice"] }, "choices": { "type": "array", "minItems": 1 }, "maxLength": no_max },
        },
        { "properties": { "valueType": { "nullable": true, "enum": ["text", null] }, "choices": { "maxItems": 0 } } },
        {
            "required": ["valueType"],
            "properties": {
                "valueType": { "enum": ["integer", "decimal", "boolean", "date"] },
                "choices": { "maxItems": 0 },
                "maxLength": no_max,
            },
        },
    ] })
}

pub struct MetafieldsApi;

api_group! {
    MetafieldsApi,
    operations: [LIST_METAFIELD_DEFINITIONS, CREATE_METAFIELD_DEFINITION],
    input_rules: &[InputRule::Body { schema: "MetafieldDefinitionInput", rule: value_type_rule }],
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Products")]
    routes: {
        /// List custom field definitions
        ///
        /// Scope `products:read`. The keys products may carry with a definition, and how their values are
        /// validated (on creation and on the metafields patch). Keys without a definition hold free text.
        #[oai(path = "/products/metafield-definitions", method = "get", operation_id = "listMetafieldDefinitions")]
        async fn definitions(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
        ) -> Result<Definitions, ApiError> {
            let call = Call::new(LIST_METAFIELD_DEFINITIONS, &state, &auth, request_id)?;
            let table = projections::records::METAFIELD_DEFINITIONS.table_name();
            // Every definition on one page: an organization defines a handful.
            let rows = projections::records::list(&state.pool, table, call.org_id(), None, 1000).await?;
            let data = rows
                .into_iter()
                .filter_map(|row| {
                    let fields: MetafieldDefinitionFields = serde_json::from_value(row.doc).ok()?;
                    Some(definition_data(row.id, fields, row.created_at))
                })
                .collect();
            let body = ListEnvelope::new(request_id.0.clone(), DEFINITIONS.list.url, data, false, None);
            Ok(Definitions::Ok(RawJson::new(Style::a(&body)?)))
        }
    }
    writes: {
        /// Create a custom field definition
        ///
        /// Scope `products:write`. Later product writes validate values under `key` against it.
        create_definition("/products/metafield-definitions", "createMetafieldDefinition", "post")
            ("Optional: a retry with the same key and body returns the first outcome.")
            -> DefinitionCreated::Created = CREATE_METAFIELD_DEFINITION, |call, write, body: MetafieldDefinitionInput| {
                let fields = parse_metafield_definition(&body.value).map_err(ApiError::validation)?;
                let command = Command::MetafieldDefinition(RecordCommand::Create { id: Uuid::now_v7(), fields });
                call.write(&DEFINITIONS, write, command, |accepted| {
                    let record: MetafieldDefinition = decode_state(accepted.state, "metafield definition")?;
                    let data = definition_data(record.id, record.fields, record.created_at);
                    Style::b(&MetafieldDefinitionEnvelope { success: true, data })
                })
                .await?
            }
    }
}
