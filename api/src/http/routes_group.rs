//! An API group's two impls written from one place: its `Operations` (the operations it serves and its
//! input rules) and its `#[OpenApi]` impl (its routes). The route macros of the domains (`tags_api!`,
//! `records_api!`, `webhooks_api!`, `contacts_api!`) write their rows into it, each route and its
//! operation from the same row. [`routes!`] writes an `#[OpenApi]` impl alone: its writes, the routes
//! written out, its cursor lists, v2 pages, gets and actions, one row each.

/// `api_group! { Api, operations: [..], input_rules: .., #[OpenApi(..)] routes: { .. } writes: { .. }
/// cursor_lists: { .. } gets: { .. } }` (the last three as [`routes!`] reads them, each optional).
macro_rules! api_group {
    (
        $api:ident,
        operations: [$($operation:expr),* $(,)?],
        input_rules: $rules:expr,
        #[OpenApi($($openapi:tt)*)]
        routes: { $($route:tt)* }
        $(writes: { $($writes:tt)* })?
        $(cursor_lists: { $($lists:tt)* })?
        $(gets: { $($gets:tt)* })?
    ) => {
        impl $crate::http::operations::Operations for $api {
            const OPERATIONS: &'static [$crate::http::operations::Operation] = &[$($operation),*];
            const INPUT_RULES: &'static [$crate::http::operations::InputRule] = $rules;
        }

        $crate::http::routes_group::routes! {
            #[OpenApi($($openapi)*)]
            $api { $($route)* }
            writes: { $($($writes)*)? }
            cursor_lists: { $($($lists)*)? }
            gets: { $($($gets)*)? }
        }
    };
}

