//! The cluster store passes the whole conformance suite, writes confirmed
//! by one replica (the default on a cluster), every fresh store in its own
//! namespace on one shared cluster.

use cairn_kv::Store;
use std::sync::Arc;

fn fresh() -> Arc<dyn Store> {
    Arc::new(crate::common::cluster_store("cluster-conf", 1))
}

cairn_kv::conformance_tests!(fresh);
