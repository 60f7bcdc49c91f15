//! Rules the configuration records (payment methods, warehouses, categories) share, proved across
//! them: cached reads show every replacement, restoring a previous default, and rebuilds.

use crate::helpers::{CATEGORIES, PAYMENT_METHODS, TestApp, WAREHOUSES, create, id_of, json, seeded, style_b};
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrations = "../schema")]
async fn cached_reads_show_every_replacement(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let warehouse = format!("{WAREHOUSES}/{}", id_of(&create(&app, WAREHOUSES, &json!({"name": "Norte"})).await));
    let method =
        format!("{PAYMENT_METHODS}/{}", id_of(&create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta"})).await));
    let category = format!("{CATEGORIES}/{}", id_of(&create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await));
    for round in 0..4 {
        for path in [&warehouse, &method, &category] {
            // Two reads: the second is served from the cache.
            let first = style_b(app.get(path).await, 200).await;
            assert_eq!(style_b(app.get(path).await, 200).await, first);
            let name = format!("Nombre {round}");
            let replaced = style_b(app.put(path, &json!({"name": name})).await, 200).await;
            let read = style_b(app.get(path).await, 200).await;
            assert_eq!(read["name"], name.as_str(), "{path}: the cached read was invalidated");
            assert_eq!(read, replaced);
        }
    }
    let changed = style_b(app.put(&warehouse, &json!({"name": "Norte", "address": "Ruta 3"})).await, 200).await;
    assert_eq!(style_b(app.get(&warehouse).await, 200).await, changed);
}

#[sqlx::test(migrations = "../schema")]
async fn restoring_the_previous_default_takes_the_flag_back(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for (list, seeded_name, other) in
        [(PAYMENT_METHODS, "Efectivo", "Tarjeta"), (WAREHOUSES, "Depósito principal", "Norte")]
    {
        let original = seeded(&app, list, seeded_name).await;
        let original_path = format!("{list}/{}", original["id"].as_str().expect("id"));
        let newer = create(&app, list, &json!({"name": other, "isDefault": true})).await;
        let newer_path = format!("{list}/{}", id_of(&newer));
        assert_eq!(style_b(app.get(&original_path).await, 200).await["isDefault"], false);

        // Make the original the default again, keeping its other (seeded) fields.
        let body = json!({"name": seeded_name, "isDefault": true});
        let restored = style_b(app.put(&original_path, &body).await, 200).await;
        assert_eq!(restored["isDefault"], true, "{list}: the reply says it is the default");
        assert_eq!(
            style_b(app.get(&original_path).await, 200).await["isDefault"],
            true,
            "{list}: a GET right after the 200 shows it as the default"
        );
        assert_eq!(style_b(app.get(&newer_path).await, 200).await["isDefault"], false, "{list}: the other lost it");
    }
}

/// Rebuilding the configuration records' projections from the event store (while the service runs)
/// yields the same lists: names, default flags, parents and timestamps.
#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_of_configuration_records_yields_the_same_reads(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    seeded(&app, WAREHOUSES, "Depósito principal").await;
    create(&app, WAREHOUSES, &json!({"name": "O'Higgins \\ Norte", "isDefault": true})).await;
    let drinks = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    create(&app, CATEGORIES, &json!({"name": "Gaseosas", "parentId": id_of(&drinks)})).await;
    // A record and a product changed after their creation: the rebuild folds both events in one batch
    // and keeps the creation time.
    json(app.put(&format!("{CATEGORIES}/{}", id_of(&drinks)), &json!({"name": "Bebidas frías"})).await, 200).await;
    let product = json!({"name": "Soda", "sku": "SODA", "price": 100});
    let soda = json(app.post_keyed("/api/v1/products", &product).await, 201).await["data"]["id"].clone();
    let renamed = json!({"name": "Soda grande", "sku": "SODA", "price": 150});
    json(app.put(&format!("/api/v1/products/{}", soda.as_str().expect("id")), &renamed).await, 200).await;
    let lists = [WAREHOUSES, CATEGORIES, "/api/v1/products"];
    let mut before = Vec::new();
    for list in lists {
        let mut body = json(app.get(list).await, 200).await;
        body["request_id"] = Value::Null;
        before.push(body);
    }
    assert!(before[0].to_string().contains(r#"O'Higgins \\ Norte"#), "{}", before[0]);
    for name in ["warehouses", "categories", "products"] {
        let projection = projections::all().into_iter().find(|p| p.name() == name).expect("projection");
        projections::rebuild::rebuild(&app.pool, projection.as_ref(), |_| {}).await.expect("rebuild");
    }
    for (list, before) in lists.iter().zip(before) {
        let mut after = json(app.get(list).await, 200).await;
        after["request_id"] = Value::Null;
        assert_eq!(after, before, "{list} after the rebuild");
    }
    // Writes after the swap still reach the rebuilt tables (the live projector notices the swap).
    let south = create(&app, WAREHOUSES, &json!({"name": "Sur"})).await;
    let path = format!("{WAREHOUSES}/{}", id_of(&south));
    assert_eq!(style_b(app.get(&path).await, 200).await["name"], "Sur");
}
