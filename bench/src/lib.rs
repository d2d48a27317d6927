//! `cairn-bench`: Cairn's benchmarks and the seed posts' experiments. Every
//! one prints ratios against a baseline measured in the same run; none is a
//! timed test. Lives outside the server: the `cairn` binary links none of it.
//!
//! - [`stack`]: the application in this process with bench tokens, an HTTP
//!   client, seeded notes, the closed-loop client (whole stack or core natively).
//! - [`measure`]: series, percentiles, a GET load generator, printed tables.
//! - [`host`]: the trivial component through the host against native hyper.
//! - [`notes`]: edits and reads through the stack against the core natively.
//! - [`experiments`]: one file per experiment, picked by [`experiments::Experiment`].
//! - [`charts`]: SVG charts of the experiments for `docs/results.md`.

pub mod charts;
pub mod experiments;
pub mod host;
pub mod measure;
pub mod notes;
pub mod stack;
