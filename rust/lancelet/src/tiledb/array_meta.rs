//! Array metadata (`__meta/`): consolidation and vacuuming as TileDB 2.30
//! does them. lancelet has no metadata API of its own; it only keeps the
//! files TileDB writes consistent when asked to consolidate or vacuum them.
//!
//! Layout: `__meta/__<t1>_<t2>_<uuid>` (a timestamped name without a format
//! version) is one generic tile (Gzip level 1, 64 KiB chunks) holding
//! entries `u32 key length, key, u8 deleted`, and when not deleted `u8
//! datatype, u32 value count, count × datatype width bytes`. A file is in
//! an open range `[start, end]` when its whole `[t1, t2]` lies inside it and
//! no `.vac` file whose own range lies inside it lists it (lines
//! `/__meta/<name>`, relative to the array). The files in range apply in
//! order of `t1`: an entry replaces the key's value, a deletion removes it.
//!
//! Consolidation merges the files in range (at least two) into one file
//! named `__<first t1>_<last t2>_<uuid>` holding the surviving keys in byte
//! order (no deletions), written first, then a `.vac` of the same name
//! listing the merged files. When every key was deleted no file is written,
//! only the `.vac` (TileDB stores no empty metadata). Vacuuming removes every
//! file a `.vac` lists and then the `.vac` files.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::consolidate::now_ms;
use super::fragment::TimestampedName;
use super::generic_tile::read_generic_tile;
use super::vacuum::Vacuumed;
use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};

/// A metadata value: TileDB datatype code, value count and raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaValue {
    pub datatype: u8,
    pub count: u32,
    pub bytes: Vec<u8>,
}

/// One decoded entry: a key and its value, or `None` for a deletion.
pub type MetaEntry = (Vec<u8>, Option<MetaValue>);

/// Bytes per value of a metadata datatype (TileDB's `datatype_size`).
fn value_width(code: u8, file: &str) -> Result<usize> {
    Ok(match code {
        5 | 6 | 4 | 11 | 12 | 17 | 40..=43 => 1, // int8, uint8, char, ascii, utf8, any, blob, bool, geometries
        7 | 8 | 13 | 15 => 2,                    // int16, uint16, utf16, ucs2
        0 | 2 | 9 | 14 | 16 => 4,                // int32, float32, uint32, utf32, ucs4
        1 | 3 | 10 | 18..=39 => 8,               // int64, float64, uint64, datetimes, times
        other => return Err(Error::corrupt(format!("{file}: metadata value of unknown datatype code {other}"))),
    })
}

/// Decode the entries of one metadata tile, in file order.
pub fn parse_entries(b: &[u8], file: &str) -> Result<Vec<MetaEntry>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let take = |pos: &mut usize, n: usize, what: &str| -> Result<&[u8]> {
        let s = pos
            .checked_add(n)
            .and_then(|end| b.get(*pos..end))
            .ok_or_else(|| Error::corrupt(format!("{file}: metadata {what} runs past the tile ({} bytes)", b.len())))?;
        *pos += n;
        Ok(s)
    };
    while pos < b.len() {
        let key_len = u32::from_le_bytes(take(&mut pos, 4, "key length")?.try_into().unwrap_or_default()) as usize;
        let key = take(&mut pos, key_len, "key")?.to_vec();
        let deleted = take(&mut pos, 1, "deletion flag")?[0];
        if deleted != 0 {
            out.push((key, None));
            continue;
        }
        let datatype = take(&mut pos, 1, "datatype")?[0];
        let count = u32::from_le_bytes(take(&mut pos, 4, "value count")?.try_into().unwrap_or_default());
        let len =
            (count as usize).checked_mul(value_width(datatype, file)?).ok_or_else(|| Error::corrupt(format!("{file}: metadata value too large")))?;
        let bytes = take(&mut pos, len, "value")?.to_vec();
        out.push((key, Some(MetaValue { datatype, count, bytes })));
    }
    Ok(out)
}

