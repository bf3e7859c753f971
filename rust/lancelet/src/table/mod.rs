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
//! * [`write`]: create/append/overwrite, delete, restore; [`transaction`]
//!   builds manifests and checks conflicts, [`commit`] writes them
//!   atomically, [`tags`] creates/deletes tags; delete predicates are SQL
//!   filters ([`crate::expr`]);
//! * [`staged`]: distributed writes — workers stage fragments, one commit;
//! * [`optimize`]: compaction (plan, tasks, ReserveFragments + Rewrite);
//!   [`cleanup`]: removing old versions and the files only they use.

pub mod cleanup;
pub mod commit;
pub mod dataset;
pub mod deletion;
pub mod features;
pub mod fragment;
pub mod manifest;
pub mod optimize;
pub mod rowids;
pub mod scan;
pub mod staged;
pub mod tags;
pub mod transaction;
pub mod write;
pub mod write_schema;

pub use dataset::{Dataset, VersionRef};
pub use scan::{RowFilter, ScanOptions, Scanner};
