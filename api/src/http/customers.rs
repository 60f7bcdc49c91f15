//! `/api/v1/customers` and `/api/v1/suppliers`: create, replace, read and list contacts (Style B
//! objects, camelCase). Both kinds share the body, its rules and the handlers below.

use crate::http::Key;
use crate::http::schema::IdText;
use crate::cache::Resource;
use crate::http::auth::Auth;
use crate::http::body::{JsonBody, RawJson};
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::InputRule;
use crate::http::operations::{Idempotency, Operation};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, PageParams, Write, decode_state};
use crate::http::routes_group::api_group;
use crate::http::schema::{Blank, Email, PersonType, ProvinceCode, TaxCategory, TaxId, TaxIdType, Text};
use crate::http::schema::{rules, trimmed};
use crate::http::shared_pages::tagged;
use crate::http::shared_responses::responses;
use crate::http::tags::{TagData, tags_of_one};
use crate::http::{ApiTags, RequestId, ServiceVersion, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::contacts::{ContactCommand, Customer, parse_fields, province_name, sets_default_account};
use commands::protocol::{Command, CommandKind};
use commands::tags::Taggable;
use events::catalogue::CustomerFields;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::Object;
use poem_openapi::param::Path;
use projections::ProjectionId;
use projections::customers::{self as read, CustomerRow};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The operations this module serves (see `operations.rs`).
pub const CREATE_CUSTOMER: Operation =
    Operation::write("createCustomer", Scope::CustomersWrite, Idempotency::Optional, CommandKind::Customer);
pub const REPLACE_CUSTOMER: Operation =
    Operation::write("replaceCustomer", Scope::CustomersWrite, Idempotency::Optional, CommandKind::Customer);
pub const GET_CUSTOMER: Operation = Operation::read("getCustomer", Some(Scope::CustomersRead));
pub const LIST_CUSTOMERS: Operation = Operation::read("listCustomers", Some(Scope::CustomersRead));
pub const CREATE_SUPPLIER: Operation =
    Operation::write("createSupplier", Scope::SuppliersWrite, Idempotency::Optional, CommandKind::Supplier);
pub const REPLACE_SUPPLIER: Operation =
    Operation::write("replaceSupplier", Scope::SuppliersWrite, Idempotency::Optional, CommandKind::Supplier);
pub const GET_SUPPLIER: Operation = Operation::read("getSupplier", Some(Scope::SuppliersRead));
pub const LIST_SUPPLIERS: Operation = Operation::read("listSuppliers", Some(Scope::SuppliersRead));

/// One kind of contact, as the HTTP layer serves it: the shared description of the resource plus what
/// differs between customers and suppliers.
struct Contacts {
    kind: Kind,
    taggable: Taggable,
    table: &'static str,
    create: Operation,
    replace: Operation,
    get: Operation,
    list: Operation,
    wrap: fn(ContactCommand) -> Command,
}

const CUSTOMERS: Contacts = Contacts {
    kind: Kind {
        label: "customer",
        projection: ProjectionId::Customers,
        cache: Some(Resource::Customer),
        list: ListAt { url: "/api/v1/customers", binding: "customers" },
    },
    taggable: Taggable::Customer,
    table: read::TABLE,
    create: CREATE_CUSTOMER,
    replace: REPLACE_CUSTOMER,
    get: GET_CUSTOMER,
    list: LIST_CUSTOMERS,
    wrap: Command::Customer,
};

const SUPPLIERS: Contacts = Contacts {
    kind: Kind {
        label: "supplier",
        projection: ProjectionId::Suppliers,
        cache: Some(Resource::Supplier),
        list: ListAt { url: "/api/v1/suppliers", binding: "suppliers" },
    },
    taggable: Taggable::Supplier,
    table: read::SUPPLIERS_TABLE,
    create: CREATE_SUPPLIER,
    replace: REPLACE_SUPPLIER,
    get: GET_SUPPLIER,
    list: LIST_SUPPLIERS,
    wrap: Command::Supplier,
};

/// Contact write body (create and replace), for customers and suppliers alike.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ContactInput {
    /// 1 to 70 characters (surrounding whitespace is trimmed).
    pub name: Text<70>,
    /// E-mail address (at most 100 characters).
    pub email: Optional<Email>,
    /// At most 13 characters.
    pub phone: Optional<Blank<13>>,
    /// 7 to 11 digits, without dashes. With `CUIL/CUIT` it must be an 11-digit CUIT with a valid check
    /// digit; with `DNI`, 7 or 8 digits.
    pub tax_id: Optional<TaxId>,
    pub tax_id_type: Optional<TaxIdType>,
    pub tax_category: Optional<TaxCategory>,
    pub person_type: Optional<PersonType>,
    pub country: Optional<Blank<50>>,
    /// Province code (ISO 3166-2:AR letter, for example `B`); responses carry the province name.
    pub province: Optional<ProvinceCode>,
    pub city: Optional<Blank<100>>,
    pub address: Optional<Blank<70>>,
    pub apartment: Optional<Blank<10>>,
    pub postal_code: Optional<Blank<8>>,
    /// The ledger account the contact's movements default to. Setting or clearing it (null) needs
    /// `treasury:write` as well; omit it to leave it unchanged.
    #[oai(rename = "default_account_id")]
    pub default_account_id: Optional<Uuid>,
}

