//! The tests' server: one `redis-server` shared by all tests of a binary
//! (see [`cairn_kv_redis::server::Server`]), killed when the process exits.
#![allow(dead_code)]

pub use cairn_kv_redis::server::{Cluster, Server};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

static SHARED: OnceLock<Mutex<Server>> = OnceLock::new();
static SHARED_CLUSTER: OnceLock<Mutex<Cluster>> = OnceLock::new();

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

extern "C" fn stop_shared() {
    if let Some(Ok(mut s)) = SHARED.get().map(|m| m.lock()) {
        s.kill();
    }
}

extern "C" fn stop_shared_cluster() {
    if let Some(Ok(mut c)) = SHARED_CLUSTER.get().map(|m| m.lock()) {
        for n in &mut c.nodes {
            n.kill();
        }
    }
}

/// The node URLs of one 3-primary, 3-replica cluster shared by the tests
/// of this binary that leave its shape alone; killed when the process exits.
pub fn shared_cluster_urls() -> Vec<String> {
    let cluster = SHARED_CLUSTER.get_or_init(|| {
        let c = Cluster::start(3, 1);
        // SAFETY: registering a plain function with the C library's atexit.
        unsafe { atexit(stop_shared_cluster) };
        Mutex::new(c)
    });
    cluster.lock().unwrap_or_else(|p| p.into_inner()).urls()
}

/// A store on the shared cluster with its own namespace; `wait` replicas confirm each write.
pub fn cluster_store(label: &str, wait: u32) -> cairn_kv_redis::RedisStore {
    let urls = shared_cluster_urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let options = cairn_kv_redis::Options { wait_for_replicas: wait, ..cairn_kv_redis::Options::with_namespace(fresh_namespace(label)) };
    cairn_kv_redis::RedisStore::open_cluster(&seeds, options).unwrap()
}

/// The URL of one server shared by all tests of this binary; it is killed
/// when the test process exits.
pub fn shared_url() -> String {
    let server = SHARED.get_or_init(|| {
        let s = Server::start();
        // SAFETY: registering a plain function with the C library's atexit.
        unsafe { atexit(stop_shared) };
        Mutex::new(s)
    });
    server.lock().unwrap_or_else(|p| p.into_inner()).url()
}

/// A namespace no other store of this process uses.
pub fn fresh_namespace(label: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("test-{label}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}
