//! Stored records (the note head, its tabs, idempotency and history records, attachment
//! metadata) and small helpers: hashing, canonical JSON, ids, timestamps.
//!
//! [`Head::decode`] checks, in every build, the structure every commit keeps: tab ids, claim
//! ids and idempotency keys unique; history in rising versions up to the note's version;
//! agents' visibility not in the future. Every head is read through it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::env::{ActorType, Env, Identity};
use crate::refusal::Failure;

/// The kind of a tab. `markdown`, `files` and `sources` exist once per note with fixed ids;
/// `slides` and `sheet` tabs are created on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TabKind {
    Markdown,
    Files,
    Sources,
    Slides,
    Sheet,
}

impl TabKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TabKind::Markdown => "markdown",
            TabKind::Files => "files",
            TabKind::Sources => "sources",
            TabKind::Slides => "slides",
            TabKind::Sheet => "sheet",
        }
    }
}

/// Who did something, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Who {
    pub subject: String,
    pub name: String,
    pub actor_type: ActorType,
}

impl Who {
    pub fn of(id: &Identity) -> Self {
        Who { subject: id.subject.clone(), name: id.display_name.chars().take(100).collect(), actor_type: id.actor_type }
    }

    /// The provenance form: `"Name (subject, agent)"`.
    pub fn label(&self) -> String {
        let kind = match self.actor_type {
            ActorType::Agent => "agent",
            ActorType::Human => "human",
        };
        format!("{} ({}, {kind})", self.name, self.subject)
    }
}

/// One tab in the head. Its content lives in immutable blobs listed in `blobs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Tab {
    pub id: String,
    pub kind: TabKind,
    pub label: String,
    pub version: u64,
    pub content_hash: String,
    pub blobs: Vec<String>,
    /// Bytes of a markdown tab's text (0 in records written before it was kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub size: u64,
    pub created_at: u64,
    pub author: Who,
    pub updated_at: u64,
    pub updated_by: Who,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A claim (lease) on a note or one of its tabs, held in the head so that the claim check,
/// the version check and the commit are one CAS. A claim is live while `now < expires_at`;
/// a lapsed claim is ignored by every check and read, and dropped by the next commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Claim {
    pub claim_id: String,
    /// `None`: the whole note.
    pub tab_id: Option<String>,
    /// One section of the markdown tab `tab_id` (an id of
    /// [`crate::sections::outline`]); `None`: the whole target. Its bytes are
    /// enforced on every commit ([`crate::section_claims`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_id: Option<String>,
    pub holder: Who,
    pub since: u64,
    pub expires_at: u64,
    /// The ttl the claim was granted (or last renewed) with, in µs: renew's default.
    #[serde(default)]
    pub ttl_us: u64,
    /// How often the claim was renewed (heartbeats included).
    #[serde(default)]
    pub renewals: u64,
    /// Ephemeral claim notes: stored with the claim, gone with it, never in history.
    #[serde(default)]
    pub notes: Vec<ClaimNote>,
}

impl Claim {
    pub fn live(&self, now: u64) -> bool {
        now < self.expires_at
    }
}

/// A short note the holder posts on its claim ("rewriting the intro, hands off").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ClaimNote {
    pub at: u64,
    pub text: String,
}

/// A claim that ended recently (kept so that a second release can say why it ended).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct EndedClaim {
    pub claim_id: String,
    /// `released`, `expired`, `forced` or `tab_deleted`.
    pub reason: String,
    pub at: u64,
}

/// A stored idempotency record: the key, the payload fingerprint and the first result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IdemRecord {
    pub key: String,
    pub fp: String,
    pub at: u64,
    /// The write's result as it was answered, kept as its JSON text: every
    /// read of a head carries one, and only a replay needs it parsed.
    pub result: Box<serde_json::value::RawValue>,
}

impl IdemRecord {
    /// The result, parsed.
    pub fn result(&self) -> Result<Value, Failure> {
        serde_json::from_str(self.result.get()).map_err(|e| Failure::Corrupt(format!("idempotency record {}: {e}", self.key)))
    }
}

/// One committed write: kept in the head while recent, then spilled as an audit record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HistoryEntry {
    pub version: u64,
    pub at: u64,
    pub by: Who,
    pub action: String,
    pub tab_id: Option<String>,
    pub content_hash: Option<String>,
    /// The tab as this commit left it (its content refs, label, version), so
    /// the version stays readable and restorable; for a deleted tab, the
    /// tab as it was when deleted. `None` in entries written before history
    /// kept snapshots, and for note-level changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<Tab>,
    /// Whether this commit deleted `tab`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Bytes of content this commit stored (its new blobs; 0 in entries
    /// written before it was kept): what the note's count gives back when
    /// the version leaves retention.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
}

