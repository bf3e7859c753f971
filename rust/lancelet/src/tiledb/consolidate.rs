//! Consolidation as TileDB 2.30 does it: fragments, commits and fragment
//! metadata.
//!
//! *Fragments* (`"fragments"`): the fragments visible in the consolidation
//! range (at least two) are merged into one new fragment `__<first
//! t1>_<last t2>_uuid_22` written through the fragment writer (data,
//! metadata, `.wrt` commit last); then `__commits/<new name>.vac` lists the
//! merged fragments (`/__fragments/<name>` a line) so readers skip them
//! until a vacuum removes them. Sparse: every cell version in the range
//! with its timestamp (`t.tdb`, versions of one coordinate newest first),
//! deleted versions kept with delete metadata (`dt.tdb`, `dci.tdb`,
//! processed conditions) as TileDB 2.30 merges them without purging. Dense: one resolved read over the bounding
//! box of their non-empty domains (newest cell wins, fills where none
//! wrote), no per-cell timestamps (TileDB writes none for dense arrays);
//! merged only when no older fragment outside the range overlaps the box
//! (it would be overwritten by fills) and the box holds at most
//! `amplification` times the cells the fragments hold (TileDB's
//! `sm.consolidation.amplification`, default 1.0); otherwise nothing is
//! written. `fragment_uris` merges a chosen set instead (see
//! [`consolidate_fragment_list`]).
//!
//! *Commits* (`sm.consolidation.mode = "commits"`): one file
//! `__commits/<__t1_t2_uuid_v>.con` lists every commit of the array, one
//! URI relative to the array a line (`__commits/<fragment>.wrt`); a delete
//! or update commit (`.del` / `.upd`) is followed by its condition: a `u64`
//! size and the bytes of the commit file. The entries are the entries of
//! the existing `.con` files (minus those an `.ign` file lists) and every
//! commit file not already among them, oldest first; the name spans the
//! first entry's `t1` to the last one's `t2`. The old commit files stay
//! until vacuumed.
//!
//! *Fragment metadata* (`"fragment_meta"`): one generic tile
//! `__fragment_meta/<__t1_t2_uuid_v>.meta` holding the footers of the
//! visible fragments (at least two): `u32` count, per fragment `u64` name
//! length, the fragment's directory name and the `u64` offset of its footer
//! in the tile, then the footers (each exactly as it ends its
//! `__fragment_metadata.tdb`, without the trailing footer length). The tile
//! is Gzip-filtered (level 1) in chunks of 64 KiB, as TileDB writes it.
//!
//! Either way the new file is the only write, made with create-if-absent:
//! a failure leaves the array as it was.

use bytes::Bytes;

use super::array::TileDbArray;
use super::fragment::TimestampedName;
use super::generic_tile::MAX_VERSION;
use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};

/// What to consolidate (tiledb-py's `sm.consolidation.mode` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsolidationMode {
    Fragments,
    Commits,
    FragmentMeta,
    /// Array metadata (`__meta/`, see `array_meta.rs`).
    ArrayMeta,
}

impl ConsolidationMode {
    /// Parse a `sm.consolidation.mode` / `sm.vacuum.mode` value.
    pub fn parse(mode: &str) -> Result<Self> {
        match mode {
            "fragments" => Ok(Self::Fragments),
            "commits" => Ok(Self::Commits),
            "fragment_meta" => Ok(Self::FragmentMeta),
            "array_meta" => Ok(Self::ArrayMeta),
            "group_meta" => Err(Error::unsupported("consolidation mode \"group_meta\" (lancelet does not handle TileDB groups)")),
            other => {
                Err(Error::invalid_input(format!("unknown consolidation mode {other:?} (expected fragments, commits, fragment_meta or array_meta)")))
            }
        }
    }
}

/// Milliseconds since the epoch (TileDB's timestamps).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A timestamped name `__t1_t2_<32 hex digits>_v` for a new file.
pub(crate) fn new_name(t1: u64, t2: u64) -> String {
    format!("__{t1}_{t2}_{}_{MAX_VERSION}", random_hex32())
}

