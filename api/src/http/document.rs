//! The OpenAPI document as served at `/openapi.json`: what poem-openapi generates from the typed
//! routes, completed here with what the gateway adds to every operation in one place (so the document
//! states it once, as the middleware does it once):
//!
//! - each operation's scope (`x-required-scopes`) and use of `Idempotency-Key` (`x-idempotency`);
//! - the error statuses it can answer, each with its real body: the v1 envelope under `/api/v1`, the v2
//!   envelope under `/api/v2` (the middleware picks the envelope by the same prefix);
//! - the headers every response carries (`Service-Request-Id`, the rate-limit headers) and
//!   `Retry-After` on 429;
//! - links from each create operation to the reads and updates of what it created;
//! - `allOf: [$ref, {...}]` field schemas rewritten as `anyOf: [$ref]` with the same annotations, which
//!   means the same and which client generators can read for enums as well as objects;
//! - calendar dates under OpenAPI's own `format: date` (poem-openapi names them `naive-date`, which no
//!   client or validator knows, so they would read any text as a valid date), and `null` among the
//!   values of a nullable enum (without it, OpenAPI 3.0.3 reads `null` as outside the enum).

use crate::http::error::{ErrorEnvelope, V2ErrorEnvelope};
use crate::http::idempotency;
use crate::http::operations::{Idempotency, InputRule, Operation};
use poem_openapi::registry::Registry;
use poem_openapi::types::Type;
use serde_json::{Map, Value, json};

/// One error status of the table below: when an operation can answer it, and what it means.
struct ErrorStatus {
    status: u16,
    description: &'static str,
    applies: fn(&Facts) -> bool,
}

/// What decides which errors an operation documents.
struct Facts {
    /// Under `/api/v2`.
    v2: bool,
    has_body: bool,
    writes: bool,
    has_cursor: bool,
    scoped: bool,
}

const ERROR_STATUSES: &[ErrorStatus] = &[
    ErrorStatus {
        status: 400,
        description: "Invalid request (a parameter, header or body field): `details` names each offending one",
        applies: |_| true,
    },
    ErrorStatus { status: 401, description: "Missing, unknown or revoked credential", applies: |_| true },
    ErrorStatus { status: 403, description: "The credential lacks the operation's scope", applies: |f| f.scoped },
    ErrorStatus {
        status: 404,
        description: "Not found: no such resource, a referenced one missing, or one of another organization",
        applies: |_| true,
    },
    ErrorStatus {
        status: 409,
        description: "Conflict with the current state, a unique value, or an `Idempotency-Key` (`IDEMPOTENCY_CONFLICT`, \
                      `IDEMPOTENCY_IN_PROGRESS`); for lists, a cursor outdated by a change to what it pages",
        applies: |f| f.writes || f.has_cursor,
    },
    ErrorStatus { status: 413, description: "The body is larger than 1 MiB", applies: |f| f.has_body },
    ErrorStatus {
        status: 415,
        description: "The body is not JSON (`Content-Type: application/json`)",
        applies: |f| f.has_body,
    },
    ErrorStatus {
        status: 429,
        description: "The organization's request quota is used up; retry after `Retry-After` seconds",
        applies: |_| true,
    },
    ErrorStatus {
        status: 500,
        description: "Internal error; retry with the same `Idempotency-Key`",
        applies: |_| true,
    },
    ErrorStatus {
        status: 503,
        description: "A dependency is unavailable, or other writes to the same resource kept committing first \
                      (`WRITE_CONTENDED`); `error.retryable` says whether to retry",
        applies: |_| true,
    },
];

/// The document, completed (see the module documentation).
pub fn complete(mut document: Value) -> Value {
    let envelope_v1 = schema_ref::<ErrorEnvelope>();
    let envelope_v2 = schema_ref::<V2ErrorEnvelope>();
    register_headers(&mut document);
    register_envelopes(&mut document);
    let links = create_links(&document);
    if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, operations) in paths.iter_mut() {
            let Some(operations) = operations.as_object_mut() else { continue };
            for (method, operation) in operations.iter_mut() {
                let Some(op) = operation["operationId"].as_str().and_then(Operation::from_id) else { continue };
                annotate(operation, op);
                let facts = Facts {
                    v2: super::v2::is_v2(path),
                    has_body: operation.get("requestBody").is_some(),
                    writes: method != "get",
                    has_cursor: has_parameter(operation, "cursor"),
                    scoped: op.scope().is_some(),
                };
                let envelope = if facts.v2 { &envelope_v2 } else { &envelope_v1 };
                document_errors(operation, &facts, envelope);
                if let Some(why) = op.unprocessable_because() {
                    operation["responses"]["422"] = json!({
                        "description": why,
                        "headers": {},
                        "content": { "application/json": { "schema": envelope } },
                    });
                }
                document_headers(operation);
                if let Some(links) = links.get(op.id()) {
                    attach_links(operation, links);
                }
            }
        }
    }
    rewrite_schemas(&mut document);
    apply_input_rules(&mut document);
    document_query_text(&mut document);
    document
}

