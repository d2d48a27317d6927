//! Where a Cairn key lives on the server: the Redis key names built from the
//! namespace, the hash tag, the bucket and the Cairn key (see the crate docs
//! for the table).

use cairn_kv::{Error, Result};

/// Longest namespace accepted, in bytes.
pub const MAX_NAMESPACE_BYTES: usize = 64;

/// The tag text of a Cairn key: `t/<tenant>` for a tenant key
/// (`t/<tenant>` or `t/<tenant>/<rest>`), else the key's first path segment
/// (`sys`, `auth`, `ratelimit`, `kv-probe`, …; empty for a key that starts
/// with `/`).
///
/// It is always a prefix of the key, which is what lets
/// [`list_keys`](cairn_kv::Store::list_keys) skip tags whose keys all sort
/// before its cursor.
pub fn tag_of(key: &str) -> &str {
    if let Some(rest) = key.strip_prefix("t/") {
        let tenant = rest.split('/').next().unwrap_or("");
        if !tenant.is_empty() {
            return &key[..2 + tenant.len()];
        }
    }
    key.split('/').next().unwrap_or("")
}

/// The text between the braces of the Redis keys of `key`: its
/// [`tag_of`] with `%`, `{` and `}` percent-escaped, and `%` alone for the
/// empty tag, so that the hash tag is never empty, never ends early, and two
/// different tags never share Redis names. For every key Cairn writes this is
/// the tag itself: `t/acme/note/1` → `t/acme`, `sys/tenants` → `sys`.
pub fn hash_tag(key: &str) -> String {
    escape_tag(tag_of(key))
}

