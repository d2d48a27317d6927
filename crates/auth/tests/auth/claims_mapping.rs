//! Claims mapping: an issuer's own claim names become Cairn's identity, a
//! single-tenant install fixes the tenant, scopes come from `scope` or `scp`,
//! and a claim of the wrong shape is refused naming it.
use cairn_auth::jwt::{AuthError, ClaimMap, Verifier};
use cairn_auth::mint::EcKey;
use cairn_auth::{Actor, Role};
use serde_json::{Value, json};

const ISS: &str = "https://login.example";
const AUD: &str = "https://cairn.example/mcp";

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn token(key: &EcKey, extra: Value) -> String {
    let mut c = json!({"iss": ISS, "aud": AUD, "sub": "u-17", "iat": now(), "exp": now() + 300});
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    key.sign(&c)
}

/// The mapping of an issuer that names the organization `org_id` and
/// Cairn's fields with a `cairn_` prefix (as the test issuer does).
fn org_map() -> ClaimMap {
    ClaimMap { tenant: "org_id".into(), fixed_tenant: None, actor: "cairn_actor".into(), name: "name".into(), role: "cairn_role".into() }
}

fn verifier(key: &EcKey, map: ClaimMap) -> Verifier {
    Verifier::from_jwks(&json!({"keys": [key.jwk()]}).to_string(), ISS, AUD).unwrap().with_claims(map)
}

#[test]
fn an_issuers_own_claim_names_become_the_principal() {
    let key = EcKey::from_scalar([5; 32]);
    let t = token(&key, json!({"org_id": "acme", "cairn_actor": "human", "cairn_role": "admin", "name": "Ada", "scope": "notes:read"}));
    let p = verifier(&key, org_map()).verify(&t).unwrap();
    assert_eq!((p.tenant.as_str(), p.actor, p.role, p.name.as_str(), p.subject.as_str()), ("acme", Actor::Human, Role::Admin, "Ada", "u-17"));
    assert_eq!(p.scopes, ["notes:read"]);
}

#[test]
fn a_missing_tenant_claim_is_refused_naming_the_configured_claim() {
    let key = EcKey::from_scalar([5; 32]);
    let t = token(&key, json!({"tenant": "acme", "scope": "notes:read"}));
    match verifier(&key, org_map()).verify(&t) {
        Err(AuthError::BadClaims(m)) => assert!(m.contains("org_id"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fixed_tenant_needs_no_tenant_claim_and_overrides_one() {
    let key = EcKey::from_scalar([5; 32]);
    let map = ClaimMap { fixed_tenant: Some("solo".into()), ..ClaimMap::default() };
    for extra in [json!({}), json!({"tenant": "someone-else"})] {
        assert_eq!(verifier(&key, map.clone()).verify(&token(&key, extra)).unwrap().tenant, "solo");
    }
}

#[test]
fn scopes_come_from_scope_or_from_scp_as_a_list_or_a_string() {
    let key = EcKey::from_scalar([5; 32]);
    let v = verifier(&key, ClaimMap::default());
    for (extra, want) in [
        (json!({"tenant": "acme", "scope": "notes:read notes:write"}), vec!["notes:read", "notes:write"]),
        (json!({"tenant": "acme", "scp": ["notes:read", "audit:read"]}), vec!["notes:read", "audit:read"]),
        (json!({"tenant": "acme", "scp": "notes:write"}), vec!["notes:write"]),
        (json!({"tenant": "acme"}), vec![]),
    ] {
        assert_eq!(v.verify(&token(&key, extra)).unwrap().scopes, want);
    }
}

#[test]
fn claims_of_the_wrong_shape_are_refused_naming_them() {
    let key = EcKey::from_scalar([5; 32]);
    let v = verifier(&key, org_map());
    for (extra, names) in [
        (json!({"org_id": 7}), "org_id"),
        (json!({"org_id": "acme", "cairn_actor": "robot"}), "cairn_actor"),
        (json!({"org_id": "acme", "scope": ["notes:read"]}), "scope"),
        (json!({"org_id": "Not A Tenant!"}), "org_id"),
    ] {
        match v.verify(&token(&key, extra.clone())) {
            Err(AuthError::BadClaims(m)) => assert!(m.contains(names), "{extra}: {m}"),
            other => panic!("{extra}: {other:?}"),
        }
    }
}

#[test]
fn an_agent_never_gets_the_admin_role_whatever_the_role_claim_says() {
    let key = EcKey::from_scalar([5; 32]);
    let t = token(&key, json!({"org_id": "acme", "cairn_actor": "agent", "cairn_role": "admin"}));
    assert_eq!(verifier(&key, org_map()).verify(&t).unwrap().role, Role::Member);
}

#[test]
fn the_verifier_knows_the_kids_of_its_keys() {
    let key = EcKey::from_scalar([6; 32]);
    let v = verifier(&key, ClaimMap::default());
    let t = token(&key, json!({"tenant": "acme"}));
    let kid = cairn_auth::jwt::token_kid(&t).unwrap();
    assert!(v.knows_kid(&kid));
    assert!(!v.knows_kid("kid-b"));
}