/// Each API group's [`InputRule`]s, applied to the schemas and parameters they name.
fn apply_input_rules(document: &mut Value) {
    for rule in crate::http::input_rules_of_apis() {
        match rule {
            InputRule::Body { schema, rule } => {
                let target = component_schema(document, schema);
                // As an `allOf` member: the same meaning as keys of the schema itself, and client
                // generators read the schema's own properties untouched.
                let rules = target.entry("allOf").or_insert_with(|| json!([]));
                rules.as_array_mut().expect("allOf is an array").push(rule());
            }
            InputRule::Closed { schema } => {
                component_schema(document, schema).insert("additionalProperties".into(), json!(false));
            }
            InputRule::Query { operation, parameter, schema } => {
                let (_, target) = query_parameters(document)
                    .find(|(op, p)| op == operation && p["name"] == *parameter)
                    .unwrap_or_else(|| panic!("an input rule names {operation} {parameter}, which is not documented"));
                target["schema"] = schema();
            }
        }
    }
}

/// The component schema an input rule names (a rule naming a missing schema is a programming error).
fn component_schema<'a>(document: &'a mut Value, schema: &str) -> &'a mut Map<String, Value> {
    document["components"]["schemas"]
        .get_mut(schema)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("an input rule names the schema {schema}, which is not in the document"))
}

