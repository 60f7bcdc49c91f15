//! `/api/v1/points-of-sale`: point of sale one of every new organization, and those operators create,
//! listed in order per organization.

use crate::helpers::{
    POINTS_OF_SALE, TestApp, assert_bad_list_parameters, ids, instant, items, key_set, list_of_at_least, names,
    names_set, org_id, walk,
};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

#[sqlx::test(migrations = "../schema")]
async fn a_new_organization_has_exactly_point_of_sale_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let list = list_of_at_least(&app, POINTS_OF_SALE, &app.api_key, 1).await;
    assert_eq!(list["object"], "list");
    assert_eq!(list["url"], POINTS_OF_SALE);
    assert_eq!(list["has_more"], false);
    assert_eq!(list["next_cursor"], Value::Null);
    let data = items(&list);
    assert_eq!(data.len(), 1, "{list}");
    let pos = &data[0];
    assert_eq!(
        key_set(pos),
        names_set(&["object", "id", "number", "name", "is_active", "kind", "created_at", "updated_at"]),
        "{pos}"
    );
    assert_eq!(pos["object"], "point_of_sale");
    assert!(Uuid::parse_str(pos["id"].as_str().expect("id")).is_ok());
    assert_eq!(pos["number"], 1);
    assert_eq!(pos["kind"], "electronic", "the seeded point of sale is authorized by the tax authority");
    assert!(pos["name"].as_str().is_some_and(|n| !n.is_empty()), "{pos}");
    assert_eq!(pos["is_active"], true);
    assert!(instant(&pos["created_at"]) <= instant(&pos["updated_at"]));
}

#[sqlx::test(migrations = "../schema")]
async fn points_of_sale_created_by_operators_are_listed_in_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let (other_org, other_key) = app.other_org().await;
    let second = commands::organization::create_point_of_sale(&app.pool, org, 2, Some("Mostrador"), "electronic")
        .await
        .expect("2");
    commands::organization::create_point_of_sale(&app.pool, org, 3, Some("Online"), "manual").await.expect("3");
    // The other organization may use the same numbers.
    commands::organization::create_point_of_sale(&app.pool, other_org, 2, None, "electronic").await.expect("their 2");
    let before = app.event_count().await;
    for number in [1, 2, 0, 100_000] {
        let refused =
            commands::organization::create_point_of_sale(&app.pool, org, number, Some("Otro"), "electronic").await;
        assert!(refused.is_err(), "number {number} is refused");
    }
    assert_eq!(app.event_count().await, before, "refused creations write nothing");

    let list = list_of_at_least(&app, POINTS_OF_SALE, &app.api_key, 3).await;
    let data = items(&list);
    let numbers: Vec<i64> = data.iter().map(|p| p["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2, 3], "{list}");
    assert_eq!(names(&data)[1..].to_vec(), vec!["Mostrador", "Online"]);
    assert_eq!(data[1]["id"], second.to_string().as_str());
    assert!(data.iter().all(|p| p["object"] == "point_of_sale" && p["is_active"] == true), "{list}");
    let walked = walk(&app, POINTS_OF_SALE, 1, &app.api_key).await;
    assert_eq!(ids(&walked), ids(&data), "cursor pages walk the same order");

    let theirs = items(&list_of_at_least(&app, POINTS_OF_SALE, &other_key, 2).await);
    let numbers: Vec<i64> = theirs.iter().map(|p| p["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert!(ids(&theirs).iter().all(|id| !ids(&data).contains(id)), "each organization sees its own");
    assert_bad_list_parameters(&app, POINTS_OF_SALE, &["limit=0", "limit=101", "page=1", "cursor=forged"]).await;
}