/// The note head, `note/<note_id>`: the commit point of every write to the note.
/// `version` is the note version (a counter, never a timestamp) moved by content writes;
/// `rev` moves with every commit of the head, claim changes included.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Head {
    pub note_id: String,
    pub title: String,
    pub approved_for_agents: bool,
    /// The note version since which the note has been approved for agents
    /// without a break: an agent sees nothing of an earlier version (see
    /// [`Head::visible_from`]). Set by the commit that approves the note; a
    /// head written before it was kept gets it at its next commit (the
    /// version it was at then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_since: Option<u64>,
    pub version: u64,
    pub created_at: u64,
    pub author: Who,
    pub updated_at: u64,
    pub updated_by: Who,
    /// Counter behind tab ids; only ever grows, so an id is never handed out twice.
    pub tab_seq: u64,
    /// Counter behind attachment ids.
    pub attach_seq: u64,
    pub tabs: Vec<Tab>,
    /// Live claims (and lapsed ones not yet dropped by a commit).
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Counter behind claim ids; only ever grows, so a claim id is never handed out twice.
    #[serde(default)]
    pub claim_seq: u64,
    /// The most recently ended claims (at most `claims::ENDED_KEPT`).
    #[serde(default)]
    pub ended: Vec<EndedClaim>,
    /// Presence-index bound: `Some(d)` promises that the tenant's claim index lists this
    /// note with a due time ≤ d, and d ≤ the expiry of every claim here. `None`: no claim
    /// was added since the sweep last took the note off the index.
    #[serde(default)]
    pub claims_due: Option<u64>,
    /// The head record's own revision: grows with every commit of the head (writes, claim
    /// changes, sweeps), so a store comparing values still sees every change.
    #[serde(default)]
    pub rev: u64,
    pub idem: Vec<IdemRecord>,
    /// How many idempotency records were moved out of the head to their own keys.
    pub idem_spilled: u64,
    pub history: Vec<HistoryEntry>,
    /// Versions below this one are past retention and swept: their entries
    /// are gone, but for the bases (see [`crate::history_sweep`]). 0: never swept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub history_floor: u64,
    /// For each tab an entry below the floor changed (and did not delete):
    /// the version of its newest such entry, kept by the sweep, so a retained
    /// version of a tab unchanged since then still reads.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub history_bases: std::collections::BTreeMap<String, u64>,
    /// The generation new content blobs are written under
    /// (`blob/<note_id>/<generation>/…`); each sweep moves it on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blob_gen: u64,
    /// Bytes of content the note stores, every retained version counted:
    /// each commit adds what it stored, the history sweep takes back what
    /// leaves retention (see [`crate::env::Quotas`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stored_bytes: u64,
    /// Commit markers of the latest commits that confirm themselves (see
    /// [`crate::head`]), newest last, at most [`crate::head::MARKERS_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<String>,
}

impl Head {
    /// Decodes a stored head and checks the structure every commit keeps
    /// (see the module docs), in every build: a head that breaks a rule was
    /// not written by a commit (a writer's bug or a damaged store), and is
    /// refused as `corrupt_record` naming the rule instead of being acted on.
    pub fn decode(bytes: &[u8]) -> Result<Head, Failure> {
        let head: Head = decode("note head", bytes)?;
        let broken = |rule: &str| Err(Failure::Corrupt(format!("note head {}: {rule}", head.note_id)));
        if !unique(head.tabs.iter().map(|t| t.id.as_str())) {
            return broken("tab ids repeat");
        }
        if !unique(head.claims.iter().map(|c| c.claim_id.as_str())) {
            return broken("claim ids repeat");
        }
        if !unique(head.idem.iter().map(|r| r.key.as_str())) {
            return broken("idempotency keys repeat");
        }
        if !head.history.windows(2).all(|w| w[0].version < w[1].version) || head.history.last().is_some_and(|e| e.version > head.version) {
            return broken("history out of order or past the note's version");
        }
        if head.agents_since.is_some_and(|v| v > head.version) {
            return broken("visible to agents from a future version");
        }
        Ok(head)
    }

    pub fn tab_index(&self, tab_id: &str) -> Option<usize> {
        self.tabs.iter().position(|t| t.id == tab_id)
    }

    pub fn tab(&self, kind: TabKind) -> Option<&Tab> {
        self.tabs.iter().find(|t| t.kind == kind)
    }

