//! `create_note_tab`: a new Slides or Sheet tab with an id that is never reused.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Call, KEY_RULE, REPLACES, WRITE_SCOPE};
use crate::args::{MAX_LABEL_CHARS, SlideIn, check_chars, check_id, check_key, check_outline, parse};
use crate::content::{Slide, store_slides};
use crate::edit::{MAX_TABS, new_tab};
use crate::model::{TabKind, rand8};
use crate::refusal::{Out, Refusal};
use crate::sheet::{Manifest, store_manifest};
use crate::write::{Change, Plan, Target, commit_as, note_scope};
use crate::write_results::{Replayable, TabState, WriteFields, WriteResult};

tool!("create_note_tab", "Create a note tab", WRITE_SCOPE, REPLACES);

/// The tab types `create_note_tab` can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum NewTabType {
    Slides,
    Sheet,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    #[schemars(schema_with = "crate::schema::shape::note_id")]
    note_id: String,
    /// The note version from list_note_tabs.
    #[schemars(schema_with = "crate::schema::shape::version")]
    expected_version: crate::version::Version,
    /// Names this one new tab; resend a lost call with the same key.
    #[schemars(schema_with = "crate::schema::shape::key")]
    idempotency_key: String,
    tab_type: NewTabType,
    /// Shown name; labels may repeat, so never use one as an ID.
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(with = "String", length(min = 1, max = MAX_LABEL_CHARS))]
    label: Option<String>,
    #[serde(default, deserialize_with = "crate::args::present")]
    #[schemars(schema_with = "crate::schema::shape::outline")]
    slides: Option<Vec<SlideIn>>,
}

impl Args {
    fn check(&self) -> Result<(), Refusal> {
        check_id("note_id", &self.note_id)?;
        check_key(&self.idempotency_key)?;
        if let Some(l) = &self.label {
            check_chars("label", l, 1, MAX_LABEL_CHARS)?;
        }
        if let Some(s) = &self.slides {
            if self.tab_type != NewTabType::Slides {
                return Err(Refusal::invalid("slides", "slides is only used with tab_type slides"));
            }
            check_outline(s)?;
        }
        Ok(())
    }
}

fn description() -> String {
    format!(
        "Create a new Slides or Sheet tab in a note, based on the version from list_note_tabs; returns the \
                 exact new tab_id for later edits. An optional outline (slides: 1-20 items of only title, body, \
                 notes) fills a Slides tab in one call. A repeated idempotency key returns the first tab: resend a \
                 lost call with the same key. On version_conflict nothing was created: list the tabs again, then \
                 create with the new version and a new key if the tab is still needed. {KEY_RULE}"
    )
}

fn input_schema() -> Value {
    let mut schema = crate::schema::input::<Args>();
    schema["allOf"] = json!([{
        "if": {"properties": {"tab_type": {"const": "sheet"}}, "required": ["tab_type"]},
        "then": {"not": {"required": ["slides"]}},
    }]);
    schema
}

/// What the new tab's result says besides the versions.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct NewTab {
    /// The new tab's type.
    tab_type: NewTabType,
    /// The new tab's label (labels may repeat: use tab_id).
    label: String,
}

impl WriteFields for NewTab {}

/// The new tab: its exact tab_id for later edits, its tab_version and
/// content hash, and the note's new version; a call resent with the same
/// idempotency key answers its first result again, with replayed: true.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(transparent)]
struct Output(Replayable<WriteResult<NewTab, TabState>>);

fn run(c: &mut Call, args: Value) -> Out<Output> {
    let a: Args = parse(args)?;
    a.check()?;
    let mut payload = serde_json::to_value(&a).expect("arguments serialize");
    payload.as_object_mut().expect("object").remove("idempotency_key");
    let spec = note_scope("create_note_tab", true, &a.note_id, Some(&a.idempotency_key), a.expected_version, &payload);
    let answer = commit_as(
        c.kv,
        c.env,
        c.who,
        &spec,
        |_| Ok(Plan::Write(Target::Note)),
        |head, _, ctx| {
            if head.tabs.len() >= MAX_TABS {
                return Err(Refusal::too_large("tab_type", format!("a note holds at most {MAX_TABS} tabs")).into());
            }
            let (kind, default_label) = match a.tab_type {
                NewTabType::Slides => (TabKind::Slides, "Slides"),
                NewTabType::Sheet => (TabKind::Sheet, "Sheet"),
            };
            head.tab_seq += 1;
            let id = format!("{}-{}-{}", kind.as_str(), head.tab_seq, rand8(ctx.env));
            let label = a.label.clone().unwrap_or_else(|| default_label.to_string());
            let mut tab = new_tab(id, kind, label.clone(), ctx.who, ctx.now);
            let content = match (kind, &a.slides) {
                (TabKind::Slides, Some(list)) => Some(store_slides(ctx.kv, list.iter().map(Slide::from).collect(), "slides")?),
                (TabKind::Sheet, _) => Some(store_manifest(ctx.kv, &Manifest::new())?),
                _ => None,
            };
            if let Some((hash, blobs)) = content {
                tab.content_hash = hash;
                tab.blobs = blobs;
            }
            head.tabs.push(tab);
            let result = NewTab { tab_type: a.tab_type, label };
            Ok(Change { action: "create_tab", tab: Some(head.tabs.len() - 1), removed_tab: None, result })
        },
    )?;
    Ok(Output(answer.map(WriteResult::of_tab)))
}
