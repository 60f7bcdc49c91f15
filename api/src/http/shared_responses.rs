//! Answers of one status and one body, written once: [`responses!`] declares each as its
//! `ApiResponse` enum of a single variant.

/// `responses! { pub Name: Variant(Body) = 200, "What it is."; … }`: for each entry, an `ApiResponse`
/// enum whose one variant answers `Body` (and any headers after it) with that status and description.
macro_rules! responses {
    ($($vis:vis $name:ident: $variant:ident($($(#[$field_meta:meta])* $field:ty),+) = $status:tt, $doc:tt;)+) => {
        $(
            #[derive(poem_openapi::ApiResponse)]
            $vis enum $name {
                #[doc = $doc]
                #[oai(status = $status)]
                $variant($($(#[$field_meta])* $field),+),
            }
        )+
    };
}

pub(crate) use responses;
