//! Index metadata: the entries of a manifest's index section
//! (`IndexMetadata`, protos/table.proto) as pylance 14 writes them.
//!
//! | field | what |
//! |---|---|
//! | 1 `uuid` | 16 bytes; the files live in `_indices/{uuid}/` |
//! | 2 `fields` | the indexed column's field id |
//! | 3 `name` | unique per dataset version (segments of one index share it) |
//! | 4 `dataset_version` | the version the index was built from (kept by optimize and remaps) |
//! | 5 `fragment_bitmap` | portable Roaring bitmap of the fragments covered, run-optimized (cookie 12347 when runs are smaller, else 12346) |
//! | 6 `index_details` | `Any` with type URL `/lance.table.{BTree,Bitmap,LabelList}IndexDetails`, empty value |
//! | 7 `index_version` | BTREE 0 (1 with stable row ids), BITMAP 0, LABEL_LIST 1 |
//! | 8 `created_at` | milliseconds since the epoch |
//! | 10 `files` | name and size of each file |

use roaring::RoaringBitmap;

use super::rowset::{fragment_bitmap_bytes, parse_fragment_bitmap};
use super::{frag_reuse, IndexKind};
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;

/// Directory of index files, relative to the dataset root.
pub const INDICES_DIR: &str = "_indices";

/// The directory of index entry `m`: `_indices/{uuid}` under the dataset
/// root, or under the base path its `base_id` names (a shallow clone's
/// indices stay in the source dataset, base 0 of the clone). A base that
/// is a dataset root holds them under its own `_indices/`; any other base
/// holds `{uuid}/` at its top.
pub fn index_dir(root: &Storage, bases: &[pb::BasePath], m: &pb::IndexMetadata) -> Result<Storage> {
    let uuid = uuid_string(m.uuid.as_ref().map(|u| u.uuid.as_slice()).unwrap_or_default());
    let Some(id) = m.base_id else { return root.child(&format!("{INDICES_DIR}/{uuid}")) };
    let base = bases
        .iter()
        .find(|b| b.id == id)
        .ok_or_else(|| Error::corrupt(format!("index {:?} ({uuid}) names base path {id}, which the manifest does not list", m.name)))?;
    let base_root = root.open_uri(&base.path)?;
    if base.is_dataset_root {
        base_root.child(&format!("{INDICES_DIR}/{uuid}"))
    } else {
        base_root.child(&uuid)
    }
}

/// A UUID's 16 bytes in the hyphenated form.
pub fn uuid_string(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    if h.len() != 32 {
        return h;
    }
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Parse a hyphenated UUID into its 16 bytes.
pub fn uuid_bytes(s: &str) -> Result<Vec<u8>> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::invalid_input(format!("{s:?} is not a UUID")));
    }
    Ok((0..16).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect())
}

/// One decoded entry of the index section.
#[derive(Debug, Clone)]
pub struct IndexInfo {
    /// The entry as stored.
    pub pb: pb::IndexMetadata,
    /// Hyphenated uuid.
    pub uuid: String,
    /// Fragments covered, as stored.
    pub fragment_bitmap: RoaringBitmap,
    /// The kind, for the index types lancelet knows.
    pub kind: Option<IndexKind>,
}

impl IndexInfo {
    /// Decode an entry.
    pub fn from_pb(m: &pb::IndexMetadata) -> Result<Self> {
        let uuid = uuid_string(m.uuid.as_ref().map(|u| u.uuid.as_slice()).unwrap_or_default());
        let fragment_bitmap = if m.fragment_bitmap.is_empty() {
            RoaringBitmap::new()
        } else {
            parse_fragment_bitmap(&m.fragment_bitmap).map_err(|e| e.context(format!("index {:?} ({uuid})", m.name)))?
        };
        let kind = m.index_details.as_ref().and_then(|d| IndexKind::from_type_url(&d.type_url));
        Ok(IndexInfo { pb: m.clone(), uuid, fragment_bitmap, kind })
    }

    /// The index name.
    pub fn name(&self) -> &str {
        &self.pb.name
    }

    /// Type URL of its details (empty when absent).
    pub fn type_url(&self) -> &str {
        self.pb.index_details.as_ref().map(|d| d.type_url.as_str()).unwrap_or("")
    }

    /// True for the fragment reuse index (and other `__` system indices).
    pub fn is_system(&self) -> bool {
        self.pb.name == frag_reuse::NAME || self.type_url().ends_with("FragmentReuseIndexDetails")
    }

    /// pylance's type name: `BTree`, `Bitmap`, `LabelList`,
    /// `FragmentReuse`, else the details' message name.
    pub fn type_name(&self) -> String {
        if let Some(k) = self.kind {
            return k.display_name().to_string();
        }
        let msg = self.type_url().rsplit('.').next().unwrap_or("");
        msg.strip_suffix("IndexDetails").unwrap_or(msg).to_string()
    }
}

/// The entries of a manifest's index section (none without one).
pub fn infos_of(section: Option<&pb::IndexSection>) -> Result<Vec<IndexInfo>> {
    match section {
        None => Ok(Vec::new()),
        Some(s) => s.indices.iter().map(IndexInfo::from_pb).collect(),
    }
}

/// A new entry for an index built now.
#[allow(clippy::too_many_arguments)]
pub fn new_metadata(
    uuid: &str,
    name: &str,
    field_id: i32,
    kind: IndexKind,
    dataset_version: u64,
    fragments: impl IntoIterator<Item = u32>,
    stable: bool,
    files: &[(String, u64)],
) -> Result<pb::IndexMetadata> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid: uuid_bytes(uuid)? }),
        fields: vec![field_id],
        name: name.to_string(),
        dataset_version,
        fragment_bitmap: fragment_bitmap_bytes(fragments),
        index_details: Some(prost_types::Any { type_url: kind.type_url().to_string(), value: Vec::new() }),
        index_version: Some(kind.index_version(stable)),
        created_at: Some(now.as_millis() as u64),
        base_id: None,
        files: files.iter().map(|(path, size)| pb::IndexFile { path: path.clone(), size_bytes: *size }).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids() {
        let s = "13804b76-f9fc-4962-ad00-fa70aa06352f";
        let b = uuid_bytes(s).unwrap();
        assert_eq!(b.len(), 16);
        assert_eq!(uuid_string(&b), s);
        assert!(uuid_bytes("nope").is_err());
    }
}