/// 32 random hex digits (the uuid part of a timestamped name).
pub(crate) fn random_hex32() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// 64 random bits: std's per-process random hash keys over the clock.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    h.write_u128(nanos);
    h.finish()
}

/// One entry of a consolidated commits file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitEntry {
    /// Relative URI, e.g. `__commits/__1_1_<uuid>_22.wrt`.
    pub uri: String,
    /// Condition bytes of a `.del` / `.upd` entry.
    pub condition: Option<Vec<u8>>,
}

impl CommitEntry {
    fn stem(&self) -> &str {
        let file = self.uri.rsplit('/').next().unwrap_or(&self.uri);
        file.split('.').next().unwrap_or(file)
    }

    fn timestamps(&self) -> (u64, u64) {
        TimestampedName::parse(self.stem()).map(|t| (t.t1, t.t2)).unwrap_or((0, 0))
    }
}

/// Parse a `.con` file's bytes.
pub(crate) fn parse_con(b: &[u8], file: &str) -> Result<Vec<CommitEntry>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let nl = b[pos..].iter().position(|&c| c == b'\n').ok_or_else(|| Error::corrupt(format!("{file}: entry without newline")))?;
        let uri = String::from_utf8_lossy(&b[pos..pos + nl]).into_owned();
        pos += nl + 1;
        let condition = if uri.ends_with(".del") || uri.ends_with(".upd") {
            let size = b.get(pos..pos + 8).ok_or_else(|| Error::corrupt(format!("{file}: truncated condition size of {uri}")))?;
            let size = u64::from_le_bytes(size.try_into().unwrap_or_default()) as usize;
            let body = pos
                .checked_add(8 + size)
                .and_then(|end| b.get(pos + 8..end))
                .ok_or_else(|| Error::corrupt(format!("{file}: truncated condition of {uri}")))?;
            pos += 8 + size;
            Some(body.to_vec())
        } else if uri.ends_with(".wrt") || uri.ends_with(".ok") {
            None
        } else {
            return Err(Error::corrupt(format!("{file}: unknown consolidated commit entry {uri:?}")));
        };
        out.push(CommitEntry { uri, condition });
    }
    Ok(out)
}

fn serialize_con(entries: &[CommitEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        out.extend_from_slice(e.uri.as_bytes());
        out.push(b'\n');
        if let Some(c) = &e.condition {
            out.extend_from_slice(&(c.len() as u64).to_le_bytes());
            out.extend_from_slice(c);
        }
    }
    out
}

/// What `__commits/` holds.
#[derive(Debug, Default)]
pub(crate) struct CommitsDir {
    /// Every file name, with its parsed timestamps if it has them.
    pub files: Vec<String>,
    /// `.con` files and their entries.
    pub cons: Vec<(String, Vec<CommitEntry>)>,
    /// URIs the `.ign` files list.
    pub ignored: Vec<String>,
}

impl CommitsDir {
    pub fn load(root: &Storage) -> Result<Self> {
        let dir = root.child("__commits")?;
        let mut out = CommitsDir::default();
        let mut names: Vec<String> = dir.list()?.into_iter().map(|(n, _)| n).collect();
        names.sort();
        for name in &names {
            if name.ends_with(".con") {
                let bytes = dir.child(name)?.read_all()?;
                let file = format!("{}/{name}", dir.display());
                out.cons.push((name.clone(), parse_con(&bytes, &file)?));
            } else if name.ends_with(".ign") {
                let bytes = dir.child(name)?.read_all()?;
                out.ignored.extend(String::from_utf8_lossy(&bytes).lines().filter(|l| !l.is_empty()).map(str::to_string));
            }
        }
        out.files = names;
        Ok(out)
    }

    /// The consolidated entries: those of every `.con` not ignored,
    /// without repeats, oldest first.
    pub fn consolidated(&self) -> Vec<CommitEntry> {
        let mut out: Vec<CommitEntry> = Vec::new();
        for (_, entries) in &self.cons {
            for e in entries {
                if !self.ignored.contains(&e.uri) && !out.iter().any(|o| o.uri == e.uri) {
                    out.push(e.clone());
                }
            }
        }
        sort_entries(&mut out);
        out
    }
}