/// Every query parameter of every operation, with the operation's id.
fn query_parameters(document: &mut Value) -> impl Iterator<Item = (String, &mut Value)> {
    document["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|operations| operations.values_mut())
        .flat_map(|op| {
            let id = op["operationId"].as_str().unwrap_or_default().to_owned();
            let parameters = op.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten();
            parameters.filter(|p| p["in"] == "query").map(move |p| (id.clone(), p))
        })
}

/// The gateway refuses the NUL character in every query parameter (`check_query`): free text
/// parameters say so.
fn document_query_text(document: &mut Value) {
    for (_, parameter) in query_parameters(document) {
        let schema = &mut parameter["schema"];
        if schema["type"] == "string"
            && schema.get("pattern").is_none()
            && schema.get("enum").is_none()
            && schema.get("format").is_none()
        {
            schema["pattern"] = json!("^[^\\u0000]*$");
        }
    }
}

/// The error envelopes' schemas (the error type of every handler is documented here, not by poem).
fn register_envelopes(document: &mut Value) {
    let mut registry = Registry::new();
    ErrorEnvelope::register(&mut registry);
    V2ErrorEnvelope::register(&mut registry);
    let schemas = document["components"]["schemas"].as_object_mut().expect("the document has schemas");
    for (name, schema) in registry.schemas {
        schemas.insert(name, serde_json::to_value(schema).expect("a schema serializes"));
    }
}

fn schema_ref<T: Type>() -> Value {
    json!({ "$ref": format!("#/components/schemas/{}", T::name()) })
}

/// `x-required-scopes`, `x-idempotency`, the real rule for `Idempotency-Key`, and the scope in words.
fn annotate(operation: &mut Value, op: Operation) {
    let scope = op.scope();
    let idempotency = op.idempotency();
    let scopes: Vec<&str> = scope.iter().map(|s| s.as_str()).collect();
    operation["x-required-scopes"] = json!(scopes);
    operation["x-idempotency"] = json!(idempotency.as_str());
    // Handlers take the key as optional so a missing one answers in the error envelope; the document
    // states the real rule.
    if matches!(idempotency, Idempotency::Required)
        && let Some(parameters) = operation.get_mut("parameters").and_then(Value::as_array_mut)
    {
        for parameter in parameters.iter_mut().filter(|p| p["name"] == idempotency::HEADER) {
            parameter["required"] = Value::Bool(true);
        }
    }
    if let Some(parameters) = operation.get_mut("parameters").and_then(Value::as_array_mut) {
        for parameter in parameters.iter_mut().filter(|p| p["name"] == idempotency::HEADER) {
            parameter["schema"] = json!({ "type": "string", "pattern": "^[\\x21-\\x7E]{1,255}$" });
            parameter["description"] =
                json!("1 to 255 visible ASCII characters, unique per request within the organization for 24 hours.");
        }
    }
    let note = match scope {
        None => "Any valid credential.".to_owned(),
        Some(scope) => format!("Scope `{scope}`."),
    };
    let description = operation["description"].as_str().map(|d| format!("{d}\n\n{note}")).unwrap_or(note);
    operation["description"] = json!(description);
}

fn has_parameter(operation: &Value, name: &str) -> bool {
    operation["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "query"))
}

fn document_errors(operation: &mut Value, facts: &Facts, envelope: &Value) {
    let responses = operation["responses"].as_object_mut().expect("every operation has responses");
    for error in ERROR_STATUSES.iter().filter(|e| (e.applies)(facts)) {
        let mut headers = Map::new();
        if error.status == 429 {
            headers.insert("Retry-After".into(), json!({ "$ref": "#/components/headers/Retry-After" }));
        }
        responses.insert(
            error.status.to_string(),
            json!({
                "description": error.description,
                "headers": headers,
                "content": { "application/json": { "schema": envelope } },
            }),
        );
    }
}

/// The header the gateway sets on every response.
const EVERY_RESPONSE: &str = "Service-Request-Id";
/// The headers it adds once the credential is known: on every response but 401.
const AUTHENTICATED_RESPONSE: &[&str] = &["RateLimit-Policy", "RateLimit"];

fn register_headers(document: &mut Value) {
    let headers = json!({
        "Service-Request-Id": {
            "description": "The id of this request, also `request_id` (`requestId` in v2) of error bodies; quote it to support.",
            "required": true,
            "schema": { "type": "string", "pattern": "^req_[0-9a-f]{32}$" },
        },
        "RateLimit-Policy": {
            "description": "The organization's quotas: `\"minute\";q=<limit>;w=60, \"hour\";q=<limit>;w=3600`.",
            "required": true,
            "schema": { "type": "string" },
        },
        "RateLimit": {
            "description": "The quota closest to running out: `\"<window>\";r=<remaining>;t=<seconds until reset>`.",
            "required": true,
            "schema": { "type": "string" },
        },
        "Retry-After": {
            "description": "Seconds until the quota allows requests again.",
            "required": true,
            "schema": { "type": "integer", "minimum": 0 },
        },
    });
    document["components"]["headers"] = headers;
}

fn document_headers(operation: &mut Value) {
    let Some(responses) = operation["responses"].as_object_mut() else { return };
    for (status, response) in responses.iter_mut() {
        let headers = response.as_object_mut().expect("a response object").entry("headers").or_insert(json!({}));
        let authenticated = if status == "401" { &[][..] } else { AUTHENTICATED_RESPONSE };
        for name in std::iter::once(&EVERY_RESPONSE).chain(authenticated) {
            headers[*name] = json!({ "$ref": format!("#/components/headers/{name}") });
        }
    }
}

/// A link from a create operation to an operation on what it created.
struct Link {
    target: String,
    parameter: String,
    /// JSON pointer to the new id in the create response.
    id_at: &'static str,
}

/// For each create operation (a `post` on a collection answering 201), the operations on
/// `<collection>/{param}` and below, with the pointer to the created id (`/data/id` for Style B
/// envelopes, `/id` for bare objects). Derived from the paths, so new resources are linked untouched.
fn create_links(document: &Value) -> std::collections::HashMap<String, Vec<Link>> {
    let mut links = std::collections::HashMap::new();
    let Some(paths) = document["paths"].as_object() else { return links };
    for (collection, operations) in paths {
        let Some(create) = operations.get("post") else { continue };
        let Some(created) = create["responses"].get("201") else { continue };
        let Some(create_id) = create["operationId"].as_str() else { continue };
        let schema = resolve(document, &created["content"]["application/json"]["schema"]);
        let id_at = if schema["properties"].get("data").is_some() { "/data/id" } else { "/id" };
        let prefix = format!("{collection}/{{");
        let mut found = Vec::new();
        for (path, operations) in paths.iter().filter(|(p, _)| p.starts_with(&prefix)) {
            let rest = &path[prefix.len()..];
            let Some(end) = rest.find('}') else { continue };
            let parameter = &rest[..end];
            for operation in operations.as_object().into_iter().flat_map(|o| o.values()) {
                let Some(target) = operation["operationId"].as_str() else { continue };
                found.push(Link { target: target.to_owned(), parameter: parameter.to_owned(), id_at });
            }
        }
        links.insert(create_id.to_owned(), found);
    }
    links
}

fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &document["components"]["schemas"][name],
        None => schema,
    }
}

