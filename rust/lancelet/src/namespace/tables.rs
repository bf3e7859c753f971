//! Table operations: lookups, listing, declare, create, register,
//! deregister, drop, rename.
//!
//! A table is found (in this order) as a `__manifest` row of type `table`
//! or, for root tables when directory listing is on, as a `<name>.lance`
//! directory holding an object, no `.lance-deregistered` marker, and not
//! claimed as the location of any manifest row. It is *declared only*
//! while its location holds no table version.
//!
//! Creating writes the data first, at a location nobody else uses (a fresh
//! `<hash>_<id>` directory, or `<name>.lance` claimed with a
//! put-if-not-exists `.lance-reserved` marker), then commits the row;
//! losing the id to another writer removes what was written. Removing a
//! row whose location is a root `<name>.lance` directory first writes
//! `.lance-deregistered` there, so a crash between the steps cannot bring
//! the table back through directory listing.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::catalog::{self, NewRow, Snapshot};
use super::listing::{dir_state, has_versions, put_marker, remove_marker, DEREGISTERED_MARKER, RESERVED_MARKER};
use super::names::{below_root, check_id, check_location, check_table_id, object_id, v1_table_dir, v1_table_name, v2_table_dir};
use super::{backoff, invalid, show, unsupported, DirectoryNamespace, NsError, NsResult, MAX_ATTEMPTS};
use crate::error::{Error, Result};
use crate::table::write::{write_dataset, WriteMode, WriteParams};

/// What to do when the object being created already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CreateMode {
    /// Fail with AlreadyExists.
    #[default]
    Create,
    /// Keep the existing one and succeed.
    ExistOk,
    /// Replace it.
    Overwrite,
}

impl CreateMode {
    /// Parse `create` / `exist_ok` / `overwrite` (case-insensitive,
    /// PascalCase or snake_case, as the namespace REST spec allows).
    pub fn parse(mode: Option<&str>) -> Result<Self> {
        let Some(m) = mode else { return Ok(CreateMode::Create) };
        match m.replace('_', "").to_ascii_lowercase().as_str() {
            "create" => Ok(CreateMode::Create),
            "existok" => Ok(CreateMode::ExistOk),
            "overwrite" => Ok(CreateMode::Overwrite),
            _ => Err(Error::invalid_input(format!("unknown mode {m:?} (expected create, exist_ok or overwrite)"))),
        }
    }
}

/// A table as the namespace knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// Its id.
    pub id: Vec<String>,
    /// Its directory relative to the root.
    pub location: String,
    /// Its directory as a URI (local: absolute path).
    pub uri: String,
    /// Its properties (a JSON object), if any.
    pub metadata: Option<String>,
    /// Whether only declared (no version written yet), when asked for.
    pub only_declared: Option<bool>,
}

/// Where a table was found.
#[derive(Debug, Clone)]
pub(super) struct Found {
    /// Its `__manifest` row, when it has one.
    pub row: Option<usize>,
    /// Its location (checked).
    pub location: String,
    /// Its properties.
    pub metadata: Option<String>,
}

fn parent(id: &[String]) -> &[String] {
    &id[..id.len().saturating_sub(1)]
}

fn already(id: &[String]) -> NsError {
    NsError::TableAlreadyExists(format!("table {} already exists", show(id)))
}

fn not_found(id: &[String]) -> NsError {
    NsError::TableNotFound(format!("table {} does not exist", show(id)))
}

fn lost_races(id: &[String]) -> NsError {
    NsError::Core(Error::Conflict { what: format!("gave up on table {} after {MAX_ATTEMPTS} lost commit races", show(id)) })
}

/// A root-level `<name>.lance` location (the V1 naming).
fn is_v1_dir(location: &str) -> bool {
    !location.contains('/') && v1_table_name(location).is_some()
}

