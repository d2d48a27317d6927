//! Shared helpers for the behaviour tests.
#![allow(dead_code)]

use std::sync::Arc;

use cairn_kv::faults::{Control, Faulty};
use cairn_kv::memory::MemoryStore;
use cairn_kv::{Observed, Read, Store, Swap};
use cairn_notes::{ActorType, Env, Identity, Role, SimEnv, call_tool_value, rest};
use serde_json::{Value, json};

/// Creates a note through the REST helper on `store`; returns its id.
pub fn create_note(store: &dyn Store, env: &mut SimEnv, who: &Identity, title: &str, approved: bool) -> String {
    let r = rest::create_note(store, env, who, json!({"title": title, "approved_for_agents": approved})).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["note_id"].as_str().unwrap().to_string()
}

/// Calls a tool as every behaviour test does: the result must have the MCP
/// shape (its text content is its structuredContent) and its
/// structuredContent must validate against the tool's published
/// `outputSchema`, success and refusal alike. Returns the whole result.
pub fn checked_call(store: &dyn cairn_notes::Store, env: &mut dyn Env, who: &Identity, tool: &str, args: Value) -> Value {
    let r = call_tool_value(store, env, who, tool, args).expect("no store failure");
    assert_eq!(r["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, r["structuredContent"], "text content is the structuredContent");
    assert!(r["isError"].is_boolean());
    assert_valid_output(tool, &r["structuredContent"]);
    r
}

/// Panics, naming the path and the rule, unless `content` validates against
/// the output schema of `tool` (an unknown tool's refusal: against any tool's).
pub fn assert_valid_output(tool: &str, content: &Value) {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static VALIDATORS: OnceLock<HashMap<&'static str, jsonschema::Validator>> = OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        cairn_notes::tools::TOOLS
            .iter()
            .map(|t| (t.name, jsonschema::validator_for(&(t.output_schema)()).unwrap_or_else(|e| panic!("{}: output schema: {e}", t.name))))
            .collect()
    });
    let v = validators.get(tool).unwrap_or_else(|| &validators["list_notes"]);
    if let Err(e) = v.validate(content) {
        panic!("{tool}: structuredContent does not match its outputSchema at {}: {e}\n{content}", e.instance_path());
    }
    OUTPUTS_CHECKED.with(|c| c.borrow_mut().push((tool.to_string(), content.get("error").is_none())));
}