/// A customer or a supplier.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ContactData {
    pub id: Uuid,
    pub name: String,
    pub email: Nullable<String>,
    pub phone: Nullable<String>,
    pub tax_id: Nullable<String>,
    pub tax_id_type: Nullable<String>,
    pub tax_category: Nullable<String>,
    pub person_type: Nullable<String>,
    pub country: Nullable<String>,
    pub address: Nullable<String>,
    pub apartment: Nullable<String>,
    pub city: Nullable<String>,
    /// Province name.
    pub province: Nullable<String>,
    pub postal_code: Nullable<String>,
    #[oai(rename = "default_account_id")]
    #[serde(rename = "default_account_id")]
    pub default_account_id: Nullable<Uuid>,
    pub is_active: bool,
    /// Tags, ordered by name (archived ones too while assigned).
    pub tags: Vec<TagData>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl ContactData {
    fn new(
        id: Uuid,
        f: CustomerFields,
        is_active: bool,
        created_at: OffsetDateTime,
        updated_at: OffsetDateTime,
    ) -> Self {
        Self {
            id,
            name: f.name,
            email: f.email.into(),
            phone: f.phone.into(),
            tax_id: f.tax_id.into(),
            tax_id_type: f.tax_id_type.into(),
            tax_category: f.tax_category.into(),
            person_type: f.person_type.into(),
            country: f.country.into(),
            address: f.address.into(),
            apartment: f.apartment.into(),
            city: f.city.into(),
            province: f.province.as_deref().and_then(province_name).map(str::to_owned).into(),
            postal_code: f.postal_code.into(),
            default_account_id: f.default_account_id.into(),
            is_active,
            tags: Vec::new(),
            created_at: ar_time(created_at),
            updated_at: ar_time(updated_at),
        }
    }

    fn from_state(customer: Customer) -> Self {
        Self::new(customer.id, customer.fields, customer.is_active, customer.created_at, customer.updated_at)
    }

    pub(crate) fn from_row(row: CustomerRow) -> Self {
        let fields = CustomerFields {
            name: row.name,
            email: row.email,
            phone: row.phone,
            tax_id: row.tax_id,
            tax_id_type: row.tax_id_type,
            tax_category: row.tax_category,
            person_type: row.person_type,
            country: row.country,
            province: row.province,
            city: row.city,
            address: row.address,
            apartment: row.apartment,
            postal_code: row.postal_code,
            default_account_id: row.default_account_id,
        };
        Self::new(row.id, fields, row.is_active, row.created_at, row.updated_at)
    }
}

/// Style B single contact.
#[derive(Debug, Serialize, Object)]
pub struct ContactEnvelope {
    pub success: bool,
    pub data: ContactData,
}

responses! {
    CreateResponse: Created(RawJson<ContactEnvelope>) = 201, "Created; answers once it is readable.";
    ReadResponse: Ok(RawJson<ContactEnvelope>) = 200, "The contact.";
    ListResponse: Ok(RawJson<ListEnvelope<ContactData>>) = 200, "A page, oldest first.";
}

fn envelope_bytes(data: ContactData) -> Result<Bytes, ApiError> {
    Style::b(&ContactEnvelope { success: true, data })
}

fn accepted_contact(state: Value) -> Result<ContactData, ApiError> {
    // Customers and suppliers have one state shape.
    Ok(ContactData::from_state(decode_state::<Customer>(state, "contact")?))
}

#[allow(clippy::too_many_arguments, reason = "the handler's extracted parts, passed on")]
async fn create(
    contacts: &Contacts,
    auth: Auth,
    state: &AppState,
    request_id: &RequestId,
    version: ServiceVersion,
    key: Key,
    body: JsonBody<ContactInput>,
) -> Result<CreateResponse, ApiError> {
    let call = Call::new(contacts.create, state, &auth, request_id)?;
    let write = Write::json(key.0, &version, &[], &body);
    let body = call
        .serve(write.clone(), async {
            if sets_default_account(&body.value) {
                call.also_require(Scope::TreasuryWrite)?;
            }
            let fields = parse_fields(&body.value).map_err(ApiError::validation)?;
            let command = (contacts.wrap)(ContactCommand::Create { id: Uuid::now_v7(), fields });
            // The body is made while the projection catches up, not after.
            call.write(&contacts.kind, write, command, |accepted| envelope_bytes(accepted_contact(accepted.state)?))
                .await
        })
        .await?;
    Ok(CreateResponse::Created(RawJson::new(body)))
}

