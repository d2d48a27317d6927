//! On a cluster, a batch whose keys are in different slots is refused by
//! the store before anything is sent (a cluster would refuse it whole with
//! `CROSSSLOT`), names the slots, writes nothing and is counted; a batch
//! within one tenant runs as one script.

use cairn_kv::{Error, Store};

#[test]
fn a_batch_across_slots_is_refused_before_sending_and_nothing_is_written() {
    let store = crate::common::cluster_store("cross", 1);
    let pairs: &[(&str, &[u8])] = &[("t/a/1", b"a1"), ("t/b/1", b"b1")];
    let e = store.set_many("default", pairs).unwrap_err();
    assert!(matches!(&e, Error::Backend(m) if m.contains("hash slots") && m.contains("nothing was written")), "{e}");
    let e = store.delete_many("default", &["t/a/1", "t/b/1"]).unwrap_err();
    assert!(matches!(e, Error::Backend(_)), "{e}");
    assert_eq!(store.cross_slot_refusals(), 2);
    assert_eq!(store.get_many("default", &["t/a/1", "t/b/1"]).unwrap(), vec![None, None]);
    assert!(store.list_keys("default", None, 10).unwrap().is_empty());

    let one_tenant: &[(&str, &[u8])] = &[("t/a/1", b"a1"), ("t/a/2", b"a2")];
    store.set_many("default", one_tenant).unwrap();
    assert_eq!(store.get_many("default", &["t/a/2", "t/b/1", "t/a/1"]).unwrap(), vec![Some(b"a2".to_vec()), None, Some(b"a1".to_vec())]);
    store.delete_many("default", &["t/a/1", "t/a/2"]).unwrap();
    assert_eq!(store.cross_slot_refusals(), 2);
}
