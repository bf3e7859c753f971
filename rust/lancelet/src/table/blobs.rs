//! Blob columns of a dataset: how a scan returns them and where their
//! bytes live.
//!
//! * v1: a `large_binary` field with `lance-encoding:blob`. In 2.0/2.1
//!   data files each value is stored out of line in the data file behind a
//!   `(position, size)` description (absolute file offsets; see
//!   `file/structural/blob.rs`).
//! * v2: a struct field with the Arrow extension `lance.blob.v2` (logical
//!   `struct<data, uri[, position, size]>` in the manifest). The data file
//!   holds one packed column under the field's id, a descriptor
//!   `struct<kind: u8, position: u64, size: u64, blob_id: u32, blob_uri: utf8>`
//!   whose members carry field id -1. By `kind`:
//!   0 inline — bytes at `position..position+size` of the data file;
//!   1 packed — in sidecar `blob_id` at `position` (many blobs per file);
//!   2 dedicated — sidecar `blob_id` holds this blob alone;
//!   3 external — `blob_uri` (a range of it when `size > 0`, else whole).
//!   Sidecars sit next to the data file: `data/<stem>/<b>.blob`, `<b>` the
//!   32 binary digits of `blob_id` with its bits reversed (pylance 14).
//!
//! `blob_handling` (pylance's option) picks what a scan returns for blob
//! columns: the descriptors (`blobs_descriptions`, `all_descriptions`;
//! pylance's default) or the bytes (`all_binary`).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, LargeBinaryArray, StringArray, StructArray, UInt32Array, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Fields};

use crate::error::{Error, Result};
use crate::file::schema::LanceField;
use crate::file::structural::blob::blob_description_type;
use crate::io::Storage;

/// The field metadata key marking a blob column.
pub const BLOB_KEY: &str = "lance-encoding:blob";
/// The Arrow extension name of blob v2 columns.
pub const BLOB_V2_EXTENSION: &str = "lance.blob.v2";

/// Inline v2 blobs are at most this large (pylance 14's default).
pub const INLINE_MAX: u64 = 64 * 1024;
/// Packed v2 blobs are at most this large; larger ones get a sidecar each.
pub const PACKED_MAX: u64 = 4 * 1024 * 1024;

/// What a scan returns for blob columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlobHandling {
    /// The bytes, as `large_binary` (what every internal reader wants:
    /// compaction and updates rewrite them).
    #[default]
    AllBinary,
    /// The descriptors (pylance's default).
    BlobsDescriptions,
    /// The descriptors (pylance also describes other columns this way;
    /// for blob columns it is the same).
    AllDescriptions,
}

impl BlobHandling {
    /// Parse pylance's spelling.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "all_binary" => Ok(Self::AllBinary),
            "blobs_descriptions" => Ok(Self::BlobsDescriptions),
            "all_descriptions" => Ok(Self::AllDescriptions),
            other => {
                Err(Error::invalid_input(format!("blob_handling {other:?}: expected one of 'all_binary', 'blobs_descriptions', 'all_descriptions'")))
            }
        }
    }

    fn describes(self) -> bool {
        !matches!(self, Self::AllBinary)
    }
}

/// The kind of blob column a dataset field is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobVersion {
    /// `large_binary` + `lance-encoding:blob`.
    V1,
    /// `lance.blob.v2` extension struct.
    V2,
}

/// Whether `f` is a blob column and which.
pub fn blob_version(f: &Field) -> Option<BlobVersion> {
    if matches!(f.data_type(), DataType::LargeBinary) && f.metadata().contains_key(BLOB_KEY) {
        return Some(BlobVersion::V1);
    }
    let ext = f.metadata().get("ARROW:extension:name").map(String::as_str);
    (matches!(f.data_type(), DataType::Struct(_)) && ext == Some(BLOB_V2_EXTENSION)).then_some(BlobVersion::V2)
}

/// The v2 descriptor struct as pylance 14 stores and returns it.
pub fn v2_descriptor_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("kind", DataType::UInt8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("blob_id", DataType::UInt32, false),
        Field::new("blob_uri", DataType::Utf8, false),
    ]))
}

/// Whether a field read from a data file is a v2 descriptor column.
pub fn is_v2_descriptor(f: &Field) -> bool {
    matches!(f.data_type(), DataType::Struct(fs) if fs.len() == 5 && fs[0].name() == "kind" && fs[3].name() == "blob_id")
        && f.metadata().contains_key(BLOB_KEY)
}

