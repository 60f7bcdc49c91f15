//! Hostile input: every class of input a client can send that no handler can use (characters Postgres
//! cannot store, lone surrogates, numbers beyond i64, deeply nested JSON, wrong JSON types, oversized
//! bodies, non-UTF-8 bytes, malformed ids, parameters the spec refuses) answers a clean 4xx in the
//! error envelope with a detail naming what was wrong, and writes nothing: the organization's events
//! are counted before and after, and the lists it would have filled stay empty.

use crate::helpers::{
    TestApp, V2_WAREHOUSES, detail_fields, error, id_of, json, list_of_at_least, request_id_header, style_b, v2_error,
    v2_paths,
};
use api::http::body::MAX_BODY_BYTES;
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// The organization's rows in the event store.
async fn org_events(app: &TestApp) -> i64 {
    sqlx::query_scalar("select count(*) from events where org_id = $1")
        .bind(app.org_id)
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

/// Sends `body` exactly as given (bytes, not re-encoded JSON) with the test key and `headers`.
async fn send_raw(
    app: &TestApp,
    method: Method,
    path: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &[u8])],
) -> Response {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(&app.api_key)
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        let value = reqwest::header::HeaderValue::from_bytes(value).expect("a sendable header value");
        request = request.header(*name, value);
    }
    request.send().await.expect("request sent")
}

/// A product create (its operation requires an `Idempotency-Key`; each call uses a fresh one).
async fn post_product(app: &TestApp, body: impl Into<reqwest::Body>) -> Response {
    let key = Uuid::now_v7().to_string();
    send_raw(app, Method::POST, "/api/v1/products", body, &[("Idempotency-Key", key.as_bytes())]).await
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("serializable")
}

/// A v1 error of `status` with `code` whose details name exactly `fields` (in order).
async fn refused(response: Response, status: u16, code: &str, fields: &[&str]) -> Value {
    let body = error(response, status, "invalid_request_error").await;
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(detail_fields(&body), fields, "{body}");
    body
}

/// The cases whose answer differs from the refusal expected, collected so one run lists them all.
#[derive(Default)]
struct Misses(Vec<String>);

impl Misses {
    /// Expects a v1 refusal of `status` with `code` whose details name exactly `fields`; any answer that
    /// is an error must still be a well-formed v1 envelope.
    async fn check(&mut self, what: &str, response: Response, status: u16, code: &str, fields: &[&str]) {
        let actual = response.status().as_u16();
        let header = request_id_header(&response);
        let text = response.text().await.expect("body");
        if actual < 400 {
            self.0.push(format!("{what}: expected {status} {code} {fields:?}, but it succeeded with {actual}: {text}"));
            return;
        }
        let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: not JSON: {text}"));
        assert_eq!(header.as_deref(), body["request_id"].as_str(), "{what}: request_id matches the header: {text}");
        for (part, ok) in [
            ("type", body["error"]["type"].is_string()),
            ("message", body["error"]["message"].is_string()),
            ("retryable", body["error"]["retryable"].is_boolean()),
            ("details", body["error"]["details"].is_array()),
        ] {
            assert!(ok, "{what}: error.{part} in the v1 envelope: {text}");
        }
        if actual != status || body["error"]["code"] != code || detail_fields(&body) != fields {
            self.0.push(format!("{what}: expected {status} {code} {fields:?}, got {actual} {text}"));
        }
    }

    fn assert_none(self) {
        assert!(self.0.is_empty(), "{} case(s) answered otherwise:\n{}", self.0.len(), self.0.join("\n"));
    }
}

/// The v1 list at `path` holds no item (the read side is current for API writes as soon as they answer).
async fn assert_empty(app: &TestApp, path: &str) {
    let list = json(app.get(path).await, 200).await;
    assert_eq!(list["data"], json!([]), "{path}: {list}");
}

