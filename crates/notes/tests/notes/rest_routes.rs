//! The people's route table and its matcher: every route finds itself, a
//! path no route has is 404 and a method a path lacks is 405 with `Allow`,
//! every route needs the scope it always needed, tool-served routes name
//! tools of the tool table, `docs/rest.md` agrees; and requests served
//! through the table answer as the operations and tools do.
use crate::common::*;
use cairn_notes::Identity;
use cairn_notes::rest::{self, Incoming, NoRoute, Query, RestReply, Route};
use cairn_notes::scopes::{AUDIT, DELETE, READ, WRITE};
use serde_json::{Value, json};

/// Every route with the scope it needs, as the REST component's scope table
/// gave them before the route table existed.
const SCOPES: [(&str, &str, &str); 30] = [
    ("GET", "/api/v1/notes", READ),
    ("GET", "/api/v1/notes/{note}", READ),
    ("GET", "/api/v1/notes/{note}/changes", READ),
    ("GET", "/api/v1/notes/{note}/events", READ),
    ("GET", "/api/v1/notes/{note}/history", READ),
    ("GET", "/api/v1/notes/{note}/attachments", READ),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}", READ),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/range", READ),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/outline", READ),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/diff", READ),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/versions/{version}", READ),
    ("POST", "/api/v1/notes/{note}/tabs/{tab}/restore", WRITE),
    ("POST", "/api/v1/notes/{note}/tabs/{tab}/edit", WRITE),
    ("POST", "/api/v1/notes/{note}/tabs/{tab}/merge", READ),
    ("POST", "/api/v1/notes", WRITE),
    ("PATCH", "/api/v1/notes/{note}", WRITE),
    ("PUT", "/api/v1/notes/{note}/tabs/{tab}", WRITE),
    ("PATCH", "/api/v1/notes/{note}/tabs/{tab}", WRITE),
    ("POST", "/api/v1/notes/{note}/files", WRITE),
    ("POST", "/api/v1/notes/{note}/tabs", WRITE),
    ("POST", "/api/v1/notes/{note}/sources", WRITE),
    ("DELETE", "/api/v1/notes/{note}/tabs/{tab}", DELETE),
    ("GET", "/api/v1/claims", READ),
    ("GET", "/api/v1/search", READ),
    ("GET", "/api/v1/audit", AUDIT),
    ("POST", "/api/v1/notes/{note}/claims", WRITE),
    ("POST", "/api/v1/claims/{claim}/renew", WRITE),
    ("POST", "/api/v1/claims/{claim}/notes", WRITE),
    ("POST", "/api/v1/claims/{claim}/force-release", WRITE),
    ("DELETE", "/api/v1/claims/{claim}", WRITE),
];

/// The routes a tool serves, and the tool.
const BY_TOOL: [(&str, &str, &str); 10] = [
    ("GET", "/api/v1/notes", "list_notes"),
    ("GET", "/api/v1/search", "search_notes"),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}", "read_note_tab"),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/range", "read_sheet_range"),
    ("GET", "/api/v1/notes/{note}/tabs/{tab}/outline", "read_note_outline"),
    ("GET", "/api/v1/notes/{note}/attachments", "list_note_attachments"),
    ("POST", "/api/v1/notes/{note}/tabs/{tab}/edit", "edit_note_tab"),
    ("POST", "/api/v1/notes/{note}/tabs/{tab}/merge", "merge_note_tab"),
    ("POST", "/api/v1/notes/{note}/tabs", "create_note_tab"),
    ("POST", "/api/v1/notes/{note}/sources", "add_note_source"),
];

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The route's path with each `{name}` given the value `v-name`, and those values.
fn example(r: &Route) -> (String, Vec<(&'static str, String)>) {
    let mut params = Vec::new();
    let path = r
        .path
        .split('/')
        .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => {
                params.push((name, format!("v-{name}")));
                format!("v-{name}")
            }
            None => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/");
    (path, params)
}

/// Whether one path can match both patterns (a parameter matches any segment).
fn overlap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split('/').collect(), b.split('/').collect());
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.starts_with('{') || y.starts_with('{') || x == y)
}