fn attach_links(operation: &mut Value, links: &[Link]) {
    if links.is_empty() {
        return;
    }
    let mut map = Map::new();
    for link in links {
        map.insert(
            link.target.clone(),
            json!({
                "operationId": link.target,
                "parameters": { link.parameter.clone(): format!("$response.body#{}", link.id_at) },
                "description": format!("`{}` of the resource just created", link.parameter),
            }),
        );
    }
    operation["responses"]["201"]["links"] = Value::Object(map);
}

/// `allOf: [$ref, {annotations}]` (how poem-openapi annotates a referenced type) becomes
/// `anyOf: [$ref]` beside the annotations: the same meaning, and readable by client generators for
/// references to enums as well as objects. `format: naive-date` (poem-openapi's name for a
/// `time::Date`, always written and read as `YYYY-MM-DD`) becomes the standard `format: date`. A
/// `nullable` enum lists `null` among its values, as OpenAPI 3.0.3 requires for `null` to be valid.
fn rewrite_schemas(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str) == Some("naive-date") {
                map.insert("format".into(), json!("date"));
            }
            if map.get("nullable") == Some(&Value::Bool(true))
                && let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
            if let Some(Value::Array(parts)) = map.get("allOf")
                && parts.len() == 2
                && parts[0].get("$ref").is_some()
            {
                let reference = parts[0].clone();
                map.remove("allOf");
                map.insert("anyOf".into(), json!([reference]));
            }
            for item in map.values_mut() {
                rewrite_schemas(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_schemas),
        _ => {}
    }
}

/// The methods each path of the document allows, for the `Allow` header of a 405.
pub struct AllowedMethods {
    routes: Vec<(Vec<String>, String)>,
    /// Each documented path once, as a metric label (made once per application), with its number of
    /// literal segments.
    templates: Vec<(Vec<String>, &'static str, usize)>,
    /// The templates' indices by their number of segments (the index into this) and their resource (the
    /// fourth segment, as in `/api/v1/customers/{id}`; `None` where that is a parameter or absent), so
    /// a request path is compared with a handful of templates rather than all of them.
    by_shape: Vec<Shape>,
}

/// The templates of one number of segments: by their resource (sorted by it), and those whose resource
/// is a parameter.
#[derive(Default)]
struct Shape {
    named: Vec<(String, Vec<usize>)>,
    open: Vec<usize>,
}

impl Shape {
    /// Where `resource` stands among the named ones, or where it would go.
    fn find(&self, resource: &str) -> Result<usize, usize> {
        self.named.binary_search_by(|(named, _)| named.as_str().cmp(resource))
    }
}

/// The routes outside the document, as labels after the documented ones: each index past the
/// templates names one of these, the last `unmatched`.
const UNDOCUMENTED: [&str; 7] =
    ["/healthz", "/readyz", "/metrics", "/openapi.json", "/documents/{token}", "/docs", "unmatched"];

impl AllowedMethods {
    pub fn of(document: &Value) -> Self {
        let mut routes = Vec::new();
        for (path, operations) in document["paths"].as_object().into_iter().flatten() {
            let segments: Vec<String> = path.split('/').map(str::to_owned).collect();
            let mut methods: Vec<String> =
                operations.as_object().into_iter().flatten().map(|(m, _)| m.to_ascii_uppercase()).collect();
            if methods.iter().any(|m| m == "GET") {
                methods.push("HEAD".into());
            }
            methods.sort();
            routes.push((segments, methods.join(", ")));
        }
        let templates: Vec<(Vec<String>, &'static str, usize)> = routes
            .iter()
            .map(|(segments, _)| {
                (segments.clone(), &*Box::leak(segments.join("/").into_boxed_str()), literal_count(segments))
            })
            .collect();
        let mut by_shape: Vec<Shape> = Vec::new();
        for (index, (segments, _, _)) in templates.iter().enumerate() {
            if by_shape.len() <= segments.len() {
                by_shape.resize_with(segments.len() + 1, Shape::default);
            }
            let shape = &mut by_shape[segments.len()];
            match segments.get(3).filter(|s| !s.starts_with('{')) {
                Some(resource) => match shape.find(resource) {
                    Ok(found) => shape.named[found].1.push(index),
                    Err(at) => shape.named.insert(at, (resource.clone(), vec![index])),
                },
                None => shape.open.push(index),
            }
        }
        Self { routes, templates, by_shape }
    }

    /// Every route label, in the order of the indices [`Self::route`] answers: the documented path
    /// templates, then the routes outside the document, the last `unmatched`.
    pub fn route_labels(&self) -> Vec<&'static str> {
        self.templates.iter().map(|(_, template, _)| *template).chain(UNDOCUMENTED).collect()
    }