#[allow(clippy::too_many_arguments, reason = "the handler's extracted parts, passed on")]
async fn replace(
    contacts: &Contacts,
    auth: Auth,
    state: &AppState,
    request_id: &RequestId,
    version: ServiceVersion,
    id: Path<IdText>,
    key: Key,
    body: JsonBody<ContactInput>,
) -> Result<ReadResponse, ApiError> {
    let call = Call::new(contacts.replace, state, &auth, request_id)?;
    let path = [id.0.as_str()];
    let write = Write::json(key.0, &version, &path, &body);
    let body = call
        .serve(write.clone(), async {
            let sets_account = sets_default_account(&body.value);
            if sets_account {
                call.also_require(Scope::TreasuryWrite)?;
            }
            let contact_id = call.id(&contacts.kind, &id.0)?;
            let fields = parse_fields(&body.value).map_err(ApiError::validation)?;
            let keep_default_account = !sets_account;
            let command = (contacts.wrap)(ContactCommand::Replace { id: contact_id, fields, keep_default_account });
            call.write_then_read(&contacts.kind, write, command, async |accepted| {
                let mut data = accepted_contact(accepted.state)?;
                data.tags = tags_of_one(state, call.org_id(), contacts.taggable, data.id).await?;
                envelope_bytes(data)
            })
            .await
        })
        .await?;
    Ok(ReadResponse::Ok(RawJson::new(body)))
}

async fn get(
    contacts: &Contacts,
    auth: Auth,
    state: &AppState,
    request_id: &RequestId,
    id: Path<IdText>,
) -> Result<ReadResponse, ApiError> {
    let call = Call::new(contacts.get, state, &auth, request_id)?;
    let bytes = call
        .get(&contacts.kind, &id.0, async |id| {
            let Some(row) = read::get(&state.pool, contacts.table, call.org_id(), id).await? else { return Ok(None) };
            let mut data = ContactData::from_row(row);
            data.tags = tags_of_one(state, call.org_id(), contacts.taggable, id).await?;
            Ok(Some(envelope_bytes(data)?))
        })
        .await?;
    Ok(ReadResponse::Ok(RawJson::new(bytes)))
}

async fn list(contacts: &Contacts, call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    call.cursor_list(
        params,
        contacts.kind.list,
        async |after, n| Ok(read::list(&call.state.pool, contacts.table, call.org_id(), after, n).await?),
        |row: &CustomerRow| row.id,
        async |rows| {
            let rows = tagged(call.state, call.org_id(), contacts.taggable, rows, |r| r.id).await?;
            Ok(rows.into_iter().map(|(row, tags)| ContactData { tags, ..ContactData::from_row(row) }).collect())
        },
    )
    .await
}

/// A `taxId` follows its `taxIdType`: 7 or 8 digits for `DNI`, a CUIT (11 digits, one of the CUIT
/// prefixes, and a valid check digit, which no schema can state) for `CUIL/CUIT`.
fn tax_id_rule() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        { "properties": { "taxIdType": rules::null_only() } },
        {
            "required": ["taxIdType"],
            "properties": { "taxIdType": { "enum": ["DNI"] }, "taxId": { "pattern": trimmed("(?:[0-9]{7,8})?") } },
        },
        {
            "required": ["taxIdType"],
            "properties": {
                "taxIdType": { "enum": ["CUIL/CUIT"] },
                "taxId": { "pattern": trimmed("(?:(?:20|23|24|27|30|33|34)[0-9]{9})?") },
            },
        },
    ] })
}

