//! On a standalone server a batch whose keys have different hash tags is
//! still one script (all or nothing); `get_many` across tags answers in the
//! order asked; repeated keys in a batch behave like the in-memory store.

use cairn_kv::Store;
use cairn_kv::memory::MemoryStore;

#[test]
fn batches_across_tenants_run_as_one_script_and_get_many_keeps_order() {
    let server = crate::common::Server::start();
    let store = server.store("batch");
    let model = MemoryStore::new();
    let pairs: &[(&str, &[u8])] = &[("t/a/1", b"a1"), ("sys/tenants", b"a,b"), ("t/b/1", b"b1"), ("t/a/2", b"a2"), ("t/a/1", b"a1 again")];
    store.set_many("default", pairs).unwrap();
    model.set_many("default", pairs).unwrap();
    let ask = ["t/b/1", "missing/x", "t/a/1", "sys/tenants", "t/a/2", "t/a/1"];
    assert_eq!(store.get_many("default", &ask).unwrap(), model.get_many("default", &ask).unwrap());

    let gone = ["t/a/1", "t/b/1", "t/a/1", "never/was"];
    store.delete_many("default", &gone).unwrap();
    model.delete_many("default", &gone).unwrap();
    assert_eq!(store.get_many("default", &ask).unwrap(), model.get_many("default", &ask).unwrap());
    assert_eq!(store.list_keys("default", None, 100).unwrap(), model.list_keys("default", None, 100).unwrap());
    // One marker per deleted key, however often it was named.
    assert_eq!(store.sweep(0).unwrap(), 2);
}