/// Nothing was written: the organization's events are as they were, and no tag or product exists.
async fn assert_nothing_written(app: &TestApp, before: i64) {
    assert_eq!(org_events(app).await, before, "no event was appended for the organization");
    assert_empty(app, "/api/v1/tags").await;
    assert_empty(app, "/api/v1/products").await;
}

/// U+0000 is the one character Postgres cannot store in text: in a value, in a key, nested, in a
/// replace, in a query parameter, each is refused naming where it was.
#[sqlx::test(migrations = "../schema")]
async fn nul_characters_are_refused_naming_the_field_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let ana = json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    let ana_path = format!("/api/v1/customers/{}", id_of(&ana));
    // A field the body does not declare is ignored by the parsers, NUL or not: nothing of it is stored.
    let ignored = json(app.post("/api/v1/customers", &json!({"name": "Eva", "ali\u{0}s": "x\u{0}"})).await, 201).await;
    assert!(!ignored["data"].to_string().contains("ali"), "{ignored}");
    let before = org_events(&app).await;

    refused(app.post("/api/v1/customers", &json!({"name": "Ana\u{0}"})).await, 400, "INVALID_CHARACTERS", &["name"])
        .await;
    refused(app.post("/api/v1/tags", &json!({"name": "\u{0}"})).await, 400, "INVALID_CHARACTERS", &["name"]).await;
    let matrix = json!({"name": "Remera", "options": ["Talle"], "variants": [{"sku": "R-M", "price": 1, "optionValues": {"Ta\u{0}lle": "M"}}]});
    refused(
        post_product(&app, bytes(&matrix)).await,
        400,
        "INVALID_CHARACTERS",
        &["variants[0].optionValues.Ta\u{0}lle"],
    )
    .await;

    let product = json!({"name": "Yerba", "sku": "YER\u{0}", "price": 100});
    refused(post_product(&app, bytes(&product)).await, 400, "INVALID_CHARACTERS", &["sku"]).await;
    let deep = json!({"name": "Yerba", "sku": "Y-1", "price": 1, "metafields": [{"key": "ok", "value": "x"}, {"key": "k", "value": "no\u{0}"}]});
    refused(post_product(&app, bytes(&deep)).await, 400, "INVALID_CHARACTERS", &["metafields[1].value"]).await;
    let both = json!({"name": "A\u{0}", "address": "\u{0}"});
    let body = error(app.post("/api/v1/customers", &both).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&body);
    fields.sort();
    assert_eq!(fields, ["address", "name"], "every offending field: {body}");
    refused(app.put(&ana_path, &json!({"name": "Ana\u{0}"})).await, 400, "INVALID_CHARACTERS", &["name"]).await;
    assert_eq!(style_b(app.get(&ana_path).await, 200).await["name"], "Ana", "the replace changed nothing");

    for (path, parameter) in [
        ("/api/v1/customers?cursor=a%00b", "cursor"),
        ("/api/v1/customers?limit=%00", "limit"),
        ("/api/v1/products?query=yerba%00", "query"),
        ("/api/v1/tags?page=%00", "page"),
    ] {
        let body = refused(app.get(path).await, 400, "INVALID_PARAMETERS", &[parameter]).await;
        assert_eq!(body["error"]["details"][0]["code"], "invalid_character", "{path}: {body}");
    }
    assert_nothing_written(&app, before).await;
}

