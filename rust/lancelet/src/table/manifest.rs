//! Manifest files: naming, listing and framing.
//!
//! Each dataset version is one file under `_versions/`:
//!
//! * **V1 naming**: `{version}.manifest` (`1.manifest`, `2.manifest`, …);
//! * **V2 naming**: `{u64::MAX - version}` zero-padded to 20 digits
//!   (`18446744073709551614.manifest` is version 1), so that a plain
//!   lexicographic listing yields the newest version first. A name is V2
//!   when its stem is exactly 20 digits.
//!
//! Names starting with `d` are detached versions and are not part of the
//! history; `latest_version_hint.json` is only a hint, so the listing is
//! what decides which versions exist.
//!
//! A manifest file is a series of sections, each `u32 LE length` followed by
//! that many protobuf bytes, then a 16-byte footer:
//!
//! ```text
//! [IndexSection]?   (offset in Manifest.index_section)
//! [Transaction]?    (offset in Manifest.transaction_section, field 23)
//! [Manifest]        must be the last section
//! u64 LE  offset of the Manifest section's length prefix
//! u16 LE  major (0)   u16 LE minor (2)
//! "LANC"
//! ```
//!
//! The reader checks that the Manifest section ends exactly at the footer.

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;

/// Directory of the manifests, relative to the dataset root.
pub const VERSIONS_DIR: &str = "_versions";
/// Footer length of a manifest file.
pub const FOOTER_LEN: usize = 16;
const MAGIC: &[u8; 4] = b"LANC";

/// How a manifest file is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestNaming {
    /// `{version}.manifest`
    V1,
    /// `{u64::MAX - version:020}.manifest`
    V2,
}

impl ManifestNaming {
    /// The file name of `version` under this scheme.
    pub fn file_name(self, version: u64) -> String {
        match self {
            ManifestNaming::V1 => format!("{version}.manifest"),
            ManifestNaming::V2 => format!("{:020}.manifest", u64::MAX - version),
        }
    }
}

/// One manifest found in `_versions/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLocation {
    /// The dataset version it describes.
    pub version: u64,
    /// File name under `_versions/`.
    pub name: String,
    /// Naming scheme of that name.
    pub naming: ManifestNaming,
    /// File size in bytes, when the listing told us.
    pub size: Option<u64>,
}

/// Parse a manifest file name; `None` for anything that is not one
/// (detached versions, the hint file, temporary files).
pub fn parse_manifest_name(name: &str) -> Option<(u64, ManifestNaming)> {
    let stem = name.strip_suffix(".manifest")?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    if stem.len() == 20 {
        Some((u64::MAX - n, ManifestNaming::V2))
    } else {
        Some((n, ManifestNaming::V1))
    }
}

/// Every version in `_versions/`, oldest first; with an external manifest
/// store, the store decides the latest version (see
/// [`crate::table::commit_store::reconcile`]).
pub fn list_versions(root: &Storage) -> Result<Vec<ManifestLocation>> {
    let mut out = list_version_files(root)?;
    if let Some(store) = root.manifest_store() {
        crate::table::commit_store::reconcile(root, store.as_ref(), &mut out)?;
    }
    Ok(out)
}

/// The manifests `_versions/` holds, oldest first.
fn list_version_files(root: &Storage) -> Result<Vec<ManifestLocation>> {
    let dir = root.child(VERSIONS_DIR)?;
    let mut out: Vec<ManifestLocation> = dir
        .list()?
        .into_iter()
        .filter_map(|(name, size)| parse_manifest_name(&name).map(|(version, naming)| ManifestLocation { version, name, naming, size: Some(size) }))
        .collect();
    out.sort_by(|a, b| a.version.cmp(&b.version).then((a.naming == ManifestNaming::V1).cmp(&(b.naming == ManifestNaming::V1))));
    // Both names for one version (a migration in progress): keep the V2 one.
    out.dedup_by_key(|l| l.version);
    Ok(out)
}

/// The sections of a manifest file, decoded.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    /// The manifest itself.
    pub manifest: pb::Manifest,
    /// The whole file, so other sections (transaction, indices) can be
    /// decoded on demand.
    pub bytes: Bytes,
}

impl ManifestFile {
    /// The embedded transaction, if the manifest points at one.
    pub fn transaction(&self) -> Result<Option<pb::Transaction>> {
        let Some(pos) = self.manifest.transaction_section.or(self.manifest.transaction_section_old) else {
            return Ok(None);
        };
        Ok(Some(pb::Transaction::decode(section_at(&self.bytes, pos, "transaction")?).map_err(Error::bad_protobuf)?))
    }

