//! Vacuuming as TileDB 2.30 does it: removing what consolidation made
//! redundant. Every mode deletes in an order that leaves a readable array
//! at each step.
//!
//! *Commits*: the commit files (`.wrt`, `.del`, `.upd`) that a `.con` file
//! lists (minus ignored entries); and, if one `.con` lists every
//! consolidated entry, every other `.con` and then every `.ign` file.
//!
//! *Fragment metadata*: every `__fragment_meta/*.meta` whose timestamp
//! range does not end at the latest end.
//!
//! *Fragments*: the fragments that the `.vac` files overlapping the vacuum
//! range list (`/__fragments/<name>` lines, written by fragment
//! consolidation). If a `.con` lists their commits, an `.ign` file naming
//! those commits is written first (so the `.con` no longer points at
//! missing fragments); then each fragment's `.wrt` and directory are
//! removed, and last the `.vac` files none of whose fragments lie outside
//! the vacuum range.

use bytes::Bytes;

use super::consolidate::{new_name, CommitsDir, ConsolidationMode};
use super::fragment::TimestampedName;
use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};

/// What a vacuum removed (relative paths), for callers and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Vacuumed {
    pub removed: Vec<String>,
    /// The `.ign` file written, if any.
    pub ignore_file: Option<String>,
}

fn delete_if_present(root: &Storage, rel: &str, out: &mut Vacuumed) -> Result<()> {
    match root.child(rel)?.delete() {
        Ok(()) => {
            out.removed.push(rel.to_string());
            Ok(())
        }
        Err(Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// Vacuum the array at `uri` in `mode`; `range` (inclusive ms) limits
/// which `.vac` files fragment vacuuming uses.
pub fn vacuum(uri: &str, options: &StorageOptions, mode: ConsolidationMode, range: (u64, u64)) -> Result<Vacuumed> {
    let root = super::open_array_root(uri, options)?;
    if root.child("__schema")?.list()?.is_empty() {
        return Err(Error::not_found(format!("TileDB array at {} (no __schema)", root.display())));
    }
    match mode {
        ConsolidationMode::Commits => vacuum_commits(&root),
        ConsolidationMode::FragmentMeta => vacuum_fragment_meta(&root),
        ConsolidationMode::Fragments => vacuum_fragments(&root, range),
        ConsolidationMode::ArrayMeta => super::array_meta::vacuum_array_meta(uri, options),
    }
}

fn vacuum_commits(root: &Storage) -> Result<Vacuumed> {
    let dir = CommitsDir::load(root)?;
    let consolidated = dir.consolidated();
    let mut out = Vacuumed::default();
    for name in &dir.files {
        let rel = format!("__commits/{name}");
        let is_commit = name.ends_with(".wrt") || name.ends_with(".del") || name.ends_with(".upd");
        if is_commit && consolidated.iter().any(|e| e.uri == rel) {
            delete_if_present(root, &rel, &mut out)?;
        }
    }
    // one .con holding every consolidated entry makes the others redundant
    let complete = dir
        .cons
        .iter()
        .find(|(_, entries)| entries.len() == consolidated.len() && entries.iter().all(|e| consolidated.iter().any(|c| c.uri == e.uri)));
    if let Some((keep, _)) = complete {
        for (name, _) in &dir.cons {
            if name != keep {
                delete_if_present(root, &format!("__commits/{name}"), &mut out)?;
            }
        }
        for name in dir.files.iter().filter(|n| n.ends_with(".ign")) {
            delete_if_present(root, &format!("__commits/{name}"), &mut out)?;
        }
    }
    Ok(out)
}

fn vacuum_fragment_meta(root: &Storage) -> Result<Vacuumed> {
    let dir = root.child("__fragment_meta")?;
    let metas: Vec<(String, u64)> = dir
        .list()?
        .into_iter()
        .filter(|(n, _)| n.ends_with(".meta"))
        .filter_map(|(n, _)| TimestampedName::parse(n.trim_end_matches(".meta")).ok().map(|t| (n, t.t2)))
        .collect();
    let latest = metas.iter().map(|m| m.1).max().unwrap_or(0);
    let mut out = Vacuumed::default();
    for (name, t2) in &metas {
        if *t2 != latest {
            delete_if_present(root, &format!("__fragment_meta/{name}"), &mut out)?;
        }
    }
    Ok(out)
}

/// The fragment name a `.vac` line names (`/__fragments/<name>`, or an
/// absolute URI ending so).
fn vac_fragment(line: &str) -> Option<String> {
    let i = line.find("__fragments/")?;
    let name = line[i + "__fragments/".len()..].trim_end_matches('/');
    (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
}

fn vacuum_fragments(root: &Storage, range: (u64, u64)) -> Result<Vacuumed> {
    let dir = CommitsDir::load(root)?;
    let commits = root.child("__commits")?;
    // fragments that exist (committed or not) with their timestamps
    let mut vac_files: Vec<(String, Vec<String>)> = Vec::new();
    for name in dir.files.iter().filter(|n| n.ends_with(".vac")) {
        let Ok(ts) = TimestampedName::parse(name.trim_end_matches(".vac")) else { continue };
        if !overlaps((ts.t1, ts.t2), range) {
            continue;
        }
        let bytes = commits.child(name)?.read_all()?;
        let listed: Vec<String> = String::from_utf8_lossy(&bytes).lines().filter_map(vac_fragment).collect();
        vac_files.push((name.clone(), listed));
    }
    let in_range = |frag: &str| TimestampedName::parse(frag).map(|t| overlaps((t.t1, t.t2), range)).unwrap_or(false);
    let mut fragments: Vec<String> = Vec::new();
    for (_, listed) in &vac_files {
        for f in listed {
            if in_range(f) && !fragments.contains(f) {
                fragments.push(f.clone());
            }
        }
    }
    fragments.sort_by_key(|f| TimestampedName::parse(f).map(|t| (t.t1, t.t2)).unwrap_or((0, 0)));
    let mut out = Vacuumed::default();
    // commits a .con lists must be ignored before their fragments go
    let consolidated = dir.consolidated();
    let to_ignore: Vec<String> =
        fragments.iter().map(|f| format!("__commits/{f}.wrt")).filter(|c| consolidated.iter().any(|e| &e.uri == c)).collect();
    if !to_ignore.is_empty() {
        let first = TimestampedName::parse(&fragments[0])?;
        let last = fragments.iter().filter_map(|f| TimestampedName::parse(f).ok()).map(|t| t.t2).max().unwrap_or(first.t2);
        let name = format!("{}.ign", new_name(first.t1, last));
        let body: String = to_ignore.iter().map(|c| format!("{c}\n")).collect();
        commits.child(&name)?.write_new(Bytes::from(body))?;
        out.ignore_file = Some(name);
    }
    for f in &fragments {
        delete_if_present(root, &format!("__commits/{f}.wrt"), &mut out)?;
        let n = root.child(&format!("__fragments/{f}"))?.delete_all()?;
        if n > 0 {
            out.removed.push(format!("__fragments/{f}"));
        }
    }
    for (name, listed) in &vac_files {
        if listed.iter().all(|f| in_range(f)) {
            delete_if_present(root, &format!("__commits/{name}"), &mut out)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vac_lines_name_fragments() {
        assert_eq!(vac_fragment("/__fragments/__1_2_ab_22").as_deref(), Some("__1_2_ab_22"));
        assert_eq!(vac_fragment("file:///x/y/__fragments/__1_2_ab_22/").as_deref(), Some("__1_2_ab_22"));
        assert_eq!(vac_fragment("garbage"), None);
    }
}
