//! The notes core checked against a reference model, on random programs.
//!
//! Three actors (two agents, one person) run random programs over two notes:
//! reads, `replace_text` and `append_text` (some on stale versions, some with
//! `rebase`), new tabs, sources (some already attached), claims on a tab or
//! the whole note with renewals and releases, a simulated clock that lets
//! claims lapse, replays of earlier writes (a lost reply resent with its
//! key), keys reused for another payload, and faults injected into the store:
//! lost swaps, and swaps reported as written that wrote nothing (with the
//! commit check on, as for a store Cairn cannot vouch for).
//!
//! The model is a few lines per rule and knows nothing of the core's
//! records. After every step and at the end it checks: every acknowledged
//! write is there (each acknowledged version reads back as the model says,
//! the text at the end is the model's), a replay returns the first result
//! byte for byte (with `replayed: true`), note versions move by exactly one
//! per acknowledged write and never otherwise, tab ids are never handed out
//! twice, live claims of a note never overlap, nobody writes a target
//! another actor holds, and a write the model says may go through does (no
//! spurious conflicts). proptest shrinks a failing program to a short one.
use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use cairn_notes::env::Identity;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Op {
    Read { actor: usize, note: usize },
    Replace { actor: usize, note: usize },
    Append { actor: usize, note: usize, rebase: bool },
    Patch { actor: usize, note: usize, pick: usize },
    Restore { note: usize, pick: usize },
    NewTab { actor: usize, note: usize, sheet: bool },
    Source { actor: usize, note: usize, url: usize },
    Claim { actor: usize, note: usize, whole: bool, ttl: u64 },
    Renew { actor: usize, pick: usize },
    Release { actor: usize, pick: usize },
    Advance { seconds: u64 },
    Replay { pick: usize },
    ReuseKey { pick: usize },
    LoseSwaps { n: u32 },
    DropSwaps { n: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    let a = 0..3usize;
    let n = 0..2usize;
    prop_oneof![
        3 => (a.clone(), n.clone()).prop_map(|(actor, note)| Op::Read { actor, note }),
        3 => (a.clone(), n.clone()).prop_map(|(actor, note)| Op::Replace { actor, note }),
        3 => (a.clone(), n.clone(), any::<bool>()).prop_map(|(actor, note, rebase)| Op::Append { actor, note, rebase }),
        2 => (a.clone(), n.clone(), any::<usize>()).prop_map(|(actor, note, pick)| Op::Patch { actor, note, pick }),
        1 => (n.clone(), any::<usize>()).prop_map(|(note, pick)| Op::Restore { note, pick }),
        1 => (a.clone(), n.clone(), any::<bool>()).prop_map(|(actor, note, sheet)| Op::NewTab { actor, note, sheet }),
        1 => (a.clone(), n.clone(), 0..3usize).prop_map(|(actor, note, url)| Op::Source { actor, note, url }),
        2 => (a.clone(), n.clone(), any::<bool>(), 5..60u64).prop_map(|(actor, note, whole, ttl)| Op::Claim { actor, note, whole, ttl }),
        1 => (a.clone(), any::<usize>()).prop_map(|(actor, pick)| Op::Renew { actor, pick }),
        1 => (a.clone(), any::<usize>()).prop_map(|(actor, pick)| Op::Release { actor, pick }),
        1 => (1..90u64).prop_map(|seconds| Op::Advance { seconds }),
        2 => any::<usize>().prop_map(|pick| Op::Replay { pick }),
        1 => any::<usize>().prop_map(|pick| Op::ReuseKey { pick }),
        1 => (1..4u32).prop_map(|n| Op::LoseSwaps { n }),
        1 => (1..3u32).prop_map(|n| Op::DropSwaps { n }),
    ]
}

/// A claim as the model knows it.
#[derive(Debug, Clone)]
struct Held {
    id: String,
    holder: usize,
    note: usize,
    tab: Option<String>,
    expires: u64,
}

/// A write as it was sent, and what it answered the first time.
struct Sent {
    actor: usize,
    tool: &'static str,
    args: Value,
    first: Value,
}

/// What the programs exercised, by kind.
#[derive(Debug, Default, Clone)]
struct Seen(BTreeMap<&'static str, u64>);

impl Seen {
    fn add(&mut self, what: &'static str) {
        *self.0.entry(what).or_default() += 1;
    }
}

struct Model {
    seen_kinds: Seen,
    w: World,
    who: [Identity; 3],
    notes: [String; 2],
    version: [u64; 2],
    /// The markdown text at each version of each note.
    text: [BTreeMap<u64, String>; 2],
    /// What each actor last read: (version, text).
    seen: [[Option<(u64, String)>; 2]; 3],
    tab_ids: [BTreeSet<String>; 2],
    sources: [BTreeSet<usize>; 2],
    claims: Vec<Held>,
    sent: Vec<Sent>,
    next: u64,
    checks: u64,
}

fn overlaps(a: &Option<String>, b: &Option<String>) -> bool {
    a.is_none() || b.is_none() || a == b
}

fn append(text: &str, line: &str) -> String {
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
    out.push('\n');
    out
}

impl Model {
    fn new(confirm: bool) -> Model {
        let mut w = World::new();
        w.kv.faults().set_vouched(!confirm);
        let who = [agent("acme"), identity("acme", "gemini", cairn_notes::ActorType::Agent), human("acme")];
        let notes = [w.note(&who[2], "Model A", true), w.note(&who[2], "Model B", true)];
        let text = [BTreeMap::from([(1, String::new())]), BTreeMap::from([(1, String::new())])];
        Model {
            seen_kinds: Seen::default(),
            w,
            who,
            notes,
            version: [1, 1],
            text,
            seen: Default::default(),
            tab_ids: [
                BTreeSet::from(["markdown".to_string(), "files".into(), "sources".into()]),
                BTreeSet::from(["markdown".to_string(), "files".into(), "sources".into()]),
            ],
            sources: Default::default(),
            claims: Vec::new(),
            sent: Vec::new(),
            next: 0,
            checks: 0,
        }
    }

    fn now(&self) -> u64 {
        self.w.env.now_us
    }

    fn live(&self) -> impl Iterator<Item = &Held> {
        let now = self.now();
        self.claims.iter().filter(move |c| c.expires > now)
    }

    /// A live claim of another actor that a write by `actor` to `tab` of
    /// `note` (`None`: a note-level write) runs into.
    fn blocker(&self, actor: usize, note: usize, tab: Option<&str>) -> Option<Held> {
        let subject = &self.who[actor].subject;
        self.live()
            .find(|c| c.note == note && &self.who[c.holder].subject != subject && (c.tab.is_none() || (tab.is_some() && c.tab.as_deref() == tab)))
            .cloned()
    }

    fn call(&mut self, actor: usize, tool: &str, args: Value) -> Value {
        let who = self.who[actor].clone();
        self.w.call(&who, tool, args)["structuredContent"].clone()
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn read(&mut self, actor: usize, note: usize) {
        let id = self.notes[note].clone();
        let r = self.call(actor, "read_note_tab", json!({"note_id": id, "tab_id": "markdown"}));
        let v = r["version"].as_u64().expect("a read has a version");
        assert_eq!(v, self.version[note], "read: the note's version is the model's");
        let t = r["text"].as_str().unwrap().to_string();
        let latest = self.text[note].range(..=v).next_back().map(|(_, t)| t.clone()).unwrap();
        assert_eq!(t, latest, "read: the text is the last acknowledged one");
        self.seen[actor][note] = Some((v, t));
    }

    /// What the actor writes against: its last read, or a fresh one.
    fn base(&mut self, actor: usize, note: usize) -> (u64, String) {
        if self.seen[actor][note].is_none() {
            self.read(actor, note);
        }
        self.seen[actor][note].clone().unwrap()
    }

    /// Sends a keyed write; checks the claim and version rules on its answer
    /// and moves the model when it was acknowledged.
    fn write(&mut self, actor: usize, note: usize, tool: &'static str, args: Value, tab: Option<&str>, may_rebase: bool) -> Option<Value> {
        let expected = args["expected_version"].as_u64().unwrap();
        let blocker = self.blocker(actor, note, tab);
        let r = self.call(actor, tool, args.clone());
        self.sent.push(Sent { actor, tool, args, first: r.clone() });
        match r["error"].as_str() {
            None => {
                assert!(blocker.is_none(), "{tool} by actor {actor} went through a live claim {blocker:?}: {r}");
                if r["already_attached"] == true {
                    assert_eq!(num(&r["version"]), self.version[note], "an already attached source moves no version");
                    self.seen_kinds.add("already attached");
                    return Some(r);
                }
                assert!(expected == self.version[note] || may_rebase, "{tool} on stale version {expected} (now {}) was acknowledged: {r}", self.version[note]);
                assert_eq!(num(&r["version"]), self.version[note] + 1, "an acknowledged write moves the version by one: {r}");
                assert_eq!(r["replayed"], false);
                self.version[note] += 1;
                self.seen_kinds.add(if r["rebased"] == true { "rebased append" } else { "acknowledged write" });
                Some(r)
            }
            Some("claim_conflict") => {
                assert!(blocker.is_some(), "{tool} by actor {actor} refused for a claim the model does not have: {r}");
                self.seen_kinds.add("write refused by a claim");
                None
            }
            Some("version_conflict") => {
                assert!(blocker.is_none(), "a claim is checked before the version: {r}");
                assert_ne!(expected, self.version[note], "{tool} at the current version was refused as stale: {r}");
                self.seen_kinds.add("version conflict");
                None
            }
            Some(other) => panic!("{tool}: unexpected refusal {other}: {r}"),
        }
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Read { actor, note } => self.read(actor, note),
            Op::Replace { actor, note } => {
                let (v, t) = self.base(actor, note);
                let line = format!("replace {}", self.fresh());
                let text = append(&t, &line);
                let args = json!({"note_id": self.notes[note], "tab_id": "markdown", "expected_version": v,
                    "idempotency_key": format!("k{}", self.fresh()), "operation": "replace_text", "text": text});
                if self.write(actor, note, "edit_note_tab", args, Some("markdown"), false).is_some() {
                    self.text[note].insert(self.version[note], text);
                }
            }
            Op::Append { actor, note, rebase } => {
                let (v, _) = self.base(actor, note);
                let line = format!("append {}", self.fresh());
                let args = json!({"note_id": self.notes[note], "tab_id": "markdown", "expected_version": v, "rebase": rebase,
                    "idempotency_key": format!("k{}", self.fresh()), "operation": "append_text", "text": line});
                if self.write(actor, note, "edit_note_tab", args, Some("markdown"), rebase).is_some() {
                    let now = self.text[note].range(..self.version[note]).next_back().map(|(_, t)| t.clone()).unwrap();
                    self.text[note].insert(self.version[note], append(&now, &line));
                }
            }
            Op::Patch { actor, note, pick } => {
                // replace_in_text of one line the actor saw, at the version it read.
                let (v, t) = self.base(actor, note);
                let lines: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
                if lines.is_empty() {
                    return;
                }
                let old = format!("{}\n", lines[pick % lines.len()]);
                if t.matches(&old).count() != 1 {
                    return;
                }
                let new = format!("patched {}\n", self.fresh());
                let args = json!({"note_id": self.notes[note], "tab_id": "markdown", "expected_version": v,
                    "idempotency_key": format!("k{}", self.fresh()), "operation": "replace_in_text", "old_text": old, "new_text": new});
                if self.write(actor, note, "edit_note_tab", args, Some("markdown"), false).is_some() {
                    self.text[note].insert(self.version[note], t.replacen(&old, &new, 1));
                    self.seen_kinds.add("patch");
                }
            }
            Op::Restore { note, pick } => {
                // The person restores the markdown tab as it was at an earlier version.
                let from = 1 + (pick as u64 % self.version[note]);
                let expected = self.version[note];
                let blocker = self.blocker(2, note, Some("markdown"));
                let who = self.who[2].clone();
                let id = self.notes[note].clone();
                let key = format!("k{}", self.fresh());
                self.w.env.advance_us(10);
                let r = cairn_notes::rest::restore_tab(
                    &self.w.kv,
                    &mut self.w.env,
                    &who,
                    &id,
                    "markdown",
                    json!({"from_version": from, "expected_version": expected, "idempotency_key": key}),
                )
                .expect("no store failure");
                match r.status {
                    200 => {
                        assert!(blocker.is_none(), "a restore went through a live claim {blocker:?}: {}", r.body);
                        assert_eq!(r.body["version"], expected + 1, "{}", r.body);
                        self.version[note] += 1;
                        let then = self.text[note].range(..=from).next_back().map(|(_, t)| t.clone()).unwrap();
                        self.text[note].insert(self.version[note], then);
                        self.seen_kinds.add("restore");
                    }
                    409 if r.body["error"] == "claim_conflict" => assert!(blocker.is_some(), "restore refused for a claim the model does not have: {}", r.body),
                    other => panic!("restore: unexpected {other}: {}", r.body),
                }
            }
            Op::NewTab { actor, note, sheet } => {
                let v = self.version[note];
                let args = json!({"note_id": self.notes[note], "expected_version": v, "idempotency_key": format!("k{}", self.fresh()),
                    "tab_type": if sheet { "sheet" } else { "slides" }});
                if let Some(r) = self.write(actor, note, "create_note_tab", args, None, false) {
                    let id = r["tab_id"].as_str().unwrap().to_string();
                    assert!(self.tab_ids[note].insert(id.clone()), "tab id {id} handed out twice");
                }
            }
            Op::Source { actor, note, url } => {
                let v = self.version[note];
                let args = json!({"note_id": self.notes[note], "expected_version": v, "idempotency_key": format!("k{}", self.fresh()),
                    "url": format!("https://www.example.com/doc/{url}?utm_source=x"), "title": format!("Doc {url}")});
                if let Some(r) = self.write(actor, note, "add_note_source", args, None, false) {
                    let again = !self.sources[note].insert(url);
                    assert_eq!(r["already_attached"] == true, again, "a source is attached once: {r}");
                }
            }
            Op::Claim { actor, note, whole, ttl } => {
                let tab = (!whole).then(|| "markdown".to_string());
                let mut args = json!({"note_id": self.notes[note], "ttl_seconds": ttl});
                if let Some(t) = &tab {
                    args["tab_id"] = t.clone().into();
                }
                let mine = self.live().find(|c| c.note == note && c.holder == actor && c.tab == tab).cloned();
                let clash = self.live().find(|c| c.note == note && overlaps(&c.tab, &tab) && mine.as_ref().is_none_or(|m| m.id != c.id)).cloned();
                let r = self.call(actor, "claim_note", args);
                let now = self.now();
                match r["error"].as_str() {
                    None => {
                        assert!(clash.is_none(), "claim granted over a live overlapping claim {clash:?}: {r}");
                        let id = r["claim_id"].as_str().unwrap().to_string();
                        if let Some(m) = &mine {
                            assert_eq!(m.id, id, "claiming what you hold is a heartbeat on the same claim");
                            self.seen_kinds.add("heartbeat");
                        } else {
                            self.seen_kinds.add("claim granted");
                        }
                        if self.claims.iter().any(|c| c.note == note && overlaps(&c.tab, &tab) && c.expires <= now) {
                            self.seen_kinds.add("claim granted after a lapse");
                        }
                        self.claims.retain(|c| c.id != id);
                        self.claims.push(Held { id, holder: actor, note, tab, expires: now + ttl * SECOND });
                    }
                    Some("claim_conflict") => {
                        assert!(clash.is_some(), "claim refused with nothing in the way: {r}");
                        self.seen_kinds.add("claim refused");
                    }
                    Some(other) => panic!("claim_note: unexpected refusal {other}: {r}"),
                }
            }
            Op::Renew { actor, pick } | Op::Release { actor, pick } => {
                if self.claims.is_empty() {
                    return;
                }
                let c = self.claims[pick % self.claims.len()].clone();
                let live = c.expires > self.now();
                let renew = matches!(op, Op::Renew { .. });
                let tool = if renew { "renew_claim" } else { "release_claim" };
                let r = self.call(actor, tool, json!({"claim_id": c.id}));
                let now = self.now();
                let theirs = self.who[c.holder].subject != self.who[actor].subject;
                match (renew, r["error"].as_str()) {
                    (true, None) => {
                        assert!(live && !theirs, "renewed a claim that is lapsed ({}) or not the caller's ({theirs}): {r}", !live);
                        let ttl = r["ttl_seconds"].as_u64().unwrap();
                        self.claims.iter_mut().filter(|m| m.id == c.id).for_each(|m| m.expires = now + ttl * SECOND);
                    }
                    (false, None) => {
                        assert!(!theirs || r["released"] == false, "released someone else's claim: {r}");
                        assert_eq!(r["released"] == true, live, "released: {r}, live in the model: {live}");
                        self.claims.retain(|m| m.id != c.id);
                    }
                    (_, Some("forbidden")) => assert!(theirs, "refused the holder's own claim: {r}"),
                    (_, Some("not_found")) => assert!(!live || theirs, "a live claim was not found: {r}"),
                    (_, Some(other)) => panic!("{tool}: unexpected refusal {other}: {r}"),
                }
            }
            Op::Advance { seconds } => self.w.env.advance_us(seconds * SECOND),
            Op::Replay { pick } => {
                if self.sent.is_empty() {
                    return;
                }
                let i = pick % self.sent.len();
                let (actor, tool, args, first) = {
                    let s = &self.sent[i];
                    (s.actor, s.tool, s.args.clone(), s.first.clone())
                };
                if first.get("error").is_some() || first["already_attached"] == true {
                    return; // nothing was recorded for it: resending is a new attempt
                }
                let again = self.call(actor, tool, args);
                let mut expected = first;
                expected["replayed"] = true.into();
                assert_eq!(again, expected, "a replay returns the first result");
                self.seen_kinds.add("replay");
            }
            Op::ReuseKey { pick } => {
                let Some(i) = (0..self.sent.len()).map(|k| (pick + k) % self.sent.len()).find(|k| {
                    let s = &self.sent[*k];
                    s.tool == "edit_note_tab" && s.first.get("error").is_none()
                }) else {
                    return;
                };
                let (actor, first) = (self.sent[i].actor, self.sent[i].args.clone());
                let args = json!({"note_id": first["note_id"], "tab_id": first["tab_id"], "expected_version": first["expected_version"],
                    "idempotency_key": first["idempotency_key"], "operation": "replace_text", "text": format!("another payload {}", self.fresh())});
                let r = self.call(actor, "edit_note_tab", args);
                assert_eq!(r["error"], "idempotency_key_reused", "{r}");
                self.seen_kinds.add("key reused");
            }
            Op::LoseSwaps { n } => {
                self.w.kv.lose_next_swaps(n);
                self.seen_kinds.add("swaps lost");
            }
            Op::DropSwaps { n } => {
                self.w.kv.faults().drop_next_swaps(n);
                self.seen_kinds.add("swaps dropped");
            }
        }
        self.check_claims();
        self.checks += 1;
    }

    /// The live claims in the head are the model's, and never overlap.
    fn check_claims(&mut self) {
        for note in 0..2 {
            let id = self.notes[note].clone();
            let board = self.call(2, "list_claims", json!({"note_id": id}));
            let mut have: Vec<(String, Option<String>)> = board["claims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["claim_id"].as_str().unwrap().to_string(), c["tab_id"].as_str().map(str::to_string)))
                .collect();
            have.sort();
            let mut want: Vec<(String, Option<String>)> = self.live().filter(|c| c.note == note).map(|c| (c.id.clone(), c.tab.clone())).collect();
            want.sort();
            assert_eq!(have, want, "the board of note {note} is the model's live claims");
            for (i, a) in want.iter().enumerate() {
                for b in &want[i + 1..] {
                    assert!(!overlaps(&a.1, &b.1), "overlapping live claims {a:?} and {b:?}");
                }
            }
        }
    }

    /// Every acknowledged version reads back as the model says.
    fn check_history(&mut self) {
        for note in 0..2 {
            let id = self.notes[note].clone();
            let versions: Vec<(u64, String)> = self.text[note].iter().map(|(v, t)| (*v, t.clone())).collect();
            for (v, t) in versions {
                let r = self.call(2, "read_note_tab", json!({"note_id": id, "tab_id": "markdown", "at_version": v}));
                assert_eq!(r["text"].as_str(), Some(t.as_str()), "note {note} at version {v}: {r}");
            }
            self.read(2, note);
        }
    }
}

fn run(ops: &[Op], confirm: bool) -> Seen {
    let mut m = Model::new(confirm);
    for op in ops {
        m.step(op);
    }
    m.check_history();
    m.seen_kinds
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_keep_every_rule_on_a_store_that_loses_swaps(ops in proptest::collection::vec(op().prop_filter("no dropped swaps", |o| !matches!(o, Op::DropSwaps { .. })), 1..60)) {
        run(&ops, false);
    }
}

proptest! {
    // Each commit on a store that is not vouched for waits for its read-back (5 ms).
    #![proptest_config(ProptestConfig { cases: 40, max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_keep_every_rule_when_swaps_are_reported_written_and_were_not(ops in proptest::collection::vec(op(), 1..30)) {
        run(&ops, true);
    }
}

#[test]
fn the_model_catches_a_store_that_drops_acknowledged_writes_when_nobody_checks() {
    // The control: swaps reported as written that wrote nothing, on a store the
    // core takes at its word. The model must see the loss. (Every swap of the
    // write is dropped: its search index records go before its head.)
    let ops = [Op::Read { actor: 0, note: 0 }, Op::DropSwaps { n: 50 }, Op::Replace { actor: 0, note: 0 }];
    let caught = std::panic::catch_unwind(|| run(&ops, false)).is_err();
    assert!(caught, "a dropped acknowledged write went unnoticed");
}

#[test]
fn the_generated_programs_exercise_every_rule() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner =
        TestRunner::new_with_rng(Config::default(), proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha));
    let programs = proptest::collection::vec(op(), 30..60);
    let mut all = Seen::default();
    for _ in 0..150 {
        let ops = programs.new_tree(&mut runner).unwrap().current();
        for (k, n) in run(&ops, true).0 {
            *all.0.entry(k).or_default() += n;
        }
    }
    eprintln!("150 programs: {:?}", all.0);
    for kind in [
        "acknowledged write",
        "rebased append",
        "version conflict",
        "write refused by a claim",
        "claim granted",
        "heartbeat",
        "claim refused",
        "claim granted after a lapse",
        "replay",
        "key reused",
        "already attached",
        "swaps lost",
        "swaps dropped",
        "patch",
        "restore",
    ] {
        assert!(all.0.get(kind).copied().unwrap_or(0) >= 5, "the programs hardly ever reach {kind:?}: {:?}", all.0);
    }
}
