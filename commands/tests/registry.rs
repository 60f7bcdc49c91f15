//! The registry's generated lists: every kind travels under its own wire name, and the commands that
//! write rows beside their events commit in a transaction of their own and travel alone.

use commands::handler::{Batching, Commit};
use commands::protocol::CommandKind;

#[test]
fn kinds_travel_under_their_wire_names() {
    let names: Vec<String> =
        CommandKind::ALL.iter().map(|kind| serde_json::to_value(kind).expect("kind").to_string()).collect();
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), CommandKind::ALL.len());
    assert!(names.contains(&"\"bulk_adjust_products\"".to_owned()));
    for kind in CommandKind::ALL {
        assert_eq!(format!("\"{}\"", kind.name()), serde_json::to_value(kind).expect("kind").to_string());
    }
}

#[test]
fn writes_with_rows_beside_their_events_commit_in_their_own_transaction() {
    for kind in [CommandKind::Product, CommandKind::BulkAdjustProducts, CommandKind::ApplyTags] {
        assert_eq!(kind.commit(), Commit::OwnTransaction, "{kind:?}");
        assert_eq!(kind.batching(), Batching::Alone, "{kind:?}");
    }
    assert_eq!(CommandKind::Customer.commit(), Commit::Grouped);
    assert_eq!(CommandKind::PriceList.batching(), Batching::Alone);
    assert_eq!(CommandKind::PriceList.commit(), Commit::Grouped);
}
