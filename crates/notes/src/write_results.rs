//! What a write answers, typed: the fields every committed write shares
//! ([`WriteResult`]: the note's new version, the tab it changed, whether it
//! was replayed) around the writer's own fields, and [`Replayable`], a
//! keyed write's answer: that result, or the first result of its
//! idempotency key replayed as it was stored.
//!
//! A write's result is stored with its idempotency key as the JSON object
//! it serializes to ([`serde_json::Value`], keys in sorted order), so the
//! stored bytes do not depend on the order fields are declared in here.

use schemars::JsonSchema;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::results::shape;
use crate::version::Version;

/// The writer's own fields of a write result: what it says besides the
/// versions.
pub(crate) trait WriteFields: Serialize {
    /// Whether the write was applied over changes the writer never read
    /// (a rebased patch): its versions are then part tokens.
    fn rebased(&self) -> bool {
        false
    }
}

/// The untyped fields of the people's REST writes.
impl WriteFields for Map<String, Value> {
    fn rebased(&self) -> bool {
        self.get("rebased").and_then(Value::as_bool) == Some(true)
    }
}

/// The tab a write changed, as the write left it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct TabState {
    /// The tab's exact id.
    pub tab_id: String,
    /// The tab's new version: a number, or a "<n>:part" token when the write was based on part of the tab or rebased.
    #[schemars(schema_with = "shape::version")]
    pub tab_version: Version,
    /// The hash of the tab's content now.
    #[schemars(schema_with = "shape::hash")]
    pub content_hash: String,
}

/// What a committed write answers: `fields` (the writer's own), the note's
/// new version, the tab it changed (`tab`: a [`TabState`], or an `Option`
/// of one for a write that may change no tab), and `replayed: false`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct WriteResult<R = Map<String, Value>, T = Option<TabState>> {
    // The writer's own fields, first: a common field of the same name
    // serializes after them and wins.
    #[serde(flatten)]
    pub fields: R,
    /// The note's exact id.
    pub note_id: String,
    /// The note's new version: a number, or a "<n>:part" token when the write was based on part of the tab or rebased. Write again with this version.
    #[schemars(schema_with = "shape::version")]
    pub version: Version,
    /// The tab the write changed.
    #[serde(flatten)]
    pub tab: T,
    /// true when this is the first result of a call resent with the same idempotency key; nothing was written again.
    pub replayed: bool,
}

impl<R> WriteResult<R> {
    /// The result of a write that changed a tab, with that tab required.
    pub(crate) fn of_tab(self) -> WriteResult<R, TabState> {
        let WriteResult { fields, note_id, version, tab, replayed } = self;
        WriteResult { fields, note_id, version, tab: tab.expect("a tab write names the tab it changed"), replayed }
    }
}

/// A keyed write's answer: its result, or, when the call was resent with
/// the same idempotency key, the first result as it was stored then, with
/// `replayed: true`.
#[derive(Debug, Clone)]
pub(crate) enum Replayable<T> {
    /// The result of this call.
    Fresh(T),
    /// The stored first result of the key, `replayed` set to true. It is
    /// answered exactly as stored (a record written by an older release
    /// keeps the fields it had then), so it stays a JSON object here.
    Replayed(Value),
}

impl<T> Replayable<T> {
    /// The fresh result mapped by `f`; a replay stays as stored.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Replayable<U> {
        match self {
            Replayable::Fresh(t) => Replayable::Fresh(f(t)),
            Replayable::Replayed(v) => Replayable::Replayed(v),
        }
    }
}

impl<T: Serialize> Replayable<T> {
    /// The answer as the JSON object it is sent as.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Replayable::Fresh(t) => serde_json::to_value(t).expect("a write result serializes to JSON"),
            Replayable::Replayed(v) => v,
        }
    }
}

impl<T: Serialize> Serialize for Replayable<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Replayable::Fresh(t) => t.serialize(s),
            Replayable::Replayed(v) => v.serialize(s),
        }
    }
}

/// A replay is the same tool's earlier result: the schema is `T`'s.
impl<T: JsonSchema> JsonSchema for Replayable<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod stored {
    //! A keyed write stores its result as the JSON text of the object it
    //! serializes to (keys sorted, no spaces), as before results were typed,
    //! and a replay answers exactly that object with `replayed: true`.
    use crate::env::{ActorType, Identity, Role, SimEnv};
    use crate::kv::TenantKv;
    use crate::model::{Head, decode};
    use crate::{call_tool_value, keys, rest};
    use cairn_kv::memory::MemoryStore;
    use serde_json::{Value, json};

