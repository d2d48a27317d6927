//! Clients: sealed registrations, metadata documents, redirect URIs.
use crate::common::*;
use cairn_auth::Role;
use cairn_kv::Store;
use cairn_oauth::Route;
use serde_json::json;

#[test]
fn registration_stores_nothing_and_its_id_works_on_every_host_with_the_key() {
    let w = World::new();
    let id = w.register("Test App");
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty(), "registering wrote to the store");
    // Registering twice (as some clients do per connect) is harmless: each id works.
    let again = w.register("Test App");
    let other_host = World::new();
    let (r, _) = other_host.authorize(&id, &[("redirect_uri", CALLBACK)], None, None);
    consent_request(&r);
    let (r, _) = other_host.authorize(&again, &[("redirect_uri", CALLBACK)], None, None);
    consent_request(&r);
}

#[test]
fn a_tampered_or_foreign_client_id_gets_an_error_page_and_no_redirect() {
    let w = World::new();
    let id = w.register("Test App");
    let mut forged = id.clone();
    forged.replace_range(5..6, if &id[5..6] == "A" { "B" } else { "A" });
    let mut foreign = World::new();
    foreign.key = cairn_auth::mint::LocalKey::from_seed([9; 32]);
    for (world, client) in [(&w, forged.as_str()), (&foreign, id.as_str()), (&w, "no-such-client")] {
        let (r, _) = world.authorize(client, &[("redirect_uri", CALLBACK)], None, None);
        assert_eq!(r.status, 401, "{}", text(&r));
        assert!(r.content_type.starts_with("text/html") && header(&r, "location").is_none());
        assert!(text(&r).contains("invalid_client"), "{}", text(&r));
    }
}