fn sort_entries(entries: &mut [CommitEntry]) {
    entries.sort_by(|a, b| (a.timestamps(), &a.uri).cmp(&(b.timestamps(), &b.uri)));
}

fn check_array(root: &Storage) -> Result<()> {
    if root.child("__schema")?.list()?.is_empty() {
        return Err(Error::not_found(format!("TileDB array at {} (no __schema)", root.display())));
    }
    Ok(())
}

/// Consolidate the commits of the array at `uri`; returns the name of the
/// `.con` file written (None when there is no commit).
pub fn consolidate_commits(uri: &str, options: &StorageOptions) -> Result<Option<String>> {
    let root = super::open_array_root(uri, options)?;
    check_array(&root)?;
    let dir = CommitsDir::load(&root)?;
    let mut entries = dir.consolidated();
    let commits = root.child("__commits")?;
    let now = now_ms();
    for name in &dir.files {
        let is_commit = name.ends_with(".wrt") || name.ends_with(".del") || name.ends_with(".upd");
        let uri = format!("__commits/{name}");
        if !is_commit || entries.iter().any(|e| e.uri == uri) {
            continue;
        }
        let stem = name.split('.').next().unwrap_or(name);
        let Ok(ts) = TimestampedName::parse(stem) else { continue };
        if ts.t1 > now {
            continue; // TileDB consolidates what exists up to now
        }
        let condition = if name.ends_with(".wrt") { None } else { Some(commits.child(name)?.read_all()?.to_vec()) };
        entries.push(CommitEntry { uri, condition });
    }
    if entries.is_empty() {
        return Ok(None);
    }
    sort_entries(&mut entries);
    let t1 = entries.iter().map(|e| e.timestamps().0).min().unwrap_or(0);
    let t2 = entries.iter().map(|e| e.timestamps().1).max().unwrap_or(0);
    let name = format!("{}.con", new_name(t1, t2));
    commits.child(&name)?.write_new(Bytes::from(serialize_con(&entries)))?;
    Ok(Some(name))
}

/// Consolidate the footers of the fragments visible now into one
/// `__fragment_meta/*.meta` file; returns its name (None with fewer than
/// two fragments, as TileDB).
pub fn consolidate_fragment_meta(uri: &str, options: &StorageOptions) -> Result<Option<String>> {
    let array = TileDbArray::open(uri, options, (0, now_ms()))?;
    if array.fragments.len() < 2 {
        return Ok(None);
    }
    let mut table = Vec::new();
    table.extend_from_slice(&(array.fragments.len() as u32).to_le_bytes());
    let header_len: usize = 4 + array.fragments.iter().map(|f| 16 + f.name.len()).sum::<usize>();
    let mut offset = header_len as u64;
    let mut footers = Vec::new();
    for f in &array.fragments {
        let footer = f.footer_bytes().ok_or_else(|| Error::corrupt(format!("fragment {}: footer length past the file", f.name)))?;
        table.extend_from_slice(&(f.name.len() as u64).to_le_bytes());
        table.extend_from_slice(f.name.as_bytes());
        table.extend_from_slice(&offset.to_le_bytes());
        offset += footer.len() as u64;
        footers.extend_from_slice(footer);
    }
    table.extend_from_slice(&footers);
    let first = &array.fragments[0];
    let last = &array.fragments[array.fragments.len() - 1];
    let name = format!("{}.meta", new_name(first.t1, last.t2));
    let tile = write_generic_tile(&table)?;
    array.root.child(&format!("__fragment_meta/{name}"))?.write_new(Bytes::from(tile))?;
    Ok(Some(name))
}