impl DirectoryNamespace {
    /// Whether a manifest row uses `location`.
    fn claimed(&self, snap: &Snapshot, location: &str, except: Option<usize>) -> bool {
        snap.entries.iter().enumerate().any(|(i, e)| Some(i) != except && e.location.as_deref().map(|l| l.trim_end_matches('/')) == Some(location))
    }

    /// Find table `id`; `ignore_dir` is a location whose V1 directory does
    /// not count (the one this operation is creating).
    pub(super) fn find_table_except(&self, snap: &Snapshot, id: &[String], ignore_dir: Option<&str>) -> NsResult<Option<Found>> {
        if self.manifest {
            if let Some(i) = snap.find(&object_id(id), catalog::TABLE) {
                let e = &snap.entries[i];
                let loc = e.location.as_deref().ok_or_else(|| invalid(format!("the manifest row of table {} has no location", show(id))))?;
                let location = check_location(loc).map_err(|e| NsError::Core(e.context(format!("manifest row of table {}", show(id)))))?;
                return Ok(Some(Found { row: Some(i), location, metadata: e.metadata.clone() }));
            }
        }
        if self.dir_listing && id.len() == 1 {
            let dir = v1_table_dir(&id[0]);
            if Some(dir.as_str()) != ignore_dir && !self.claimed(snap, &dir, None) && dir_state(&self.root.child(&dir)?)?.is_table() {
                return Ok(Some(Found { row: None, location: dir, metadata: None }));
            }
        }
        Ok(None)
    }

    /// Find table `id`.
    pub(super) fn find_table(&self, snap: &Snapshot, id: &[String]) -> NsResult<Option<Found>> {
        self.find_table_except(snap, id, None)
    }

    fn info(&self, id: &[String], found: &Found, check_declared: bool) -> NsResult<TableInfo> {
        let only_declared = if check_declared { Some(!has_versions(&below_root(&self.root, &found.location)?)?) } else { None };
        Ok(TableInfo {
            id: id.to_vec(),
            location: found.location.clone(),
            uri: self.location_uri(&found.location),
            metadata: found.metadata.clone(),
            only_declared,
        })
    }

    /// Checks shared by every table operation: a valid id that this mode
    /// can hold, in an existing namespace.
    fn table_checks(&self, snap: &Snapshot, id: &[String]) -> NsResult<()> {
        self.check_namespace(snap, parent(id))
    }

    fn validate(&self, id: &[String]) -> NsResult<()> {
        check_table_id(id)?;
        self.v1_guard(id, "table id")
    }

    /// Describe table `id`; `check_declared` also tells whether it is only declared.
    pub fn describe_table(&self, id: &[String], check_declared: bool) -> NsResult<TableInfo> {
        self.validate(id)?;
        let snap = self.snapshot()?;
        self.table_checks(&snap, id)?;
        let found = self.find_table(&snap, id)?.ok_or_else(|| not_found(id))?;
        self.info(id, &found, check_declared)
    }

    /// The names of the tables directly in namespace `ns`, sorted;
    /// `include_declared=false` leaves out tables only declared.
    pub fn list_tables(&self, ns: &[String], include_declared: bool) -> NsResult<Vec<String>> {
        check_id(ns, "namespace id")?;
        let snap = self.snapshot()?;
        self.check_namespace(&snap, ns)?;
        let mut tables: BTreeMap<String, Option<String>> = BTreeMap::new();
        for (i, name) in self.children(&snap, ns, catalog::TABLE) {
            tables.insert(name, snap.entries[i].location.clone());
        }
        if self.dir_listing && ns.is_empty() {
            for dir in self.root.list_entries()?.dirs {
                let Some(name) = v1_table_name(&dir) else { continue };
                if tables.contains_key(name) || self.claimed(&snap, &dir, None) {
                    continue;
                }
                if dir_state(&self.root.child(&dir)?)?.is_table() {
                    tables.insert(name.to_string(), Some(dir.clone()));
                }
            }
        }
        let mut out = Vec::with_capacity(tables.len());
        for (name, loc) in tables {
            if !include_declared {
                let loc = loc.ok_or_else(|| invalid(format!("the manifest row of table {name:?} has no location")))?;
                if !has_versions(&below_root(&self.root, &loc)?)? {
                    continue;
                }
            }
            out.push(name);
        }
        Ok(out)
    }

