//! The client's slot rule (CRC16 of the hash tag) is the server's: every
//! Redis key the store wrote on the cluster is in the slot the client
//! computes (`CLUSTER KEYSLOT`), and so are awkward names.

use cairn_kv::Store;
use cairn_kv_redis::slot::slot_of;

#[test]
fn slots_agree_with_the_server_for_every_key_the_store_writes() {
    let store = crate::common::cluster_store("slots", 1);
    let urls = crate::common::shared_cluster_urls();
    let mut admin = redis::Client::open(urls[0].as_str()).unwrap().get_connection().unwrap();
    let server_slot = |c: &mut redis::Connection, k: &str| -> u16 { redis::cmd("CLUSTER").arg("KEYSLOT").arg(k).query(c).unwrap() };
    for t in 0..40 {
        store.set("default", &format!("t/tenant-{t}/note/n{t}"), b"v").unwrap();
        store.increment("cache", &format!("ratelimit/t{t}/60"), 1).unwrap();
    }
    store.delete("default", "t/tenant-3/note/n3").unwrap();
    let ns = store.layout().namespace().to_string();
    let mut names: Vec<String> = vec![store.layout().buckets(), store.layout().tags("default")];
    for t in 0..40 {
        let key = format!("t/tenant-{t}/note/n{t}");
        names.extend([store.layout().record("default", &key), store.layout().sequence(&key), store.layout().index("default", &key)]);
    }
    names.extend(["", "{", "}", "{}", "a{}b{c}", "{{x}}", "\u{e9}t\u{e9}", "t/acme"].map(String::from));
    for name in &names {
        assert_eq!(slot_of(name.as_bytes()), server_slot(&mut admin, name), "{name:?}");
    }
    assert!(names.iter().filter(|n| n.starts_with(&ns)).count() > 100);
}