/// Consolidate the fragments visible in `range` (inclusive ms, capped at
/// now) into one; returns the new fragment's name (None when there is
/// nothing to merge or TileDB's rules forbid it).
pub fn consolidate_fragments(uri: &str, options: &StorageOptions, range: (u64, u64), amplification: f64) -> Result<Option<String>> {
    use super::schema::int_value;

    let end = range.1.min(now_ms());
    if range.0 > end {
        return Ok(None);
    }
    let array = TileDbArray::open(uri, options, (range.0, end))?;
    let frags: Vec<_> = array.fragments.iter().filter(|f| f.nonempty.is_some()).collect();
    if frags.len() < 2 {
        return Ok(None);
    }
    let schema = &array.schema;
    let t1 = frags.iter().map(|f| f.t1).min().unwrap_or(0);
    let t2 = frags.iter().map(|f| f.t2).max().unwrap_or(0);
    let written = if schema.sparse {
        match merge_sparse(&array, uri, options, (t1, t2))? {
            Some(w) => w,
            None => return Ok(None),
        }
    } else {
        let nd = schema.dims.len();
        let ints = |v: &[u8], d: usize| int_value(schema.dims[d].datatype, v).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"));
        let mut boxed: Vec<(i128, i128)> = Vec::with_capacity(nd);
        let mut written_cells = 0f64;
        for f in &frags {
            let ned = f.nonempty.as_ref().ok_or_else(|| Error::Internal { what: "empty fragment kept".into() })?;
            let mut cells = 1f64;
            for d in 0..nd {
                let (lo, hi) = (ints(&ned[d].0, d)?, ints(&ned[d].1, d)?);
                cells *= (hi - lo + 1) as f64;
                match boxed.get_mut(d) {
                    Some(b) => *b = (b.0.min(lo), b.1.max(hi)),
                    None => boxed.push((lo, hi)),
                }
            }
            written_cells += cells;
        }
        let box_cells: f64 = boxed.iter().map(|(l, h)| (h - l + 1) as f64).product();
        if box_cells > amplification * written_cells {
            return Ok(None);
        }
        // older fragments outside the range must not meet the box: the
        // merged fragment's fills would hide their cells
        let all = TileDbArray::open(uri, options, (0, u64::MAX))?;
        for f in all.fragments.iter().filter(|f| f.t1 < t1 && !frags.iter().any(|g| g.name == f.name)) {
            let Some(ned) = &f.nonempty else { continue };
            let meets = (0..nd).all(|d| {
                let (lo, hi) = (ints(&ned[d].0, d).unwrap_or(i128::MAX), ints(&ned[d].1, d).unwrap_or(i128::MIN));
                lo <= boxed[d].1 && boxed[d].0 <= hi
            });
            if meets {
                return Ok(None);
            }
        }
        merge_dense(&array, uri, options, boxed, (t1, t2))?
    };
    write_vac(&array, &written.name, &frags)?;
    Ok(Some(written.name))
}

/// Read `array` (opened on just the fragments to merge) over the box
/// `boxed` row-major and write it as one dense fragment named for `range`.
fn merge_dense(
    array: &TileDbArray,
    uri: &str,
    options: &StorageOptions,
    boxed: Vec<(i128, i128)>,
    range: (u64, u64),
) -> Result<super::write::WrittenFragment> {
    use super::cells::{Bound, ReadOptions};
    let sub = boxed.iter().map(|&(l, h)| Some(vec![(Bound::Int(l), Bound::Int(h))])).collect();
    let batch = array.read(&ReadOptions { subarray: sub, dims: false, attrs: None, order: super::cells::Order::RowMajor, ..Default::default() })?;
    super::write::write_fragment_over(uri, options, std::slice::from_ref(&batch), Some(boxed), range, None, None)
}

/// Every cell version of `array`'s fragments (those to merge), written with
/// its per-cell timestamp as one sparse fragment named for `range`, as
/// TileDB 2.30 merges sparse fragments: a time-travel read inside the range
/// still sees each cell as it was then, and a fragment not merged but
/// written inside the range still wins where it is newer. None when no
/// cell is left (all deleted).
fn merge_sparse(array: &TileDbArray, uri: &str, options: &StorageOptions, range: (u64, u64)) -> Result<Option<super::write::WrittenFragment>> {
    let (batch, timestamps, delete_meta) = array.read_all_versions()?;
    if batch.num_rows() == 0 {
        return Ok(None);
    }
    super::write::write_fragment_over(uri, options, std::slice::from_ref(&batch), None, range, Some(&timestamps), delete_meta.as_ref()).map(Some)
}

