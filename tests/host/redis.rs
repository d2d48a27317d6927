//! A real `redis-server` for the tests (the backend crate's own launcher), in
//! durable mode: an append-only file with `appendfsync always`, so a server
//! killed and restarted comes back with every write it acknowledged.

pub use cairn_kv_redis::server::Server;
use std::path::PathBuf;

/// A durable server on a free port.
pub fn start() -> Server {
    Server::start_durable()
}

/// A runtime config putting `default` on db 0 and `cache` on db 1 of `redis`.
pub fn runtime_config(redis: &Server) -> PathBuf {
    let path = crate::harness::scratch("rc").join("runtime-config.toml");
    std::fs::write(
        &path,
        format!(
            "[key_value_store.default]\ntype = \"redis\"\nurl = \"{}\"\n\n[key_value_store.cache]\ntype = \"redis\"\nurl = \"{}\"\n",
            redis.url_db(0),
            redis.url_db(1)
        ),
    )
    .unwrap();
    path
}