    fn person() -> Identity {
        Identity { tenant: "t".into(), subject: "p".into(), display_name: "P".into(), actor_type: ActorType::Human, role: Role::Member }
    }

    /// Calls `tool` twice with `args`: the stored record of key `k` is the
    /// first answer's JSON text, and the second answer is it replayed.
    fn stored_then_replayed(store: &MemoryStore, env: &mut SimEnv, note: &str, tool: &str, args: Value, fields: &[&str]) {
        let first = call_tool_value(store, env, &person(), tool, args.clone()).unwrap();
        assert_eq!(first["isError"], false, "{first}");
        let answer = &first["structuredContent"];
        let keys_sent: Vec<&str> = answer.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys_sent, fields, "{tool}: {answer}");
        let kv = TenantKv::new(store, "t").unwrap();
        let head: Head = decode("head", &kv.get(&keys::note(note)).unwrap().unwrap()).unwrap();
        let raw = head.idem.iter().find(|r| r.key == args["idempotency_key"]).unwrap().result.get().to_string();
        assert_eq!(raw, serde_json::to_string(answer).unwrap(), "{tool}: stored as the sorted JSON text of the answer");
        let again = call_tool_value(store, env, &person(), tool, args).unwrap();
        let mut replayed = answer.clone();
        replayed["replayed"] = true.into();
        assert_eq!(again["structuredContent"], replayed, "{tool}");
    }

    #[test]
    fn keyed_writes_store_their_answer_as_sorted_json_and_replay_it() {
        let store = MemoryStore::new();
        let mut env = SimEnv::new(7);
        let created = rest::create_note(&store, &mut env, &person(), json!({"title": "n"})).unwrap();
        let note = created.body["note_id"].as_str().unwrap().to_string();
        let edit = json!({"note_id": note, "tab_id": "markdown", "expected_version": 1, "idempotency_key": "e1",
            "operation": "replace_text", "text": "hello\n"});
        let fields = ["content_hash", "note_id", "operation", "replayed", "tab_id", "tab_version", "version"];
        stored_then_replayed(&store, &mut env, &note, "edit_note_tab", edit, &fields);
        let tab = json!({"note_id": note, "expected_version": 2, "idempotency_key": "c1", "tab_type": "sheet"});
        let fields = ["content_hash", "label", "note_id", "replayed", "tab_id", "tab_type", "tab_version", "version"];
        stored_then_replayed(&store, &mut env, &note, "create_note_tab", tab, &fields);
        let source = json!({"note_id": note, "expected_version": 3, "idempotency_key": "s1", "title": "T", "url": "https://example.com/a"});
        let fields = ["already_attached", "content_hash", "note_id", "replayed", "source_id", "tab_id", "tab_version", "title", "url", "version"];
        stored_then_replayed(&store, &mut env, &note, "add_note_source", source, &fields);
        let append = json!({"note_id": note, "tab_id": "markdown", "expected_version": 4, "idempotency_key": "e2",
            "operation": "append_text", "text": "more", "rebase": true});
        let fields = ["content_hash", "note_id", "operation", "rebased", "replayed", "tab_id", "tab_version", "version"];
        stored_then_replayed(&store, &mut env, &note, "edit_note_tab", append, &fields);
    }

    #[test]
    fn a_source_already_attached_answers_without_the_tab() {
        let store = MemoryStore::new();
        let mut env = SimEnv::new(7);
        let created = rest::create_note(&store, &mut env, &person(), json!({"title": "n"})).unwrap();
        let note = created.body["note_id"].as_str().unwrap().to_string();
        let add = |key: &str, version: u64| json!({"note_id": note, "expected_version": version, "idempotency_key": key, "title": "T", "url": "https://example.com/a"});
        call_tool_value(&store, &mut env, &person(), "add_note_source", add("s1", 1)).unwrap();
        let again = call_tool_value(&store, &mut env, &person(), "add_note_source", add("s2", 2)).unwrap();
        let answer = &again["structuredContent"];
        let source_id = answer["source_id"].clone();
        assert_eq!(
            answer,
            &json!({"note_id": note, "source_id": source_id, "title": "T", "url": "https://example.com/a", "version": 2,
                "already_attached": true, "replayed": false})
        );
    }
}
