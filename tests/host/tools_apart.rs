//! Tools deployed apart, as `spin up -c` or one SpinKube `SpinApp` per tool
//! would run them: a router host (`--component router --component rest`)
//! reaches the tools on two other hosts through the `tool_url_<tool>`
//! variables over real HTTP, all three on one Redis; the official Python MCP
//! client drives it. The tool hosts are reachable from the network, so they
//! refuse calls without a valid signed identity, bound to the tool and good
//! once; a host whose router is composed with its tools keeps `/tools/*`
//! closed.
use crate::app::*;
use crate::harness::*;
use crate::redis::{self, Server as Redis};
use crate::scale_out::AUDIENCE;
use serde_json::{Value, json};
use std::process::Command;

const READS: [&str; 7] = ["list_notes", "list_note_tabs", "read_note_tab", "read_sheet_range", "list_note_attachments", "list_note_history", "list_claims"];
const WRITES: [&str; 7] = ["edit_note_tab", "create_note_tab", "add_note_source", "claim_note", "renew_claim", "release_claim", "post_claim_note"];

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A host on `redis` serving only these components, with the shared state dir.
fn host(redis: &Redis, state: &std::path::Path, components: &[&str], env: Vec<(&'static str, &'static str)>) -> Cairn {
    let rc = leak(redis::runtime_config(redis).display().to_string());
    let jwks = leak(key().jwks());
    let mut all = vec![
        ("SPIN_VARIABLE_JWKS", jwks),
        ("SPIN_VARIABLE_ISSUER", ISSUER),
        ("SPIN_VARIABLE_AUDIENCE", AUDIENCE),
        ("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000"),
    ];
    all.extend(env);
    let mut args = vec!["--runtime-config-file", rc];
    for c in components {
        args.push("--component");
        args.push(leak(c.replace('_', "-")));
    }
    Cairn::start(Start { state_dir: Some(state.to_path_buf()), env: all, args, ..Start::default() })
}

struct Apart {
    _redis: Redis,
    state: std::path::PathBuf,
    router: Cairn,
    reads: Cairn,
    writes: Cairn,
}

fn deploy() -> Apart {
    require_app();
    let redis = redis::start();
    let state = scratch("apart-state");
    let reads = host(&redis, &state, &READS, vec![("SPIN_VARIABLE_TOOL_TRANSPORT", "http")]);
    let writes = host(&redis, &state, &WRITES, vec![("SPIN_VARIABLE_TOOL_TRANSPORT", "http")]);
    let mut env = Vec::new();
    for (tools, h) in [(&READS[..], &reads), (&WRITES[..], &writes)] {
        for t in tools {
            env.push((leak(format!("SPIN_VARIABLE_TOOL_URL_{}", t.to_uppercase())), leak(format!("http://{}", h.addr))));
        }
    }
    let router = host(&redis, &state, &["router", "rest"], env);
    Apart { _redis: redis, state, router, reads, writes }
}

#[test]
fn a_router_host_reaches_tools_on_two_other_hosts_and_an_official_client_works() {
    let d = deploy();
    // The tool hosts serve tools only: no router, no REST there.
    assert_eq!(d.reads.get("/mcp").status, 404);
    assert_eq!(d.writes.request("POST", "/api/v1/notes", &[], b"{}").status, 404);
    let note = d.router.create_note(&person(), "apart", true);
    let token = d.router.token(&agent());
    let python = root().join("target/interop-venv/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/test.sh, which installs the MCP clients", python.display());
    // The client talks to the router's own address; tokens carry the deployment's audience.
    let url = format!("http://{}/mcp", d.router.addr);
    let out = Command::new(&python)
        .arg(root().join("interop/python_client.py"))
        .args([&url, "legacy"])
        .env("CAIRN_TOKEN", &token)
        .env("CAIRN_NOTE", &note)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "python client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap();
    let r: Value = serde_json::from_str(line).unwrap();
    assert_eq!(r["conflict"], "version_conflict", "{r}");
    // Both tool hosts served their part of it.
    assert!(d.reads.wait_for_log("read-note-tab").contains("read-note-tab"), "the read host served no read");
    assert!(d.writes.wait_for_log("edit-note-tab").contains("edit-note-tab"), "the write host served no write");
    // And a claim from one host shows on the board of the other.
    let c = d.router.call(&token, "claim_note", json!({"note_id": note}));
    assert_eq!(c["isError"], false, "{c}");
    let board = d.router.call(&token, "list_claims", json!({"note_id": note}));
    assert_eq!(board["structuredContent"]["claims"][0]["claim_id"], c["structuredContent"]["claim_id"]);
}