/// A `\uD800`-style escape without its pair is not text in any encoding: the body is refused as
/// malformed JSON, naming the body, wherever the escape is (value, key, high or low half).
#[sqlx::test(migrations = "../schema")]
async fn lone_surrogates_are_refused_naming_the_body_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    for body in [
        r#"{"name": "\ud800"}"#,
        r#"{"name": "a\udc00b"}"#,
        r#"{"name": "\ud800\u0041"}"#,
        r#"{"name": "\udfff\ud800"}"#,
        r#"{"name": "Ana", "\ud83d": 1}"#,
    ] {
        let response = send_raw(&app, Method::POST, "/api/v1/customers", body, &[]).await;
        refused(response, 400, "MALFORMED_JSON", &["body"]).await;
        let response = send_raw(&app, Method::POST, "/api/v1/tags", body, &[]).await;
        refused(response, 400, "MALFORMED_JSON", &["body"]).await;
    }
    let product = r#"{"name": "Yerba", "sku": "\udbff", "price": 100}"#;
    refused(post_product(&app, product).await, 400, "MALFORMED_JSON", &["body"]).await;
    // Encoded into a query parameter (CESU-8 of U+D800, which UTF-8 forbids), it names the parameter.
    refused(app.get("/api/v1/customers?cursor=%ED%A0%80").await, 400, "INVALID_PARAMETERS", &["cursor"]).await;
    refused(app.get("/api/v1/customers?limit=%ED%A0%80").await, 400, "INVALID_PARAMETERS", &["limit"]).await;
    assert_nothing_written(&app, before).await;
    // A properly paired surrogate is an ordinary character (and a valid name).
    let paired = send_raw(&app, Method::POST, "/api/v1/tags", r#"{"name": "\ud83d\ude00"}"#, &[]).await;
    assert_eq!(json(paired, 201).await["data"]["name"], "😀");
}