    /// Fails with `TableNotFound` unless the table exists.
    pub fn table_exists(&self, id: &[String]) -> NsResult<()> {
        self.describe_table(id, false).map(|_| ())
    }

    /// Refuse an id that is taken (by a table, a namespace or another row).
    fn check_free(&self, snap: &Snapshot, id: &[String], ignore_dir: Option<&str>) -> NsResult<()> {
        if snap.find_any(&object_id(id)).is_some() || self.find_table_except(snap, id, ignore_dir)?.is_some() {
            return Err(already(id));
        }
        Ok(())
    }

    /// Pick and claim a location for a new table: `<name>.lance` for root
    /// tables when directory listing is on and that directory is free
    /// (claimed with `.lance-reserved`), else a fresh `<hash>_<id>`.
    /// Returns the location and whether it was claimed with a marker.
    fn claim_location(&self, snap: &Snapshot, id: &[String]) -> NsResult<(String, bool)> {
        if self.dir_listing && id.len() == 1 {
            let dir = v1_table_dir(&id[0]);
            let d = self.root.child(&dir)?;
            if !self.claimed(snap, &dir, None) && !d.has_objects()? && put_marker(&d, RESERVED_MARKER)? {
                return Ok((dir, true));
            }
            if !self.manifest {
                return Err(already(id));
            }
        }
        Ok((v2_table_dir(id), false))
    }

