//! Shared helpers for the behaviour tests.
#![allow(dead_code)]

use cairn_notes::{ActorType, Identity, MemKv, Role, SimEnv, call_tool, rest};
use serde_json::{Value, json};

pub struct World {
    pub kv: MemKv,
    pub env: SimEnv,
}

impl World {
    pub fn new() -> Self {
        World {
            kv: MemKv::new(),
            env: SimEnv::new(7),
        }
    }

    /// Calls a tool; the result must have the MCP shape.
    pub fn call(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        self.env.advance_us(10);
        let r = call_tool(&self.kv, &mut self.env, who, tool, args).expect("no store failure");
        assert_eq!(r["content"][0]["type"], "text");
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, r["structuredContent"],
            "text content is the structuredContent"
        );
        assert!(r["isError"].is_boolean());
        r
    }

    /// Calls a tool that must succeed; returns structuredContent.
    pub fn ok(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        let r = self.call(who, tool, args);
        assert_eq!(
            r["isError"], false,
            "expected success, got {}",
            r["structuredContent"]
        );
        r["structuredContent"].clone()
    }

    /// Calls a tool that must be refused; returns structuredContent.
    pub fn refused(&mut self, who: &Identity, tool: &str, args: Value) -> Value {
        let r = self.call(who, tool, args);
        assert_eq!(
            r["isError"], true,
            "expected a refusal, got {}",
            r["structuredContent"]
        );
        r["structuredContent"].clone()
    }

    /// Creates a note through the REST helper; returns its id.
    pub fn note(&mut self, who: &Identity, title: &str, approved: bool) -> String {
        self.env.advance_us(10);
        let r = rest::create_note(
            &self.kv,
            &mut self.env,
            who,
            json!({"title": title, "approved_for_agents": approved}),
        )
        .unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["note_id"].as_str().unwrap().to_string()
    }

    pub fn version(&mut self, who: &Identity, note: &str) -> u64 {
        self.ok(who, "list_note_tabs", json!({"note_id": note}))["version"]
            .as_u64()
            .unwrap()
    }

    pub fn tab(&mut self, who: &Identity, note: &str, tab: &str) -> Value {
        self.ok(
            who,
            "read_note_tab",
            json!({"note_id": note, "tab_id": tab}),
        )
    }

    pub fn create_tab(
        &mut self,
        who: &Identity,
        note: &str,
        tab_type: &str,
        label: &str,
    ) -> String {
        let v = self.version(who, note);
        let key = format!("create-{note}-{v}-{label}");
        let r = self.ok(who, "create_note_tab", json!({
            "note_id": note, "expected_version": v, "idempotency_key": key, "tab_type": tab_type, "label": label,
        }));
        r["tab_id"].as_str().unwrap().to_string()
    }

    pub fn write_text(&mut self, who: &Identity, note: &str, text: &str, key: &str) -> Value {
        let v = self.version(who, note);
        self.call(who, "edit_note_tab", json!({
            "note_id": note, "tab_id": "markdown", "expected_version": v, "idempotency_key": key,
            "operation": "replace_text", "text": text,
        }))
    }
}

pub fn identity(tenant: &str, subject: &str, actor_type: ActorType) -> Identity {
    Identity {
        tenant: tenant.into(),
        subject: subject.into(),
        display_name: subject.to_uppercase(),
        actor_type,
        role: Role::Member,
    }
}

pub fn human(tenant: &str) -> Identity {
    identity(tenant, "ada", ActorType::Human)
}

pub fn agent(tenant: &str) -> Identity {
    identity(tenant, "claude", ActorType::Agent)
}