    /// The bytes before the first section. v0.1 datasets keep the values
    /// of dictionary fields there (`Field.dictionary` holds absolute
    /// positions into this file), so a manifest that keeps those fields
    /// starts with the same bytes.
    pub fn leading_bytes(&self) -> Bytes {
        let n = self.bytes.len();
        let manifest_pos = u64::from_le_bytes(self.bytes[n - 16..n - 8].try_into().expect("8 bytes"));
        let m = &self.manifest;
        let first = [Some(manifest_pos), m.index_section, m.transaction_section, m.transaction_section_old].into_iter().flatten().min().unwrap_or(0);
        self.bytes.slice(..(first as usize).min(n - FOOTER_LEN))
    }

    /// The index section, if any.
    pub fn index_section(&self) -> Result<Option<pb::IndexSection>> {
        let Some(pos) = self.manifest.index_section else {
            return Ok(None);
        };
        Ok(Some(pb::IndexSection::decode(section_at(&self.bytes, pos, "index section")?).map_err(Error::bad_protobuf)?))
    }

    /// The entries of the index section, described.
    pub fn indices(&self) -> Result<Vec<crate::index::meta::IndexInfo>> {
        crate::index::meta::infos_of(self.index_section()?.as_ref())
    }
}

/// The length-prefixed section starting at `pos`.
fn section_at(bytes: &Bytes, pos: u64, what: &str) -> Result<Bytes> {
    let body_end = bytes.len().saturating_sub(FOOTER_LEN);
    let start = usize::try_from(pos).ok().filter(|&p| p.checked_add(4).is_some_and(|e| e <= body_end));
    let Some(start) = start else {
        return Err(Error::corrupt(format!("{what} offset {pos} lies outside the manifest ({} bytes)", bytes.len())));
    };
    let len = u32::from_le_bytes(bytes[start..start + 4].try_into().expect("4 bytes")) as usize;
    let end = start + 4 + len;
    if end > body_end {
        return Err(Error::corrupt(format!("{what} at {pos} ({len} bytes) runs past the footer")));
    }
    Ok(bytes.slice(start + 4..end))
}

/// Decode a manifest file's bytes (errors carry no path; see [`read_manifest`]).
pub fn decode_manifest(bytes: Bytes) -> Result<ManifestFile> {
    let n = bytes.len();
    if n < FOOTER_LEN + 4 {
        return Err(Error::corrupt(format!("manifest is {n} bytes, too short")));
    }
    if &bytes[n - 4..] != MAGIC {
        return Err(Error::corrupt("manifest does not end with the LANC magic"));
    }
    let pos = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().expect("8 bytes"));
    let body = section_at(&bytes, pos, "manifest section")?;
    // The manifest must be the last section.
    if pos as usize + 4 + body.len() != n - FOOTER_LEN {
        return Err(Error::corrupt(format!(
            "manifest section at {pos} ({} bytes) does not end at the footer ({} bytes before the end)",
            body.len(),
            FOOTER_LEN
        )));
    }
    let manifest = pb::Manifest::decode(body).map_err(|e| Error::corrupt(format!("manifest: bad protobuf: {e}")).with_source(e))?;
    Ok(ManifestFile { manifest, bytes })
}

/// Read and decode `_versions/{name}`.
pub fn read_manifest(root: &Storage, name: &str) -> Result<ManifestFile> {
    let s = root.child(&format!("{VERSIONS_DIR}/{name}"))?;
    let bytes = s.read_all()?;
    decode_manifest(bytes).map_err(|e| e.in_file(s.display()))
}

/// Frame sections the way Lance does: each `u32 len + bytes`, the last one
/// being the manifest, then the footer. Returns the file and the offset of
/// every section.
pub fn frame_sections(sections: &[&[u8]]) -> (Vec<u8>, Vec<u64>) {
    frame_sections_after(&[], sections)
}

/// The bytes of a manifest file: `prefix` (a v0.1 manifest's dictionary
/// values, which its fields address by position), then the index section
/// when there is one, the transaction, and the manifest itself, whose
/// `index_section` and `transaction_section` offsets are set here.
pub fn manifest_file_bytes(prefix: &[u8], m: &mut pb::Manifest, index_bytes: Option<&[u8]>, txn_bytes: &[u8]) -> Vec<u8> {
    let mut pos = prefix.len() as u64;
    m.index_section = None;
    if let Some(b) = index_bytes {
        m.index_section = Some(pos);
        pos += 4 + b.len() as u64;
    }
    m.transaction_section = Some(pos);
    let m_bytes = m.encode_to_vec();
    let mut sections: Vec<&[u8]> = index_bytes.into_iter().collect();
    sections.push(txn_bytes);
    sections.push(&m_bytes);
    frame_sections_after(prefix, &sections).0
}

