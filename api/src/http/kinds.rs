//! Kinds of resource that more than one domain's routes name. A domain describes its own kinds in its
//! file; a kind another domain looks its resources up by lives here instead, below both, so the two
//! domains need not import each other (price lists find the variant a price is asked for; products
//! price a variant under a list).

use crate::cache::Resource;
use crate::http::resource::{Kind, ListAt};
use projections::ProjectionId;

/// Product variants, as the shared handler sequence sees them.
pub(crate) const PRODUCTS: Kind = Kind {
    label: "product",
    projection: ProjectionId::Products,
    cache: Some(Resource::Product),
    list: ListAt { url: "/api/v1/products", binding: "products" },
};