/// Integers outside i64 (and numbers no float can hold) are refused naming the field or parameter;
/// an i64 that is merely too large for the field is out of range.
#[sqlx::test(migrations = "../schema")]
async fn numbers_beyond_i64_are_refused_naming_the_field_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    for price in [
        "9223372036854775808",
        "18446744073709551616",
        "-9223372036854775809",
        "100000000000000000000000000000",
        "1e19",
        "1.5",
    ] {
        let body = format!(r#"{{"name": "Yerba", "sku": "YER", "price": {price}}}"#);
        refused(post_product(&app, body).await, 400, "VALIDATION_FAILED", &["price"]).await;
    }
    let body = r#"{"name": "Yerba", "sku": "YER", "price": 100, "cost": 9223372036854775807}"#;
    let out_of_range = refused(post_product(&app, body).await, 400, "VALIDATION_FAILED", &["cost"]).await;
    assert_eq!(out_of_range["error"]["details"][0]["code"], "out_of_range", "{out_of_range}");
    // Beyond every float: not a number JSON can carry, so the body itself is malformed.
    for price in ["1e400", "-1e400"] {
        let body = format!(r#"{{"name": "Yerba", "sku": "YER", "price": {price}}}"#);
        refused(post_product(&app, body).await, 400, "MALFORMED_JSON", &["body"]).await;
    }
    for limit in ["9223372036854775808", "-9223372036854775809", "99999999999999999999999", "1e400", "1e2"] {
        for list in ["/api/v1/customers", "/api/v1/tags", "/api/v1/products"] {
            let path = format!("{list}?limit={limit}");
            refused(app.get(&path).await, 400, "INVALID_PARAMETERS", &["limit"]).await;
        }
    }
    assert_nothing_written(&app, before).await;
}

/// Nesting beyond what the parser follows is refused as malformed JSON naming the body, open or
/// closed, arrays or objects; the gateway keeps answering. Nesting within it is an ordinary wrong type.
#[sqlx::test(migrations = "../schema")]
async fn deeply_nested_json_is_refused_naming_the_body_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    let depth = 100_000;
    let arrays = format!(r#"{{"name": {}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    let objects = format!(r#"{{"name": "Ana", "x": {}1{}}}"#, r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let unclosed = "[".repeat(depth);
    let top = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    for body in [&arrays, &objects, &unclosed, &top] {
        assert!(body.len() < MAX_BODY_BYTES, "within the size limit, so the depth is what is refused");
        let response = send_raw(&app, Method::POST, "/api/v1/customers", body.clone(), &[]).await;
        refused(response, 400, "MALFORMED_JSON", &["body"]).await;
        let response = send_raw(&app, Method::POST, "/api/v1/tags", body.clone(), &[]).await;
        refused(response, 400, "MALFORMED_JSON", &["body"]).await;
        refused(post_product(&app, body.clone()).await, 400, "MALFORMED_JSON", &["body"]).await;
    }
    // Nested within the parser's limit: the field simply has the wrong type.
    let shallow = format!(r#"{{"name": {}"Ana"{}}}"#, "[".repeat(50), "]".repeat(50));
    let response = send_raw(&app, Method::POST, "/api/v1/customers", shallow, &[]).await;
    refused(response, 400, "VALIDATION_FAILED", &["name"]).await;
    // The gateway survived all of it.
    json(app.get("/api/v1/customers").await, 200).await;
    assert_nothing_written(&app, before).await;
}

/// A value of the wrong JSON type is refused naming its field, every one at once; a body that is not
/// an object names the body.
#[sqlx::test(migrations = "../schema")]
async fn wrong_json_types_are_refused_naming_each_field_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let ana = json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    let ana_path = format!("/api/v1/customers/{}", id_of(&ana));
    let before = org_events(&app).await;

    for name in [json!(5), json!(true), json!(["Ana"]), json!({"first": "Ana"}), json!(1.5)] {
        let body = json!({"name": name});
        refused(app.post("/api/v1/customers", &body).await, 400, "VALIDATION_FAILED", &["name"]).await;
        refused(app.post("/api/v1/tags", &body).await, 400, "VALIDATION_FAILED", &["name"]).await;
        refused(app.put(&ana_path, &body).await, 400, "VALIDATION_FAILED", &["name"]).await;
    }
    let many = json!({"name": "Ana", "email": true, "phone": 1_234_567, "taxIdType": ["DNI"], "province": {"id": "B"}});
    let body = error(app.post("/api/v1/customers", &many).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&body);
    fields.sort();
    assert_eq!(fields, ["email", "phone", "province", "taxIdType"], "every offending field: {body}");
    refused(
        app.post("/api/v1/tags", &json!({"name": "vip", "color": 0xFF_AA_00})).await,
        400,
        "VALIDATION_FAILED",
        &["color"],
    )
    .await;
    for price in [json!("100"), json!(true), json!([100]), json!({"amount": 100})] {
        let body = json!({"name": "Yerba", "sku": "YER", "price": price});
        refused(post_product(&app, bytes(&body)).await, 400, "VALIDATION_FAILED", &["price"]).await;
    }
    for body in [json!([{"name": "Ana"}]), json!("Ana"), json!(5), json!(true), Value::Null] {
        for path in ["/api/v1/customers", "/api/v1/tags"] {
            let refusal = error(app.post(path, &body).await, 400, "invalid_request_error").await;
            assert_eq!(detail_fields(&refusal).first().map(String::as_str), Some("body"), "{path} {body}: {refusal}");
        }
        let refusal = error(post_product(&app, bytes(&body)).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refusal).first().map(String::as_str), Some("body"), "{body}: {refusal}");
    }
    // Not JSON at all under a JSON content type, and no body at all.
    let response = send_raw(&app, Method::POST, "/api/v1/customers", "name=Ana", &[]).await;
    refused(response, 400, "MALFORMED_JSON", &["body"]).await;
    let response = send_raw(&app, Method::POST, "/api/v1/customers", "", &[]).await;
    refused(response, 400, "MISSING_BODY", &["body"]).await;
    // Another media type names the header.
    let form = app
        .client
        .post(format!("{}/api/v1/customers", app.base))
        .bearer_auth(&app.api_key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=Ana")
        .send()
        .await
        .expect("sent");
    refused(form, 415, "UNSUPPORTED_MEDIA_TYPE", &["Content-Type"]).await;

    assert_eq!(style_b(app.get(&ana_path).await, 200).await["name"], "Ana", "no replace changed it");
    assert_nothing_written(&app, before).await;
}

/// A body one byte over `MAX_BODY_BYTES` is a 413 naming the body, whether its length is declared or
/// it arrives in chunks; a body exactly at the limit is read (and refused only by the field rules).
#[sqlx::test(migrations = "../schema")]
async fn bodies_over_the_size_limit_are_refused_naming_the_body_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    let sized = |total: usize| {
        let frame = r#"{"name": ""}"#.len();
        let body = format!(r#"{{"name": "{}"}}"#, "x".repeat(total - frame));
        assert_eq!(body.len(), total);
        body
    };
    let over = sized(MAX_BODY_BYTES + 1);
    let at = sized(MAX_BODY_BYTES);
    for path in ["/api/v1/customers", "/api/v1/tags"] {
        let response = send_raw(&app, Method::POST, path, over.clone(), &[]).await;
        refused(response, 413, "PAYLOAD_TOO_LARGE", &["body"]).await;
        let response = send_raw(&app, Method::POST, path, at.clone(), &[]).await;
        let body = refused(response, 400, "VALIDATION_FAILED", &["name"]).await;
        assert_eq!(body["error"]["details"][0]["code"], "too_long", "{body}");
    }
    refused(post_product(&app, over.clone()).await, 413, "PAYLOAD_TOO_LARGE", &["body"]).await;
    let huge = format!(r#"{{"name": "{}"}}"#, "x".repeat(4 * MAX_BODY_BYTES));
    let response = send_raw(&app, Method::POST, "/api/v1/customers", huge, &[]).await;
    refused(response, 413, "PAYLOAD_TOO_LARGE", &["body"]).await;

    // Chunked, with no Content-Length to check up front.
    let (status, body) = chunked_post(&app, "/api/v1/customers", over.as_bytes()).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE", "{body}");
    assert_eq!(detail_fields(&body), ["body"], "{body}");
    assert!(body["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{body}");
    assert_nothing_written(&app, before).await;
}

/// POSTs `body` to `path` over a bare connection with `Transfer-Encoding: chunked` (64 KiB chunks),
/// returning the status and the JSON body of the answer.
async fn chunked_post(app: &TestApp, path: &str, body: &[u8]) -> (u16, Value) {
    let address = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        app.api_key
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    for chunk in body.chunks(64 * 1024) {
        // The server may answer (and stop reading) once the limit is passed: later writes may fail.
        let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if stream.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {text}"));
    let (headers, payload) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no body: {text}"));
    let payload = if headers.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(payload)
    } else {
        payload.to_owned()
    };
    (status, serde_json::from_str(&payload).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// Bytes that are not UTF-8 (Latin-1, a UTF-16 byte order mark, overlong and surrogate encodings, a
/// stray byte after the value) are refused: in a body naming the body, in a query parameter naming the
/// parameter, in a header naming the header.
#[sqlx::test(migrations = "../schema")]
async fn non_utf8_bytes_are_refused_naming_where_they_were_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    let bodies: [&[u8]; 6] = [
        b"{\"name\": \"Almac\xe9n\"}",
        b"\xff\xfe{\0\"\0n\0a\0m\0e\0\"\0:\0\"\0A\0\"\0}\0",
        b"{\"name\": \"\xc0\xaf\"}",
        b"{\"name\": \"\xed\xa0\x80\"}",
        b"{\"name\": \"Ana\"}\xff",
        b"{\"na\xffme\": \"Ana\"}",
    ];
    for body in bodies {
        for path in ["/api/v1/customers", "/api/v1/tags"] {
            let response = send_raw(&app, Method::POST, path, body.to_vec(), &[]).await;
            refused(response, 400, "MALFORMED_JSON", &["body"]).await;
        }
        refused(post_product(&app, body.to_vec()).await, 400, "MALFORMED_JSON", &["body"]).await;
    }
    let mut misses = Misses::default();
    for (path, code, parameter) in [
        ("/api/v1/customers?limit=%FF", "INVALID_PARAMETERS", "limit"),
        ("/api/v1/customers?cursor=%C3%28", "INVALID_PARAMETERS", "cursor"),
        ("/api/v1/products?default_supplier_id=%E9", "INVALID_PARAMETERS", "default_supplier_id"),
        ("/api/v1/tags?include_archived=%FF", "INVALID_PARAMETERS", "include_archived"),
        // A free-text parameter is not decoded leniently (U+FFFD in place of the bytes) and searched for.
        ("/api/v1/products?query=Almac%E9n", "INVALID_PARAMETERS", "query"),
        ("/api/v1/products?query=%C0%AF", "INVALID_PARAMETERS", "query"),
        ("/api/v1/products?fields=name%FF", "INVALID_PARAMETERS", "fields"),
    ] {
        misses.check(path, app.get(path).await, 400, code, &[parameter]).await;
    }
    // A header value with a byte above ASCII is no key a retry can be matched by: refused, not ignored.
    for (path, body) in [("/api/v1/customers", json!({"name": "Ana"})), ("/api/v1/tags", json!({"name": "vip"}))] {
        let response =
            send_raw(&app, Method::POST, path, bytes(&body), &[("Idempotency-Key", b"clave-\xe9".as_slice())]).await;
        let what = format!("POST {path} with a Latin-1 Idempotency-Key");
        misses.check(&what, response, 400, "INVALID_IDEMPOTENCY_KEY", &["Idempotency-Key"]).await;
    }
    misses.assert_none();
    assert_nothing_written(&app, before).await;
}

/// Anything that is not an id in a path names nothing: 404, as for an unknown id, with a detail naming
/// the path parameter; writes to such a path write nothing.
#[sqlx::test(migrations = "../schema")]
async fn malformed_ids_in_paths_are_not_found_naming_the_parameter_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    let long = "a".repeat(10_000);
    let mut misses = Misses::default();
    let malformed =
        ["not-a-uuid", "123", "%00", "%FF", "00000000-0000-0000-0000-00000000000g", "'%20or%201=1--", &long];
    for bad in malformed {
        for (method, path, parameter, body) in [
            (Method::GET, format!("/api/v1/customers/{bad}"), "customer_id", None),
            (Method::PUT, format!("/api/v1/customers/{bad}"), "customer_id", Some(json!({"name": "Ana"}))),
            (Method::GET, format!("/api/v1/suppliers/{bad}"), "supplier_id", None),
            (Method::GET, format!("/api/v1/products/{bad}"), "product_id", None),
            (
                Method::PUT,
                format!("/api/v1/products/{bad}"),
                "product_id",
                Some(json!({"name": "Yerba", "sku": "YER", "price": 100})),
            ),
            (Method::GET, format!("/api/v1/tags/{bad}"), "tag_id", None),
            (Method::PATCH, format!("/api/v1/tags/{bad}"), "tag_id", Some(json!({"name": "vip"}))),
            (Method::GET, format!("/api/v1/warehouses/{bad}"), "warehouse_id", None),
            (Method::PUT, format!("/api/v1/warehouses/{bad}"), "warehouse_id", Some(json!({"name": "Norte"}))),
            (Method::GET, format!("/api/v1/payment-methods/{bad}"), "payment_method_id", None),
            (Method::GET, format!("/api/v1/price-lists/{bad}"), "price_list_id", None),
            (Method::GET, format!("/api/v1/webhook-endpoints/{bad}"), "id", None),
            (Method::PATCH, format!("/api/v1/webhook-endpoints/{bad}"), "id", Some(json!({"description": "x"}))),
            (Method::POST, format!("/api/v1/webhook-endpoints/{bad}/pause"), "id", None),
            (Method::GET, format!("/api/v1/webhook-endpoints/{bad}/deliveries"), "id", None),
        ] {
            let response = app.request(method.clone(), &path, Some(&app.api_key), body.as_ref()).await;
            let what = format!("{method} {}", if path.len() > 80 { &path[..80] } else { &path });
            misses.check(&what, response, 404, "NOT_FOUND", &[parameter]).await;
        }
    }
    misses.assert_none();
    assert_nothing_written(&app, before).await;
}

/// Anything that is not an id in a query parameter is a 400 naming it; a cursor that is not one this
/// list issued for these filters, forged or from another list, names `cursor`.
#[sqlx::test(migrations = "../schema")]
async fn malformed_ids_in_queries_are_refused_naming_the_parameter_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    // With the seeded "Consumidor Final", a page of one has a next cursor.
    list_of_at_least(&app, "/api/v1/customers", &app.api_key, 2).await;
    let page = json(app.get("/api/v1/customers?limit=1").await, 200).await;
    let cursor = page["next_cursor"].as_str().expect("a next cursor").to_owned();
    let before = org_events(&app).await;

    for bad in ["nope", "123", "00000000-0000-0000-0000-00000000000g", "%27%20or%201%3D1--"] {
        let path = format!("/api/v1/products?default_supplier_id={bad}");
        refused(app.get(&path).await, 400, "INVALID_PARAMETERS", &["default_supplier_id"]).await;
    }
    let (payload, mac) = cursor.split_once('.').expect("payload.mac");
    let tampered = format!("{payload}.{}", mac.chars().rev().collect::<String>());
    // Bytes that are not UTF-8 are refused by the gateway before the cursor is read.
    refused(app.get("/api/v1/customers?cursor=%FF%FE").await, 400, "INVALID_PARAMETERS", &["cursor"]).await;
    for bad in ["garbage", "a.b", ".", &tampered, &format!("{cursor}x")] {
        for list in ["/api/v1/customers", "/api/v1/tags", "/api/v1/products"] {
            let path = format!("{list}?cursor={bad}");
            refused(app.get(&path).await, 400, "INVALID_CURSOR", &["cursor"]).await;
        }
    }
    // A genuine cursor of another list.
    for list in ["/api/v1/suppliers", "/api/v1/tags", "/api/v1/products", "/api/v1/warehouses"] {
        refused(app.get(&format!("{list}?cursor={cursor}")).await, 400, "INVALID_CURSOR", &["cursor"]).await;
    }
    json(app.get(&format!("/api/v1/customers?limit=1&cursor={cursor}")).await, 200).await;
    // `priceListId` prices a product under a list: not an id names no list (404, as an unknown one).
    let product = format!("/api/v1/products/{}", Uuid::now_v7());
    let mut misses = Misses::default();
    for bad in ["nope", "1", "%27%20or%201%3D1--"] {
        let path = format!("{product}?priceListId={bad}");
        misses.check(&path, app.get(&path).await, 404, "NOT_FOUND", &["priceListId"]).await;
    }
    misses.assert_none();
    assert_nothing_written(&app, before).await;
}

/// The one query parameter the spec refuses: `page` on a v1 cursor list ("`page` is not supported").
/// The spec rejects no other query parameter, so unknown ones are not part of this suite.
#[sqlx::test(migrations = "../schema")]
async fn page_on_a_cursor_list_is_refused_naming_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    for list in ["/api/v1/customers", "/api/v1/suppliers", "/api/v1/tags", "/api/v1/products", "/api/v1/warehouses"] {
        for query in ["page=2", "page=1&limit=5", "page=abc", "page="] {
            let path = format!("{list}?{query}");
            refused(app.get(&path).await, 400, "INVALID_PARAMETERS", &["page"]).await;
        }
    }
    assert_nothing_written(&app, before).await;
}

/// The v2 surface answers the same hostile input in its own envelope, naming the parameter in `path`.
#[sqlx::test(migrations = "../schema")]
async fn the_v2_surface_answers_hostile_input_in_the_v2_envelope(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = org_events(&app).await;
    for (query, parameter) in [
        ("page=abc", "page"),
        ("page=0", "page"),
        ("page=9223372036854775808", "page"),
        ("page=%FF", "page"),
        ("limit=9223372036854775808", "limit"),
        ("limit=1e400", "limit"),
        ("search=a%00b", "search"),
    ] {
        let body = v2_error(app.get(&format!("{V2_WAREHOUSES}?{query}")).await, 400).await;
        assert!(v2_paths(&body).contains(&parameter.to_owned()), "{query}: {body}");
    }
    assert_eq!(org_events(&app).await, before);
}