fn escape_tag(tag: &str) -> String {
    if tag.is_empty() {
        return "%".into();
    }
    let mut out = String::with_capacity(tag.len());
    for c in tag.chars() {
        match c {
            '%' => out.push_str("%25"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out
}

/// Check a namespace: 1 to 64 bytes of `[A-Za-z0-9._:/-]` (no braces, so the
/// first `{` of every Redis key is the hash tag's).
pub fn check_namespace(ns: &str) -> Result<()> {
    let ok_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'/' | b'-');
    if ns.is_empty() || ns.len() > MAX_NAMESPACE_BYTES || !ns.bytes().all(ok_char) {
        return Err(Error::Backend(format!("invalid Redis namespace {ns:?}: use 1 to {MAX_NAMESPACE_BYTES} characters of A-Z a-z 0-9 . _ : / -")));
    }
    Ok(())
}

/// The Redis key names of one namespace.
#[derive(Debug, Clone)]
pub struct Layout {
    ns: String,
}

/// A bucket name inside a Redis key: length-prefixed, so any bucket name
/// (colons included) is unambiguous.
fn bucket_part(bucket: &str) -> String {
    format!("{}:{bucket}", bucket.len())
}

impl Layout {
    /// The layout of namespace `ns` (checked with [`check_namespace`]).
    pub fn new(ns: &str) -> Result<Self> {
        check_namespace(ns)?;
        Ok(Self { ns: ns.to_owned() })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// `<ns>:{<hash tag>}:`, the start of every Redis key of one tag.
    fn tagged(&self, tag: &str) -> String {
        format!("{}:{{{}}}:", self.ns, escape_tag(tag))
    }

    /// The hash holding `key` of `bucket`: field `v` (the value, absent in a
    /// delete marker) and field `s` (the stamp of its last write).
    pub fn record(&self, bucket: &str, key: &str) -> String {
        format!("{}{key}", self.record_prefix(bucket, tag_of(key)))
    }

    /// What precedes the Cairn key in the record names of one bucket and tag.
    pub(crate) fn record_prefix(&self, bucket: &str, tag: &str) -> String {
        format!("{}r:{}:", self.tagged(tag), bucket_part(bucket))
    }

    /// The stamp sequence of `key`'s tag (one per tag, shared by its buckets).
    pub fn sequence(&self, key: &str) -> String {
        self.sequence_of_tag(tag_of(key))
    }

    pub(crate) fn sequence_of_tag(&self, tag: &str) -> String {
        format!("{}seq", self.tagged(tag))
    }

    /// The purge floor of `key`'s tag: the highest stamp of a swept marker.
    pub fn purge_floor(&self, key: &str) -> String {
        self.purge_floor_of_tag(tag_of(key))
    }

    pub(crate) fn purge_floor_of_tag(&self, tag: &str) -> String {
        format!("{}floor", self.tagged(tag))
    }

    /// The sorted set (all scores 0, so ordered by bytes) of the live keys of
    /// `bucket` under `key`'s tag.
    pub fn index(&self, bucket: &str, key: &str) -> String {
        self.index_of_tag(bucket, tag_of(key))
    }

    pub(crate) fn index_of_tag(&self, bucket: &str, tag: &str) -> String {
        format!("{}i:{}", self.tagged(tag), bucket_part(bucket))
    }

    /// The sorted set of the delete markers of `bucket` under `key`'s tag,
    /// scored by the server time of the delete in milliseconds.
    pub fn markers(&self, bucket: &str, key: &str) -> String {
        self.markers_of_tag(bucket, tag_of(key))
    }

    pub(crate) fn markers_of_tag(&self, bucket: &str, tag: &str) -> String {
        format!("{}m:{}", self.tagged(tag), bucket_part(bucket))
    }

    /// The set of bucket names that were ever written (the sweep walks it).
    pub fn buckets(&self) -> String {
        format!("{}:buckets", self.ns)
    }

    /// The sorted set of the tags that were ever written in `bucket` (score
    /// 0: ordered by bytes); `list_keys` and the sweep walk it.
    pub fn tags(&self, bucket: &str) -> String {
        format!("{}:tags:{}", self.ns, bucket_part(bucket))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_the_tenant_or_the_first_segment() {
        assert_eq!(tag_of("t/acme/note/1"), "t/acme");
        assert_eq!(tag_of("t/acme"), "t/acme");
        assert_eq!(tag_of("t//x"), "t");
        assert_eq!(tag_of("t/"), "t");
        assert_eq!(tag_of("sys/tenants"), "sys");
        assert_eq!(tag_of("kv-probe/abc/0/k"), "kv-probe");
        assert_eq!(tag_of("plain"), "plain");
        assert_eq!(tag_of(""), "");
        assert_eq!(tag_of("/x"), "");
    }

    #[test]
    fn a_tag_is_a_prefix_of_its_key() {
        for k in ["t/acme/note/1", "t/acme", "t//x", "sys/a", "", "/x", "a}b/c", "é/ü"] {
            assert!(k.starts_with(tag_of(k)), "{k}");
        }
    }

    #[test]
    fn escaped_tags_are_never_empty_and_never_close_early() {
        assert_eq!(hash_tag("t/acme/x"), "t/acme");
        assert_eq!(hash_tag("/x"), "%");
        assert_eq!(hash_tag("}x/y"), "%7Dx");
        assert_eq!(hash_tag("a{b}/y"), "a%7Bb%7D");
        assert_eq!(hash_tag("%/y"), "%25");
        assert_ne!(hash_tag("%/y"), hash_tag("/y"));
    }

    #[test]
    fn namespaces_without_braces_only() {
        assert!(check_namespace("cairn").is_ok());
        assert!(check_namespace("prod:eu-1/cairn").is_ok());
        assert!(check_namespace("").is_err());
        assert!(check_namespace("a{b}").is_err());
        assert!(check_namespace(&"x".repeat(65)).is_err());
    }

    #[test]
    fn record_names_carry_the_tag_and_the_bucket() {
        let l = Layout::new("ns").unwrap();
        assert_eq!(l.record("default", "t/acme/note/1"), "ns:{t/acme}:r:7:default:t/acme/note/1");
        assert_eq!(l.sequence("t/acme/note/1"), "ns:{t/acme}:seq");
        assert_eq!(l.purge_floor("sys/tenants"), "ns:{sys}:floor");
        assert_eq!(l.index("cache", "auth/x"), "ns:{auth}:i:5:cache");
        assert_eq!(l.markers("cache", "auth/x"), "ns:{auth}:m:5:cache");
        assert_eq!(l.tags("default"), "ns:tags:7:default");
    }
}