thread_local! {
    /// (tool, succeeded) of every structuredContent checked on this thread.
    pub static OUTPUTS_CHECKED: std::cell::RefCell<Vec<(String, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The store the behaviour tests run on: the in-memory store behind the
/// fault-injecting wrapper, with what the tests look at (every key, the
/// largest value, the keys read) and the faults they switch on.
pub struct TestKv {
    mem: Arc<MemoryStore>,
    faulty: Faulty,
    ctl: Arc<Control>,
}

impl TestKv {
    pub fn new() -> Self {
        let mem = Arc::new(MemoryStore::new());
        let (faulty, ctl) = Faulty::new(mem.clone());
        ctl.record_reads(true);
        TestKv { mem, faulty, ctl }
    }

    /// Every key of the notes bucket with its value, in key order.
    pub fn dump(&self) -> Vec<(String, Vec<u8>)> {
        self.mem.dump("default")
    }

    /// Every record but the audit trail's refused-call records (a refused
    /// write is recorded there, and changes nothing else).
    pub fn notes_state(&self) -> Vec<(String, Vec<u8>)> {
        self.dump().into_iter().filter(|(k, _)| !k.contains("/audit/refused/")).collect()
    }

    /// The size of the largest stored value, in bytes.
    pub fn max_value_len(&self) -> usize {
        self.dump().iter().map(|(_, v)| v.len()).max().unwrap_or(0)
    }

    /// The next `n` swaps fail as if another writer had written in between.
    pub fn lose_next_swaps(&self, n: u32) {
        self.ctl.lose_next_swaps(n);
    }

    /// The keys read since the last call.
    pub fn take_reads(&self) -> Vec<String> {
        self.ctl.take_reads()
    }

    /// The fault switches.
    pub fn faults(&self) -> &Control {
        &self.ctl
    }
}

impl Store for TestKv {
    fn read(&self, bucket: &str, key: &str) -> cairn_kv::Result<Read> {
        self.faulty.read(bucket, key)
    }
    fn swap(&self, bucket: &str, key: &str, observed: Observed, value: &[u8]) -> cairn_kv::Result<Swap> {
        self.faulty.swap(bucket, key, observed, value)
    }
    fn set_many(&self, bucket: &str, pairs: &[(&str, &[u8])]) -> cairn_kv::Result<()> {
        self.faulty.set_many(bucket, pairs)
    }
    fn get_many(&self, bucket: &str, keys: &[&str]) -> cairn_kv::Result<Vec<Option<Vec<u8>>>> {
        self.faulty.get_many(bucket, keys)
    }
    fn delete_many(&self, bucket: &str, keys: &[&str]) -> cairn_kv::Result<()> {
        self.faulty.delete_many(bucket, keys)
    }
    fn increment(&self, bucket: &str, key: &str, delta: i64) -> cairn_kv::Result<i64> {
        self.faulty.increment(bucket, key, delta)
    }
    fn list_keys(&self, bucket: &str, after: Option<&str>, limit: usize) -> cairn_kv::Result<Vec<String>> {
        self.faulty.list_keys(bucket, after, limit)
    }
    fn sweep(&self, older_than_ms: u64) -> cairn_kv::Result<usize> {
        self.faulty.sweep(older_than_ms)
    }
    fn close(&self) -> cairn_kv::Result<()> {
        self.faulty.close()
    }
    fn get(&self, bucket: &str, key: &str) -> cairn_kv::Result<Option<Vec<u8>>> {
        self.faulty.get(bucket, key)
    }
    fn vouched(&self) -> bool {
        self.faulty.vouched()
    }
}

pub struct World {
    pub kv: TestKv,
    pub env: SimEnv,
}

impl World {
    pub fn new() -> Self {
        World { kv: TestKv::new(), env: SimEnv::new(7) }
    }

    /// Calls a tool; the result must have the MCP shape.
    pub fn call(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        self.env.advance_us(10);
        checked_call(&self.kv, &mut self.env, who, tool, args)
    }

    /// Calls a tool that must succeed; returns structuredContent.
    pub fn ok(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        let r = self.call(who, tool, args);
        assert_eq!(r["isError"], false, "expected success, got {}", r["structuredContent"]);
        r["structuredContent"].clone()
    }

    /// Calls a tool that must be refused; returns structuredContent.
    pub fn refused(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        let r = self.call(who, tool, args);
        assert_eq!(r["isError"], true, "expected a refusal, got {}", r["structuredContent"]);
        r["structuredContent"].clone()
    }

    /// Creates a note through the REST helper; returns its id.
    pub fn note(&mut self, who: &Identity, title: &str, approved: bool) -> String {
        self.env.advance_us(10);
        create_note(&self.kv, &mut self.env, who, title, approved)
    }

    pub fn version(&mut self, who: &Identity, note: &str) -> u64 {
        self.ok(who, "list_note_tabs", json!({"note_id": note}))["version"].as_u64().unwrap()
    }

    pub fn tab(&mut self, who: &Identity, note: &str, tab: &str) -> Value {
        self.ok(who, "read_note_tab", json!({"note_id": note, "tab_id": tab}))
    }

    pub fn create_tab(&mut self, who: &Identity, note: &str, tab_type: &str, label: &str) -> String {
        let v = self.version(who, note);
        let key = format!("create-{note}-{v}-{label}");
        let r = self.ok(
            who,
            "create_note_tab",
            json!({
                "note_id": note, "expected_version": v, "idempotency_key": key, "tab_type": tab_type, "label": label,
            }),
        );
        r["tab_id"].as_str().unwrap().to_string()
    }

    pub fn write_text(&mut self, who: &Identity, note: &str, text: &str, key: &str) -> Value {
        let v = self.version(who, note);
        self.call(
            who,
            "edit_note_tab",
            json!({
                "note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key,
                "operation": "replace_text", "text": text,
            }),
        )
    }
}

pub fn identity(tenant: &str, subject: &str, actor_type: ActorType) -> Identity {
    Identity { tenant: tenant.into(), subject: subject.into(), display_name: subject.to_uppercase(), actor_type, role: Role::Member }
}

pub fn human(tenant: &str) -> Identity {
    identity(tenant, "ada", ActorType::Human)
}

pub fn agent(tenant: &str) -> Identity {
    identity(tenant, "claude", ActorType::Agent)
}

pub const SECOND: u64 = 1_000_000;

pub fn admin(tenant: &str, subject: &str, actor_type: ActorType) -> Identity {
    Identity { role: Role::Admin, ..identity(tenant, subject, actor_type) }
}

impl World {
    /// claim_note; returns the whole CallToolResult's structuredContent (granted or refused).
    pub fn claim(&mut self, who: &Identity, note: &str, tab: Option<&str>) -> Value {
        let mut args = json!({"note_id": note});
        if let Some(t) = tab {
            args["tab_id"] = t.into();
        }
        self.call(who, "claim_note", args)["structuredContent"].clone()
    }

    /// claim_note that must be granted (or renewed); returns the claim id.
    pub fn claim_ok(&mut self, who: &Identity, note: &str, tab: Option<&str>) -> String {
        let r = self.claim(who, note, tab);
        assert!(r.get("error").is_none(), "expected a claim, got {r}");
        r["claim_id"].as_str().unwrap().to_string()
    }

    /// The live claims of the caller's tenant (list_claims without note_id).
    pub fn board(&mut self, who: &Identity) -> Vec<Value> {
        self.ok(who, "list_claims", json!({}))["claims"].as_array().unwrap().clone()
    }

    pub fn advance_s(&mut self, secs: u64) {
        self.env.advance_us(secs * SECOND);
    }

    /// Every audit record of a tenant under `audit/{kind}/`, in key (time) order.
    fn audit_records(&self, tenant: &str, kind: &str) -> Vec<Value> {
        let prefix = format!("t/{tenant}/audit/{kind}/");
        self.kv.dump().into_iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(_, v)| serde_json::from_slice(&v).unwrap()).collect()
    }

    /// Every claim audit record of a tenant, in key (time) order.
    pub fn claim_audit(&self, tenant: &str) -> Vec<Value> {
        self.audit_records(tenant, "claims")
    }

    /// The refused-write records of a tenant's audit trail.
    pub fn refused_writes(&self, tenant: &str) -> Vec<Value> {
        self.audit_records(tenant, "refused").into_iter().filter(|r| r["reason"] == "write").collect()
    }

    /// The markdown tab edit as a raw call (refused or not).
    pub fn edit_markdown(&mut self, who: &Identity, note: &str, text: &str, key: &str) -> Value {
        self.write_text(who, note, text, key)["structuredContent"].clone()
    }
}

/// The number of a version as a read or a write hands it out: a plain
/// number, or the number of a `"<n>:part"` token.
pub fn num(v: &Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.strip_suffix(":part")).and_then(|n| n.parse().ok())).unwrap_or_else(|| panic!("not a version: {v}"))
}
