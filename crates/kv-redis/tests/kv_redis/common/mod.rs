//! The tests' server: one `redis-server` shared by all tests of a binary
//! (see [`cairn_kv_redis::server::Server`]), killed when the process exits.
#![allow(dead_code)]

pub use cairn_kv_redis::server::Server;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

static SHARED: OnceLock<Mutex<Server>> = OnceLock::new();

unsafe extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

extern "C" fn stop_shared() {
    if let Some(Ok(mut s)) = SHARED.get().map(|m| m.lock()) {
        s.kill();
    }
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
