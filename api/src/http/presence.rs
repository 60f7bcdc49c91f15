//! How the OpenAPI document states a field's presence and nullability: one type per rule, used by every
//! request and response object, so the document cannot drift from the bytes.
//!
//! | Rust type in an `Object` | On the wire                         | In the document              |
//! |--------------------------|-------------------------------------|------------------------------|
//! | `T`                      | always present, never `null`        | required                     |
//! | [`Nullable<T>`]          | always present, may be `null`       | required, `nullable: true`   |
//! | [`Optional<T>`]          | may be absent, may be `null`        | not required, `nullable`     |
//! | `Option<T>`, its struct `#[serde_with::skip_serializing_none]` | absent or a value | not required |
//!
//! Responses use `Nullable<T>` for a field rendered as `null` when unset and `Option<T>` (skipped when
//! none, by the struct's `skip_serializing_none`) for one left out; request bodies use `Optional<T>` for a field that may be omitted or sent as
//! `null` (both mean "unset"). A plain `Option<T>` without the skip would be documented as absent while
//! sent as `null`: the contract test (`scripts/contract`) fails on it.

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The schema of `T` that also admits `null`. A reference cannot carry siblings in OpenAPI 3.0, so it is
/// wrapped as `anyOf: [$ref]` (which generators read as "this type or null", unlike `allOf`).
pub fn nullable_schema(schema: MetaSchemaRef) -> MetaSchemaRef {
    match schema {
        MetaSchemaRef::Inline(mut schema) => {
            schema.nullable = true;
            MetaSchemaRef::Inline(schema)
        }
        reference @ MetaSchemaRef::Reference(_) => {
            MetaSchemaRef::Inline(Box::new(MetaSchema { any_of: vec![reference], nullable: true, ..MetaSchema::ANY }))
        }
    }
}

/// Always present, `null` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nullable<T>(pub Option<T>);

/// May be omitted or sent as `null`; both mean "unset".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Optional<T>(pub Option<T>);

impl<T> From<Option<T>> for Nullable<T> {
    fn from(value: Option<T>) -> Self {
        Self(value)
    }
}

impl<T> From<Option<T>> for Optional<T> {
    fn from(value: Option<T>) -> Self {
        Self(value)
    }
}

macro_rules! presence_type {
    ($name:ident, $required:expr, $prefix:literal) => {
        impl<T: Type> Type for $name<T> {
            const IS_REQUIRED: bool = $required;
            type RawValueType = T::RawValueType;
            type RawElementValueType = T::RawElementValueType;

            fn name() -> Cow<'static, str> {
                format!(concat!($prefix, "_{}"), T::name()).into()
            }

            fn schema_ref() -> MetaSchemaRef {
                nullable_schema(T::schema_ref())
            }

            fn register(registry: &mut Registry) {
                T::register(registry);
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                self.0.as_ref().and_then(|value| value.as_raw_value())
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                match &self.0 {
                    Some(value) => value.raw_element_iter(),
                    None => Box::new(std::iter::empty()),
                }
            }

            fn is_none(&self) -> bool {
                self.0.is_none()
            }
        }

        impl<T: ParseFromJSON> ParseFromJSON for $name<T> {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                match value {
                    None | Some(Value::Null) => Ok(Self(None)),
                    value => T::parse_from_json(value).map(|v| Self(Some(v))).map_err(ParseError::propagate),
                }
            }
        }

        impl<T: ToJSON> ToJSON for $name<T> {
            fn to_json(&self) -> Option<Value> {
                Some(self.0.as_ref().and_then(ToJSON::to_json).unwrap_or(Value::Null))
            }
        }
    };
}

presence_type!(Nullable, true, "nullable");
presence_type!(Optional, false, "optional");

/// An object of `T` in a sparse field set (`fields=`): `id` always, every other property only when
/// asked for. Documented as `T`'s schema with only `id` required.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Sparse<T>(pub T);

impl<T: Type> Type for Sparse<T> {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> Cow<'static, str> {
        format!("Sparse_{}", T::name()).into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Reference(Self::name().into_owned())
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
        let name = Self::name().into_owned();
        if let Some(mut schema) = registry.schemas.get(T::name().as_ref()).cloned() {
            schema.required.retain(|field| *field == "id");
            schema.title = Some(name.clone());
            registry.schemas.insert(name, schema);
        }
    }

    fn as_raw_value(&self) -> Option<&Self> {
        Some(self)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
        Box::new(std::iter::once(self))
    }
}

impl<T: ParseFromJSON> ParseFromJSON for Sparse<T> {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        T::parse_from_json(value).map(Sparse).map_err(ParseError::propagate)
    }
}

impl<T: ToJSON> ToJSON for Sparse<T> {
    fn to_json(&self) -> Option<Value> {
        self.0.to_json()
    }
}

/// `#[serde(with = "rfc3339_nullable")]` for a `Nullable<OffsetDateTime>`: RFC 3339 text or `null`.
pub mod rfc3339_nullable {
    use super::Nullable;
    use serde::{Deserializer, Serializer};
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(value: &Nullable<OffsetDateTime>, serializer: S) -> Result<S::Ok, S::Error> {
        time::serde::rfc3339::option::serialize(&value.0, serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Nullable<OffsetDateTime>, D::Error> {
        time::serde::rfc3339::option::deserialize(deserializer).map(Nullable)
    }
}

/// `Nullable<Date>` as `YYYY-MM-DD` or `null`.
pub mod date_nullable {
    use super::Nullable;
    use serde::{Deserializer, Serializer};
    use time::Date;

    pub fn serialize<S: Serializer>(value: &Nullable<Date>, serializer: S) -> Result<S::Ok, S::Error> {
        events::catalogue::iso_date_option::serialize(&value.0, serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Nullable<Date>, D::Error> {
        events::catalogue::iso_date_option::deserialize(deserializer).map(Nullable)
    }
}

/// An optional field's `Nullable<Date>` (skipped when absent) as `YYYY-MM-DD` or `null`.
pub mod optional_date_nullable {
    use super::Nullable;
    use serde::{Deserializer, Serializer};
    use time::Date;

    pub fn serialize<S: Serializer>(value: &Option<Nullable<Date>>, serializer: S) -> Result<S::Ok, S::Error> {
        events::catalogue::iso_date_option::serialize(&value.as_ref().and_then(|v| v.0), serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Nullable<Date>>, D::Error> {
        super::date_nullable::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem_openapi::Object;

    #[derive(Object)]
    struct Sample {
        always: String,
        maybe_null: Nullable<String>,
        maybe_absent: Optional<i64>,
    }

    #[test]
    fn required_follows_presence_and_nullable_follows_null() {
        let mut registry = Registry::new();
        Sample::register(&mut registry);
        let schema = &registry.schemas["Sample"];
        assert_eq!(schema.required, vec!["always", "maybe_null"]);
        let property = |name: &str| match &schema.properties.iter().find(|(n, _)| *n == name).expect("a property").1 {
            MetaSchemaRef::Inline(schema) => schema.nullable,
            MetaSchemaRef::Reference(_) => false,
        };
        assert!(!property("always"));
        assert!(property("maybe_null"));
        assert!(property("maybe_absent"));
    }

    #[test]
    fn serialization_is_transparent() {
        let value = serde_json::to_value(Nullable::<String>(None)).expect("serializes");
        assert_eq!(value, Value::Null);
        let value = serde_json::to_value(Nullable(Some(3))).expect("serializes");
        assert_eq!(value, serde_json::json!(3));
    }
}