#[test]
fn a_tool_host_refuses_calls_without_a_valid_signed_identity() {
    let d = deploy();
    let body = json!({}).to_string();
    let r = d.reads.request("POST", "/tools/list_notes", &[("content-type", "application/json")], body.as_bytes());
    assert_eq!(r.status, 401, "{}", r.text());
    let mallory = cairn_auth::Principal {
        tenant: "acme".into(),
        subject: "mallory".into(),
        name: "Mallory".into(),
        actor: cairn_auth::Actor::Human,
        role: cairn_auth::Role::Admin,
        scopes: vec!["notes:read".into(), "notes:write".into()],
        exp: u64::MAX,
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let call = |tool: &'static str, body: &'static str| cairn_auth::identity::Call {
        tool,
        method: "POST",
        path: Box::leak(format!("/tools/{tool}").into_boxed_str()),
        body: body.as_bytes(),
    };
    let send = |host: &Cairn, path: &str, header: &str, body: &str| {
        host.request("POST", path, &[("content-type", "application/json"), (cairn_auth::identity::HEADER, header)], body.as_bytes())
    };
    let sign = |secret: &str, c: &cairn_auth::identity::Call, at: u64, nonce: &str| cairn_auth::identity::sign(&mallory, secret, c, at, nonce).unwrap();
    // An identity signed with a secret the hosts do not share.
    let forged = sign("not-the-secret-not-the-secret-not", &call("edit_note_tab", "{}"), now, "n1");
    let r = send(&d.writes, "/tools/edit_note_tab", &forged, &body);
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("cairn-identity"), "{}", r.text());
    // A genuine header, captured and replayed: as it was, with other
    // arguments, or for another tool.
    let secret = cairn::local::identity_secret(&d.state).unwrap();
    let genuine = sign(&secret, &call("list_notes", "{}"), now, "n2");
    assert_eq!(send(&d.reads, "/tools/list_notes", &genuine, "{}").status, 200, "the genuine call is served");
    let again = send(&d.reads, "/tools/list_notes", &genuine, "{}");
    assert_eq!(again.status, 401, "{}", again.text());
    assert!(again.text().contains("already used"), "{}", again.text());
    for (host, path, args) in [(&d.reads, "/tools/list_notes", r#"{"limit":50}"#), (&d.writes, "/tools/edit_note_tab", "{}")] {
        let r = send(host, path, &genuine, args);
        assert_eq!(r.status, 401, "{path} {args}: {}", r.text());
        assert!(r.text().contains("another call"), "{}", r.text());
    }
    // A header for one tool, sent to another tool's route with that tool's own path.
    let for_reads = sign(&secret, &cairn_auth::identity::Call { path: "/tools/list_note_tabs", ..call("list_notes", "{}") }, now, "n3");
    let r = send(&d.reads, "/tools/list_note_tabs", &for_reads, "{}");
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("another call"), "{}", r.text());
    // And once it has expired.
    let old = sign(&secret, &call("list_notes", "{}"), now - cairn_auth::identity::TTL_SECONDS - 5, "n4");
    let r = send(&d.reads, "/tools/list_notes", &old, "{}");
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("expired"), "{}", r.text());
}

#[test]
fn a_host_composing_its_tools_keeps_their_routes_closed() {
    let cairn = start();
    let t = cairn.token(&agent());
    for tool in ["list_notes", "edit_note_tab"] {
        let r = cairn.request("POST", &format!("/tools/{tool}"), &[("content-type", "application/json")], b"{}");
        assert_eq!(r.status, 404, "{tool}: {}", r.text());
    }
    // The router still reaches them, composed.
    let r = cairn.mcp(&t, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}));
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
}
