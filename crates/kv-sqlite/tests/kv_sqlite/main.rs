//! The SQLite backend's guarantees: the whole conformance suite, and one
//! module per property (group commit, checkpoints, the row cache, a full disk).

mod common;

mod cache_is_never_stale;
mod checkpoints_and_readers;
mod first_layout_is_migrated;
mod full_disk;
mod group_commit;
mod sqlite_conformance;
mod writes_wait_only_when_they_wait_for_the_disk;