/// [`frame_sections`] after `prefix` (unframed bytes at the start of the
/// file, see [`ManifestFile::leading_bytes`]); offsets are absolute.
pub fn frame_sections_after(prefix: &[u8], sections: &[&[u8]]) -> (Vec<u8>, Vec<u64>) {
    let mut out = prefix.to_vec();
    let mut offsets = Vec::with_capacity(sections.len());
    for s in sections {
        offsets.push(out.len() as u64);
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    }
    let last = offsets.last().copied().unwrap_or(0);
    out.extend_from_slice(&last.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(MAGIC);
    (out, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_manifest_name("18446744073709551614.manifest"), Some((1, ManifestNaming::V2)));
        assert_eq!(parse_manifest_name("1.manifest"), Some((1, ManifestNaming::V1)));
        assert_eq!(parse_manifest_name("123.manifest"), Some((123, ManifestNaming::V1)));
        assert_eq!(parse_manifest_name("d123.manifest"), None);
        assert_eq!(parse_manifest_name("latest_version_hint.json"), None);
        assert_eq!(parse_manifest_name(".manifest"), None);
        for v in [1u64, 2, 10, 12345] {
            for n in [ManifestNaming::V1, ManifestNaming::V2] {
                assert_eq!(parse_manifest_name(&n.file_name(v)), Some((v, n)));
            }
        }
        assert_eq!(ManifestNaming::V2.file_name(1), "18446744073709551614.manifest");
    }

    #[test]
    fn framing_round_trip() {
        let m = pb::Manifest { version: 7, transaction_section: Some(0), ..Default::default() };
        let txn = pb::Transaction { read_version: 6, uuid: "u".into(), ..Default::default() };
        let (bytes, offsets) = frame_sections(&[&txn.encode_to_vec(), &m.encode_to_vec()]);
        assert_eq!(&bytes[bytes.len() - 8..], &[0, 0, 2, 0, b'L', b'A', b'N', b'C']);
        let f = decode_manifest(Bytes::from(bytes.clone())).unwrap();
        assert_eq!(f.manifest.version, 7);
        assert_eq!(f.transaction().unwrap().unwrap().read_version, 6);
        assert_eq!(offsets[0], 0);
        // truncated, bad magic, manifest not last, offset outside
        assert!(decode_manifest(Bytes::from(bytes[..10].to_vec())).is_err());
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 1] = b'X';
        assert!(decode_manifest(Bytes::from(bad)).unwrap_err().to_string().contains("magic"));
        let mut bad = bytes.clone();
        bad[n - 16..n - 8].copy_from_slice(&0u64.to_le_bytes());
        assert!(decode_manifest(Bytes::from(bad)).unwrap_err().to_string().contains("does not end at the footer"));
        let mut bad = bytes;
        bad[n - 16..n - 8].copy_from_slice(&9999u64.to_le_bytes());
        assert!(matches!(decode_manifest(Bytes::from(bad)), Err(Error::Corrupt { .. })));
    }

    /// A manifest whose framing is right but whose protobuf is not: corrupt
    /// data in that file, prost's error kept as the source.
    #[test]
    fn bad_protobuf_keeps_its_source() {
        let (bytes, _) = frame_sections(&[&[0xff, 0xff, 0xff]]);
        let e = decode_manifest(Bytes::from(bytes.clone())).unwrap_err();
        assert!(matches!(e, Error::Corrupt { path: None, .. }), "{e:?}");
        let source = std::error::Error::source(&e).expect("a source");
        assert!(source.is::<prost::DecodeError>(), "{source:?}");
        assert!(e.to_string().contains(&format!("manifest: bad protobuf: {source}")), "{e}");
        // Read from a dataset directory: the path is attached, the source kept.
        let dir = std::env::temp_dir().join(format!("lancelet-manifest-{}", crate::ids::new_uuid()));
        std::fs::create_dir_all(dir.join(VERSIONS_DIR)).unwrap();
        let name = ManifestNaming::V2.file_name(1);
        std::fs::write(dir.join(VERSIONS_DIR).join(&name), &bytes).unwrap();
        let e = crate::table::Dataset::open(dir.to_str().unwrap(), None).map(|d| d.version()).unwrap_err();
        assert!(matches!(&e, Error::Corrupt { path: Some(p), .. } if p.ends_with(&name)), "{e:?}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<prost::DecodeError>()), "{e:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fixture_manifests() {
        let dir = crate::testdata::pylance14("btree_index");
        let root = Storage::open(dir.to_str().unwrap()).unwrap();
        let versions = list_versions(&root).unwrap();
        assert_eq!(versions.iter().map(|v| v.version).collect::<Vec<_>>(), vec![1, 2]);
        let f = read_manifest(&root, &versions[1].name).unwrap();
        assert_eq!(f.manifest.version, 2);
        let idx = f.index_section().unwrap().unwrap();
        assert_eq!(idx.indices.len(), 1);
        assert!(!idx.indices[0].files.is_empty());
        assert!(f.transaction().unwrap().unwrap().operation.is_some());
    }
}