#[test]
fn redirect_uris_that_cannot_be_used_are_refused_naming_why() {
    let w = World::new();
    let cases = [
        (json!({"redirect_uris": ["javascript:alert(1)"]}), "javascript"),
        (json!({"redirect_uris": ["http://evil.example/cb"]}), "plain http"),
        (json!({"redirect_uris": ["https://app.example/cb#frag"]}), "fragment"),
        (json!({"redirect_uris": ["https://user@app.example/cb"]}), "user information"),
        (json!({"redirect_uris": []}), "1 to 10"),
        (json!({"client_name": "no redirects"}), "redirect_uris is missing"),
        (json!({"redirect_uris": (0..11).map(|i| format!("https://app.example/{i}")).collect::<Vec<_>>()}), "1 to 10"),
    ];
    for (metadata, why) in cases {
        let r = w.json(Route::Register, &metadata, None);
        assert_eq!((r.status, body(&r)["error"].as_str()), (400, Some("invalid_redirect_uri")), "{metadata}: {}", text(&r));
        assert!(body(&r)["error_description"].as_str().unwrap().contains(why), "{why}: {}", text(&r));
    }
    let r = w.json(Route::Register, &json!({"redirect_uris": ["https://app.example/cb"], "grant_types": ["client_credentials"]}), None);
    assert_eq!(body(&r)["error"], "invalid_client_metadata");
    // Apps' own schemes and https are fine; every client is public.
    let r = w.json(Route::Register, &json!({"redirect_uris": ["cursor://anysphere.cursor-retrieval/oauth/callback", "https://app.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}), None);
    assert_eq!((r.status, body(&r)["token_endpoint_auth_method"].as_str()), (201, Some("none")), "{}", text(&r));
}

#[test]
fn a_redirect_uri_the_client_did_not_register_gets_a_page_never_a_redirect() {
    let w = World::new();
    let id = w.register("Test App");
    for other in ["https://evil.example/callback", "http://127.0.0.1:9000/elsewhere", "http://localhost:9000/callback"] {
        let (r, _) = w.authorize(&id, &[("redirect_uri", other)], None, None);
        assert_eq!(r.status, 400, "{other}: {}", text(&r));
        assert!(header(&r, "location").is_none() && text(&r).contains("not one this client registered"), "{}", text(&r));
    }
    // A loopback redirect matches on any port (RFC 8252 §7.3).
    let (r, _) = w.authorize(&id, &[("redirect_uri", "http://127.0.0.1:54321/callback")], None, None);
    consent_request(&r);
}

fn document(id: &str) -> Vec<u8> {
    json!({"client_id": id, "client_name": "Doc App", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}).to_string().into_bytes()
}

#[test]
fn a_metadata_document_names_its_client_and_the_person_sees_how_it_was_known() {
    let w = World::new();
    let id = "https://app.example.com/oauth/client.json";
    assert_eq!(cairn_oauth::Server::document_to_fetch(&w.settings, &query(&[("client_id", id)])).as_deref(), Some(id));
    let (r, _) = w.authorize(id, &[("redirect_uri", CALLBACK)], None, Some(Ok(document(id))));
    let request = consent_request(&r);
    let v = w.get(Route::ConsentView, &query(&[("request", &request)]), Some(&person("Ada", Role::Member)));
    assert_eq!((body(&v)["client_name"].as_str(), body(&v)["registered_by"].as_str()), (Some("Doc App"), Some("metadata_document")), "{}", text(&v));
}

#[test]
fn a_metadata_document_that_is_too_big_slow_foreign_or_secret_is_refused_and_nothing_issued() {
    let w = World::new();
    let id = "https://app.example.com/oauth/client.json";
    let big = {
        let mut d = json!({"client_id": id, "redirect_uris": [CALLBACK]});
        d["padding"] = json!("x".repeat(6000));
        d.to_string().into_bytes()
    };
    let cases: Vec<(Result<Vec<u8>, String>, &str)> = vec![
        (Ok(big), "larger than 5120 bytes"),
        (Err("no answer within 5 seconds".into()), "no answer within 5 seconds"),
        (Ok(document("https://other.example/client.json")), "names another client_id"),
        (Ok(json!({"client_id": id, "redirect_uris": [CALLBACK], "client_secret": "s"}).to_string().into_bytes()), "client_secret"),
        (
            Ok(json!({"client_id": id, "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt"}).to_string().into_bytes()),
            "private_key_jwt",
        ),
        (Ok(b"not json".to_vec()), "not JSON"),
    ];
    for (fetched, why) in cases {
        let (r, _) = w.authorize(id, &[("redirect_uri", CALLBACK)], None, Some(fetched));
        assert_eq!(r.status, 401, "{why}: {}", text(&r));
        assert!(header(&r, "location").is_none() && text(&r).contains(why), "{why}: {}", text(&r));
    }
    // Not https: not a document URL, and not a client anyone registered.
    assert_eq!(cairn_oauth::Server::document_to_fetch(&w.settings, &query(&[("client_id", "http://app.example/client.json")])), None);
    let (r, _) = w.authorize("http://app.example/client.json", &[("redirect_uri", CALLBACK)], None, None);
    assert_eq!(r.status, 401);
    // A document URL with no path, or a fragment, is never fetched.
    for bad in ["https://app.example", "https://app.example/c.json#x"] {
        assert_eq!(cairn_oauth::Server::document_to_fetch(&w.settings, &query(&[("client_id", bad)])), None, "{bad}");
    }
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty(), "a refused authorization wrote to the store");
}

#[test]
fn a_document_url_on_a_private_name_or_address_is_refused_before_anything_is_fetched() {
    let w = World::new();
    for id in [
        "https://rest.spin.internal/client.json",
        "https://router.spin.internal./client.json",
        "https://localhost/client.json",
        "https://app.localhost/client.json",
        "https://printer.local/client.json",
        "https://127.0.0.1/client.json",
        "https://127.1/client.json",
        "https://2130706433/client.json",
        "https://10.1.2.3/client.json",
        "https://[::1]/client.json",
        "https://[::ffff:127.0.0.1]/client.json",
        "https://[64:ff9b::a00:1]/client.json",
        "https://[fec0::1]/client.json",
        "https://router/client.json",
        "https://app.example/client.json",
    ] {
        assert_eq!(cairn_oauth::Server::document_to_fetch(&w.settings, &query(&[("client_id", id)])), None, "{id} would be fetched");
        // Even handed a document, the server refuses the client id itself.
        let (r, _) = w.authorize(id, &[("redirect_uri", CALLBACK)], None, Some(Ok(document(id))));
        assert_eq!(r.status, 401, "{id}: {}", text(&r));
        let page = error_page(&r);
        assert!(page.contains("invalid_client") && page.contains("is not fetched") && page.contains("public host"), "{id}: {page}");
    }
    // A public name is fetched; the operator's named origin is, wherever it is.
    let public = "https://app.example.com/client.json";
    assert_eq!(cairn_oauth::Server::document_to_fetch(&w.settings, &query(&[("client_id", public)])).as_deref(), Some(public));
    let mut named = World::new();
    named.settings.metadata_origin = Some("https://localhost:8443".into());
    let local = "https://localhost:8443/client.json";
    assert_eq!(cairn_oauth::Server::document_to_fetch(&named.settings, &query(&[("client_id", local)])).as_deref(), Some(local));
    assert_eq!(
        cairn_oauth::Server::document_to_fetch(&named.settings, &query(&[("client_id", "https://localhost:9443/client.json")])),
        None,
        "another port is another origin"
    );
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty());
}

#[test]
fn an_error_before_the_person_saw_the_app_is_a_page_unless_the_redirect_is_vouched_for() {
    let w = World::new();
    // Anyone can register any redirect URI: an error there would be an open redirect.
    let r = w.json(Route::Register, &json!({"redirect_uris": ["https://evil.example.com/landing"]}), None);
    let id = body(&r)["client_id"].as_str().unwrap().to_string();
    let q = query(&[("response_type", "code"), ("client_id", &id), ("redirect_uri", "https://evil.example.com/landing"), ("state", "s-1")]);
    let page = error_page(&w.get(Route::Authorize, &q, None));
    assert!(page.contains("invalid_request") && page.contains("code_challenge"), "{page}");
    // A document naming a redirect on another host: the same.
    let doc_id = "https://app.example.com/oauth/client.json";
    let (r, _) = w.authorize(doc_id, &[("redirect_uri", CALLBACK), ("resource", "https://other.example.com/mcp")], None, Some(Ok(document(doc_id))));
    assert!(error_page(&r).contains("invalid_target"));
    // A document's redirect on the document's own host is vouched for by that host.
    let own = "https://app.example.com/oauth/callback";
    let doc = json!({"client_id": doc_id, "redirect_uris": [own]}).to_string().into_bytes();
    let (r, _) = w.authorize(doc_id, &[("redirect_uri", own), ("resource", "https://other.example.com/mcp")], None, Some(Ok(doc)));
    let to = header(&r, "location").unwrap_or_else(|| panic!("{}", text(&r)));
    assert!(to.starts_with(own) && params_of(to)["error"] == "invalid_target", "{to}");
    assert!(w.store.list_keys("default", None, 10).unwrap().is_empty());
}
