//! A disk that fills up under SQLite: the host's state dir on a small tmpfs.
//! Writes are refused (503 `store_full` over REST, 503 with `Retry-After`
//! over MCP) and nothing is acknowledged that was not stored; reads keep
//! working; once there is room again, writes work and every acknowledged
//! write reads back whole.
use crate::app::*;
use crate::harness::*;
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// A tmpfs of `mb` MiB at `dir` (the tests run as root here, as CI does).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mb: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"]).arg(dir).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "cannot mount a tmpfs at {} (this test needs root, as CI has)", dir.display());
        Tmpfs(dir.to_path_buf())
    }

    fn resize(&self, mb: u64) {
        let ok = Command::new("mount").args(["-o", &format!("remount,size={mb}m")]).arg(&self.0).status().unwrap().success();
        assert!(ok, "cannot resize the tmpfs");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers_with_nothing_corrupt() {
    let disk = Tmpfs::mount(&scratch("full-disk").join("mnt"), 3);
    require_app();
    let jwks: &'static str = Box::leak(key().jwks().into_boxed_str());
    let cairn = Cairn::start(Start {
        state_dir: Some(disk.0.join("state")),
        env: vec![("SPIN_VARIABLE_JWKS", jwks), ("SPIN_VARIABLE_ISSUER", ISSUER), ("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "1000000")],
        ..Start::default()
    });
    let p = cairn.token(&person());
    let note = cairn.create_note(&person(), "Filling up", true);
    let tab = format!("/api/v1/notes/{note}/tabs/markdown");
    // Write ever new 100 KB texts until the disk is full.
    let mut acked: Vec<(u64, String)> = Vec::new();
    let mut version = 1;
    let mut refused = None;
    for i in 0..200 {
        let text = format!("{i}:{}\n", char::from(b'a' + (i % 26) as u8).to_string().repeat(100_000));
        let r = cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": version, "text": text, "idempotency_key": format!("fill-{i}")})));
        match r.status {
            200 => {
                version = r.json()["version"].as_u64().unwrap();
                acked.push((version, text));
            }
            503 => {
                refused = Some(r);
                break;
            }
            other => panic!("write {i}: {other} {}", r.text()),
        }
    }
    let refused = refused.expect("the disk never filled");
    assert_eq!(refused.json()["error"], "store_full", "{}", refused.text());
    assert!(!acked.is_empty(), "nothing fit before the disk filled");
    eprintln!("full disk: {} writes of 100 KB fit in 3 MB before the refusal", acked.len());
    // Over MCP too: a clear 503 to retry later, never a result.
    let t = cairn.token(&agent());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "edit_note_tab", "arguments":
        {"note_id": note, "tab_id": "markdown", "expected_version": version, "idempotency_key": "mcp-full", "operation": "replace_text", "text": "y".repeat(200_000)}}});
    let r = cairn.mcp(&t, &body);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    // Reads keep working, and show the last acknowledged write.
    let read = cairn.rest(&p, "GET", &tab, None);
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["version"], version);
    // Room again: writes work, and every acknowledged version reads back whole.
    disk.resize(64);
    let r = cairn.rest(&p, "PUT", &tab, Some(&json!({"expected_version": version, "text": "after\n", "idempotency_key": "after"})));
    assert_eq!(r.status, 200, "{}", r.text());
    for (v, text) in &acked {
        let old = cairn.rest(&p, "GET", &format!("{tab}/versions/{v}"), None);
        assert_eq!(old.status, 200, "version {v}: {}", old.text());
        assert!(old.json()["text"] == text.as_str(), "version {v} did not read back whole");
    }
}
