//! The shared world: the real notes core on the in-memory store (behind
//! the fault-injecting wrapper) as the [`Tools`] the protocol reaches, the
//! callers, and one request posted as the router posts it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use cairn_auth::{Actor, Principal, Role};
use cairn_kv::faults::{Control, Faulty};
use cairn_kv::memory::MemoryStore;
use cairn_mcp::{Answer, Request, Stores, ToolError, Tools};
use cairn_notes::tools::Tool;
use cairn_notes::{Env, Identity, SimEnv};
use serde_json::{Value, json};

/// Runs a future that never waits: the core is synchronous, so every tool
/// call is ready at once.
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a future waited: nothing on this transport should"),
    }
}

/// The notes core in process, reached as a tool component is: the
/// arguments must be a JSON object, the core's result goes back as it
/// wrote it, and a store failure comes back the way the router reads a
/// tool's failure (503: the tool is out of reach; anything else: it failed).
pub struct Core {
    /// The store under the faults.
    pub memory: Arc<MemoryStore>,
    store: Faulty,
    /// The fault switches.
    pub faults: Arc<Control>,
    env: RefCell<SimEnv>,
    calls: RefCell<Vec<(&'static str, String)>>,
}

impl Core {
    pub fn new() -> Self {
        let memory = Arc::new(MemoryStore::new());
        let (store, faults) = Faulty::new(memory.clone());
        Core { memory, store, faults, env: RefCell::new(SimEnv::new(7)), calls: RefCell::new(Vec::new()) }
    }

    /// The tools called so far, in order.
    pub fn calls(&self) -> Vec<&'static str> {
        self.calls.borrow().iter().map(|(name, _)| *name).collect()
    }

    /// The arguments of every tool call so far, in order, as the tools received them.
    pub fn arguments(&self) -> Vec<String> {
        self.calls.borrow().iter().map(|(_, args)| args.clone()).collect()
    }

    /// Overwrites the head of `note` with bytes no reader can decode.
    pub fn corrupt(&self, note: &str) {
        use cairn_kv::Store;
        let head = format!("note/{note}");
        let key = self.memory.dump("default").into_iter().map(|(k, _)| k).find(|k| k.ends_with(&head)).expect("the note has a head");
        self.memory.set("default", &key, b"not a head").unwrap();
    }

    /// Creates a note as `who` (through the people's REST helper); its id.
    pub fn note(&self, who: &Principal, title: &str, approved: bool) -> String {
        let mut env = self.env.borrow_mut();
        env.advance_us(10);
        let r = cairn_notes::rest::create_note(&self.store, &mut *env, &identity(who), json!({"title": title, "approved_for_agents": approved})).unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["note_id"].as_str().unwrap().to_string()
    }

    /// Sets a note's title and approval as `who` (a person, through the
    /// people's REST helper), at the note's `version`.
    pub fn update_note(&self, who: &Principal, note: &str, version: u64, title: &str, approved: bool) {
        let mut env = self.env.borrow_mut();
        env.advance_us(10);
        let args = json!({"expected_version": version, "title": title, "approved_for_agents": approved});
        let r = cairn_notes::rest::update_note(&self.store, &mut *env, &identity(who), note, args).unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
    }

    /// The store under the faults, as the core sees it.
    pub fn store(&self) -> &Faulty {
        &self.store
    }

    /// A tool's result, called directly on the core (no protocol around it).
    pub fn direct(&self, who: &Principal, tool: &str, args: Value) -> String {
        let mut env = self.env.borrow_mut();
        env.advance_us(10);
        cairn_notes::call_tool(&self.store, &mut *env, &identity(who), tool, args).unwrap()
    }
}

impl Tools for Core {
    async fn call(&self, tool: &'static Tool, arguments: &str, who: &Principal) -> Result<String, ToolError> {
        self.calls.borrow_mut().push((tool.name, arguments.to_string()));
        let name = tool.name;
        let args: Value = match serde_json::from_str(arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(ToolError::Internal(format!("tool {name} failed: the body must be a JSON object of arguments"))),
        };
        let mut env = self.env.borrow_mut();
        env.advance_us(10);
        match cairn_notes::call(&self.store, &mut *env, &identity(who), tool, args) {
            Ok(result) => Ok(result),
            Err(e) if e.http_status() == 503 => Err(ToolError::Unavailable(format!("tool {name}: {e}"))),
            Err(e) => Err(ToolError::Internal(format!("tool {name} failed: {e}"))),
        }
    }

    fn stores(&self) -> Option<Stores<'_>> {
        Some(Stores { notes: &self.store, cache: &self.store, now_us: self.now_us() })
    }
}

impl Core {
    /// The core's clock, microseconds since the epoch.
    pub fn now_us(&self) -> u64 {
        self.env.borrow().now_us()
    }

    /// Moves the core's clock on by `us`.
    pub fn advance_us(&self, us: u64) {
        self.env.borrow_mut().advance_us(us);
    }
}

/// The core's view of a verified principal.
pub fn identity(p: &Principal) -> Identity {
    Identity { tenant: p.tenant.clone(), subject: p.subject.clone(), display_name: p.name.clone(), actor_type: p.actor, role: p.role }
}

fn principal(tenant: &str, subject: &str, actor: Actor, scopes: &[&str]) -> Principal {
    Principal {
        tenant: tenant.into(),
        subject: subject.into(),
        name: subject.into(),
        actor,
        role: Role::Member,
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        exp: u64::MAX,
    }
}

/// An agent of tenant `acme` that may read and write.
pub fn agent() -> Principal {
    principal("acme", "agent-1", Actor::Agent, &["notes:read", "notes:write"])
}

/// A person of tenant `acme` that may read and write.
pub fn person() -> Principal {
    principal("acme", "ada", Actor::Human, &["notes:read", "notes:write"])
}

/// A person of another tenant.
pub fn stranger() -> Principal {
    principal("globex", "bob", Actor::Human, &["notes:read", "notes:write"])
}

/// A JSON-RPC request.
pub fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `tools/call` request.
pub fn call(id: u64, tool: &str, arguments: Value) -> Value {
    rpc(id, "tools/call", json!({"name": tool, "arguments": arguments}))
}

/// Posts `body` with `headers` as the router does: read, then run. `Err`
/// is the 400 reply of a request refused whole.
pub fn post(core: &Core, who: &Principal, body: &[u8], headers: &[(&str, &str)]) -> Result<Answer, Value> {
    let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_string());
    let request = Request::read(body, header)?;
    Ok(block_on(request.run(core, who)))
}

/// The 200 body of `message` posted without headers.
pub fn reply_text(core: &Core, who: &Principal, message: &Value) -> String {
    match post(core, who, message.to_string().as_bytes(), &[]) {
        Ok(Answer::Reply(body)) => body,
        other => panic!("expected a reply to {message}, got {other:?}"),
    }
}

/// The parsed 200 body of `message` posted without headers.
pub fn reply(core: &Core, who: &Principal, message: &Value) -> Value {
    serde_json::from_str(&reply_text(core, who, message)).expect("a reply is JSON")
}

/// The parsed reply to one request `method` with `params` (id 1).
pub fn ask(core: &Core, who: &Principal, method: &str, params: Value) -> Value {
    reply(core, who, &rpc(1, method, params))
}

/// The 400 reply of a request refused whole, as text.
pub fn refused(core: &Core, body: &[u8], headers: &[(&str, &str)]) -> String {
    match post(core, &agent(), body, headers) {
        Err(reply) => reply.to_string(),
        Ok(answer) => panic!("expected the request to be refused whole, got {answer:?}"),
    }
}
