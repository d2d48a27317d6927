//! `list_keys` (an index per tag plus a registry of tags, merged) lists
//! exactly what the in-memory store lists, for random keys built to hit the
//! edges of the tag rules (tags that are prefixes of other keys, keys that
//! sort between a tag and its `/`, empty and escaped tags), random deletes,
//! random cursors and limits; and the host's tenant discovery finds every
//! tenant.

use cairn_kv::Store;
use cairn_kv::memory::MemoryStore;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const STARTS: &[&str] = &[
    "t/acme/",
    "t/acme",
    "t/ac/",
    "t/acme0/",
    "t/acme!",
    "t/",
    "t",
    "t//",
    "t/b/",
    "sys/",
    "sys",
    "sy/",
    "sy",
    "sy!",
    "sys-x/",
    "/",
    "",
    "a}b/",
    "{x}/",
    "%/",
    "kv-probe/",
    "é/",
    "z",
];
const TAILS: &[&str] = &["", "a", "b", "/", "!", "0", "~", "/x", "ab", "é"];

fn random_key(rng: &mut Rng) -> String {
    let mut k = rng.pick(STARTS).to_string();
    for _ in 0..(rng.next() % 3) {
        k.push_str(rng.pick(TAILS));
    }
    k
}

/// The host's tenant discovery (`src/server.rs`): one key after `t/<tenant>0`, per tenant.
fn tenants(store: &dyn Store) -> Vec<String> {
    let mut out = Vec::new();
    let mut after = "t/".to_string();
    loop {
        let next = store.list_keys("default", Some(&after), 1).unwrap();
        let Some(key) = next.first() else { break };
        let Some(rest) = key.strip_prefix("t/") else { break };
        let Some((tenant, _)) = rest.split_once('/') else { break };
        out.push(tenant.to_string());
        after = format!("t/{tenant}0");
    }
    out
}

#[test]
fn list_keys_agrees_with_the_memory_store_on_random_keys() {
    let redis = {
        let options = cairn_kv_redis::Options::with_namespace(crate::common::fresh_namespace("list"));
        let server = crate::common::Server::start();
        let store = cairn_kv_redis::RedisStore::open(&server.url(), options).unwrap();
        (server, store)
    };
    let (_server, store) = (&redis.0, &redis.1);
    let model = MemoryStore::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut keys: Vec<String> = Vec::new();
    for round in 0..600 {
        let bucket = if rng.next().is_multiple_of(5) { "cache" } else { "default" };
        let key = if !keys.is_empty() && rng.next().is_multiple_of(3) { keys[(rng.next() % keys.len() as u64) as usize].clone() } else { random_key(&mut rng) };
        if rng.next().is_multiple_of(4) {
            store.delete(bucket, &key).unwrap();
            model.delete(bucket, &key).unwrap();
        } else {
            store.set(bucket, &key, b"v").unwrap();
            model.set(bucket, &key, b"v").unwrap();
        }
        keys.push(key);
        if round % 200 == 199 {
            store.sweep(0).unwrap();
        }
    }
    let mut cursors: Vec<Option<String>> = vec![None];
    for k in keys.iter().take(200) {
        cursors.push(Some(k.clone()));
        let cut = k.char_indices().map(|(i, _)| i).nth((rng.next() % 4) as usize).unwrap_or(k.len());
        cursors.push(Some(k[..cut].to_string()));
        cursors.push(Some(format!("{k}0")));
    }
    cursors.push(Some("\u{10ffff}".into()));
    let mut checked = 0;
    for bucket in ["default", "cache", "absent-bucket"] {
        for after in &cursors {
            for limit in [1, 2, 3, 7, 1000] {
                let got = store.list_keys(bucket, after.as_deref(), limit).unwrap();
                let want = model.list_keys(bucket, after.as_deref(), limit).unwrap();
                assert_eq!(got, want, "bucket {bucket}, after {after:?}, limit {limit}");
                checked += 1;
            }
        }
    }
    println!("{checked} listings agreed");
    assert_eq!(tenants(store), tenants(&model));
    assert!(!tenants(store).is_empty());
}