/// The contacts APIs, one block per kind: its API type, its `Contacts`, its tag, its path parameter and
/// its input rules; then its four routes in order, each a row: its doc (summary, blank line,
/// description), path and `operationId` (the creation's also the doc of its `Idempotency-Key`). Writes
/// each API's `Operations` (from its `Contacts`) and `#[OpenApi]` impl over the shared handlers.
macro_rules! contacts_api {
    ($(
        $api:ident: $contacts:ident, $tag:tt, id $param:ident, rules [$($rule:expr),* $(,)?] {
            $(#[doc = $create_doc:tt])*
            create($create_path:tt, $create_id:tt) key { $(#[doc = $key_doc:tt])* }
            $(#[doc = $replace_doc:tt])*
            replace($replace_path:tt, $replace_id:tt);
            $(#[doc = $get_doc:tt])*
            get($get_path:tt, $get_id:tt);
            $(#[doc = $list_doc:tt])*
            list($list_path:tt, $list_id:tt);
        }
    )*) => {$(
        pub struct $api;

        api_group! {
            $api,
            operations: [$contacts.create, $contacts.replace, $contacts.get, $contacts.list],
            input_rules: &[$($rule),*],
            #[OpenApi(prefix_path = "/api/v1", tag = $tag)]
            routes: {
                $(#[doc = $create_doc])*
                #[oai(path = $create_path, method = "post", operation_id = $create_id)]
                async fn create(
                    &self,
                    auth: Auth,
                    state: Data<&Arc<AppState>>,
                    request_id: &RequestId,
                    version: ServiceVersion,
                    $(#[doc = $key_doc])*
                    #[oai(name = "Idempotency-Key")]
                    key: Key,
                    body: JsonBody<ContactInput>,
                ) -> Result<CreateResponse, ApiError> {
                    create(&$contacts, auth, &state, request_id, version, key, body).await
                }

                $(#[doc = $replace_doc])*
                #[oai(path = $replace_path, method = "put", operation_id = $replace_id)]
                async fn replace(
                    &self,
                    auth: Auth,
                    state: Data<&Arc<AppState>>,
                    request_id: &RequestId,
                    version: ServiceVersion,
                    $param: Path<IdText>,
                    #[oai(name = "Idempotency-Key")] key: Key,
                    body: JsonBody<ContactInput>,
                ) -> Result<ReadResponse, ApiError> {
                    replace(&$contacts, auth, &state, request_id, version, $param, key, body).await
                }

                $(#[doc = $get_doc])*
                #[oai(path = $get_path, method = "get", operation_id = $get_id)]
                async fn get(
                    &self,
                    auth: Auth,
                    state: Data<&Arc<AppState>>,
                    request_id: &RequestId,
                    $param: Path<IdText>,
                ) -> Result<ReadResponse, ApiError> {
                    get(&$contacts, auth, &state, request_id, $param).await
                }
            }
            cursor_lists: {
                $(#[doc = $list_doc])*
                list($list_path, $list_id) -> ListResponse = $contacts.list, $api::list_page {};
            }
        }

        impl $api {
            /// A page of this kind's contacts.
            async fn list_page(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
                list(&$contacts, call, params).await
            }
        }
    )*};
}

contacts_api! {
    CustomersApi: CUSTOMERS, "ApiTags::Customers", id customer_id,
    rules [InputRule::Body { schema: "ContactInput", rule: tax_id_rule }] {
        /// Create a customer
        ///
        /// Scope `customers:write`. Answers once the customer is readable.
        create("/customers", "createCustomer") key {
            /// Optional: a retry with the same key and body returns the first outcome instead of creating a
            /// second customer.
        }

        /// Replace a customer
        ///
        /// Scope `customers:write`. Replaces the whole representation: omitted optional fields are cleared.
        /// (The path is the spec's `/customers/{id}`; its parameter is named as in the read, since OpenAPI
        /// allows one name per templated path.)
        replace("/customers/:customer_id", "replaceCustomer");

        /// Get a customer
        ///
        /// Scope `customers:read`.
        get("/customers/:customer_id", "getCustomer");

        /// List customers
        ///
        /// Scope `customers:read`. A cursor list in creation order (oldest first).
        list("/customers", "listCustomers");
    }

    SuppliersApi: SUPPLIERS, "ApiTags::Suppliers", id supplier_id, rules [] {
        /// Create a supplier
        ///
        /// Scope `suppliers:write` (and `treasury:write` to set `default_account_id`). The customer body and
        /// rules. Answers once the supplier is readable.
        create("/suppliers", "createSupplier") key {
            /// Optional: a retry with the same key and body returns the first outcome instead of creating a
            /// second supplier.
        }

        /// Replace a supplier
        ///
        /// Scope `suppliers:write`. Replaces the whole representation: omitted optional fields are cleared;
        /// an omitted `default_account_id` stays as it was.
        replace("/suppliers/:supplier_id", "replaceSupplier");

        /// Get a supplier
        ///
        /// Scope `suppliers:read`.
        get("/suppliers/:supplier_id", "getSupplier");

        /// List suppliers
        ///
        /// Scope `suppliers:read`. A cursor list in creation order (oldest first).
        list("/suppliers", "listSuppliers");
    }
}
