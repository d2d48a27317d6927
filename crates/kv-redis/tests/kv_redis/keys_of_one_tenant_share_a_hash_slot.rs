//! Every Redis key behind a tenant's keys, the tag's sequence and purge
//! floor included, hashes to the slot of `{t/<tenant>}`; other keys to the
//! slot of their first path segment. Checked with the server's own
//! CLUSTER KEYSLOT (on a cluster-enabled node used only as a calculator:
//! Redis 7.0 answers it only in cluster mode), on the names the store really
//! wrote.

use crate::common::Server;
use cairn_kv::Store;
use cairn_kv_redis::{hash_tag, tag_of};

fn slot(c: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap()
}

#[test]
fn keys_of_one_tenant_share_a_hash_slot() {
    let calculator = Server::start_with(&["--cluster-enabled", "yes"]);
    let mut calc = calculator.admin();
    let server = Server::start();
    let store = server.store("slots");
    let layout = store.layout().clone();

    let tenant_keys = [
        "t/acme/note/n1",
        "t/acme/blob/0123abcd",
        "t/acme/idem/n1/ffee",
        "t/acme/audit/n1/00000000000000000001",
        "t/acme/idx/notes",
        "t/acme/claims/index",
        "t/acme",
    ];
    let acme = slot(&mut calc, "t/acme");
    for key in tenant_keys {
        assert_eq!(tag_of(key), "t/acme");
        assert_eq!(hash_tag(key), "t/acme");
        for bucket in ["default", "cache"] {
            for name in [layout.record(bucket, key), layout.sequence(key), layout.purge_floor(key), layout.index(bucket, key), layout.markers(bucket, key)] {
                assert_eq!(slot(&mut calc, &name), acme, "{name} is not in the slot of {{t/acme}}");
            }
        }
    }
    for (key, tag) in [
        ("sys/tenants", "sys"),
        ("sys/audit/refused/00000000000000000001-0000abcd", "sys"),
        ("auth/verified/abc", "auth"),
        ("ratelimit/t1/60", "ratelimit"),
        ("kv-probe/r4nd0m/3/k", "kv-probe"),
        ("t/bob/note/n1", "t/bob"),
    ] {
        assert_eq!(tag_of(key), tag);
        assert_eq!(slot(&mut calc, &layout.record("default", key)), slot(&mut calc, tag), "{key}");
        assert_eq!(slot(&mut calc, &layout.sequence(key)), slot(&mut calc, tag), "{key}");
    }
    // Awkward keys still get one slot per tag: the tag is escaped, never empty.
    for key in ["/leading-slash", "", "}x/y", "a{b}c/d"] {
        let tag = format!("{{{}}}", hash_tag(key));
        assert_eq!(slot(&mut calc, &layout.record("default", key)), slot(&mut calc, &tag), "{key:?}");
        assert_eq!(slot(&mut calc, &layout.sequence(key)), slot(&mut calc, &tag), "{key:?}");
    }

    // The names the store really writes: every key of the namespace is
    // either one of the two registries or carries a tag, and all of acme's
    // are in acme's slot.
    for key in tenant_keys {
        store.set("default", key, b"v").unwrap();
        store.increment("cache", &format!("{key}/n"), 1).unwrap();
    }
    store.delete("default", "t/acme/note/n1").unwrap();
    store.set("default", "sys/tenants", b"acme").unwrap();
    let mut admin = server.admin();
    let written: Vec<String> = redis::cmd("KEYS").arg("slots:*").query(&mut admin).unwrap();
    let mut acme_keys = 0;
    for name in &written {
        if name == &layout.buckets() || name.starts_with("slots:tags:") {
            continue;
        }
        assert!(name.starts_with("slots:{"), "{name} carries no hash tag");
        if name.starts_with("slots:{t/acme}:") {
            assert_eq!(slot(&mut calc, name), acme, "{name}");
            acme_keys += 1;
        }
    }
    // 7 + 7 records, the sequence, two indexes, one markers set.
    assert_eq!(acme_keys, 14 + 1 + 2 + 1, "keys written under t/acme: {written:?}");
}
