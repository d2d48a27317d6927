//! The application's hook on what its components answer. The host runs
//! components and counts what any host can see (requests, instances, store
//! calls); what an answer *means* (a tool call and its outcome, a refusal,
//! a caller to slow down) only the application knows. The host hands every
//! answer to [`Answers`], set once in [`crate::instance::App`], and never
//! reads an application's paths, headers or values itself.
//!
//! [`CairnAnswers`] is Cairn's: a tool's answer over HTTP (`/tools/<tool>`)
//! or composed (`cairn:platform/tool`) is counted by tool and outcome, and a
//! refusal the front door named (`cairn-refused`) is counted and, for a
//! caller over a budget, held back.

use std::time::Duration;

use hyper::HeaderMap;
use wasmtime::component::Val;

/// What the host does with an answer besides sending it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Hold the answer back this long first (a caller to slow down).
    pub hold: Option<Duration>,
}

/// The application's reading of its components' answers.
pub trait Answers: Send + Sync {
    /// A component served a request for `path` with `status` and `headers`,
    /// whoever asked (a client, or another component over HTTP).
    fn served(&self, path: &str, status: u16, headers: &HeaderMap);

    /// An answer with `headers` is about to leave for a client (a
    /// component's, or the host's own, as for `/metrics`): what to do first.
    fn answering(&self, headers: &HeaderMap) -> Verdict;

    /// A composed call from one component into its dependency `import`
    /// (through the export `export`) returned `results`.
    fn composed(&self, import: &str, export: &str, results: &[Val]);
}

/// A caller over a budget gets its answers this late: its connection carries
/// no more than a few calls a second, holding neither an instance nor a
/// permit meanwhile.
pub const OVER_BUDGET_DELAY: Duration = Duration::from_millis(250);

/// Cairn's reading (see the module docs).
pub struct CairnAnswers;

impl Answers for CairnAnswers {
    fn served(&self, path: &str, status: u16, headers: &HeaderMap) {
        if let Some(tool) = path.strip_prefix("/tools/").and_then(cairn_notes::tools::find) {
            let refusal = headers.get("cairn-tool-refusal").and_then(|v| v.to_str().ok());
            crate::metrics::tool_call(tool.name, "http", status, refusal);
        }
    }

    fn answering(&self, headers: &HeaderMap) -> Verdict {
        let refused = headers.get(cairn_door::refusal::REFUSED_HEADER).and_then(|v| v.to_str().ok());
        let Some(code) = refused.and_then(cairn_door::Code::parse) else { return Verdict::default() };
        crate::metrics::refused(code.as_str());
        use cairn_door::Code;
        let over_budget = matches!(code, Code::RateLimited | Code::TooManyRefusals | Code::TooManyBodiesFromAddress);
        Verdict { hold: over_budget.then_some(OVER_BUDGET_DELAY) }
    }

    fn composed(&self, import: &str, export: &str, results: &[Val]) {
        // A Cairn tool answers `result<answer, failure>`: counted by tool and outcome.
        if export.starts_with("cairn:platform/tool")
            && let Some((status, refusal)) = results.first().and_then(tool_answer)
        {
            crate::metrics::tool_call(&import.replace('-', "_"), "composed", status, refusal);
        }
    }
}

/// What a `cairn:platform/tool` call returned, as the HTTP door would
/// answer it: the status, and the refusal's code of a refusal.
fn tool_answer(v: &Val) -> Option<(u16, Option<&str>)> {
    match v {
        Val::Result(Ok(Some(answer))) => {
            let Val::Record(fields) = answer.as_ref() else { return None };
            let refusal = fields.iter().find(|(name, _)| name == "refusal").and_then(|(_, v)| match v {
                Val::Option(Some(code)) => match code.as_ref() {
                    Val::String(s) => Some(s.as_str()),
                    _ => None,
                },
                _ => None,
            });
            Some((200, refusal))
        }
        Val::Result(Err(Some(failure))) => match failure.as_ref() {
            Val::Variant(case, _) => Some((
                match case.as_str() {
                    "invalid-arguments" => 400,
                    "unavailable" => 503,
                    _ => 500,
                },
                None,
            )),
            _ => None,
        },
        _ => None,
    }
}