/// `__commits/<merged>.vac` listing the merged fragments, written after
/// the merged fragment is committed.
fn write_vac(array: &TileDbArray, merged: &str, frags: &[&super::fragment::FragmentMeta]) -> Result<()> {
    let body: String = frags.iter().map(|f| format!("/__fragments/{}\n", f.name)).collect();
    array.root.child(&format!("__commits/{merged}.vac"))?.write_new(Bytes::from(body))
}

/// The fragment directory name a `fragment_uris` entry names: a bare name,
/// or a URI whose last two parts are `__fragments/<name>`.
fn listed_fragment(entry: &str) -> Result<String> {
    let trimmed = entry.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        None if !trimmed.is_empty() => Ok(trimmed.to_string()),
        Some((parent, name)) if !name.is_empty() && parent.ends_with("__fragments") => Ok(name.to_string()),
        _ => Err(Error::invalid_input(format!("{entry:?} is not a fragment of the array (expected a fragment name or .../__fragments/<name>)"))),
    }
}

/// Consolidate exactly the fragments `names` lists (TileDB's
/// `fragment_uris`: names or URIs under `__fragments/`) into one named
/// `__<first t1>_<last t2>_uuid_22`, then a `.vac` listing them; returns the
/// new fragment's name (None for fewer than two names, as TileDB).
///
/// As TileDB 2.30: every name must be a visible fragment
/// (`InvalidInputError` otherwise); on dense arrays, no other fragment
/// starting at or before the newest listed one's end may meet the union of
/// their non-empty domains expanded to whole space tiles (its cells would
/// be hidden by the merged fragment's fills: `InvalidInputError`). The set
/// need not be contiguous in time: sparse merges keep per-cell timestamps,
/// so a fragment not listed but written between the listed ones still
/// wins where it is newer.
pub fn consolidate_fragment_list(uri: &str, options: &StorageOptions, names: &[String]) -> Result<Option<String>> {
    use super::schema::int_value;
    let mut wanted: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        wanted.push(listed_fragment(n)?);
    }
    let mut array = TileDbArray::open(uri, options, (0, now_ms()))?;
    if names.len() <= 1 {
        return Ok(None);
    }
    let found = array.fragments.iter().filter(|f| wanted.contains(&f.name)).count();
    if found != wanted.len() {
        let missing: Vec<&String> = wanted.iter().filter(|w| !array.fragments.iter().any(|f| &f.name == *w)).collect();
        return Err(Error::invalid_input(format!(
            "cannot consolidate: found {found} of the {} fragments listed (not visible fragments of {uri}: {missing:?}{})",
            wanted.len(),
            if missing.is_empty() { "; a fragment is listed twice" } else { "" }
        )));
    }
    let all = std::mem::take(&mut array.fragments);
    let (chosen, others): (Vec<_>, Vec<_>) = all.into_iter().partition(|f| wanted.contains(&f.name));
    let schema = array.schema.clone();
    let nd = schema.dims.len();
    let t1 = chosen.iter().map(|f| f.t1).min().unwrap_or(0);
    let t2 = chosen.last().map(|f| f.t2).unwrap_or(0);
    let max_t2 = chosen.iter().map(|f| f.t2).max().unwrap_or(0);
    let written_nonempty: Vec<&super::fragment::Mbr> = chosen.iter().filter_map(|f| f.nonempty.as_ref()).collect();
    let written = if schema.sparse {
        array.fragments = chosen;
        let Some(w) = merge_sparse(&array, uri, options, (t1, t2))? else { return Ok(None) };
        array.fragments.extend(others);
        w
    } else {
        let ints = |v: &[u8], d: usize| int_value(schema.dims[d].datatype, v).ok_or_else(|| Error::corrupt("non-integer dense non-empty domain"));
        let mut boxed: Vec<(i128, i128)> = Vec::with_capacity(nd);
        for ned in &written_nonempty {
            for d in 0..nd {
                let (lo, hi) = (ints(&ned[d].0, d)?, ints(&ned[d].1, d)?);
                match boxed.get_mut(d) {
                    Some(b) => *b = (b.0.min(lo), b.1.max(hi)),
                    None => boxed.push((lo, hi)),
                }
            }
        }
        if boxed.is_empty() {
            return Ok(None);
        }
        // the union expanded to whole space tiles: TileDB's merged fragment
        // writes fills over all of it
        let expanded: Vec<(i128, i128)> = boxed
            .iter()
            .enumerate()
            .map(|(d, &(lo, hi))| {
                let dim = &schema.dims[d];
                match (dim.int_domain(), dim.int_extent()) {
                    (Some((dlo, _)), Some(ext)) if ext > 0 => (dlo + (lo - dlo) / ext * ext, dlo + ((hi - dlo) / ext + 1) * ext - 1),
                    _ => (lo, hi),
                }
            })
            .collect();
        for f in others.iter().filter(|f| f.t1 <= max_t2) {
            let Some(ned) = &f.nonempty else { continue };
            let meets = (0..nd).all(|d| {
                let (lo, hi) = (ints(&ned[d].0, d).unwrap_or(i128::MAX), ints(&ned[d].1, d).unwrap_or(i128::MIN));
                lo <= expanded[d].1 && expanded[d].0 <= hi
            });
            if meets {
                return Err(Error::invalid_input(format!(
                    "cannot consolidate: the non-empty domain of fragment {} overlaps the union of the non-empty domains \
                     of the fragments listed and was written before them (the merged fragment's fills would hide its cells)",
                    f.name
                )));
            }
        }
        array.fragments = chosen;
        let w = merge_dense(&array, uri, options, boxed, (t1, t2))?;
        array.fragments.extend(others);
        w
    };
    let merged: Vec<&super::fragment::FragmentMeta> = array.fragments.iter().filter(|f| wanted.contains(&f.name)).collect();
    write_vac(&array, &written.name, &merged)?;
    Ok(Some(written.name))
}