#[test]
fn every_route_matches_its_own_path_and_yields_its_params() {
    for r in rest::ROUTES {
        let (path, expected) = example(r);
        for p in [path.clone(), format!("{path}/")] {
            let (found, params) = rest::route(r.method.as_str(), &p).unwrap_or_else(|e| panic!("{} {p}: {e:?}", r.method.as_str()));
            assert!(std::ptr::eq(found, r), "{} {p} found {} {}", r.method.as_str(), found.method.as_str(), found.path);
            let got: Vec<(&str, String)> = params.iter().map(|(n, v)| (n, v.to_string())).collect();
            assert_eq!(got, expected, "{} {}", r.method.as_str(), r.path);
            for (name, value) in &expected {
                assert_eq!(params.get(name), Some(value.as_str()));
            }
        }
    }
}

#[test]
fn a_path_no_route_has_is_404_and_a_method_the_path_lacks_is_405_with_allow() {
    for path in ["/api/v1", "/api/v1/nope", "/api/v1/notes/n/bogus", "/api/v1/notes/n/tabs/t/x/y", "/api/v1/claims/c/x/y", "/api/v2/notes", ""] {
        for m in METHODS {
            assert_eq!(rest::route(m, path).map(|(r, _)| r.path), Err(NoRoute::NotFound), "{m} {path}");
        }
    }
    let allowed = |m: &str, p: &str| match rest::route(m, p) {
        Err(NoRoute::MethodNotAllowed { allow }) => allow,
        other => panic!("{m} {p}: {:?}", other.map(|(r, _)| r.path)),
    };
    assert_eq!(allowed("POST", "/api/v1/notes/n"), ["GET", "PATCH"]);
    assert_eq!(allowed("HEAD", "/api/v1/notes/n/tabs/t"), ["GET", "PUT", "PATCH", "DELETE"]);
    assert_eq!(allowed("PUT", "/api/v1/notes"), ["GET", "POST"]);
    assert_eq!(allowed("GET", "/api/v1/claims/c"), ["DELETE"]);
    assert_eq!(allowed("POST", "/api/v1/claims"), ["GET"]);
    assert_eq!(allowed("POST", "/api/v1/search"), ["GET"]);
    assert_eq!(allowed("DELETE", "/api/v1/audit"), ["GET"]);
    assert_eq!(allowed("get", "/api/v1/notes"), ["GET", "POST"], "methods are case-sensitive");
    // Every other method on a route's path: its own route, or 405 naming the route's method.
    for r in rest::ROUTES {
        let (path, _) = example(r);
        for m in METHODS {
            match rest::route(m, &path) {
                Ok((found, _)) => assert_eq!((found.method.as_str(), found.path), (m, r.path)),
                Err(NoRoute::MethodNotAllowed { allow }) => {
                    assert!(allow.contains(&r.method.as_str()) && !allow.contains(&m), "{m} {path}: {allow:?}")
                }
                Err(NoRoute::NotFound) => panic!("{m} {path}: 404 on a path a route has"),
            }
        }
    }
}

#[test]
fn every_route_needs_the_scope_it_needed_before() {
    let table: Vec<(&str, &str, &str)> = rest::ROUTES.iter().map(|r| (r.method.as_str(), r.path, r.scope)).collect();
    let mut expected = SCOPES.to_vec();
    let mut got = table.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    // The rule behind it: reads need notes:read, writes notes:write, deleting a
    // tab notes:delete; the audit trail audit:read; the merge writes nothing.
    for (m, path, scope) in table {
        let want = match (m, path) {
            ("GET", "/api/v1/audit") => AUDIT,
            ("GET", _) | ("POST", "/api/v1/notes/{note}/tabs/{tab}/merge") => READ,
            ("DELETE", "/api/v1/notes/{note}/tabs/{tab}") => DELETE,
            _ => WRITE,
        };
        assert_eq!(scope, want, "{m} {path}");
    }
    let admin_only: Vec<&str> = rest::ROUTES.iter().filter(|r| r.admin_only).map(|r| r.path).collect();
    assert_eq!(admin_only, ["/api/v1/claims/{claim}/force-release"]);
}

#[test]
fn no_path_matches_two_routes_of_one_method() {
    for (i, a) in rest::ROUTES.iter().enumerate() {
        for b in &rest::ROUTES[i + 1..] {
            assert!(!(a.method == b.method && a.path == b.path), "twice: {} {}", a.method.as_str(), a.path);
            assert!(!(a.method == b.method && overlap(a.path, b.path)), "{} {} and {}", a.method.as_str(), a.path, b.path);
        }
    }
}

