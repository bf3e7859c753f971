//! Opening an array: the schema, the committed fragments visible in a
//! timestamp range, and their metadata.
//!
//! Directory layout: `__schema/<timestamped name>` (schemas),
//! `__fragments/<name>/` (data), `__commits/<name>.wrt` (one empty marker
//! per committed fragment), `<name>.con` (consolidated commits: one
//! relative URI per line; delete and update entries are followed by a
//! `u64` size and a serialized condition), `<name>.ign` and `<name>.vac`
//! (relative URIs, one per line, of commits to ignore and fragments
//! vacuumed), `<name>.del` / `.upd` (delete and update conditions).
//!
//! A fragment is visible when committed (a `.wrt` or a `.con` entry), not
//! listed by an `.ign` or `.vac` whose range overlaps the open range, and
//! its `[t1, t2]` lies inside the open range. Fragments apply in order of
//! `t1`.

use super::conditions::DeleteCondition;
use super::fragment::{FragmentMeta, TimestampedName};
use super::schema::ArraySchema;
use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};

/// An array opened at a timestamp range.
#[derive(Debug, Clone)]
pub struct TileDbArray {
    pub(crate) root: Storage,
    /// The array schema in use.
    pub schema: ArraySchema,
    /// Visible fragments, oldest first.
    pub fragments: Vec<FragmentMeta>,
    /// The open range (inclusive, milliseconds).
    pub range: (u64, u64),
    /// Delete commits whose timestamp lies in the open range, oldest first.
    pub deletes: Vec<DeleteCondition>,
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

fn base_name(uri: &str) -> &str {
    let last = uri.trim_end_matches('/').rsplit('/').next().unwrap_or(uri);
    last.split('.').next().unwrap_or(last)
}

/// What `__commits/` says about fragments.
#[derive(Debug, Default)]
struct Commits {
    committed: Vec<String>,
    excluded: Vec<String>,
    /// Delete/update commits in the open range: file name and tile bytes.
    deletes: Vec<(String, bytes::Bytes)>,
}

fn read_commits(root: &Storage, range: (u64, u64)) -> Result<Commits> {
    let dir = root.child("__commits")?;
    let mut out = Commits::default();
    for (file, _) in dir.list()? {
        let (stem, ext) = match file.rsplit_once('.') {
            Some(p) => p,
            None => continue,
        };
        let ts = match TimestampedName::parse(stem) {
            Ok(t) => t,
            Err(_) => continue,
        };
        match ext {
            "wrt" => out.committed.push(stem.to_string()),
            "con" => {
                let bytes = dir.child(&file)?.read_all()?;
                parse_consolidated(&bytes, range, &mut out).map_err(|e| e.in_file(&format!("{}/{file}", dir.display())))?;
            }
            "ign" | "vac" if overlaps((ts.t1, ts.t2), range) => {
                let bytes = dir.child(&file)?.read_all()?;
                for line in String::from_utf8_lossy(&bytes).lines().filter(|l| !l.is_empty()) {
                    out.excluded.push(base_name(line).to_string());
                }
            }
            "del" | "upd" if ts.t1 >= range.0 && ts.t1 <= range.1 => {
                let bytes = dir.child(&file)?.read_all()?;
                out.deletes.push((file.clone(), bytes));
            }
            _ => {}
        }
    }
    Ok(out)
}

fn parse_consolidated(b: &bytes::Bytes, range: (u64, u64), out: &mut Commits) -> Result<()> {
    let mut pos = 0;
    while pos < b.len() {
        let nl = b[pos..].iter().position(|&c| c == b'\n').ok_or_else(|| Error::corrupt("entry without newline"))?;
        let uri = String::from_utf8_lossy(&b[pos..pos + nl]).into_owned();
        pos += nl + 1;
        if uri.ends_with(".wrt") || uri.ends_with(".ok") {
            out.committed.push(base_name(&uri).to_string());
        } else if uri.ends_with(".del") || uri.ends_with(".upd") {
            let size = b.get(pos..pos + 8).ok_or_else(|| Error::corrupt("truncated condition size"))?;
            let size = u64::from_le_bytes(size.try_into().unwrap_or_default());
            let end = usize::try_from(size)
                .ok()
                .and_then(|s| pos.checked_add(8)?.checked_add(s))
                .filter(|p| *p <= b.len())
                .ok_or_else(|| Error::corrupt("truncated condition"))?;
            let tile = b.slice(pos + 8..end);
            pos = end;
            let name = uri.rsplit('/').next().unwrap_or(&uri).to_string();
            let ts = TimestampedName::parse(name.split('.').next().unwrap_or(&name))?;
            if ts.t1 >= range.0 && ts.t1 <= range.1 {
                out.deletes.push((name, tile));
            }
        } else {
            return Err(Error::corrupt(format!("unknown consolidated commit entry {uri:?}")));
        }
    }
    Ok(())
}

impl TileDbArray {
    /// Open the array at `uri` seeing fragments written in `range`
    /// (inclusive milliseconds; `(0, u64::MAX)` for all).
    pub fn open(uri: &str, options: &StorageOptions, range: (u64, u64)) -> Result<Self> {
        if range.0 > range.1 {
            return Err(Error::invalid_input(format!("timestamp range start {} is after its end {}", range.0, range.1)));
        }
        let root = super::open_array_root(uri, options)?;
        let schema = Self::load_schema(&root, range)?;
        let commits = read_commits(&root, range)?;
        let mut deletes: Vec<DeleteCondition> = Vec::new();
        for (name, bytes) in &commits.deletes {
            if deletes.iter().any(|d| &d.marker == name) {
                continue; // listed by a `.con` and still present as a file
            }
            let path = format!("{}/__commits/{name}", root.display());
            deletes.push(DeleteCondition::parse(name, bytes).map_err(|e| e.in_file(&path))?);
        }
        deletes.sort_by(|a, b| (a.timestamp, &a.marker).cmp(&(b.timestamp, &b.marker)));
        if !deletes.is_empty() && !schema.sparse {
            return Err(Error::corrupt(format!("delete commits in dense array {}", root.display())));
        }
        let mut names: Vec<(TimestampedName, String)> = Vec::new();
        for name in &commits.committed {
            if commits.excluded.contains(name) || names.iter().any(|(_, n)| n == name) {
                continue;
            }
            let ts = TimestampedName::parse(name)?;
            if !overlaps((ts.t1, ts.t2), range) {
                continue;
            }
            names.push((ts, name.clone()));
        }
        names.sort_by(|a, b| (a.0.t1, a.0.t2, &a.1).cmp(&(b.0.t1, b.0.t2, &b.1)));
        let mut fragments = Vec::new();
        for (ts, name) in names {
            let path = format!("__fragments/{name}/__fragment_metadata.tdb");
            let file = root.child(&path)?;
            let bytes = file.read_all()?;
            let meta = FragmentMeta::parse(bytes, &name, &schema).map_err(|e| e.in_file(file.display()))?;
            let inside = ts.t1 >= range.0 && ts.t2 <= range.1;
            if !inside {
                // Overlapping fragments count only with per-cell
                // timestamps: their cells outside the range are dropped.
                // A sparse one without them (a consolidation that kept
                // none) is read whole, as TileDB 2.30 reads it.
                if !meta.has_timestamps && meta.dense {
                    continue;
                }
                if meta.dense {
                    return Err(Error::unsupported(format!("reading part of dense fragment {name} by its per-cell timestamps")));
                }
            }
            if meta.schema_name != schema.name {
                return Err(Error::unsupported(format!(
                    "several schemas in use: fragment {name} uses {}, the array {}",
                    meta.schema_name, schema.name
                )));
            }
            if meta.dense == schema.sparse {
                return Err(Error::corrupt(format!(
                    "fragment {name} is {} in a {} array",
                    if meta.dense { "dense" } else { "sparse" },
                    if schema.sparse { "sparse" } else { "dense" }
                )));
            }
            fragments.push(meta);
        }
        Ok(TileDbArray { root, schema, fragments, range, deletes })
    }

    fn load_schema(root: &Storage, range: (u64, u64)) -> Result<ArraySchema> {
        let dir = root.child("__schema")?;
        let mut found: Vec<(u64, String)> = Vec::new();
        for (file, _) in dir.list()? {
            if let Ok(ts) = TimestampedName::parse(&file) {
                found.push((ts.t1, file));
            }
        }
        if found.is_empty() {
            return Err(Error::not_found(format!("TileDB array at {} (no __schema)", root.display())));
        }
        found.sort();
        let at_or_before: Vec<_> = found.iter().filter(|(t, _)| *t <= range.1).collect();
        let (_, name) = at_or_before.last().copied().unwrap_or(&found[0]);
        let file = dir.child(name)?;
        let bytes = file.read_all()?;
        ArraySchema::parse(&bytes, name).map_err(|e| e.in_file(file.display()))
    }

    /// A data file of a fragment.
    pub(crate) fn fragment_file(&self, frag: &FragmentMeta, file: &str) -> Result<Storage> {
        self.root.child(&format!("__fragments/{}/{file}", frag.name))
    }

    /// Display name of the array.
    pub fn uri(&self) -> &str {
        self.root.display()
    }
}
