//! The sweep drops delete markers at least as old as asked (server clock),
//! and raises the purge floor of their tag only: a handle read before a
//! dropped marker fails, a handle read after it still creates, and other
//! tenants' absent handles are not touched.

use cairn_kv::{Store, Swap};

#[test]
fn sweep_drops_old_markers_and_raises_the_floor_of_their_tenant_only() {
    let server = crate::common::Server::start();
    let store = server.store("sweep");
    let mut admin = server.admin();
    let layout = store.layout().clone();
    let exists = |admin: &mut redis::Connection, name: String| -> bool { redis::cmd("EXISTS").arg(name).query::<i64>(admin).unwrap() == 1 };

    let before_create = store.read("default", "t/acme/k").unwrap();
    let other_tenant = store.read("default", "t/bob/k").unwrap();
    store.set("default", "t/acme/k", b"v").unwrap();
    let live = store.read("default", "t/acme/k").unwrap();
    store.delete("default", "t/acme/k").unwrap();
    let after_delete = store.read("default", "t/acme/k").unwrap();

    // Young markers stay.
    assert_eq!(store.sweep(3_600_000).unwrap(), 0);
    assert!(exists(&mut admin, layout.record("default", "t/acme/k")), "the marker is gone too early");
    assert_eq!(store.sweep(u64::MAX).unwrap(), 0);

    assert_eq!(store.sweep(0).unwrap(), 1);
    assert!(!exists(&mut admin, layout.record("default", "t/acme/k")), "the swept marker is still there");
    assert_eq!(store.sweep(0).unwrap(), 0, "a second sweep found the marker again");

    // Handles read before the marker fail, though the marker is gone...
    assert!(matches!(store.swap("default", "t/acme/k", live.observed, b"x").unwrap(), Swap::Failed(_)));
    assert!(matches!(store.swap("default", "t/acme/k", before_create.observed, b"x").unwrap(), Swap::Failed(_)));
    // ...another tenant's are not affected by this tenant's floor...
    assert_eq!(store.swap("default", "t/bob/k", other_tenant.observed, b"bob").unwrap(), Swap::Done);
    // ...and a handle read after the delete still creates the key.
    assert_eq!(store.swap("default", "t/acme/k", after_delete.observed, b"new").unwrap(), Swap::Done);
    assert_eq!(store.get("default", "t/acme/k").unwrap(), Some(b"new".to_vec()));
}
