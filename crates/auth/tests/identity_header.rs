//! The identity the router hands to tools cannot be forged, altered, replayed
//! for another call, or used after it expires.
use cairn_auth::identity::{Call, Refused, TTL_SECONDS, hmac_sha256};
use cairn_auth::{Actor, Principal, Role};

fn ada() -> Principal {
    Principal {
        tenant: "acme".into(),
        subject: "ada".into(),
        name: "Ada".into(),
        actor: Actor::Human,
        role: Role::Admin,
        scopes: vec!["notes:read".into()],
        exp: 4_000_000_000,
    }
}

const NOW: u64 = 1_800_000_000;
const CALL: Call = Call { method: "POST", path: "/tools/edit_note_tab", body: br#"{"note_id":"n"}"# };

fn sign(p: &Principal, secret: &str) -> String {
    cairn_auth::identity::sign(p, secret, &CALL, NOW)
}

fn verify(header: &str, secret: &str) -> Option<Principal> {
    cairn_auth::identity::verify(header, secret, &CALL, NOW).ok()
}

#[test]
fn a_header_replayed_for_another_call_is_refused() {
    let header = sign(&ada(), "s3cret");
    for other in [
        Call { body: br#"{"note_id":"m"}"#, ..CALL },
        Call { path: "/tools/add_note_source", ..CALL },
        Call { method: "GET", ..CALL },
    ] {
        assert_eq!(cairn_auth::identity::verify(&header, "s3cret", &other, NOW), Err(Refused::OtherCall), "{other:?}");
    }
}

#[test]
fn a_header_is_good_for_its_ttl_and_refused_after() {
    let header = sign(&ada(), "s3cret");
    assert_eq!(cairn_auth::identity::verify(&header, "s3cret", &CALL, NOW + TTL_SECONDS - 1), Ok(ada()));
    assert_eq!(cairn_auth::identity::verify(&header, "s3cret", &CALL, NOW + TTL_SECONDS), Err(Refused::Expired));
}

#[test]
fn a_signed_identity_verifies_with_the_same_secret_only() {
    let header = sign(&ada(), "s3cret");
    assert_eq!(verify(&header, "s3cret"), Some(ada()));
    assert_eq!(verify(&header, "other"), None);
    assert_eq!(verify(&header, ""), None, "an empty secret must never verify");
}

#[test]
fn an_altered_identity_is_refused() {
    let header = sign(&ada(), "s3cret");
    let (body, mac) = header.split_once('.').unwrap();
    let mut forged = ada();
    forged.tenant = "globex".into();
    let forged_body = sign(&forged, "guess").split_once('.').unwrap().0.to_string();
    assert_eq!(verify(&format!("{forged_body}.{mac}"), "s3cret"), None);
    assert_eq!(verify(&format!("{body}.{}", &mac[1..]), "s3cret"), None);
    assert_eq!(verify(body, "s3cret"), None);
}

#[test]
fn hmac_matches_rfc_4231_test_case_2() {
    let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