    /// The route a request path takes, as the index of a label of bounded cardinality (see
    /// [`Self::route_labels`]): its documented path template (literal segments winning over
    /// parameters, as in the router), one of the routes outside the document, or `unmatched`.
    ///
    /// It runs on every request, so it splits the path once, in place: no segment list is allocated.
    pub fn route(&self, path: &str) -> usize {
        // A path of more segments than are split fits no template, nor `/documents/{token}`.
        let segments = Segments::of(path);
        let count = segments.as_ref().map_or(usize::MAX, Segments::len);
        if let Some(segments) = &segments
            && let Some(shape) = self.by_shape.get(count)
        {
            let segments = segments.as_slice();
            let fits = |index: &&usize| fits(&self.templates[**index].0, segments);
            let literal = |index: &&usize| self.templates[**index].2;
            let named = segments
                .get(3)
                .copied()
                .and_then(|resource| shape.find(resource).ok())
                .map(|found| &shape.named[found].1)
                .into_iter()
                .flatten();
            if let Some(best) = named.chain(&shape.open).filter(fits).max_by_key(literal) {
                return *best;
            }
        }
        let outside = match path {
            "/healthz" => 0,
            "/readyz" => 1,
            "/metrics" => 2,
            "/openapi.json" => 3,
            _ if path.starts_with("/documents/") && count == 3 => 4,
            _ if path == "/docs" || path.starts_with("/docs/") => 5,
            _ => 6,
        };
        self.templates.len() + outside
    }

    /// The path parameter whose segment does not decode to UTF-8 text (such a segment names nothing;
    /// the router would refuse it without saying which).
    pub fn undecodable_parameter(&self, path: &str) -> Option<&str> {
        if !path.contains('%') {
            return None;
        }
        let segments: Vec<&str> = path.split('/').collect();
        let bad = segments.iter().position(|s| s.contains('%') && !decodes(s))?;
        self.routes
            .iter()
            .filter(|(pattern, _)| {
                pattern.len() == segments.len()
                    && pattern.iter().zip(&segments).all(|(p, s)| p == s || p.starts_with('{'))
            })
            .find_map(|(pattern, _)| pattern.get(bad).filter(|p| p.starts_with('{')))
            .map(|p| p.trim_matches(|c| c == '{' || c == '}'))
    }

    /// The `Allow` value for a request path, if a documented path matches it (a `{param}` segment
    /// matches any one segment; literal segments win over parameters, as in the router).
    pub fn allow(&self, path: &str) -> Option<String> {
        let segments = Segments::of(path)?;
        let matches = |pattern: &[String]| fits(pattern, segments.as_slice());
        // Paths that differ only in a parameter's name are one route: their methods are one list.
        let best = self.routes.iter().filter(|(p, _)| matches(p)).map(|(p, _)| literal_count(p)).max()?;
        let mut methods: Vec<&str> = self
            .routes
            .iter()
            .filter(|(p, _)| matches(p) && literal_count(p) == best)
            .flat_map(|(_, m)| m.split(", "))
            .collect();
        methods.sort_unstable();
        methods.dedup();
        Some(methods.join(", "))
    }
}

/// Whether a request path's segments fit a documented path's: as many, each literal equal and each
/// `{param}` a segment that is not empty.
fn fits(pattern: &[String], segments: &[&str]) -> bool {
    pattern.len() == segments.len()
        && pattern.iter().zip(segments).all(|(p, &s)| p == s || (p.starts_with('{') && !str::is_empty(s)))
}

/// At least as many segments as any documented path has (a test holds them to it): a path of more fits
/// none.
const MAX_SEGMENTS: usize = 12;

/// A request path's segments as `path.split('/')` yields them, split in one pass over its bytes into
/// an array on the stack (a split on a `char` searches for every segment anew; a path takes this on
/// every request).
struct Segments<'a> {
    parts: [&'a str; MAX_SEGMENTS],
    len: usize,
}

impl<'a> Segments<'a> {
    /// None for a path of more than [`MAX_SEGMENTS`] segments.
    fn of(path: &'a str) -> Option<Self> {
        let mut segments = Self { parts: [""; MAX_SEGMENTS], len: 0 };
        let mut start = 0;
        for (at, byte) in path.bytes().enumerate() {
            if byte == b'/' {
                segments.push(&path[start..at])?;
                start = at + 1;
            }
        }
        segments.push(&path[start..])?;
        Some(segments)
    }