    /// Commit a new row for `id` at `location`, re-reading and re-checking
    /// after every lost race.
    fn commit_new_row(&self, id: &[String], location: &str, metadata: Option<String>) -> NsResult<()> {
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            self.table_checks(&snap, id)?;
            self.check_free(&snap, id, Some(location))?;
            if self.claimed(&snap, location, None) {
                return Err(invalid(format!("location {location:?} was registered for another table meanwhile")));
            }
            match catalog::commit(&self.root, &snap, &[], &[NewRow::table(object_id(id), location.to_string(), metadata.clone())]) {
                Ok(_) => return Ok(()),
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(lost_races(id))
    }

    /// Declare table `id` (reserve its name and location; no data).
    pub fn declare_table(&self, id: &[String], metadata: Option<String>) -> NsResult<TableInfo> {
        self.validate(id)?;
        if !self.manifest && metadata.is_some() {
            return Err(unsupported("table properties need manifest_enabled=true (V1 tables cannot hold properties)"));
        }
        let snap = self.snapshot()?;
        self.table_checks(&snap, id)?;
        self.check_free(&snap, id, None)?;
        let (location, marked) = self.claim_location(&snap, id)?;
        let dir = below_root(&self.root, &location)?;
        if !marked {
            if let Err(e) = put_marker(&dir, RESERVED_MARKER) {
                return Err(e.into());
            }
        }
        if self.manifest {
            if let Err(e) = self.commit_new_row(id, &location, metadata.clone()) {
                remove_marker(&dir, RESERVED_MARKER);
                return Err(e);
            }
        }
        let found = Found { row: None, location, metadata };
        self.info(id, &found, false)
    }

    /// Create table `id` from `batches` (Arrow `schema`). An existing
    /// table is kept (`ExistOk`), overwritten (`Overwrite`) or refused;
    /// a declared-only one is written. Returns the table and its version.
    pub fn create_table(
        &self,
        id: &[String],
        metadata: Option<String>,
        mode: CreateMode,
        schema: SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>>,
        storage_options: &crate::io::StorageOptions,
    ) -> NsResult<(TableInfo, u64)> {
        self.validate(id)?;
        if !self.manifest && metadata.is_some() {
            return Err(unsupported("table properties need manifest_enabled=true (V1 tables cannot hold properties)"));
        }
        let snap = self.snapshot()?;
        self.table_checks(&snap, id)?;
        let params = |mode| WriteParams { mode, storage_options: storage_options.clone(), ..Default::default() };
        if let Some(found) = self.find_table(&snap, id)? {
            let declared = !has_versions(&below_root(&self.root, &found.location)?)?;
            let write_mode = match (mode, declared) {
                (_, true) => WriteMode::Create,
                (CreateMode::Overwrite, false) => WriteMode::Overwrite,
                (CreateMode::ExistOk, false) => {
                    let version = crate::table::Dataset::open_in(below_root(&self.root, &found.location)?, &found.location, None)?.version();
                    return Ok((self.info(id, &found, false)?, version));
                }
                (CreateMode::Create, false) => return Err(already(id)),
            };
            let uri = self.location_uri(&found.location);
            let ds = write_dataset(&uri, schema, batches, &params(write_mode), &Default::default()).map_err(|e| match e {
                Error::AlreadyExists { .. } => already(id),
                e => e.into(),
            })?;
            return Ok((self.info(id, &found, false)?, ds.dataset.version()));
        }
        self.check_free(&snap, id, None)?;
        let (location, marked) = self.claim_location(&snap, id)?;
        let dir = below_root(&self.root, &location)?;
        let uri = self.location_uri(&location);
        let version = match write_dataset(&uri, schema, batches, &params(WriteMode::Create), &Default::default()) {
            Ok(ds) => ds.dataset.version(),
            Err(e) => {
                if marked {
                    // Someone else may have written a table here; only our marker goes.
                    remove_marker(&dir, RESERVED_MARKER);
                } else {
                    let _ = dir.delete_all();
                }
                return Err(match e {
                    Error::AlreadyExists { .. } => already(id),
                    e => e.into(),
                });
            }
        };
        if self.manifest {
            if let Err(e) = self.commit_new_row(id, &location, metadata.clone()) {
                // A root `<name>.lance` is shared by name with other writers
                // (pylance writes there without a marker): take it away only
                // while it holds nothing but our version.
                if !marked || only_version(&dir, version) {
                    let _ = dir.delete_all();
                } else {
                    remove_marker(&dir, RESERVED_MARKER);
                }
                return Err(e);
            }
        }
        if marked {
            let _ = dir.child(RESERVED_MARKER).and_then(|m| m.delete());
        }
        Ok((self.info(id, &Found { row: None, location, metadata }, false)?, version))
    }

    /// Register the existing table at `location` (relative to the root) as
    /// `id`. A declared-only table of that id is replaced; `overwrite`
    /// replaces any table's row (its data stays where it is).
    pub fn register_table(&self, id: &[String], location: &str, metadata: Option<String>, overwrite: bool) -> NsResult<TableInfo> {
        self.validate(id)?;
        let location = check_location(location)?;
        if !self.manifest {
            return self.register_v1(id, &location, metadata);
        }
        let dir = below_root(&self.root, &location)?;
        let oid = object_id(id);
        let mut replaced_location = None;
        let mut final_metadata = metadata.clone();
        let mut done = false;
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            self.table_checks(&snap, id)?;
            if attempt == 0 && !has_versions(&dir)? {
                return Err(invalid(format!("location {location:?} holds no Lance table (nothing in _versions/)")));
            }
            let found = self.find_table_except(&snap, id, None)?;
            let (remove, add) = match &found {
                Some(Found { row: Some(i), location: old, .. }) => {
                    let only_declared = !has_versions(&below_root(&self.root, old)?)?;
                    if !(only_declared || overwrite) {
                        return Err(already(id));
                    }
                    replaced_location = (old != &location && only_declared).then(|| old.clone());
                    let meta = metadata.clone().or_else(|| snap.entries[*i].metadata.clone());
                    final_metadata = meta.clone();
                    (vec![*i], vec![NewRow { base: Some(*i), location: Some(Some(location.clone())), metadata: Some(meta), ..Default::default() }])
                }
                Some(Found { row: None, location: v1, .. }) if v1 != &location => return Err(already(id)),
                _ => {
                    if snap.find_any(&oid).is_some() {
                        return Err(already(id));
                    }
                    final_metadata = metadata.clone();
                    (vec![], vec![NewRow::table(oid.clone(), location.clone(), metadata.clone())])
                }
            };
            if self.claimed(&snap, &location, remove.first().copied()) {
                return Err(invalid(format!("location {location:?} is already registered for another table")));
            }
            match catalog::commit(&self.root, &snap, &remove, &add) {
                Ok(_) => {
                    done = true;
                    break;
                }
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        if !done {
            return Err(lost_races(id));
        }
        // A declared placeholder that was replaced holds only its marker.
        if let Some(old) = replaced_location {
            if let Ok(d) = below_root(&self.root, &old) {
                if matches!(has_versions(&d), Ok(false)) {
                    let _ = d.delete_all();
                }
            }
        }
        // The table is visible again to V1 readers of its directory.
        if self.dir_listing && id.len() == 1 && location == v1_table_dir(&id[0]) {
            let _ = dir.child(DEREGISTERED_MARKER).and_then(|m| m.delete());
        }
        let found = Found { row: None, location, metadata: final_metadata };
        self.info(id, &found, false)
    }

    /// V1 registration: a deregistered `<name>.lance` becomes a table again.
    fn register_v1(&self, id: &[String], location: &str, metadata: Option<String>) -> NsResult<TableInfo> {
        let dir_name = v1_table_dir(&id[0]);
        if location != dir_name {
            return Err(unsupported(format!("a V1 namespace keeps table {} at {dir_name:?}, not {location:?}", show(id))));
        }
        if metadata.is_some() {
            return Err(unsupported("table properties need manifest_enabled=true (V1 tables cannot hold properties)"));
        }
        let dir = self.root.child(&dir_name)?;
        let state = dir_state(&dir)?;
        if state.is_table() {
            return Err(already(id));
        }
        if !state.deregistered || !has_versions(&dir)? {
            return Err(invalid(format!("location {location:?} holds no deregistered Lance table")));
        }
        dir.child(DEREGISTERED_MARKER)?.delete()?;
        self.info(id, &Found { row: None, location: dir_name, metadata: None }, false)
    }

    /// Remove a table's row (or hide a V1 table); its data stays.
    pub fn deregister_table(&self, id: &[String]) -> NsResult<TableInfo> {
        self.remove_table(id, false)
    }

    /// Remove a table and delete its data.
    pub fn drop_table(&self, id: &[String]) -> NsResult<TableInfo> {
        self.remove_table(id, true)
    }

    fn remove_table(&self, id: &[String], delete_data: bool) -> NsResult<TableInfo> {
        self.validate(id)?;
        let mut marked: Option<String> = None;
        let result = self.remove_table_attempts(id, delete_data, &mut marked);
        if let (Err(_), Some(location)) = (&result, &marked) {
            self.undo_deregistered_marker(id, location, true);
        }
        result
    }

    fn remove_table_attempts(&self, id: &[String], delete_data: bool, marked: &mut Option<String>) -> NsResult<TableInfo> {
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            self.table_checks(&snap, id)?;
            let Some(found) = self.find_table(&snap, id)? else { return Err(not_found(id)) };
            let info = self.info(id, &found, false)?;
            let dir = below_root(&self.root, &found.location)?;
            let Some(row) = found.row else {
                // A directory-listed table.
                if delete_data {
                    dir.delete_all()?;
                } else if !put_marker(&dir, DEREGISTERED_MARKER)? {
                    return Err(not_found(id));
                }
                return Ok(info);
            };
            if self.dir_listing && is_v1_dir(&found.location) && marked.is_none() && put_marker(&dir, DEREGISTERED_MARKER)? {
                *marked = Some(found.location.clone());
            }
            match catalog::commit(&self.root, &snap, &[row], &[]) {
                Ok(_) => {
                    *marked = None;
                    if delete_data && !self.claimed(&snap, &found.location, Some(row)) {
                        dir.delete_all()?;
                    }
                    return Ok(info);
                }
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(lost_races(id))
    }

    /// After a removal or rename that wrote `.lance-deregistered` at
    /// `location` failed: take the marker back if the table is still there
    /// (if another writer removed or renamed it meanwhile, it needs it).
    /// `had_row`: the table was a manifest row (else a listed directory).
    fn undo_deregistered_marker(&self, id: &[String], location: &str, had_row: bool) {
        let Ok(dir) = below_root(&self.root, location) else { return };
        let still_there = match self.snapshot() {
            Ok(snap) if had_row => snap
                .find(&object_id(id), catalog::TABLE)
                .is_some_and(|i| snap.entries[i].location.as_deref().map(|l| l.trim_end_matches('/')) == Some(location)),
            Ok(snap) => !self.claimed(&snap, location, None),
            Err(_) => false,
        };
        if still_there {
            remove_marker(&dir, DEREGISTERED_MARKER);
        }
    }

    /// Give table `id` a new name (and namespace); its data stays where it is.
    pub fn rename_table(&self, id: &[String], new_namespace: Option<&[String]>, new_name: &str) -> NsResult<()> {
        self.validate(id)?;
        if !self.manifest {
            return Err(unsupported("rename_table needs manifest_enabled=true (V1 tables are named by their directory)"));
        }
        let mut new_id: Vec<String> = new_namespace.unwrap_or(parent(id)).to_vec();
        new_id.push(new_name.to_string());
        check_table_id(&new_id)?;
        let mut marked: Option<(String, bool)> = None;
        let result = self.rename_attempts(id, &new_id, &mut marked);
        if let (Err(_), Some((location, had_row))) = (&result, &marked) {
            self.undo_deregistered_marker(id, location, *had_row);
        }
        result
    }

    fn rename_attempts(&self, id: &[String], new_id: &[String], marked: &mut Option<(String, bool)>) -> NsResult<()> {
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            self.table_checks(&snap, id)?;
            let Some(found) = self.find_table(&snap, id)? else { return Err(not_found(id)) };
            self.check_namespace(&snap, parent(new_id))?;
            if snap.find_any(&object_id(new_id)).is_some() || self.find_table(&snap, new_id)?.is_some() {
                return Err(already(new_id));
            }
            // The old name must not come back through directory listing.
            if self.dir_listing && is_v1_dir(&found.location) && marked.is_none() {
                let dir = below_root(&self.root, &found.location)?;
                if put_marker(&dir, DEREGISTERED_MARKER)? {
                    *marked = Some((found.location.clone(), found.row.is_some()));
                }
            }
            let new_oid = object_id(new_id);
            let (remove, add) = match found.row {
                Some(i) => (vec![i], vec![NewRow { base: Some(i), object_id: Some(new_oid), ..Default::default() }]),
                None => (vec![], vec![NewRow::table(new_oid, found.location.clone(), None)]),
            };
            match catalog::commit(&self.root, &snap, &remove, &add) {
                Ok(_) => {
                    *marked = None;
                    return Ok(());
                }
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(lost_races(id))
    }
}

/// Whether the table at `dir` has exactly one version, `version`.
fn only_version(dir: &crate::io::Storage, version: u64) -> bool {
    matches!(crate::table::manifest::list_versions(dir).as_deref(), Ok([v]) if v.version == version)
}
