//! The identity the router hands to tools cannot be forged, altered, replayed
//! for another tool or call, used after it expires, or made with a weak secret.
use cairn_auth::identity::{Call, MIN_SECRET_BYTES, Refused, TTL_SECONDS, hmac_sha256};
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
const SECRET: &str = "0123456789abcdef0123456789abcdef";
const OTHER: &str = "fedcba9876543210fedcba9876543210";
const CALL: Call = Call { tool: "edit_note_tab", method: "POST", path: "/tools/edit_note_tab", body: br#"{"note_id":"n"}"# };

fn sign(p: &Principal, secret: &str) -> String {
    cairn_auth::identity::sign(p, secret, &CALL, NOW, "nonce-1").unwrap()
}

fn verify(header: &str, secret: &str) -> Option<Principal> {
    cairn_auth::identity::verify(header, secret, &CALL, NOW).ok().map(|v| v.principal)
}

#[test]
fn a_header_replayed_for_another_tool_or_call_is_refused() {
    let header = sign(&ada(), SECRET);
    for other in [
        Call { body: br#"{"note_id":"m"}"#, ..CALL },
        Call { path: "/tools/add_note_source", ..CALL },
        Call { tool: "add_note_source", ..CALL },
        Call { method: "GET", ..CALL },
    ] {
        assert_eq!(cairn_auth::identity::verify(&header, SECRET, &other, NOW), Err(Refused::OtherCall), "{other:?}");
    }
}

#[test]
fn a_header_carries_its_nonce_and_expiry_so_a_tool_can_refuse_it_twice() {
    let header = sign(&ada(), SECRET);
    let v = cairn_auth::identity::verify(&header, SECRET, &CALL, NOW).unwrap();
    assert_eq!((v.nonce.as_str(), v.expires), ("nonce-1", NOW + TTL_SECONDS));
    let other = cairn_auth::identity::sign(&ada(), SECRET, &CALL, NOW, "nonce-2").unwrap();
    assert_ne!(other, header, "another nonce, another header");
}

#[test]
fn a_header_is_good_for_its_ttl_and_refused_after() {
    let header = sign(&ada(), SECRET);
    assert_eq!(cairn_auth::identity::verify(&header, SECRET, &CALL, NOW + TTL_SECONDS - 1).map(|v| v.principal), Ok(ada()));
    assert_eq!(cairn_auth::identity::verify(&header, SECRET, &CALL, NOW + TTL_SECONDS), Err(Refused::Expired));
}

#[test]
fn a_signed_identity_verifies_with_the_same_secret_only() {
    let header = sign(&ada(), SECRET);
    assert_eq!(verify(&header, SECRET), Some(ada()));
    assert_eq!(verify(&header, OTHER), None);
}

#[test]
fn a_secret_shorter_than_the_minimum_neither_signs_nor_verifies() {
    let short = "s".repeat(MIN_SECRET_BYTES - 1);
    assert_eq!(cairn_auth::identity::sign(&ada(), &short, &CALL, NOW, "n"), Err(Refused::WeakSecret));
    let header = sign(&ada(), SECRET);
    assert_eq!(cairn_auth::identity::verify(&header, "", &CALL, NOW), Err(Refused::WeakSecret), "an empty secret never verifies");
    assert_eq!(cairn_auth::identity::verify(&header, &short, &CALL, NOW), Err(Refused::WeakSecret));
}

#[test]
fn an_altered_identity_is_refused() {
    let header = sign(&ada(), SECRET);
    let (body, mac) = header.split_once('.').unwrap();
    let mut forged = ada();
    forged.tenant = "globex".into();
    let forged_body = sign(&forged, OTHER).split_once('.').unwrap().0.to_string();
    assert_eq!(verify(&format!("{forged_body}.{mac}"), SECRET), None);
    assert_eq!(verify(&format!("{body}.{}", &mac[1..]), SECRET), None);
    assert_eq!(verify(body, SECRET), None);
}

#[test]
fn hmac_matches_rfc_4231_test_case_2() {
    let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
