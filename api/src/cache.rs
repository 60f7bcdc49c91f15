//! The cache of hot single-resource reads, kept in sync by the invalidations projectors publish with
//! their progress.
//!
//! A read that raced with an invalidation must not be cached: every invalidation bumps an epoch, and a
//! value read from the database is only stored if the epoch did not move while it was being read.

use bytes::Bytes;
use moka::sync::Cache;
use projections::CacheKey;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use uuid::Uuid;

/// The resources projectors name in their invalidations, as the projections crate defines them once.
pub use projections::CacheResource as Resource;

/// Whether the gateway caches single reads of `resource`. The match is exhaustive, so a resource a
/// projector starts invalidating is a decision here, not a silent omission.
pub fn is_cached(resource: Resource) -> bool {
    match resource {
        Resource::Organization
        | Resource::Customer
        | Resource::Supplier
        | Resource::Product
        | Resource::PaymentMethod
        | Resource::Warehouse
        | Resource::Category
        | Resource::PointOfSale => true,
        // Read straight from their tables on every request.
        Resource::MetafieldDefinition | Resource::PriceList | Resource::Tag | Resource::WebhookEndpoint => false,
    }
}

/// The cached resources whose reads show fields of `resource`: a product shows its category's and its
/// default supplier's names. An invalidation of `resource` also drops its organization's cached reads
/// of these. Exhaustive like [`is_cached`]: a read that starts joining another resource is a decision
/// here.
pub fn shown_in(resource: Resource) -> &'static [Resource] {
    match resource {
        Resource::Category | Resource::Supplier => &[Resource::Product],
        Resource::Organization
        | Resource::Customer
        | Resource::Product
        | Resource::PaymentMethod
        | Resource::Warehouse
        | Resource::PointOfSale
        | Resource::MetafieldDefinition
        | Resource::PriceList
        | Resource::Tag
        | Resource::WebhookEndpoint => &[],
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadKey {
    pub resource: Resource,
    pub org_id: Uuid,
    pub id: Uuid,
}

pub struct ReadCache {
    entries: Cache<ReadKey, Bytes>,
    epoch: AtomicU64,
}

impl Default for ReadCache {
    fn default() -> Self {
        Self {
            entries: Cache::builder()
                .max_capacity(200_000)
                .time_to_live(Duration::from_secs(600))
                .support_invalidation_closures()
                .build(),
            epoch: AtomicU64::new(0),
        }
    }
}

impl ReadCache {
    pub fn get(&self, key: &ReadKey) -> Option<Bytes> {
        self.entries.get(key)
    }

    /// Call before reading from the database; pass the result to [`Self::insert_if_current`].
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    pub fn insert_if_current(&self, key: ReadKey, value: Bytes, epoch_before_read: u64) {
        // Invalidations of a resource that is not cached are not applied, so never store one.
        debug_assert!(is_cached(key.resource), "{} reads are not cached", key.resource);
        if is_cached(key.resource) && self.epoch.load(Ordering::Acquire) == epoch_before_read {
            self.entries.insert(key, value);
        }
    }

    pub fn invalidate(&self, keys: &[CacheKey]) {
        if keys.is_empty() {
            return;
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for key in keys.iter().filter(|key| is_cached(key.resource)) {
            self.entries.invalidate(&ReadKey { resource: key.resource, org_id: key.org_id, id: key.id });
        }
        let showing: HashSet<(Resource, Uuid)> =
            keys.iter().flat_map(|key| shown_in(key.resource).iter().map(|&shown| (shown, key.org_id))).collect();
        for (resource, org_id) in showing {
            // Lazily: from now on a read stored before this call and matching it is not returned.
            self.entries
                .invalidate_entries_if(move |key, _| key.resource == resource && key.org_id == org_id)
                .expect("the cache is built with invalidation closures");
        }
    }

    /// Forgets everything (after missing invalidations, for instance while NATS was away).
    pub fn invalidate_all(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_raced_an_invalidation_is_not_cached() {
        let cache = ReadCache::default();
        let key = ReadKey { resource: Resource::Customer, org_id: Uuid::now_v7(), id: Uuid::now_v7() };
        let before = cache.epoch();
        cache.invalidate(&[CacheKey { resource: Resource::Customer, org_id: key.org_id, id: key.id }]);
        cache.insert_if_current(key, Bytes::from_static(b"stale"), before);
        assert_eq!(cache.get(&key), None);
        let now = cache.epoch();
        cache.insert_if_current(key, Bytes::from_static(b"fresh"), now);
        assert_eq!(cache.get(&key), Some(Bytes::from_static(b"fresh")));
        cache.invalidate(&[CacheKey { resource: Resource::Customer, org_id: key.org_id, id: key.id }]);
        assert_eq!(cache.get(&key), None);
    }

    #[test]
    fn a_renamed_category_or_supplier_drops_its_organizations_products() {
        for renamed in [Resource::Category, Resource::Supplier] {
            let cache = ReadCache::default();
            let (org, other_org) = (Uuid::now_v7(), Uuid::now_v7());
            let product = ReadKey { resource: Resource::Product, org_id: org, id: Uuid::now_v7() };
            let other_product = ReadKey { resource: Resource::Product, org_id: other_org, id: Uuid::now_v7() };
            let customer = ReadKey { resource: Resource::Customer, org_id: org, id: Uuid::now_v7() };
            for key in [product, other_product, customer] {
                cache.insert_if_current(key, Bytes::from_static(b"read"), cache.epoch());
            }
            cache.invalidate(&[CacheKey { resource: renamed, org_id: org, id: Uuid::now_v7() }]);
            assert_eq!(cache.get(&product), None, "{renamed}: the product shows its name");
            assert!(cache.get(&other_product).is_some(), "{renamed}: another organization's product stays");
            assert!(cache.get(&customer).is_some(), "{renamed}: a customer does not show it");
            // A read stored after the invalidation is served.
            cache.insert_if_current(product, Bytes::from_static(b"fresh"), cache.epoch());
            assert_eq!(cache.get(&product), Some(Bytes::from_static(b"fresh")));
        }
    }
}
