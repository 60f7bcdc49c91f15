//! What an operation of the HTTP interface is: its `operationId`, the scope it needs, how it uses
//! `Idempotency-Key`, and the command it sends. Each API group declares its operations beside its
//! routes; handlers open their `Call` with one; the OpenAPI document publishes them
//! (`x-required-scopes`, `x-idempotency`); tests hold them, the routes and the command registry to
//! each other.

use commands::protocol::CommandKind;
use events::domain::Scope;

events::named_enum! {
    /// How an operation uses `Idempotency-Key`.
    pub enum Idempotency { Required = "required", Optional = "optional", NotUsed = "not_used" }
}

/// An operation of the interface: its `operationId`, the scope a credential needs (none: any valid
/// credential), how it uses `Idempotency-Key`, and the command it sends to the workers, if it writes.
/// Each API group declares its operations beside its routes and lists them in [`Operations`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Operation {
    id: &'static str,
    scope: Option<Scope>,
    idempotency: Idempotency,
    command: Option<CommandKind>,
    /// When the operation can answer 422 (the organization's state forbids a well-formed request), why.
    unprocessable: Option<&'static str>,
}

impl Operation {
    /// A read: no key, no command.
    pub const fn read(id: &'static str, scope: Option<Scope>) -> Self {
        Self { id, scope, idempotency: Idempotency::NotUsed, command: None, unprocessable: None }
    }

    /// A write sending `command`.
    pub const fn write(id: &'static str, scope: Scope, idempotency: Idempotency, command: CommandKind) -> Self {
        Self { id, scope: Some(scope), idempotency, command: Some(command), unprocessable: None }
    }

    /// The same operation, documented to answer 422 `business_error` for the reasons `why` gives.
    pub const fn unprocessable(self, why: &'static str) -> Self {
        Self { unprocessable: Some(why), ..self }
    }

    /// Why the operation may answer 422, if it may.
    pub fn unprocessable_because(self) -> Option<&'static str> {
        self.unprocessable
    }

    /// The `operationId` (also what an idempotency claim names).
    pub fn id(self) -> &'static str {
        self.id
    }

    pub fn scope(self) -> Option<Scope> {
        self.scope
    }

    pub fn idempotency(self) -> Idempotency {
        self.idempotency
    }

    pub fn command(self) -> Option<CommandKind> {
        self.command
    }

    /// The operation with this `operationId`, among every API group served.
    pub fn from_id(id: &str) -> Option<Operation> {
        all().into_iter().find(|operation| operation.id == id)
    }
}

/// The operations an API group serves: required of every group the gateway serves (`apis!` in
/// `http/mod.rs`), and held to its routes by a test.
pub trait Operations {
    const OPERATIONS: &'static [Operation];
    /// The rules of this group's inputs that the derived schemas cannot state (see [`InputRule`]).
    const INPUT_RULES: &'static [InputRule] = &[];
}

/// A rule the handlers enforce that a field's type cannot state, added to the OpenAPI document so a
/// value it accepts is accepted (applied by `document.rs`, which fails if the target is missing).
pub enum InputRule {
    /// A schema a request body must also match (added to its `allOf`): cross-field rules (`anyOf` of
    /// the allowed shapes, `not` for refused keys).
    Body { schema: &'static str, rule: fn() -> serde_json::Value },
    /// A request body schema whose parser refuses every field it does not declare
    /// (`additionalProperties: false`).
    Closed { schema: &'static str },
    /// The schema of a query parameter whose handler reads it as text.
    Query { operation: &'static str, parameter: &'static str, schema: fn() -> serde_json::Value },
}

/// Every operation of every API group served.
pub fn all() -> Vec<Operation> {
    crate::http::operations_of_apis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every route of the document is in the table and every entry of the table is a route.
    #[test]
    fn the_table_and_the_routes_name_the_same_operations() {
        let document: serde_json::Value =
            serde_json::from_str(&crate::http::api_service().spec()).expect("the generated document");
        let mut routed = HashSet::new();
        for operations in document["paths"].as_object().expect("paths").values() {
            for operation in operations.as_object().expect("operations").values() {
                let id = operation["operationId"].as_str().expect("every operation has an id");
                assert!(Operation::from_id(id).is_some(), "{id} is routed but missing from the table");
                routed.insert(id.to_owned());
            }
        }
        for operation in &all() {
            assert!(routed.contains(operation.id()), "{} is in the table but not routed", operation.id());
        }
        let ids: HashSet<&str> = all().iter().map(|o| o.id()).collect();
        assert_eq!(ids.len(), all().len(), "operation ids are unique");
    }

    /// Every command the workers run is sent by some operation, and only writes send commands.
    #[test]
    fn every_command_is_sent_by_an_operation() {
        let sent: HashSet<CommandKind> = all().iter().filter_map(|o| o.command()).collect();
        for kind in CommandKind::ALL {
            assert!(sent.contains(kind), "no operation sends {kind:?}");
        }
        for operation in &all() {
            if operation.command().is_some() {
                assert!(operation.scope().is_some_and(Scope::is_write), "{} writes with a write scope", operation.id());
            } else {
                assert_eq!(operation.idempotency(), Idempotency::NotUsed, "{} reads take no key", operation.id());
            }
        }
    }
}
