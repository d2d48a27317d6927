//! Fuzzing source URL normalization (proptest, shrinking): whatever comes
//! in, no panic; what comes out is https, lower-case in its host, without
//! `www.`, fragment, user info or `utm_*` parameters, and normalizing it
//! again changes nothing (so a source is found again however it is written).
//! `CAIRN_FUZZ_CASES` cases (default 5,000).
use cairn_notes::url::normalize_url;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(5_000)
}

/// URL-shaped strings: a scheme or none, user info, hosts with case and
/// `www.`, ports, paths, queries with `utm_*`, fragments, and noise.
fn url_like() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![
        Just("".to_string()),
        Just("http://".to_string()),
        Just("https://".to_string()),
        Just("HTTPS://".to_string()),
        Just("ftp://".to_string()),
        Just("javascript:".to_string()),
        "[a-z]{1,5}:"
    ];
    let user = prop_oneof![Just("".to_string()), Just("u:p@".to_string()), Just("@".to_string())];
    let host = prop_oneof![Just("www.Example.COM".to_string()), Just("example.com".to_string()), "[A-Za-z0-9.-]{0,20}", Just("[::1]".to_string())];
    let port =
        prop_oneof![Just("".to_string()), Just(":443".to_string()), Just(":80".to_string()), Just(":8080".to_string()), Just(":".to_string()), ":[0-9]{1,7}"];
    let path = "(/[A-Za-z0-9%._~-]{0,8}){0,4}/?".prop_map(String::from);
    let query = prop_oneof![Just("".to_string()), "\\?(utm_[a-z]{1,6}=[a-z0-9]{0,4}&?|[a-z]{1,4}=[a-z0-9]{0,4}&?){0,4}"];
    let frag = prop_oneof![Just("".to_string()), Just("#top".to_string()), Just("#".to_string())];
    prop_oneof![
        (scheme, user, host, port, path, query, frag).prop_map(|(s, u, h, p, pa, q, f)| format!("{s}{u}{h}{p}{pa}{q}{f}")),
        "\\PC{0,60}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn normalization_never_panics_and_its_output_is_a_fixed_point(raw in url_like()) {
        if let Ok(url) = normalize_url(&raw) {
            prop_assert!(url.starts_with("https://"), "{raw:?} -> {url:?}");
            let host = url["https://".len()..].split(['/', '?', ':']).next().unwrap_or("");
            prop_assert!(!host.starts_with("www.") && host == host.to_ascii_lowercase(), "{raw:?} -> {url:?}");
            let names: Vec<&str> = url.split_once('?').map_or(vec![], |(_, q)| q.split('&').map(|p| p.split('=').next().unwrap_or("")).collect());
            prop_assert!(!url.contains('#') && !host.contains('@'), "{raw:?} -> {url:?}");
            prop_assert!(!names.iter().any(|n| n.to_ascii_lowercase().starts_with("utm_")), "{raw:?} -> {url:?}");
            prop_assert_eq!(normalize_url(&url), Ok(url.clone()), "normalizing {:?} twice changed it", raw);
        }
    }
}
