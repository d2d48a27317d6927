//! The in-memory store keeps the CAS promise.
use cairn_kv::{Store, memory::MemoryStore};
use std::sync::Arc;

fn fresh() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

cairn_kv::conformance_tests!(fresh);
