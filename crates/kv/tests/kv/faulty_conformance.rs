//! The fault-injecting wrapper, with every fault off, keeps the CAS promise:
//! so what a test sees through it is the store behind it.
use cairn_kv::{Store, faults::Faulty, memory::MemoryStore};
use std::sync::Arc;

fn fresh() -> Arc<dyn Store> {
    Arc::new(Faulty::new(Arc::new(MemoryStore::new())).0)
}

cairn_kv::conformance_tests!(fresh);