#[test]
fn every_tool_served_route_names_a_tool_of_the_tool_table() {
    let mut served: Vec<(&str, &str, &str)> = Vec::new();
    for r in rest::ROUTES {
        let Some(t) = r.tool() else { continue };
        assert!(cairn_notes::tools::TOOLS.iter().any(|x| std::ptr::eq(*x, t)), "{}: {} is not in TOOLS", r.path, t.name);
        assert_eq!(r.scope, t.scope, "{} {}: the route needs the tool's scope", r.method.as_str(), r.path);
        assert_eq!(r.audited, !t.annotations.read_only_hint, "{} {}: audited exactly when the tool writes", r.method.as_str(), r.path);
        served.push((r.method.as_str(), r.path, t.name));
    }
    let mut expected = BY_TOOL.to_vec();
    expected.sort();
    served.sort();
    assert_eq!(served, expected);
}

#[test]
fn refusals_are_audited_on_every_write_route_and_on_no_read() {
    for r in rest::ROUTES {
        assert_eq!(r.audited, r.scope == WRITE || r.scope == DELETE, "{} {}", r.method.as_str(), r.path);
    }
}

#[test]
fn the_idempotency_key_header_fills_exactly_the_bodies_that_take_a_key() {
    // Keyed writes: versioned changes of a note. Claims are leases (renewing
    // or releasing twice is already safe), a merge writes nothing, and a new
    // note has no version to key against: their bodies deny unknown fields,
    // so the header must not put a key in them.
    let keyed = [
        ("PATCH", "/api/v1/notes/{note}"),
        ("POST", "/api/v1/notes/{note}/files"),
        ("POST", "/api/v1/notes/{note}/sources"),
        ("POST", "/api/v1/notes/{note}/tabs"),
        ("PUT", "/api/v1/notes/{note}/tabs/{tab}"),
        ("PATCH", "/api/v1/notes/{note}/tabs/{tab}"),
        ("DELETE", "/api/v1/notes/{note}/tabs/{tab}"),
        ("POST", "/api/v1/notes/{note}/tabs/{tab}/edit"),
        ("POST", "/api/v1/notes/{note}/tabs/{tab}/restore"),
    ];
    for r in rest::ROUTES {
        assert_eq!(r.key_header, keyed.contains(&(r.method.as_str(), r.path)), "{} {}", r.method.as_str(), r.path);
    }
}

#[test]
fn every_route_has_a_one_line_doc() {
    for r in rest::ROUTES {
        assert!(!r.doc.is_empty() && !r.doc.contains('\n'), "{} {}", r.method.as_str(), r.path);
    }
}

/// A path with its parameters' names dropped (`/api/v1/notes/{}`).
fn shape(path: &str) -> String {
    path.split('/').map(|s| if s.starts_with('{') { "{}" } else { s }).collect::<Vec<_>>().join("/")
}

#[test]
fn docs_rest_md_agrees_with_the_table() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rest.md")).unwrap();
    let mut rows = 0;
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let route = cells[0].trim_start_matches("| `").split('`').next().unwrap();
        let (method, path) = route.split_once(' ').unwrap();
        let path = path.split(['?', '[']).next().unwrap();
        let scope = cells[1].split_whitespace().next().unwrap();
        let found = rest::ROUTES.iter().find(|r| r.method.as_str() == method && shape(r.path) == shape(path));
        let r = found.unwrap_or_else(|| panic!("docs/rest.md lists {method} {path}, the table does not"));
        assert_eq!(r.scope, scope, "docs/rest.md: {method} {path}");
        rows += 1;
    }
    assert!(rows >= 20, "docs/rest.md's table was not read ({rows} rows)");
}

/// One request through the table, as the component makes it.
fn serve(w: &mut World, who: &Identity, method: &str, path: &str, query: &[(&str, &str)], body: &str, key: Option<&str>) -> RestReply {
    let (route, params) = rest::route(method, path).unwrap_or_else(|e| panic!("{method} {path}: {e:?}"));
    let query: Query = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    w.env.advance_us(10);
    let incoming = Incoming { params, query: &query, body: body.as_bytes(), idempotency_key: key };
    route.serve(&w.kv, &mut w.env, who, incoming).unwrap()
}

