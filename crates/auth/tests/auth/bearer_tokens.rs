//! Bearer JWT verification: every way a token can be wrong is refused with
//! its own reason, and the principal comes from the claims.
use cairn_auth::jwt::{AuthError, Verifier};
use cairn_auth::mint::{EcKey, LocalKey, TokenSpec, hmac_signed, unsigned};
use cairn_auth::{Actor, Role};
use serde_json::json;

const ISS: &str = "https://issuer.test";
const AUD: &str = "https://cairn.test/mcp";

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn spec() -> TokenSpec {
    TokenSpec {
        issuer: ISS.into(),
        audience: AUD.into(),
        tenant: "acme".into(),
        subject: "bot-1".into(),
        name: None,
        actor: Actor::Agent,
        role: Role::Admin,
        scope: "notes:read notes:write".into(),
        now: now(),
        ttl: 300,
    }
}

fn verifier(key: &LocalKey) -> Verifier {
    Verifier::from_jwks(&key.jwks(), ISS, AUD).unwrap()
}

#[test]
fn a_valid_token_yields_its_principal_and_agents_never_get_a_role() {
    let key = LocalKey::from_seed([1; 32]);
    let p = verifier(&key).verify(&key.sign(&spec().claims())).unwrap();
    assert_eq!((p.tenant.as_str(), p.subject.as_str(), p.name.as_str()), ("acme", "bot-1", "bot-1"));
    assert_eq!(p.actor, Actor::Agent);
    assert_eq!(p.role, Role::Member, "an agent token claiming admin must not get it");
    assert!(p.has_scope("notes:write") && !p.has_scope("notes:delete"));
}

#[test]
fn each_bad_token_is_refused_for_its_own_reason() {
    let key = LocalKey::from_seed([1; 32]);
    let v = verifier(&key);
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut c = spec().claims();
        f(&mut c);
        key.sign(&c)
    };
    assert_eq!(v.verify(""), Err(AuthError::Missing));
    assert!(matches!(v.verify("a.b"), Err(AuthError::Malformed(_))));
    assert_eq!(
        v.verify(&with(&|c| {
            c["exp"] = json!(1000);
            c["nbf"] = json!(900);
            c["iat"] = json!(900);
        })),
        Err(AuthError::Expired)
    );
    assert_eq!(v.verify(&with(&|c| c["nbf"] = json!(now() + 3600))), Err(AuthError::NotYetValid));
    assert_eq!(v.verify(&with(&|c| c["iss"] = json!("https://evil.test"))), Err(AuthError::WrongIssuer));
    assert_eq!(v.verify(&with(&|c| c["aud"] = json!("https://other.test/mcp"))), Err(AuthError::WrongAudience));
    assert!(matches!(
        v.verify(&with(&|c| {
            c.as_object_mut().unwrap().remove("tenant");
        })),
        Err(AuthError::BadClaims(_))
    ));
    assert!(matches!(v.verify(&with(&|c| c["tenant"] = json!("Bad Tenant"))), Err(AuthError::BadClaims(_))));
    assert!(v.verify(&LocalKey::from_seed([2; 32]).sign(&spec().claims())).is_err(), "a stranger's key");
    assert!(v.verify(&unsigned(&spec().claims())).is_err(), "alg none");
    let x = key.jwk()["x"].as_str().unwrap().to_string();
    assert!(v.verify(&hmac_signed(x.as_bytes(), &key.kid, &spec().claims())).is_err(), "HS256 with the public key");
}

#[test]
fn an_es256_key_verifies_es256_tokens_only() {
    let ec = EcKey::from_scalar([5; 32]);
    let ed = LocalKey::from_seed([1; 32]);
    let jwks = json!({"keys": [ec.jwk(), ed.jwk()]}).to_string();
    let v = Verifier::from_jwks(&jwks, ISS, AUD).unwrap();
    assert!(v.verify(&ec.sign(&spec().claims())).is_ok());
    assert!(v.verify(&ed.sign(&spec().claims())).is_ok());
}

#[test]
fn symmetric_keys_are_refused_when_the_jwks_is_loaded() {
    let jwks = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}).to_string();
    let err = Verifier::from_jwks(&jwks, ISS, AUD).err().unwrap();
    assert!(err.contains("symmetric"), "{err}");
    assert!(Verifier::from_jwks(r#"{"keys":[]}"#, ISS, AUD).is_err());
    assert!(Verifier::from_jwks("not json", ISS, AUD).is_err());
}
