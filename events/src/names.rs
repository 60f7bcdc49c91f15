//! Closed sets of names stored and sent as text (statuses, kinds, types): one list gives the enum, its
//! serde names, `ALL`, `NAMES`, `as_str`, `parse`, `Display` and its `text` column, so the spellings
//! cannot drift apart.

/// What [`named_enum!`] gives every enum it declares, for code generic over them (a request reader).
pub trait Named: Sized + Copy + 'static {
    /// Every name, as a request may send them.
    const NAMES: &'static [&'static str];

    /// The variant a name stands for.
    fn parse(text: &str) -> Option<Self>;
}

/// Declares an enum whose every variant is written as the name beside it:
///
/// ```
/// events::named_enum! {
///     /// Where a thing stands.
///     pub enum Standing { Open = "open", Closed = "closed" }
/// }
/// assert_eq!(Standing::parse("closed"), Some(Standing::Closed));
/// assert_eq!(Standing::NAMES, ["open", "closed"]);
/// assert_eq!(serde_json::to_string(&Standing::Open).unwrap(), r#""open""#);
/// assert_eq!(Standing::ALL.map(Standing::as_str), Standing::NAMES);
/// ```
///
/// The macro derives `Debug`, `Clone`, `Copy`, `PartialEq`, `Eq`, `Hash` and serde's traits; the
/// caller adds any other derive it needs. A name no variant carries does not deserialize.
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in the order declared.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];
            /// Every name, in the order of `ALL`, as a request may send them.
            pub const NAMES: &[&str] = &[$($text),+];

            /// The name it is stored and shown as.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The variant a name stands for.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl $crate::Named for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;

            fn parse(text: &str) -> Option<Self> {
                $name::parse(text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        // A `text` column holding the name; a stored name no variant carries is a decoding error.
        impl sqlx::Type<sqlx::Postgres> for $name {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl sqlx::postgres::PgHasArrayType for $name {
            fn array_type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::postgres::PgHasArrayType>::array_type_info()
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode_by_ref(&self.as_str(), buf)
            }
        }

        impl sqlx::Decode<'_, sqlx::Postgres> for $name {
            fn decode(value: sqlx::postgres::PgValueRef<'_>) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                $name::parse(text).ok_or_else(|| format!("not a {}: {text:?}", stringify!($name)).into())
            }
        }
    };
}
