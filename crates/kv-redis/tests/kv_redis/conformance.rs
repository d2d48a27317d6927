//! The Redis store passes the whole conformance suite; every fresh store
//! gets its own namespace on one server shared by the whole binary (so the
//! races run across the pool's connections, on one real server).

use cairn_kv::Store;
use cairn_kv_redis::{Options, RedisStore};
use std::sync::Arc;

fn fresh() -> Arc<dyn Store> {
    let options = Options::with_namespace(crate::common::fresh_namespace("conf"));
    Arc::new(RedisStore::open(&crate::common::shared_url(), options).unwrap())
}

cairn_kv::conformance_tests!(fresh);