/// Whether a requested field asks for v1 descriptions.
pub fn is_v1_description(f: &Field) -> bool {
    f.metadata().contains_key(BLOB_KEY) && f.data_type() == &blob_description_type()
}

fn descriptor_children(dt: &DataType) -> Vec<LanceField> {
    match dt {
        DataType::Struct(fs) => fs.iter().map(|c| LanceField { id: -1, arrow: c.as_ref().clone(), children: Vec::new() }).collect(),
        _ => Vec::new(),
    }
}

/// The field a scan reads for dataset field `f` under `handling` (the
/// field itself when it is no blob column).
pub fn read_field(f: &LanceField, handling: BlobHandling) -> LanceField {
    let md = |extra: &[(&str, &str)]| {
        let mut m: std::collections::HashMap<String, String> = [(BLOB_KEY.to_string(), "true".to_string())].into();
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        m
    };
    match (blob_version(&f.arrow), handling.describes()) {
        (Some(BlobVersion::V1), true) => {
            let dt = blob_description_type();
            let arrow = Field::new(f.arrow.name(), dt.clone(), f.arrow.is_nullable()).with_metadata(md(&[]));
            LanceField { id: f.id, arrow, children: descriptor_children(&dt) }
        }
        (Some(BlobVersion::V2), true) => {
            let dt = v2_descriptor_type();
            let arrow = Field::new(f.arrow.name(), dt.clone(), f.arrow.is_nullable()).with_metadata(md(&[("lance-encoding:packed", "true")]));
            LanceField { id: f.id, arrow, children: descriptor_children(&dt) }
        }
        (Some(BlobVersion::V2), false) => {
            // pylance keeps the field's metadata but the extension name.
            let mut keep = f.arrow.metadata().clone();
            keep.remove("ARROW:extension:name");
            let arrow = Field::new(f.arrow.name(), DataType::LargeBinary, f.arrow.is_nullable()).with_metadata(keep);
            LanceField { id: f.id, arrow, children: Vec::new() }
        }
        _ => f.clone(),
    }
}

/// [`read_field`] over a projection.
pub fn read_fields(fields: &[LanceField], handling: BlobHandling) -> Vec<LanceField> {
    fields.iter().map(|f| read_field(f, handling)).collect()
}

/// Give a v2 descriptor read from a file the requested descriptor type
/// (same layout; member nullability may differ).
pub fn as_v2_descriptor(array: ArrayRef, want: &DataType) -> Result<ArrayRef> {
    let s = array.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::corrupt("blob v2 descriptor column is not a struct"))?;
    let DataType::Struct(fs) = want else { return Err(Error::Internal { what: "v2 descriptor type is not a struct".into() }) };
    if s.num_columns() != fs.len() {
        return Err(Error::corrupt(format!("blob v2 descriptor has {} members, expected {}", s.num_columns(), fs.len())));
    }
    let cols: Vec<ArrayRef> = s
        .columns()
        .iter()
        .zip(fs.iter())
        .map(|(c, f)| {
            if c.data_type() != f.data_type() {
                return Err(Error::corrupt(format!(
                    "blob v2 descriptor member {:?} has type {}, expected {}",
                    f.name(),
                    c.data_type(),
                    f.data_type()
                )));
            }
            Ok(c.clone())
        })
        .collect::<Result<_>>()?;
    let relaxed = Fields::from(fs.iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>());
    let s = StructArray::try_new(relaxed, cols, s.nulls().cloned()).map_err(Error::corrupt_arrow)?;
    let data = s.into_data().into_builder().data_type(want.clone()).build().map_err(Error::corrupt_arrow)?;
    Ok(arrow_array::make_array(data))
}

/// Where one blob's bytes are.
#[derive(Debug, Clone)]
pub struct BlobLocation {
    /// The object holding it.
    pub storage: Storage,
    /// First byte in that object.
    pub offset: u64,
    /// Length in bytes.
    pub size: u64,
}

impl BlobLocation {
    /// Read `len` bytes at `at` within the blob (clamped to its end).
    pub fn read(&self, at: u64, len: u64) -> Result<bytes::Bytes> {
        let start = at.min(self.size);
        let end = at.saturating_add(len).min(self.size);
        if start == end {
            return Ok(bytes::Bytes::new());
        }
        self.storage.read_range(self.offset + start..self.offset + end)
    }
}

/// The sidecar file name of blob `id`.
pub fn sidecar_name(id: u32) -> String {
    format!("{:032b}.blob", id.reverse_bits())
}

