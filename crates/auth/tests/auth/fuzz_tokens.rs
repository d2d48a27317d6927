//! Fuzzing token and key parsing (proptest, shrinking): random strings, JWT
//! shapes of random segments, and valid tokens with one character changed
//! are refused without a panic (or, for a change base64 ignores, verify as
//! the very same principal); random JWKS documents never panic the parser.
//! `CAIRN_FUZZ_CASES` cases per target (default 2,000).
use cairn_auth::jwt::Verifier;
use cairn_auth::mint::{LocalKey, TokenSpec};
use cairn_auth::{Actor, Role};
use proptest::prelude::*;

const ISS: &str = "https://issuer.test";
const AUD: &str = "https://cairn.test/mcp";

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000)
}

fn token(key: &LocalKey) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    key.sign(
        &TokenSpec {
            issuer: ISS.into(),
            audience: AUD.into(),
            tenant: "acme".into(),
            subject: "bot-1".into(),
            name: None,
            actor: Actor::Agent,
            role: Role::Member,
            scope: "notes:read".into(),
            now,
            ttl: 600,
        }
        .claims(),
    )
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z0-9_-]{0,80}", "\\PC{0,20}", Just("eyJhbGciOiJub25lIn0".to_string()), Just("e30".to_string())]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_strings_and_jwt_shapes_are_refused_without_a_panic(raw in "\\PC{0,200}", a in segment(), b in segment(), c in segment()) {
        let key = LocalKey::from_seed([3; 32]);
        let v = Verifier::from_jwks(&key.jwks(), ISS, AUD).unwrap();
        prop_assert!(v.verify(&raw).is_err());
        let shaped = format!("{a}.{b}.{c}");
        prop_assert!(v.verify(&shaped).is_err());
        let _ = cairn_auth::jwt::token_kid(&raw);
    }

    #[test]
    fn a_valid_token_with_one_character_changed_never_verifies_as_anyone_else(pos in any::<usize>(), ch in "[A-Za-z0-9_.=+/-]") {
        let key = LocalKey::from_seed([3; 32]);
        let v = Verifier::from_jwks(&key.jwks(), ISS, AUD).unwrap();
        let good = token(&key);
        let me = v.verify(&good).unwrap();
        let mut bytes: Vec<char> = good.chars().collect();
        let i = pos % bytes.len();
        bytes[i] = ch.chars().next().unwrap();
        let bad: String = bytes.into_iter().collect();
        if bad != good {
            match v.verify(&bad) {
                Err(_) => {}
                Ok(p) => prop_assert_eq!(p, me, "a changed token verified as someone else"),
            }
        }
    }

    #[test]
    fn random_jwks_documents_never_panic_the_parser(doc in "\\PC{0,120}", kty in "[A-Za-z]{0,4}", x in "[A-Za-z0-9_-]{0,60}", crv in prop_oneof![Just("Ed25519".to_string()), Just("P-256".to_string()), "[A-Za-z0-9-]{0,8}"]) {
        let _ = Verifier::from_jwks(&doc, ISS, AUD);
        let shaped = format!(r#"{{"keys":[{{"kty":"{kty}","crv":"{crv}","x":"{x}","y":"{x}","kid":"k","alg":"EdDSA","use":"sig"}}]}}"#);
        let _ = Verifier::from_jwks(&shaped, ISS, AUD);
    }
}