#[test]
fn a_routed_write_answers_as_its_operation_and_a_refusal_is_audited_under_its_route() {
    let mut w = World::new();
    let ada = human("acme");
    let made = serve(&mut w, &ada, "POST", "/api/v1/notes", &[], r#"{"title": "Routed", "approved_for_agents": true}"#, None);
    assert_eq!(made.status, 201, "{}", made.body);
    let note = made.body["note_id"].as_str().unwrap().to_string();
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    let saved = serve(&mut w, &ada, "PUT", &tab, &[], r#"{"expected_version": 1, "text": "hello"}"#, None);
    assert_eq!((saved.status, saved.body["version"].as_u64()), (200, Some(2)), "{}", saved.body);
    let stale = serve(&mut w, &ada, "PUT", &tab, &[], r#"{"expected_version": 1, "text": "late"}"#, None);
    assert_eq!((stale.status, stale.body["error"].as_str()), (409, Some("version_conflict")));
    let trail = serve(&mut w, &ada, "GET", "/api/v1/audit", &[("note_id", &note)], "", None);
    assert_eq!(trail.status, 200, "{}", trail.body);
    let refused: Vec<&Value> = trail.body["events"].as_array().unwrap().iter().filter(|e| e["outcome"] == "version_conflict").collect();
    assert_eq!(refused.len(), 1, "{}", trail.body);
    assert_eq!(refused[0]["tool"], "PUT /api/v1/notes/{note}/tabs/{tab}");
    // A read refused (the merge writes nothing) is not a refused write.
    let before = w.refused_writes("acme").len();
    let merge = serve(&mut w, &ada, "POST", &format!("{tab}/merge"), &[], r#"{"base_version": 9, "text": "x"}"#, None);
    assert_eq!(merge.status, 400, "{}", merge.body);
    assert_eq!(w.refused_writes("acme").len(), before);
}

#[test]
fn a_tool_served_route_answers_the_tools_structured_content_as_is() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    assert_eq!(w.write_text(&ada, &note, "line one\nline two", "seed")["isError"], false);
    let path = format!("/api/v1/notes/{note}/tabs/markdown");
    let routed = serve(&mut w, &ada, "GET", &path, &[], "", None);
    let tool = w.ok(&ada, "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    let helper = rest::read_tab(&w.kv, &mut w.env, &ada, &note, "markdown", None).unwrap();
    assert_eq!(routed.status, 200);
    assert_eq!(routed.body, tool);
    assert_eq!(routed, helper);
    let missing = serve(&mut w, &ada, "GET", &format!("/api/v1/notes/{note}/tabs/slides-9-zzzz"), &[], "", None);
    assert_eq!((missing.status, missing.body["error"].as_str()), (404, Some("not_found")));
    let range = serve(&mut w, &ada, "GET", &format!("{path}/range"), &[("range", "C3:A1")], "", None);
    assert_eq!((range.status, range.body["field"].as_str()), (400, Some("range")));
    // A write tool's route: 201 for a new source, 200 when its URL is there already.
    let sources = format!("/api/v1/notes/{note}/sources");
    let first = serve(&mut w, &ada, "POST", &sources, &[], r#"{"expected_version": 2, "title": "Spec", "url": "https://example.com/spec"}"#, Some("s1"));
    assert_eq!((first.status, first.body["already_attached"].as_bool()), (201, Some(false)), "{}", first.body);
    let again = serve(&mut w, &ada, "POST", &sources, &[], r#"{"expected_version": 3, "title": "Spec", "url": "https://www.example.com/spec/"}"#, Some("s2"));
    assert_eq!((again.status, again.body["already_attached"].as_bool()), (200, Some(true)), "{}", again.body);
    let other =
        serve(&mut w, &ada, "POST", &sources, &[], r#"{"note_id": "another", "expected_version": 3, "title": "T", "url": "https://a.example"}"#, Some("s3"));
    assert_eq!((other.status, other.body["field"].as_str()), (400, Some("note_id")));
    let recorded = w.refused_writes("acme");
    assert!(recorded.iter().any(|r| r["tool"] == "add_note_source" && r["field"] == "note_id"), "{recorded:?}");
}

#[test]
fn a_body_that_is_not_an_object_is_400_invalid_body_and_not_audited() {
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    for body in ["[1]", "\"text\"", "{", "null"] {
        let r = serve(&mut w, &ada, "PUT", &format!("/api/v1/notes/{note}/tabs/markdown"), &[], body, None);
        assert_eq!(r, RestReply { status: 400, body: json!({"error": "invalid_body", "message": "the body must be a JSON object"}) }, "{body}");
    }
    assert!(w.refused_writes("acme").is_empty());
}

#[test]
fn the_idempotency_key_header_keys_a_write_but_not_a_new_note() {
    let mut w = World::new();
    let ada = human("acme");
    let made = serve(&mut w, &ada, "POST", "/api/v1/notes", &[], r#"{"title": "Keyed"}"#, Some("n1"));
    assert_eq!(made.status, 201, "{}", made.body);
    let note = made.body["note_id"].as_str().unwrap().to_string();
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    let body = r#"{"expected_version": 1, "text": "once"}"#;
    let first = serve(&mut w, &ada, "PUT", &tab, &[], body, Some("k1"));
    let again = serve(&mut w, &ada, "PUT", &tab, &[], body, Some("k1"));
    assert_eq!((first.status, first.body["replayed"].as_bool()), (200, Some(false)), "{}", first.body);
    assert_eq!((again.status, again.body["replayed"].as_bool()), (200, Some(true)), "{}", again.body);
    // The body's own key wins over the header's.
    let own = serve(&mut w, &ada, "PUT", &tab, &[], r#"{"expected_version": 2, "text": "twice", "idempotency_key": "k2"}"#, Some("k1"));
    assert_eq!((own.status, own.body["version"].as_u64()), (200, Some(3)), "{}", own.body);
}

#[test]
fn force_release_through_the_table_is_for_people_with_the_admin_role() {
    let mut w = World::new();
    let ada = human("acme");
    let bot = agent("acme");
    let note = w.note(&ada, "Held", true);
    let claim = serve(&mut w, &bot, "POST", &format!("/api/v1/notes/{note}/claims"), &[], r#"{"ttl_seconds": 600}"#, None);
    assert_eq!(claim.status, 201, "{}", claim.body);
    let path = format!("/api/v1/claims/{}/force-release", claim.body["claim_id"].as_str().unwrap());
    let member = serve(&mut w, &ada, "POST", &path, &[], "", None);
    assert_eq!((member.status, member.body["error"].as_str()), (403, Some("forbidden")));
    let boss = admin("acme", "boss", cairn_notes::ActorType::Human);
    let forced = serve(&mut w, &boss, "POST", &path, &[], "", None);
    assert_eq!((forced.status, forced.body["forced"].as_bool()), (200, Some(true)), "{}", forced.body);
}

#[test]
fn an_idempotency_key_header_on_a_claim_or_a_merge_is_not_refused() {
    // Clients send the header on every POST; a body without a key field
    // must not be refused for a field the caller never wrote.
    let mut w = World::new();
    let ada = human("acme");
    let note = w.note(&ada, "Plan", true);
    let claim = serve(&mut w, &ada, "POST", &format!("/api/v1/notes/{note}/claims"), &[], r#"{"ttl_seconds": 60}"#, Some("c1"));
    assert_eq!(claim.status, 201, "{}", claim.body);
    let id = claim.body["claim_id"].as_str().unwrap().to_string();
    let renew = serve(&mut w, &ada, "POST", &format!("/api/v1/claims/{id}/renew"), &[], r#"{"ttl_seconds": 60}"#, Some("c2"));
    assert_eq!(renew.status, 200, "{}", renew.body);
    let merge = serve(&mut w, &ada, "POST", &format!("/api/v1/notes/{note}/tabs/markdown/merge"), &[], r#"{"base_version": 1, "text": "mine\n"}"#, Some("c3"));
    assert_ne!(merge.body["field"].as_str(), Some("idempotency_key"), "{}", merge.body);
    let release = serve(&mut w, &ada, "DELETE", &format!("/api/v1/claims/{id}"), &[], "", Some("c4"));
    assert_eq!(release.status, 200, "{}", release.body);
}