    /// Whether `who` may see this note: agents only see notes approved for agents.
    pub fn visible_to(&self, who: &Identity) -> bool {
        who.actor_type == ActorType::Human || self.approved_for_agents
    }

    /// The oldest version of this note `who` may see, by any road (a past
    /// version, history, a diff, a rebase over it): 1 for people; for an
    /// agent, the version since which the note has been approved for agents
    /// without a break, so nothing a person wrote before approving reaches
    /// an agent. A head that predates the record counts from its current
    /// version (its next commit records that version).
    pub fn visible_from(&self, who: &Identity) -> u64 {
        match who.actor_type {
            ActorType::Human => 1,
            ActorType::Agent => self.agents_since.unwrap_or(self.version),
        }
    }
}

/// A source attachment (metadata only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Source {
    pub source_id: String,
    pub title: String,
    pub url: String,
    pub added_at: u64,
    pub added_by: Who,
}

/// A file attachment (metadata only: never content, never a link).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileMeta {
    pub file_id: String,
    pub name: String,
    pub media_type: String,
    pub size_bytes: u64,
    pub added_at: u64,
    pub added_by: Who,
}

/// Lower-case hex SHA-256.
pub(crate) fn sha_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of lower-case or upper-case hex, `None` if it is not hex.
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// JSON with object keys sorted at every level, whatever the map implementation.
pub(crate) fn canonical_json(v: &Value) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    walk(&m[*k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    walk(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    walk(v, &mut out);
    out
}

/// Whether no two of `ids` are equal.
fn unique<'a>(mut ids: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    ids.all(|id| seen.insert(id))
}

pub(crate) fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("records always serialize")
}

pub(crate) fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(bytes).map_err(|e| Failure::Corrupt(format!("{what}: {e}")))
}

/// `n` in base 36, lower case.
pub(crate) fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

/// Eight random base-36 characters.
pub(crate) fn rand8(env: &mut dyn Env) -> String {
    let s = base36(env.random_u64());
    let s = format!("{s:0>8}");
    s[s.len() - 8..].to_string()
}

/// An operation's nonce: 16 random base-36 characters (commit markers).
pub(crate) fn nonce(env: &mut dyn Env) -> String {
    format!("{}{}", rand8(env), rand8(env))
}

/// A new note id: `note-<UUIDv7>` (RFC 9562: the millisecond time first,
/// then 74 random bits, so ids sort by creation and no two writers create
/// the same head key). Ids of the earlier form (`note-<base36 time>-<random>`)
/// stay valid: an id is only ever compared, never parsed.
pub(crate) fn new_note_id(env: &mut dyn Env) -> String {
    let ms = env.now_us() / 1000;
    let mut random = [0u8; 10];
    random[..8].copy_from_slice(&env.random_u64().to_le_bytes());
    random[8..].copy_from_slice(&env.random_u64().to_le_bytes()[..2]);
    let id = uuid::Builder::from_unix_timestamp_millis(ms, &random).into_uuid();
    assert_eq!(id.get_version_num(), 7);
    format!("note-{}", id.hyphenated())
}

/// Microseconds since the epoch as RFC 3339 UTC with microseconds.
pub fn rfc3339(us: u64) -> String {
    let secs = us / 1_000_000;
    let (days, sod) = ((secs / 86_400) as i64, secs % 86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), in 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z", sod / 3600, sod / 60 % 60, sod % 60, us % 1_000_000)
}

/// The provenance block of a tab.
pub(crate) fn tab_provenance(t: &Tab) -> Value {
    json!({
        "author": t.author.label(),
        "updated_at": rfc3339(t.updated_at),
        "updated_by": t.updated_by.label(),
        "content_hash": t.content_hash,
    })
}

/// The listing form of a tab (`list_note_tabs`, REST note reads).
pub(crate) fn tab_summary(t: &Tab) -> Value {
    json!({
        "tab_id": t.id,
        "type": t.kind.as_str(),
        "label": t.label,
        "tab_version": t.version,
        "content_hash": t.content_hash,
        "provenance": tab_provenance(t),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339(1_767_225_600_000_000), "2026-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339(951_782_400_000_001), "2000-02-29T00:00:00.000001Z");
        assert_eq!(rfc3339(1_709_251_199_500_000), "2024-02-29T23:59:59.500000Z");
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let v: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,{"y":2,"x":1}],"c":"s"}}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":{"c":"s","d":[1,{"x":1,"y":2}]},"b":1}"#);
    }
}
