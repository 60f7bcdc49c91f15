//! `/api/v1/categories`: the spec's shape, replacement, every field rule, parents (of the organization,
//! never an ancestor of themselves), and the sorted, searchable page list.

use crate::helpers::{
    CATEGORIES, PAYMENT_METHODS, TestApp, assert_bad_list_parameters, assert_field_rules,
    assert_non_object_bodies_refused, create, detail_fields, error, id_of, instant, items, json, key_set, names,
    names_set, sorted, strings, style_b,
};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

const CATEGORY_KEYS: &[&str] = &["id", "name", "parentId", "createdAt", "updatedAt"];

#[sqlx::test(migrations = "../schema")]
async fn a_created_category_is_readable_at_once_and_replaceable(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let drinks = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    assert_eq!(drinks["success"], true);
    assert_eq!(key_set(&drinks["data"]), names_set(CATEGORY_KEYS), "{drinks}");
    assert_eq!(drinks["data"]["parentId"], Value::Null, "a top-level category");
    assert_eq!(instant(&drinks["data"]["createdAt"]), instant(&drinks["data"]["updatedAt"]));
    let drinks_id = id_of(&drinks);
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{drinks_id}")).await, 200).await, drinks["data"]);

    let sodas = create(&app, CATEGORIES, &json!({"name": "Gaseosas", "parentId": drinks_id})).await;
    assert_eq!(sodas["data"]["parentId"], drinks_id.as_str());
    let sodas_path = format!("{CATEGORIES}/{}", id_of(&sodas));
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, sodas["data"]);
    let explicit_null = create(&app, CATEGORIES, &json!({"name": "Limpieza", "parentId": null})).await;
    assert_eq!(explicit_null["data"]["parentId"], Value::Null);

    let replaced = style_b(app.put(&sodas_path, &json!({"name": "Aguas"})).await, 200).await;
    assert_eq!(replaced["name"], "Aguas");
    assert_eq!(replaced["parentId"], Value::Null, "an omitted parent makes it top-level");
    assert_eq!(replaced["createdAt"], sodas["data"]["createdAt"]);
    assert!(instant(&replaced["updatedAt"]) > instant(&sodas["data"]["updatedAt"]));
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, replaced);
    let before = app.event_count().await;
    json(app.put(&sodas_path, &json!({"name": "Aguas", "parentId": null})).await, 200).await;
    assert_eq!(app.event_count().await, before, "the same representation records nothing");
    let moved = style_b(app.put(&sodas_path, &json!({"name": "Aguas", "parentId": drinks_id})).await, 200).await;
    assert_eq!(moved["parentId"], drinks_id.as_str());
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, moved);
}

#[sqlx::test(migrations = "../schema")]
async fn every_category_field_rule_is_enforced_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let existing = id_of(&create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await);
    let before = app.event_count().await;
    let cases: Vec<(&str, Value)> = vec![
        ("name", json!("")),
        ("name", json!(" ")),
        ("name", json!("c".repeat(101))),
        ("name", Value::Null),
        ("name", json!(false)),
        ("parentId", json!("nope")),
        ("parentId", json!("")),
        ("parentId", json!(5)),
        ("parentId", json!({"id": existing})),
    ];
    assert_field_rules(&app, CATEGORIES, &existing, &json!({"name": "Bebidas"}), &cases).await;
    assert_non_object_bodies_refused(&app, CATEGORIES, &existing).await;
    let refused = error(app.post(CATEGORIES, &json!({"parentId": "x"})).await, 400, "invalid_request_error").await;
    assert_eq!(sorted(detail_fields(&refused)), strings(&["name", "parentId"]));
    assert_eq!(app.event_count().await, before, "no rejected request wrote anything");
    let limit = create(&app, CATEGORIES, &json!({"name": "ñ".repeat(100)})).await;
    assert_eq!(limit["data"]["name"], "ñ".repeat(100));
}

#[sqlx::test(migrations = "../schema")]
async fn a_category_parent_must_be_a_category_of_the_organization(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, other_key) = app.other_org().await;
    let foreign_body = json!({"name": "Ajena"});
    let foreign = json(app.request(Method::POST, CATEGORIES, Some(&other_key), Some(&foreign_body)).await, 201).await;
    let card = create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta"})).await;
    let existing = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    let path = format!("{CATEGORIES}/{}", id_of(&existing));
    let before = app.event_count().await;
    // Unknown, another organization's category, and a record of another kind.
    for parent in [Uuid::now_v7().to_string(), id_of(&foreign), id_of(&card)] {
        let body = json!({"name": "Gaseosas", "parentId": parent});
        let created = error(app.post(CATEGORIES, &body).await, 404, "invalid_request_error").await;
        let replaced = error(app.put(&path, &body).await, 404, "invalid_request_error").await;
        assert_eq!(created["error"]["code"], "NOT_FOUND", "{created}");
        assert_eq!(replaced["error"]["message"], created["error"]["message"]);
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(style_b(app.get(&path).await, 200).await, existing["data"]);
    let list = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(names(&items(&list)), vec!["Bebidas"]);
}

