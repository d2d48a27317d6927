//! Choosing the stores: `--runtime-config-file` and `--store redis://…` put
//! the default and cache stores on Redis; a bad runtime config, an
//! unreachable server or a Redis Cluster missing slots or replicas is a
//! startup error naming what is wrong, and the host never starts listening.
use crate::app::*;
use crate::harness::*;
use crate::redis;
use std::net::TcpListener;

fn start_fails(args: Vec<&str>) -> String {
    require_app();
    let err = Cairn::try_start(Start { args, ..Start::default() }).err().expect("the host started");
    assert!(!err.contains("cairn is serving"), "the host half-started:\n{err}");
    err
}

fn runtime_config(text: &str) -> &'static str {
    let path = scratch("rc").join("runtime-config.toml");
    std::fs::write(&path, text).unwrap();
    Box::leak(path.display().to_string().into_boxed_str())
}

#[test]
fn the_store_shortcut_puts_notes_on_redis_and_they_outlive_the_host() {
    let redis = redis::start();
    let url: &'static str = Box::leak(redis.url_db(0).into_boxed_str());
    let cairn = start_with(vec![], vec!["--store", url]);
    let note = cairn.create_note(&person(), "on redis", true);
    let (status, log) = cairn.terminate();
    assert!(status.success(), "{log}");
    let again = start_with(vec![], vec!["--store", url]);
    let r = again.call(&again.token(&person()), "list_note_tabs", serde_json::json!({"note_id": note}));
    assert_eq!(r["isError"], false, "{r}");
}

#[test]
fn an_unknown_store_type_is_a_startup_error_naming_the_field() {
    let rc = runtime_config("[key_value_store.default]\ntype = \"dynamo\"\n");
    let err = start_fails(vec!["--runtime-config-file", rc]);
    assert!(err.contains("key_value_store.default.type") && err.contains("dynamo"), "{err}");
}

#[test]
fn a_malformed_redis_url_is_a_startup_error_naming_the_store() {
    let rc = runtime_config("[key_value_store.default]\ntype = \"redis\"\nurl = \"redis://no port here:x/\"\n");
    let err = start_fails(vec!["--runtime-config-file", rc]);
    assert!(err.contains("\"default\"") && err.to_lowercase().contains("url"), "{err}");
    let err = start_fails(vec!["--store", "redis://"]);
    assert!(err.to_lowercase().contains("url") || err.contains("host"), "{err}");
}

#[test]
fn an_unreachable_redis_at_start_is_a_startup_error_naming_the_address() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url: &'static str = Box::leak(format!("redis://127.0.0.1:{port}").into_boxed_str());
    let err = start_fails(vec!["--store", url]);
    assert!(err.contains(&format!("127.0.0.1:{port}")) && err.contains("unavailable"), "{err}");
}

#[test]
fn a_cluster_with_slots_no_primary_serves_is_a_startup_error_naming_them() {
    let cluster = cairn_kv_redis::server::Cluster::start(1, 0);
    cluster.drop_slots(0, 8000, 8191);
    let rc = runtime_config(&format!("[key_value_store.default]\ntype = \"redis\"\nurls = [{:?}]\nwait_for_replicas = 0\n", cluster.urls()[0]));
    let err = start_fails(vec!["--runtime-config-file", rc]);
    assert!(err.contains("store \"default\"") && err.contains("16192 of 16384 slots") && err.contains("8000-8191"), "{err}");
    // And a cluster whose primary has no replica, with the cluster default of waiting for one.
    let whole = cairn_kv_redis::server::Cluster::start(1, 0);
    let rc = runtime_config(&format!("[key_value_store.default]\ntype = \"redis\"\nurls = [{:?}]\n", whole.urls()[0]));
    let err = start_fails(vec!["--runtime-config-file", rc]);
    assert!(err.contains("has 0 connected replica(s)"), "{err}");
}
