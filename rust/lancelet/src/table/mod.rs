//! The Lance table format: datasets made of versions (manifests), each a
//! list of fragments whose rows live in data files, minus deletion files,
//! optionally with stable row ids.
//!
//! * [`manifest`]: `_versions/` naming (V1/V2), listing, file framing;
//! * [`features`]: reader/writer feature flags;
//! * [`fragment`]: fragments, data files, field-id matching, missing columns;
//! * [`deletion`]: `.arrow`/`.bin` deletion files → masks;
//! * [`rowids`]: RowIdSequence and the row id → address index;
//! * [`dataset`]: opening a version, history, tags;
//! * [`scan`]: streaming scans, `take`, `_rowid`/`_rowaddr`;
//! * [`write`]: create/append/overwrite, restore; [`transaction`]
//!   builds manifests, [`conflict`] is the one table of what to do about
//!   concurrent commits (rebase / re-run / refuse), [`commit`] writes
//!   manifests atomically, [`tags`] creates/deletes tags;
//! * [`properties`]: the one shape of an operation — what every one takes
//!   ([`properties::CommitProperties`]) and returns ([`properties::Committed`]);
//!   [`hooks`]: fault injection for tests, outside every signature;
//! * [`ops`]: operations on existing rows (delete, update, merge_insert),
//!   one file each, re-run on conflicts by [`ops::retry`]; predicates and
//!   values are SQL ([`crate::expr`]);
//! * [`row_meta`]: writing row id and version sequences (stable row ids);
//! * [`staged`]: distributed writes — workers stage fragments, one commit;
//! * [`evolve`]: add/drop/alter columns and `merge` (Merge/Project commits);
//! * [`optimize`]: compaction (plan, tasks, ReserveFragments + Rewrite);
//!   [`cleanup`]: removing old versions and the files only they use;
//! * [`branches`]: reading the branch records pylance writes;
//! * [`blobs`]: blob columns (v1, v2): descriptors, bytes, sidecars.
//! * [`clone`]: shallow and deep clones of a version; [`bases`]: the
//!   base paths of multi-base datasets.

pub mod apply_rewrite;
pub mod bases;
pub mod blobs;
pub mod branches;
pub mod cleanup;
pub mod clone;
pub mod commit;
pub mod commit_store;
pub mod conflict;
pub mod dataset;
pub mod deletion;
mod deletion_arrow;
pub mod evolve;
pub mod explain;
pub mod features;
pub mod file_cache;
pub mod filter_index;
pub mod fragment;
pub mod fts;
pub mod hooks;
pub mod index_section;
pub mod indexed;
pub mod manifest;
pub mod nearest;
pub mod ops;
pub mod optimize;
pub mod properties;
pub mod row_meta;
pub mod rowids;
pub mod scan;
pub(crate) mod search_output;
mod select;
pub mod staged;
pub mod tags;
pub mod transaction;
pub mod write;
pub mod write_schema;

pub use dataset::{Dataset, VersionRef};
pub use properties::{CommitProperties, Committed};
pub use scan::{RowFilter, ScanOptions, Scanner};
