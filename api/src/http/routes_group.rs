//! An API group's two impls written from one place: its `Operations` (the operations it serves and its
//! input rules) and its `#[OpenApi]` impl (its routes). The route macros of the domains (`tags_api!`,
//! `records_api!`, `webhooks_api!`, `contacts_api!`) write their rows into it, each route and its
//! operation from the same row.

/// `api_group! { Api, operations: [..], input_rules: .., #[OpenApi(..)] routes: { .. } }`.
macro_rules! api_group {
    (
        $api:ident,
        operations: [$($operation:expr),* $(,)?],
        input_rules: $rules:expr,
        #[OpenApi($($openapi:tt)*)]
        routes: { $($route:tt)* }
    ) => {
        impl $crate::http::operations::Operations for $api {
            const OPERATIONS: &'static [$crate::http::operations::Operation] = &[$($operation),*];
            const INPUT_RULES: &'static [$crate::http::operations::InputRule] = $rules;
        }

        #[::poem_openapi::OpenApi($($openapi)*)]
        impl $api {
            $($route)*
        }
    };
}

pub(crate) use api_group;