/// Serialize surviving keys (byte order) as TileDB stores them.
pub fn serialize_entries(map: &BTreeMap<Vec<u8>, MetaValue>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in map {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.push(0);
        out.push(v.datatype);
        out.extend_from_slice(&v.count.to_le_bytes());
        out.extend_from_slice(&v.bytes);
    }
    out
}

/// What `__meta/` holds for an open range.
struct MetaDir {
    /// Metadata files in range and not vacuumed, ordered by `t1`: (name, t1, t2).
    loaded: Vec<(String, u64, u64)>,
    /// Every `.vac` file.
    vacs: Vec<String>,
}

fn inside(ts: (u64, u64), range: (u64, u64)) -> bool {
    range.0 <= ts.0 && ts.1 <= range.1
}

/// The metadata file name a `.vac` line names (`/__meta/<name>`, or an
/// absolute URI holding `__meta/<name>`).
fn vac_entry(line: &str) -> Option<&str> {
    let i = line.find("__meta/")?;
    let name = &line[i + "__meta/".len()..];
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

impl MetaDir {
    fn load(dir: &Storage, range: (u64, u64)) -> Result<Self> {
        let mut files: Vec<(String, u64, u64)> = Vec::new();
        let mut vacs = Vec::new();
        let mut hidden: Vec<String> = Vec::new();
        let mut names: Vec<String> = dir.list()?.into_iter().map(|(n, _)| n).collect();
        names.sort();
        for name in names {
            if name.ends_with(".tmp") {
                continue; // a write TileDB has not finished
            }
            let stem = name.strip_suffix(".vac").unwrap_or(&name);
            let Ok(ts) = TimestampedName::parse(stem) else { continue };
            if name.ends_with(".vac") {
                if inside((ts.t1, ts.t2), range) {
                    let body = dir.child(&name)?.read_all()?;
                    hidden.extend(String::from_utf8_lossy(&body).lines().filter_map(vac_entry).map(str::to_string));
                }
                vacs.push(name);
            } else if inside((ts.t1, ts.t2), range) {
                files.push((name, ts.t1, ts.t2));
            }
        }
        files.retain(|(n, _, _)| !hidden.contains(n));
        files.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok(MetaDir { loaded: files, vacs })
    }
}

fn root_of(uri: &str, options: &StorageOptions) -> Result<Storage> {
    let root = super::open_array_root(uri, options)?;
    if root.child("__schema")?.list()?.is_empty() {
        return Err(Error::not_found(format!("TileDB array at {} (no __schema)", root.display())));
    }
    Ok(root)
}

/// The array metadata visible in `range` (inclusive ms): key → value.
pub fn read_metadata(uri: &str, options: &StorageOptions, range: (u64, u64)) -> Result<BTreeMap<Vec<u8>, MetaValue>> {
    let root = root_of(uri, options)?;
    let dir = root.child("__meta")?;
    let listing = MetaDir::load(&dir, range)?;
    merge(&dir, &listing.loaded)
}

fn merge(dir: &Storage, files: &[(String, u64, u64)]) -> Result<BTreeMap<Vec<u8>, MetaValue>> {
    let mut map = BTreeMap::new();
    for (name, _, _) in files {
        let file = format!("{}/{name}", dir.display());
        let bytes = dir.child(name)?.read_all()?;
        let (tile, _) = read_generic_tile(&bytes, 0).map_err(|e| e.in_file(&file))?;
        for (key, value) in parse_entries(&tile, &file)? {
            match value {
                Some(v) => map.insert(key, v),
                None => map.remove(&key),
            };
        }
    }
    Ok(map)
}

/// Consolidate the array metadata files in `range` (inclusive ms, capped at
/// now) into one; returns the new file's name (None with fewer than two
/// files in range, or when every key was deleted: then only the `.vac` is
/// written).
pub fn consolidate_array_meta(uri: &str, options: &StorageOptions, range: (u64, u64)) -> Result<Option<String>> {
    let root = root_of(uri, options)?;
    let end = range.1.min(now_ms());
    if range.0 > end {
        return Ok(None);
    }
    let dir = root.child("__meta")?;
    let listing = MetaDir::load(&dir, (range.0, end))?;
    if listing.loaded.len() < 2 {
        return Ok(None);
    }
    let map = merge(&dir, &listing.loaded)?;
    let t1 = listing.loaded[0].1;
    let t2 = listing.loaded[listing.loaded.len() - 1].2;
    let name = format!("__{t1}_{t2}_{}", super::consolidate::random_hex32());
    let written = if map.is_empty() {
        None
    } else {
        let tile = super::write::encode::generic_tile(&serialize_entries(&map));
        dir.child(&name)?.write_new(Bytes::from(tile))?;
        Some(name.clone())
    };
    let body: String = listing.loaded.iter().map(|(n, _, _)| format!("/__meta/{n}\n")).collect();
    dir.child(&format!("{name}.vac"))?.write_new(Bytes::from(body))?;
    Ok(written)
}

/// Remove the metadata files `.vac` files list, then the `.vac` files.
pub fn vacuum_array_meta(uri: &str, options: &StorageOptions) -> Result<Vacuumed> {
    let root = root_of(uri, options)?;
    let dir = root.child("__meta")?;
    let listing = MetaDir::load(&dir, (0, u64::MAX))?;
    let mut listed: Vec<String> = Vec::new();
    for vac in &listing.vacs {
        let body = dir.child(vac)?.read_all()?;
        for name in String::from_utf8_lossy(&body).lines().filter_map(vac_entry) {
            if !listed.iter().any(|l| l == name) {
                listed.push(name.to_string());
            }
        }
    }
    let mut out = Vacuumed::default();
    for name in listed.iter().chain(listing.vacs.iter()) {
        match dir.child(name)?.delete() {
            Ok(()) => out.removed.push(format!("__meta/{name}")),
            Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_deletions_parse() {
        let mut map = BTreeMap::new();
        map.insert(b"z".to_vec(), MetaValue { datatype: 1, count: 2, bytes: [7u64.to_le_bytes(), 8u64.to_le_bytes()].concat() });
        map.insert(b"a".to_vec(), MetaValue { datatype: 12, count: 3, bytes: b"abc".to_vec() });
        map.insert(b"e".to_vec(), MetaValue { datatype: 3, count: 0, bytes: vec![] });
        let bytes = serialize_entries(&map);
        let back = parse_entries(&bytes, "t").unwrap();
        assert_eq!(back.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), vec![b"a".to_vec(), b"e".to_vec(), b"z".to_vec()]);
        assert_eq!(back[2].1.as_ref().unwrap(), &map[&b"z".to_vec()]);
        let mut del = Vec::new();
        del.extend_from_slice(&1u32.to_le_bytes());
        del.extend_from_slice(b"k");
        del.push(1);
        assert_eq!(parse_entries(&del, "t").unwrap(), vec![(b"k".to_vec(), None)]);
    }

    #[test]
    fn truncated_or_unknown_entries_are_corrupt() {
        let mut map = BTreeMap::new();
        map.insert(b"key".to_vec(), MetaValue { datatype: 1, count: 1, bytes: 5u64.to_le_bytes().to_vec() });
        let bytes = serialize_entries(&map);
        for cut in 1..bytes.len() {
            assert!(matches!(parse_entries(&bytes[..cut], "t"), Err(Error::Corrupt { .. })), "cut {cut}");
        }
        let mut bad = bytes.clone();
        bad[8] = 99; // datatype code
        assert!(matches!(parse_entries(&bad, "t"), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn vac_lines_name_metadata_files() {
        assert_eq!(vac_entry("/__meta/__1_2_ab"), Some("__1_2_ab"));
        assert_eq!(vac_entry("file:///a/b/__meta/__1_2_ab"), Some("__1_2_ab"));
        assert_eq!(vac_entry("/__fragments/__1_2_ab_22"), None);
    }
}
