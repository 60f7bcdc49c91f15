//! The operations table of an API group, written once: [`operations!`] declares each operation as a
//! constant and lists them all as the group's [`Operations`](crate::http::operations::Operations).

/// `operations! { GroupApi, INPUT_RULES; NAME = read(…); OTHER = write(…).unprocessable(…); … }`: a
/// public [`Operation`](crate::http::operations::Operation) constant per entry (built by the
/// `Operation` constructor and methods named), and the group's table of them in that order, with its
/// input rules when named.
macro_rules! operations {
    (
        $api:ident $(, $rules:expr)?;
        $($name:ident = $ctor:ident($($arg:expr),* $(,)?) $(.$method:ident($($marg:expr),* $(,)?))*;)+
    ) => {
        $(
            pub const $name: crate::http::operations::Operation =
                crate::http::operations::Operation::$ctor($($arg),*)$(.$method($($marg),*))*;
        )+

        impl crate::http::operations::Operations for $api {
            const OPERATIONS: &'static [crate::http::operations::Operation] = &[$($name),+];
            $(const INPUT_RULES: &'static [crate::http::operations::InputRule] = $rules;)?
        }
    };
}

pub(crate) use operations;