/// The locations of v1 descriptions (`struct<position, size>`) read from
/// the data file `file`; `None` for nulls.
pub fn v1_locations(desc: &ArrayRef, file: &Storage) -> Result<Vec<Option<BlobLocation>>> {
    let s = desc.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::corrupt("blob description column is not a struct"))?;
    let pos = u64s(s, 0)?;
    let size = u64s(s, 1)?;
    Ok((0..s.len())
        .map(|i| {
            // 2.0 files describe a null as (1, 0) instead of a null struct.
            if s.is_null(i) || (size.value(i) == 0 && pos.value(i) != 0) {
                None
            } else {
                Some(BlobLocation { storage: file.clone(), offset: pos.value(i), size: size.value(i) })
            }
        })
        .collect())
}

fn u64s(s: &StructArray, i: usize) -> Result<&UInt64Array> {
    s.column(i).as_any().downcast_ref::<UInt64Array>().ok_or_else(|| Error::corrupt(format!("blob description member {i} is not uint64")))
}

/// The locations of v2 descriptors read from data file `file`; `None` for
/// nulls. External URIs are opened through `root` (its storage options).
pub fn v2_locations(desc: &ArrayRef, file: &Storage, root: &Storage) -> Result<Vec<Option<BlobLocation>>> {
    let s = desc.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::corrupt("blob v2 descriptor column is not a struct"))?;
    if s.num_columns() != 5 {
        return Err(Error::corrupt(format!("blob v2 descriptor has {} members, expected 5", s.num_columns())));
    }
    let bad = |what: &str| Error::corrupt(format!("blob v2 descriptor member {what} has the wrong type"));
    let kind = s.column(0).as_any().downcast_ref::<UInt8Array>().ok_or_else(|| bad("kind"))?;
    let pos = s.column(1).as_any().downcast_ref::<UInt64Array>().ok_or_else(|| bad("position"))?;
    let size = s.column(2).as_any().downcast_ref::<UInt64Array>().ok_or_else(|| bad("size"))?;
    let id = s.column(3).as_any().downcast_ref::<UInt32Array>().ok_or_else(|| bad("blob_id"))?;
    let uri = s.column(4).as_any().downcast_ref::<StringArray>().ok_or_else(|| bad("blob_uri"))?;
    let mut sidecars: std::collections::HashMap<u32, Storage> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(s.len());
    for i in 0..s.len() {
        if s.is_null(i) {
            out.push(None);
            continue;
        }
        let (p, n) = (pos.value(i), size.value(i));
        let loc = match kind.value(i) {
            0 => BlobLocation { storage: file.clone(), offset: p, size: n },
            1 | 2 => {
                let b = id.value(i);
                let st = match sidecars.get(&b) {
                    Some(st) => st.clone(),
                    None => {
                        let st = file.sidecar(&sidecar_name(b))?;
                        sidecars.insert(b, st.clone());
                        st
                    }
                };
                BlobLocation { storage: st, offset: p, size: n }
            }
            3 => {
                let st = root.open_uri(uri.value(i))?;
                let n = if n == 0 && p == 0 { st.size()? } else { n };
                BlobLocation { storage: st, offset: p, size: n }
            }
            k => return Err(Error::corrupt(format!("blob v2 descriptor of row {i} has unknown kind {k}"))),
        };
        out.push(Some(loc));
    }
    Ok(out)
}

