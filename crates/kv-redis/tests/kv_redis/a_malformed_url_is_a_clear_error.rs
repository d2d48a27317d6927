//! A malformed URL, TLS, or bad options are refused at open with a message
//! naming what is wrong, and never echo the password.
use cairn_kv::Error;
use cairn_kv_redis::{Options, RedisStore};
use std::time::Duration;

fn refused(url: &str, options: Options) -> String {
    match RedisStore::open(url, options) {
        Err(Error::Backend(msg)) => msg,
        Err(e) => panic!("{url}: refused with {e:?}, expected a backend error"),
        Ok(_) => panic!("{url} was accepted"),
    }
}

#[test]
fn a_malformed_url_is_a_clear_error() {
    let cases = [
        ("localhost:6379", "no scheme"),
        ("http://localhost:6379", "the scheme is `http`"),
        ("redis://", "host is missing"),
        ("redis://host:port", "invalid port number"),
        ("redis://host:0", "port 0"),
        ("redis://host:6379/zero", "the database `/zero` is not a number"),
        ("redis://host:6379/1/2", "is not a number"),
        ("redis://host:6379/0?protocol=resp3", "query parameters are not supported"),
        ("redis://host:6379/#insecure", "fragment"),
        ("redis://admin@host:6379", "a user name needs a password"),
        ("redis://0.0.0.0:6379", "wildcard address"),
        ("redis://:p%zzss@host:6379", "broken %-escape"),
    ];
    for (url, why) in cases {
        let msg = refused(url, Options::default());
        assert!(msg.contains("malformed Redis URL"), "{url}: {msg}");
        assert!(msg.contains(why), "{url}: the message does not say `{why}`: {msg}");
        assert!(msg.contains("redis://[user:password@]host:port[/db]"), "{url}: the message does not show the shape: {msg}");
    }
}

#[test]
fn tls_is_refused_with_a_reason() {
    let msg = refused("rediss://cache.internal:6380", Options::default());
    assert!(msg.contains("TLS") && msg.contains("not support"), "{msg}");
}

#[test]
fn the_password_is_never_in_a_message() {
    for url in ["redis://me:hunter2@host:notaport", "rediss://me:hunter2@host:6380", "redis://me:hunter2@host:6379/x"] {
        let msg = refused(url, Options::default());
        assert!(!msg.contains("hunter2"), "{url}: the password leaked: {msg}");
        assert!(msg.contains("me:***@"), "{url}: {msg}");
    }
}

#[test]
fn bad_options_are_refused() {
    let msg = refused("redis://127.0.0.1:1", Options::with_namespace("a{b}"));
    assert!(msg.contains("invalid Redis namespace"), "{msg}");
    let msg = refused("redis://127.0.0.1:1", Options::with_namespace(""));
    assert!(msg.contains("invalid Redis namespace"), "{msg}");
    let msg = refused("redis://127.0.0.1:1", Options { pool_size: 0, ..Options::default() });
    assert!(msg.contains("at least 1 connection"), "{msg}");
    let msg = refused("redis://127.0.0.1:1", Options { io_timeout: Duration::ZERO, ..Options::default() });
    assert!(msg.contains("timeouts"), "{msg}");
}