    fn push(&mut self, segment: &'a str) -> Option<()> {
        *self.parts.get_mut(self.len)? = segment;
        self.len += 1;
        Some(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn as_slice(&self) -> &[&'a str] {
        &self.parts[..self.len]
    }
}

/// How many of a documented path's segments are literal (the more, the better a match wins).
fn literal_count(pattern: &[String]) -> usize {
    pattern.iter().filter(|p| !p.starts_with('{')).count()
}

/// Whether a path segment's `%XX` escapes decode to UTF-8.
fn decodes(segment: &str) -> bool {
    std::str::from_utf8(&crate::http::body::percent_decode(segment)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::AllowedMethods;

    fn allowed() -> AllowedMethods {
        AllowedMethods::of(&serde_json::json!({ "paths": {
            "/api/v1/customers": { "get": {}, "post": {} },
            "/api/v1/customers/{customer_id}": { "get": {} },
            "/api/v1/customers/export": { "get": {} },
            "/api/v1/{kind}/{id}": { "get": {} },
        } }))
    }

    fn label(allowed: &AllowedMethods, path: &str) -> &'static str {
        allowed.route_labels()[allowed.route(path)]
    }

    #[test]
    fn a_request_path_is_labelled_with_its_template_literals_winning() {
        let allowed = allowed();
        assert_eq!(label(&allowed, "/api/v1/customers"), "/api/v1/customers");
        assert_eq!(label(&allowed, "/api/v1/customers/0190"), "/api/v1/customers/{customer_id}");
        assert_eq!(label(&allowed, "/api/v1/customers/export"), "/api/v1/customers/export");
        assert_eq!(label(&allowed, "/api/v1/suppliers/0190"), "/api/v1/{kind}/{id}");
        // An empty segment fits no parameter.
        assert_eq!(label(&allowed, "/api/v1/customers/"), "unmatched");
        assert_eq!(label(&allowed, "/api/v1/customers/0190/notes"), "unmatched");
        assert_eq!(label(&allowed, "/documents/abc"), "/documents/{token}");
        assert_eq!(label(&allowed, "/healthz"), "/healthz");
        // Past the most segments a path is split into: no template, and no `Allow`.
        let long = "/a".repeat(super::MAX_SEGMENTS);
        assert_eq!(label(&allowed, &long), "unmatched");
        let most = "/a".repeat(super::MAX_SEGMENTS - 1);
        assert_eq!(super::Segments::of(&most).map(|s| s.len()), Some(super::MAX_SEGMENTS));
        assert!(super::Segments::of(&long).is_none());
        assert_eq!(allowed.allow(&long), None);
        assert_eq!(allowed.allow("/api/v1/customers").as_deref(), Some("GET, HEAD, POST"));
    }

    #[test]
    fn every_documented_path_has_at_most_the_segments_a_path_is_split_into() {
        let document: serde_json::Value = serde_json::from_str(&crate::http::openapi_document()).expect("the document");
        let paths = document["paths"].as_object().expect("paths");
        assert!(paths.len() > 50, "the whole document: {}", paths.len());
        for path in paths.keys() {
            assert!(super::Segments::of(path).is_some(), "{path}");
        }
    }

    #[test]
    fn only_a_segment_that_does_not_decode_names_its_parameter() {
        let allowed = allowed();
        assert_eq!(allowed.undecodable_parameter("/api/v1/customers/%FF"), Some("customer_id"));
        assert_eq!(allowed.undecodable_parameter("/api/v1/customers/a%20b"), None);
        assert_eq!(allowed.undecodable_parameter("/api/v1/customers/plain"), None);
    }
}