#[sqlx::test(migrations = "../schema")]
async fn a_category_cannot_become_its_own_ancestor(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let a = id_of(&create(&app, CATEGORIES, &json!({"name": "A"})).await);
    let b = id_of(&create(&app, CATEGORIES, &json!({"name": "B", "parentId": a})).await);
    let c = id_of(&create(&app, CATEGORIES, &json!({"name": "C", "parentId": b})).await);
    let before = app.event_count().await;
    // Its own parent, the child of its child, the child of its grandchild.
    for (id, name, parent) in [(&a, "A", &a), (&a, "A", &b), (&a, "A", &c), (&b, "B", &c), (&c, "C", &c)] {
        let body = json!({"name": name, "parentId": parent});
        let refused = error(app.put(&format!("{CATEGORIES}/{id}"), &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), vec!["parentId"], "{name} under {parent}: {refused}");
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{a}")).await, 200).await["parentId"], Value::Null);
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{b}")).await, 200).await["parentId"], a.as_str());

    // Once B leaves A, A may go under C (B > C > A), and then B cannot go under A.
    style_b(app.put(&format!("{CATEGORIES}/{b}"), &json!({"name": "B"})).await, 200).await;
    let moved = style_b(app.put(&format!("{CATEGORIES}/{a}"), &json!({"name": "A", "parentId": c})).await, 200).await;
    assert_eq!(moved["parentId"], c.as_str());
    let body = json!({"name": "B", "parentId": a});
    let refused = error(app.put(&format!("{CATEGORIES}/{b}"), &body).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["parentId"]);
}

#[sqlx::test(migrations = "../schema")]
async fn the_category_list_sorts_and_pages(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let empty = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(key_set(&empty), names_set(&["success", "data", "pagination"]), "{empty}");
    assert_eq!(empty["success"], true);
    assert_eq!(empty["pagination"], json!({"page": 1, "limit": 20, "total": 0, "totalPages": 0}));
    let creation = ["bebidas", "Almacen", "dulces", "Carnes", "especias"];
    let mut created = Vec::new();
    for name in creation {
        created.push(create(&app, CATEGORIES, &json!({"name": name})).await["data"].clone());
    }
    let by_name = ["Almacen", "bebidas", "Carnes", "dulces", "especias"];
    let list = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(list["success"], true);
    assert_eq!(list["pagination"], json!({"page": 1, "limit": 20, "total": 5, "totalPages": 1}));
    assert_eq!(names(&items(&list)), by_name, "by name, case-insensitive, ascending by default");
    for item in items(&list) {
        assert_eq!(key_set(&item), names_set(CATEGORY_KEYS), "{item}");
        assert!(created.contains(&item), "list items are the single representations: {item}");
    }
    let explicit = json(app.get(&format!("{CATEGORIES}?sortBy=name&sortOrder=asc")).await, 200).await;
    assert_eq!(names(&items(&explicit)), by_name);
    let descending = json(app.get(&format!("{CATEGORIES}?sortOrder=desc")).await, 200).await;
    let mut reversed = by_name.to_vec();
    reversed.reverse();
    assert_eq!(names(&items(&descending)), reversed);
    let oldest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt")).await, 200).await;
    assert_eq!(names(&items(&oldest)), creation);
    let newest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt&sortOrder=desc")).await, 200).await;
    let mut newest_first = creation.to_vec();
    newest_first.reverse();
    assert_eq!(names(&items(&newest)), newest_first);

    // The first-created one, changed last, leads by updatedAt descending and trails ascending.
    let first_path = format!("{CATEGORIES}/{}", created[0]["id"].as_str().expect("id"));
    style_b(app.put(&first_path, &json!({"name": "Bebidas frías"})).await, 200).await;
    let updated = json(app.get(&format!("{CATEGORIES}?sortBy=updatedAt&sortOrder=desc")).await, 200).await;
    assert_eq!(names(&items(&updated)), vec!["Bebidas frías", "especias", "Carnes", "dulces", "Almacen"]);
    let updated = json(app.get(&format!("{CATEGORIES}?sortBy=updatedAt")).await, 200).await;
    assert_eq!(names(&items(&updated)), vec!["Almacen", "dulces", "Carnes", "especias", "Bebidas frías"]);
    let oldest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt")).await, 200).await;
    assert_eq!(names(&items(&oldest))[0], "Bebidas frías", "a replacement keeps createdAt");

    // Numbered pages of two.
    let by_name = ["Almacen", "Bebidas frías", "Carnes", "dulces", "especias"];
    let mut walked = Vec::new();
    for page in 1..=3 {
        let body = json(app.get(&format!("{CATEGORIES}?page={page}&limit=2")).await, 200).await;
        assert_eq!(body["pagination"], json!({"page": page, "limit": 2, "total": 5, "totalPages": 3}));
        walked.extend(names(&items(&body)));
    }
    assert_eq!(walked, by_name);
    let beyond = json(app.get(&format!("{CATEGORIES}?page=4&limit=2")).await, 200).await;
    assert_eq!(items(&beyond), Vec::<Value>::new());
    assert_eq!(beyond["pagination"], json!({"page": 4, "limit": 2, "total": 5, "totalPages": 3}));
    let whole = json(app.get(&format!("{CATEGORIES}?limit=100")).await, 200).await;
    assert_eq!(whole["pagination"], json!({"page": 1, "limit": 100, "total": 5, "totalPages": 1}));
    let single = json(app.get(&format!("{CATEGORIES}?limit=1&page=5&sortOrder=desc")).await, 200).await;
    assert_eq!(names(&items(&single)), vec!["Almacen"]);
    assert_eq!(single["pagination"]["totalPages"], 5);
}

#[sqlx::test(migrations = "../schema")]
async fn the_category_search_is_case_insensitive_and_literal(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for name in ["Bebidas", "BEBIDAS sin alcohol", "Descuento 50%", "Descuento 500", "a_b", "axb", "Limpieza"] {
        create(&app, CATEGORIES, &json!({"name": name})).await;
    }
    let search = |term: &'static str| {
        let app = &app;
        async move { json(app.get(&format!("{CATEGORIES}?search={term}")).await, 200).await }
    };
    let found = search("bebidas").await;
    assert_eq!(names(&items(&found)), vec!["Bebidas", "BEBIDAS sin alcohol"]);
    assert_eq!(found["pagination"], json!({"page": 1, "limit": 20, "total": 2, "totalPages": 1}));
    assert_eq!(names(&items(&search("SIN%20ALC").await)), vec!["BEBIDAS sin alcohol"], "contains, any case");
    assert_eq!(names(&items(&search("%20%20bebidas%20").await)).len(), 2, "the term is trimmed");
    assert_eq!(names(&items(&search("50%25").await)), vec!["Descuento 50%"], "% is literal");
    assert_eq!(names(&items(&search("a_b").await)), vec!["a_b"], "_ is literal");
    let none = search("zzz").await;
    assert_eq!(none["pagination"], json!({"page": 1, "limit": 20, "total": 0, "totalPages": 0}));
    assert_eq!(items(&none), Vec::<Value>::new());
    let paged = json(app.get(&format!("{CATEGORIES}?search=descuento&limit=1&page=2")).await, 200).await;
    assert_eq!(paged["pagination"], json!({"page": 2, "limit": 1, "total": 2, "totalPages": 2}));
    assert_eq!(names(&items(&paged)), vec!["Descuento 500"]);
    let everything = search("").await;
    assert_eq!(everything["pagination"]["total"], 7, "an empty term does not filter");
}

#[sqlx::test(migrations = "../schema")]
async fn invalid_category_list_parameters_are_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let search = format!("search={}", "s".repeat(101));
    assert_bad_list_parameters(
        &app,
        CATEGORIES,
        &[
            "page=0",
            "page=-1",
            "page=abc",
            "page=1.5",
            "limit=0",
            "limit=101",
            "limit=abc",
            "sortBy=price",
            "sortBy=",
            "sortOrder=up",
            "sortOrder=",
            &search,
        ],
    )
    .await;
    let all = error(
        app.get(&format!("{CATEGORIES}?page=0&limit=0&sortBy=x&sortOrder=y")).await,
        400,
        "invalid_request_error",
    )
    .await;
    assert_eq!(sorted(detail_fields(&all)), strings(&["limit", "page", "sortBy", "sortOrder"]), "all at once");
}
