//! The benchmark peers start from Rust (`cairn_bench::peer`) and answer the
//! same calls the same way: the Python peer (`bench/peer/server.py`) and the
//! TypeScript peer (`bench/peer/ts/server.mjs`), each when it is installed
//! (`scripts/test.sh` installs both; see `bench/peer/README.md`).

use cairn_bench::peer::{Peer, default_node, default_python};
use serde_json::{Value, json};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ sits in the workspace").to_path_buf()
}

async fn check(peer: &Peer) -> anyhow::Result<()> {
    let notes = peer.notes(2).await?;
    assert_eq!(notes.len(), 2);
    let mut c = peer.caller().await?;
    let sc = |v: &Value| v["structuredContent"].clone();

    let read = c.client.call(&c.token, "read_note_tab", json!({"note_id": notes[0], "tab_id": "markdown"})).await?;
    assert_eq!(read["isError"], false, "{}: {read}", peer.name);
    assert_eq!(sc(&read)["version"], 1, "{}: {read}", peer.name);
    assert_eq!(sc(&read)["text"], "", "{}: {read}", peer.name);

    let edit = json!({"note_id": notes[0], "tab_id": "markdown", "expected_version": 1,
                      "idempotency_key": "k1", "operation": "replace_text", "text": "one\n"});
    let r = c.client.call(&c.token, "edit_note_tab", edit.clone()).await?;
    assert_eq!(sc(&r)["version"], 2, "{}: {r}", peer.name);
    assert_eq!(sc(&r)["replayed"], false, "{}: {r}", peer.name);

    let again = c.client.call(&c.token, "edit_note_tab", edit).await?;
    assert_eq!(sc(&again)["replayed"], true, "{}: {again}", peer.name);
    assert_eq!(sc(&again)["version"], 2, "{}: {again}", peer.name);

    let stale = json!({"note_id": notes[0], "tab_id": "markdown", "expected_version": 1,
                       "idempotency_key": "k2", "operation": "replace_text", "text": "two\n"});
    let r = c.client.call(&c.token, "edit_note_tab", stale).await?;
    assert_eq!(r["isError"], true, "{}: {r}", peer.name);
    assert_eq!(sc(&r)["error"], "version_conflict", "{}: {r}", peer.name);
    assert_eq!(sc(&r)["current_version"], 2, "{}: {r}", peer.name);

    let read = c.client.call(&c.token, "read_note_tab", json!({"note_id": notes[0], "tab_id": "markdown"})).await?;
    assert_eq!(sc(&read)["text"], "one\n", "{}: {read}", peer.name);
    Ok(())
}

#[test]
fn peers_start_and_keep_the_edit_rules() {
    // The peers' paths are relative to the workspace root, where `cairn-bench` runs.
    std::env::set_current_dir(root()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut ran = 0;
    for (what, program, start) in
        [("Python peer", default_python(), Peer::start as fn(&std::path::Path) -> anyhow::Result<Peer>), ("TypeScript peer", default_node(), Peer::start_ts)]
    {
        let Some(program) = program else {
            panic!("the {what} is not installed: scripts/test.sh installs it (bench/peer/README.md says how)");
        };
        let peer = start(&program).unwrap();
        assert_eq!(peer.name, what);
        rt.block_on(check(&peer)).unwrap();
        drop(peer);
        ran += 1;
    }
    assert_eq!(ran, 2, "both peers checked");
}