/// `routes! { #[OpenApi(..)] Api { routes written out } writes: { rows } cursor_lists: { rows } v2_pages: { rows } gets: { rows } actions: { rows } }`
/// (each section optional): the `#[OpenApi]` impl of `Api`, with a route per `writes` row, then the
/// routes written out, then a route per row of `cursor_lists`, `v2_pages`, `gets` and `actions`.
///
/// A `writes` row is the route's doc, then `method("/path", "operationId", "http method") (params) ->
/// Answer[::Variant] = OPERATION, |call, write, body: Input| { .. }`: a write with a JSON body, whose
/// parameters are the caller's credential, the contract version, the `params` and the body. The params are
/// the path parameters and, where they stand among them, the `Idempotency-Key`'s doc (a string; `""`
/// leaves the key undescribed): `(id, "Required: ..")` or `("Required: ..", id)`. `OPERATION` is any
/// expression of an [`Operation`]. It opens a [`Call`] for `OPERATION` as `call`, claims the
/// write as `write` (the key, the version, the path parameters in order and the body), and runs the block
/// with those and `body` (the [`JsonBody`]); with `::Variant` the block gives the body's bytes and the
/// route answers `Answer::Variant` with them, without it the block gives the `Answer`.
///
/// A cursor-list row is the list's doc (summary, blank line, description), then
/// `method("/path", "operationId"[, tag = "Tag"]) -> Answer = OPERATION, serve { params } [then { params }];`:
/// a `get` whose parameters are the caller's credential, the `params` (each with its attributes and type,
/// `Query<..>` or `Path<..>`, in the order the document lists them; the extractor stays a plain name,
/// which is how `#[OpenApi]` tells a path parameter), `limit` and `cursor` as every cursor list documents them, the
/// `then` params after those, and the undocumented `page`. It opens a [`Call`] for `OPERATION` and
/// answers `Answer::Ok` with the page `serve(&call, page_params, params…)` writes, each parameter passed
/// as received (its `.0`).
///
///
/// And a route per `v2_pages` row, `method("/path", "operationId", tag = "Tag") -> Answer = OPERATION,
/// serve { params };`: a v2 page list, whose parameters are the caller's credential, `page` and `limit`
/// as every v2 page list documents them, then the `params`. It opens a [`Call`] for `OPERATION`, reads
/// the page and its size (a bad one answers 400 before any filter is read) and answers what
/// `serve(&call, page, limit, params…)` does.
///
/// And a route per `gets` row, `method("/path", "operationId") -> Answer = OPERATION, KIND, param =>
/// load;`: a `get` of one resource of `KIND` by its path parameter `param`, whose parameters are the
/// caller's credential and `param`. It opens a [`Call`] for `OPERATION` and answers `Answer::Ok` with
/// the body [`Call::get`] gives: a `param` that is not an id is 404 naming it; otherwise the cached body
/// where the kind is cached, else what `load(&call, id)` writes (none: 404 naming the kind; its errors
/// as they are). A load that depends on the caller beyond the organization (its visibility, the
/// request id in a Style A envelope) is for a kind that is not cached.
///
/// And a route per `actions` row, `method("/path", "operationId"[, key optional | , method = "delete"]) ->
/// Answer = OPERATION, KIND, param => serve(|id| command);`: a `post` (or the row's HTTP method) without a
/// body that moves the resource of `KIND` its path parameter `param` names (a state change: send, accept,
/// cancel, confirm..., or a delete), whose parameters are the caller's credential, the contract version,
/// `param` and the `Idempotency-Key` (required, unless the row says `key optional`), as every such route
/// documents them. It opens a [`Call`] for `OPERATION`, reads the id (anything else is 404) and answers
/// `Answer::Ok` with the body `serve(&call, write, command)` writes, given the bare write and the command
/// of that id.
///
/// [`Call`]: crate::http::resource::Call
/// [`Operation`]: crate::http::operations::Operation
/// [`Call::get`]: crate::http::resource::Call::get
/// [`JsonBody`]: crate::http::body::JsonBody
macro_rules! routes {
    // A `writes` row's answer: the bytes its block gave under the row's variant, or the block's own.
    (@answer $bytes:ident, $answer:ident :: $variant:ident) => {
        $answer::$variant($crate::http::body::RawJson::new($bytes))
    };
    (@answer $answer_value:ident, $answer:ident) => {
        $answer_value
    };
    // Every action row given its key's doc: write the impl.
    (@actions $front:tt [$($done:tt)*]) => {
        $crate::http::routes_group::routes!(@impl $front actions: { $($done)* });
    };
    // An action whose key is optional (a `post`), one with its own HTTP method (its key required), and
    // the default: a `post` whose key is required, read as `method = "post"`.
    (
        @actions $front:tt [$($done:tt)*]
        $(#[doc = $doc:tt])*
        $method:ident($path:literal, $id:literal, key optional)
            -> $answer:ident = $operation:ident, $kind:ident, $param:ident => $serve:ident(|$bound:ident| $command:expr);
        $($rest:tt)*
    ) => {
        $crate::http::routes_group::routes!(@actions $front [$($done)*
            $(#[doc = $doc])*
            $method($path, $id, "post") -> $answer = $operation, $kind, $param,
                "Optional: a retry with the same key returns the first outcome." => $serve(|$bound| $command);
        ] $($rest)*);
    };
    (
        @actions $front:tt [$($done:tt)*]
        $(#[doc = $doc:tt])*
        $method:ident($path:literal, $id:literal, method = $http:literal)
            -> $answer:ident = $operation:ident, $kind:ident, $param:ident => $serve:ident(|$bound:ident| $command:expr);
        $($rest:tt)*
    ) => {
        $crate::http::routes_group::routes!(@actions $front [$($done)*
            $(#[doc = $doc])*
            $method($path, $id, $http) -> $answer = $operation, $kind, $param,
                "Required: a retry with the same key returns the first outcome." => $serve(|$bound| $command);
        ] $($rest)*);
    };
    (
        @actions $front:tt [$($done:tt)*]
        $(#[doc = $doc:tt])*
        $method:ident($path:literal, $id:literal)
            -> $answer:ident = $operation:ident, $kind:ident, $param:ident => $serve:ident(|$bound:ident| $command:expr);
        $($rest:tt)*
    ) => {
        $crate::http::routes_group::routes!(@actions $front [$($done)*]
            $(#[doc = $doc])*
            $method($path, $id, method = "post") -> $answer = $operation, $kind, $param => $serve(|$bound| $command);
            $($rest)*);
    };
    (
        #[OpenApi($($openapi:tt)*)]
        $api:ident { $($route:tt)* }
        $(writes: { $($writes:tt)* })?
        $(cursor_lists: { $($lists:tt)* })?
        $(v2_pages: { $($pages:tt)* })?
        $(gets: { $($gets:tt)* })?
        $(actions: { $($actions:tt)* })?
    ) => {
        $crate::http::routes_group::routes!(@actions [
            #[OpenApi($($openapi)*)]
            $api { $($route)* }
            writes: { $($($writes)*)? }
            cursor_lists: { $($($lists)*)? }
            v2_pages: { $($($pages)*)? }
            gets: { $($($gets)*)? }
        ] [] $($($actions)*)?);
    };
    (
        @impl [
        #[OpenApi($($openapi:tt)*)]
        $api:ident { $($route:tt)* }
        writes: {
            $(
                $(#[doc = $write_doc:tt])*
                $write_method:ident($write_path:literal, $write_id:literal, $write_http:literal)
                    ($($write_before:ident,)* $write_key:literal $(, $write_after:ident)*)
                    -> $write_answer:ident $(:: $write_variant:ident)? = $write_operation:expr,
                    |$write_call:ident, $write_claim:ident, $write_body:ident: $write_input:ty| $write_serve:block
            )*
        }
        $(cursor_lists: {
            $(
                $(#[doc = $doc:tt])*
                $method:ident($path:literal, $id:literal $(, tag = $tag:literal)?)
                    -> $answer:ident = $operation:expr, $serve:path {
                        $($(#[$($param_meta:tt)*])* $param:ident: $param_in:ident<$param_ty:ty>),* $(,)?
                    }
                    $(then { $($(#[$($after_meta:tt)*])* $after:ident: $after_in:ident<$after_ty:ty>),* $(,)? })?;
            )*
        })?
        $(v2_pages: {
            $(
                $(#[doc = $v2_doc:tt])*
                $v2_method:ident($v2_path:literal, $v2_id:literal, tag = $v2_tag:literal)
                    -> $v2_answer:ty = $v2_operation:ident, $v2_serve:ident {
                        $($(#[$($v2_param_meta:tt)*])* $v2_param:ident: $v2_param_in:ident<$v2_param_ty:ty>),* $(,)?
                    };
            )*
        })?
        gets: {
            $(
                $(#[doc = $get_doc:tt])*
                $get_method:ident($get_path:literal, $get_id:literal)
                    -> $get_answer:ident = $get_operation:ident, $get_kind:ident, $get_param:ident => $get_load:ident;
            )*
        }
        ]
        actions: {
            $(
                $(#[doc = $action_doc:tt])*
                $action_method:ident($action_path:literal, $action_id:literal, $action_http:literal)
                    -> $action_answer:ident = $action_operation:ident, $action_kind:ident, $action_param:ident,
                    $action_key:tt => $action_serve:ident(|$action_bound:ident| $action_command:expr);
            )*
        }
    ) => {
        #[::poem_openapi::OpenApi($($openapi)*)]
        impl $api {
            $(
                $(#[doc = $write_doc])*
                #[oai(path = $write_path, method = $write_http, operation_id = $write_id)]
                #[allow(clippy::too_many_arguments, reason = "the route's parameters")]
                async fn $write_method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: &$crate::http::RequestId,
                    version: $crate::http::ServiceVersion,
                    $($write_before: ::poem_openapi::param::Path<$crate::http::schema::IdText>,)*
                    #[doc = $write_key]
                    #[oai(name = "Idempotency-Key")]
                    key: $crate::http::Key,
                    $($write_after: ::poem_openapi::param::Path<$crate::http::schema::IdText>,)*
                    $write_body: $crate::http::body::JsonBody<$write_input>,
                ) -> Result<$write_answer, $crate::http::error::ApiError> {
                    let $write_call = $crate::http::resource::Call::new($write_operation, &state, &auth, &request_id)?;
                    let path: &[&str] = &[$($write_before.0.as_str(),)* $($write_after.0.as_str(),)*];
                    let $write_claim = $crate::http::resource::Write::json(key.0, &version, path, &$write_body);
                    let answer = $write_call.serve($write_claim.clone(), async { Ok($write_serve) }).await?;
                    Ok($crate::http::routes_group::routes!(@answer answer, $write_answer $(:: $write_variant)?))
                }
            )*

            $($route)*

            $($(
                $(#[doc = $doc])*
                #[oai(path = $path, method = "get", operation_id = $id $(, tag = $tag)?)]
                #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
                async fn $method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: &$crate::http::RequestId,
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

            $($(
                $(#[doc = $v2_doc])*
                #[oai(path = $v2_path, method = "get", operation_id = $v2_id, tag = $v2_tag)]
                #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
                async fn $v2_method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: &$crate::http::RequestId,
                    /// Page number, from 1 (default 1).
                    page: ::poem_openapi::param::Query<Option<$crate::http::schema::PageNumber>>,
                    /// 1 to 100, default 20.
                    limit: ::poem_openapi::param::Query<Option<$crate::http::schema::Limit>>,
                    $($(#[$($v2_param_meta)*])* $v2_param: $v2_param_in<$v2_param_ty>,)*
                ) -> Result<$v2_answer, $crate::http::error::ApiError> {
                    let call = $crate::http::resource::Call::new($v2_operation, &state, &auth, &request_id)?;
                    let (page, limit) = $crate::http::shared_pages::v2_page_params(page, limit)?;
                    $v2_serve(&call, page, limit, $($v2_param.0),*).await
                }
            )*)?

            $(
                $(#[doc = $get_doc])*
                #[oai(path = $get_path, method = "get", operation_id = $get_id)]
                async fn $get_method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: &$crate::http::RequestId,
                    $get_param: ::poem_openapi::param::Path<$crate::http::schema::IdText>,
                ) -> Result<$get_answer, $crate::http::error::ApiError> {
                    let call = $crate::http::resource::Call::new($get_operation, &state, &auth, &request_id)?;
                    let body = call.get(&$get_kind, &$get_param.0, async |id| $get_load(&call, id).await).await?;
                    Ok($get_answer::Ok($crate::http::body::RawJson::new(body)))
                }
            )*

            $(
                $(#[doc = $action_doc])*
                #[oai(path = $action_path, method = $action_http, operation_id = $action_id)]
                async fn $action_method(
                    &self,
                    auth: $crate::http::auth::Auth,
                    state: ::poem::web::Data<&::std::sync::Arc<$crate::state::AppState>>,
                    request_id: &$crate::http::RequestId,
                    version: $crate::http::ServiceVersion,
                    $action_param: ::poem_openapi::param::Path<$crate::http::schema::IdText>,
                    #[doc = $action_key]
                    #[oai(name = "Idempotency-Key")]
                    key: $crate::http::Key,
                ) -> Result<$action_answer, $crate::http::error::ApiError> {
                    let call = $crate::http::resource::Call::new($action_operation, &state, &auth, &request_id)?;
                    let $action_bound = call.id(&$action_kind, &$action_param.0)?;
                    let path = [$action_param.0.as_str()];
                    let write = $crate::http::resource::Write::bare(key.0, &version, &path);
                    let body = $action_serve(&call, write, $action_command).await?;
                    Ok($action_answer::Ok($crate::http::body::RawJson::new(body)))
                }
            )*
        }
    };
}

pub(crate) use {api_group, routes};
