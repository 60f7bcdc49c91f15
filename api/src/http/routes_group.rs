//! An API group's two impls written from one place: its `Operations` (the operations it serves and its
//! input rules) and its `#[OpenApi]` impl (its routes). The route macros of the domains (`tags_api!`,
//! `records_api!`, `webhooks_api!`, `contacts_api!`) write their rows into it, each route and its
//! operation from the same row. [`routes!`] writes an `#[OpenApi]` impl alone: routes written out,
//! then the group's cursor lists, one row each.

/// `api_group! { Api, operations: [..], input_rules: .., #[OpenApi(..)] routes: { .. } cursor_lists: { .. } }`
/// (the cursor lists as [`routes!`] reads them, optional).
macro_rules! api_group {
    (
        $api:ident,
        operations: [$($operation:expr),* $(,)?],
        input_rules: $rules:expr,
        #[OpenApi($($openapi:tt)*)]
        routes: { $($route:tt)* }
        $(cursor_lists: { $($lists:tt)* })?
    ) => {
        impl $crate::http::operations::Operations for $api {
            const OPERATIONS: &'static [$crate::http::operations::Operation] = &[$($operation),*];
            const INPUT_RULES: &'static [$crate::http::operations::InputRule] = $rules;
        }

        $crate::http::routes_group::routes! {
            #[OpenApi($($openapi)*)]
            $api { $($route)* }
            cursor_lists: { $($($lists)*)? }
        }
    };
}

/// `routes! { #[OpenApi(..)] Api { routes written out } cursor_lists: { rows } }`: the `#[OpenApi]` impl
/// of `Api`, with a route per cursor-list row. A row is the list's doc (summary, blank line,
/// description), then
/// `method("/path", "operationId"[, tag = "Tag"]) -> Answer = OPERATION, serve { params } [then { params }];`:
/// a `get` whose parameters are the caller's credential, the `params` (each with its attributes and type,
/// `Query<..>` or `Path<..>`, in the order the document lists them; the extractor stays a plain name,
/// which is how `#[OpenApi]` tells a path parameter), `limit` and `cursor` as every cursor list documents them, the
/// `then` params after those, and the undocumented `page`. It opens a [`Call`] for `OPERATION` and
/// answers `Answer::Ok` with the page `serve(&call, page_params, params…)` writes, each parameter passed
/// as received (its `.0`).
///
/// [`Call`]: crate::http::resource::Call
macro_rules! routes {
    (
        #[OpenApi($($openapi:tt)*)]
        $api:ident { $($route:tt)* }
        $(cursor_lists: {
            $(
                $(#[doc = $doc:tt])*
                $method:ident($path:literal, $id:literal $(, tag = $tag:literal)?)
                    -> $answer:ident = $operation:ident, $serve:ident {
                        $($(#[$($param_meta:tt)*])* $param:ident: $param_in:ident<$param_ty:ty>),* $(,)?
                    }
                    $(then { $($(#[$($after_meta:tt)*])* $after:ident: $after_in:ident<$after_ty:ty>),* $(,)? })?;
            )*
        })?
    ) => {
        #[::poem_openapi::OpenApi($($openapi)*)]
        impl $api {
            $($route)*

            $($(
                $(#[doc = $doc])*
                #[oai(path = $path, method = "get", operation_id = $id $(, tag = $tag)?)]
                #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
                async fn $method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: $crate::http::RequestId,
                    $($(#[$($param_meta)*])* $param: $param_in<$param_ty>,)*
                    /// 1 to 100, default 50.
                    limit: ::poem_openapi::param::Query<Option<$crate::http::schema::Limit>>,
                    /// The `next_cursor` of the previous page.
                    cursor: ::poem_openapi::param::Query<Option<String>>,
                    $($($(#[$($after_meta)*])* $after: $after_in<$after_ty>,)*)?
                    page: $crate::http::envelopes::PageParam,
                ) -> Result<$answer, $crate::http::error::ApiError> {
                    let call = $crate::http::resource::Call::new($operation, &state, &auth, &request_id)?;
                    let params = $crate::http::resource::PageParams::new(limit, cursor, page);
                    let body = $serve(&call, params, $($param.0,)* $($($after.0,)*)?).await?;
                    Ok($answer::Ok($crate::http::body::RawJson::new(body)))
                }
            )*)?
        }
    };
}

pub(crate) use {api_group, routes};