/// Read the bytes of `locations` into a `large_binary` array (ranges of
/// one object fetched together).
pub fn read_locations(locations: &[Option<BlobLocation>]) -> Result<ArrayRef> {
    // Group the non-empty ranges by object.
    let mut groups: Vec<(Storage, Vec<std::ops::Range<u64>>, Vec<usize>)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, l) in locations.iter().enumerate() {
        let Some(l) = l else { continue };
        if l.size == 0 {
            continue;
        }
        let end = l.offset.checked_add(l.size).ok_or_else(|| Error::corrupt(format!("blob at {}+{} overflows", l.offset, l.size)))?;
        let g = *at.entry(l.storage.display().to_string()).or_insert_with(|| {
            groups.push((l.storage.clone(), Vec::new(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(l.offset..end);
        groups[g].2.push(i);
    }
    let mut values: Vec<Option<bytes::Bytes>> = vec![None; locations.len()];
    for (st, ranges, rows) in &groups {
        let got = st.read_ranges(ranges)?;
        for (b, &r) in got.into_iter().zip(rows) {
            values[r] = Some(b);
        }
    }
    let arr: LargeBinaryArray = locations.iter().zip(values).map(|(l, v)| l.as_ref().map(|_| v.map(|b| b.to_vec()).unwrap_or_default())).collect();
    Ok(Arc::new(arr))
}

/// The blob locations of `column` at row addresses `addrs` (live rows of
/// `ds`), in order; `None` for nulls. Only descriptors are read: the bytes
/// stay where they are until a caller reads ranges of them.
pub fn take_blob_locations(ds: &Arc<crate::table::Dataset>, column: &str, addrs: &[u64]) -> Result<Vec<Option<BlobLocation>>> {
    let field = ds.project(Some(&[column.to_string()]))?.pop().ok_or_else(|| Error::Internal { what: "projection of one column".into() })?;
    let Some(version) = blob_version(&field.arrow) else {
        return Err(Error::invalid_input(format!("the column {column:?} is not a blob column (type {})", field.arrow.data_type())));
    };
    let read = [read_field(&field, BlobHandling::BlobsDescriptions)];
    let mut groups: Vec<(usize, Vec<u64>, Vec<usize>)> = Vec::new();
    let mut group_of = std::collections::HashMap::new();
    for (k, &a) in addrs.iter().enumerate() {
        let fid = a >> 32;
        let g = match group_of.get(&fid) {
            Some(&g) => g,
            None => {
                let fi = ds.fragment_index(fid).ok_or_else(|| {
                    Error::invalid_input(format!("row address {a} names fragment {fid}, which version {} does not have", ds.version()))
                })?;
                groups.push((fi, Vec::new(), Vec::new()));
                group_of.insert(fid, groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[g].1.push(a & 0xffff_ffff);
        groups[g].2.push(k);
    }
    let mut out: Vec<Option<BlobLocation>> = vec![None; addrs.len()];
    for (fi, offsets, places) in &groups {
        let reader = ds.fragment_reader(*fi, &read)?;
        let batch = reader.take(offsets)?;
        let Some(file) = reader.file_of(0) else {
            // No data file of this fragment holds the column: all null.
            continue;
        };
        let desc = batch.column(0);
        let locs = match version {
            BlobVersion::V1 => v1_locations(desc, file.storage())?,
            BlobVersion::V2 => v2_locations(desc, file.storage(), reader.root().unwrap_or(file.storage()))?,
        };
        for (l, &k) in locs.into_iter().zip(places) {
            out[k] = l;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecar_names_reverse_the_id_bits() {
        assert_eq!(sidecar_name(1), format!("1{}.blob", "0".repeat(31)));
        assert_eq!(sidecar_name(2), format!("01{}.blob", "0".repeat(30)));
        assert_eq!(sidecar_name(3), format!("11{}.blob", "0".repeat(30)));
    }

    #[test]
    fn pylance_descriptor_rows_belong_to_their_struct() {
        use crate::file::schema::LanceSchema;
        use crate::proto::file as pb;
        let row = |name: &str, id: i32, parent: i32, lt: &str, nullable: bool| pb::Field {
            name: name.into(),
            id,
            parent_id: parent,
            logical_type: lt.into(),
            nullable,
            metadata: if lt == "struct" {
                [(BLOB_KEY.to_string(), b"true".to_vec()), ("lance-encoding:packed".to_string(), b"true".to_vec())].into()
            } else {
                Default::default()
            },
            ..Default::default()
        };
        // As pylance 14 writes a v2 blob column into a data file.
        let rows = vec![
            row("id", 0, -1, "int64", true),
            row("b", 1, -1, "struct", true),
            row("kind", -1, -1, "uint8", false),
            row("position", -1, -1, "uint64", false),
            row("size", -1, -1, "uint64", false),
            row("blob_id", -1, -1, "uint32", false),
            row("blob_uri", -1, -1, "string", false),
        ];
        let s = LanceSchema::from_pb(&rows, &Default::default()).unwrap();
        assert_eq!(s.fields.len(), 2);
        assert_eq!(s.fields[1].arrow.data_type(), &v2_descriptor_type());
        assert!(is_v2_descriptor(&s.fields[1].arrow));
        // Two ids alike are still refused.
        let mut dup = rows.clone();
        dup[1].id = 0;
        assert!(LanceSchema::from_pb(&dup, &Default::default()).is_err());
    }

    #[test]
    fn handling_names() {
        assert_eq!(BlobHandling::parse("all_binary").unwrap(), BlobHandling::AllBinary);
        assert!(matches!(BlobHandling::parse("bytes"), Err(Error::InvalidInput { .. })));
    }
}