/// A generic tile of `data` (datatype CHAR, Gzip level 1 in 64 KiB
/// chunks), as the writer makes them (`write::encode::generic_tile`).
pub(crate) fn write_generic_tile(data: &[u8]) -> Result<Vec<u8>> {
    Ok(super::write::encode::generic_tile(data))
}

/// Bytes per chunk of a generic tile's filter pipeline.
#[cfg(test)]
const GENERIC_CHUNK: usize = super::write::encode::MAX_CHUNK_SIZE as usize;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiledb::generic_tile::read_generic_tile;

    #[test]
    fn generic_tiles_round_trip() {
        for n in [0usize, 1, 1633, GENERIC_CHUNK, GENERIC_CHUNK * 2 + 7] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            let tile = write_generic_tile(&data).unwrap();
            let (back, end) = read_generic_tile(&tile, 0).unwrap();
            assert_eq!(back, data);
            assert_eq!(end, tile.len());
        }
    }

    #[test]
    fn con_files_round_trip() {
        let entries = vec![
            CommitEntry { uri: "__commits/__1_1_aa_22.wrt".into(), condition: None },
            CommitEntry { uri: "__commits/__2_2_bb_22.del".into(), condition: Some(vec![1, 2, 3]) },
            CommitEntry { uri: "__commits/__3_3_cc_22.wrt".into(), condition: None },
        ];
        let b = serialize_con(&entries);
        assert_eq!(parse_con(&b, "x").unwrap(), entries);
        assert!(parse_con(&b[..b.len() - 1], "x").is_err());
        assert!(parse_con(b"__commits/x.txt\n", "x").is_err());
        assert!(parse_con(&b[..35], "x").is_err());
    }
}
