//! Fragments: a set of rows stored as one or more data files.
//!
//! A `DataFragment` (manifest field 2) has an id, `physical_rows` (deleted
//! rows included), a list of `DataFile`s and optionally a deletion file and
//! a row id sequence. Each `DataFile` (`data/{path}`, or under a base path
//! when `base_id` is set) holds the columns of the field ids in its
//! `fields` list; `-2` marks a field whose column moved to another file.
//! Columns are split across files after `add_columns`/`merge`/casts: the
//! first file holds the original fields, later files the new ones (a cast
//! column's new id lives in a later file; its old id, no longer in the
//! schema, stays in the old one and is ignored). A field is read from the
//! last file holding any of its ids, except a struct whose children live in
//! several files (a child added or cast later), which is read from each and
//! joined by child id. A field of the dataset schema that no file of a
//! fragment holds reads as nulls.
//!
//! Field ids in a data file's own schema equal the dataset's ids, so a
//! dataset field is found in a file by id; names and nullability come from
//! the dataset schema (renames and `alter_columns` only change the manifest).

use std::sync::Arc;

use arrow_array::{
    make_array, new_null_array, Array, ArrayRef, LargeListArray, ListArray, RecordBatch, RecordBatchOptions, StructArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::file::pieces::ColumnPieces;
use crate::file::schema::LanceField;
use crate::file::FileReader;
use crate::io::Storage;
use crate::proto::table as pb;

/// Tombstone value in `DataFile.fields`.
pub const TOMBSTONE: i32 = -2;

/// Where one output column of a fragment read comes from.
#[derive(Debug, Clone)]
enum Source {
    /// Column `slot` of the batch read from file `file`.
    File { file: usize, slot: usize, file_field: LanceField },
    /// A struct whose children live in several files (a child added or
    /// cast by `add_columns`/`alter_columns`): each part is the struct as
    /// one file stores it, in file order; children are matched by id.
    Split { parts: Vec<(usize, usize, LanceField)> },
    /// No file of the fragment has it: nulls.
    Nulls,
}

/// Reads the projected dataset fields of one fragment.
#[derive(Debug)]
pub struct FragmentReader {
    fragment_id: u64,
    physical_rows: u64,
    /// Opened files and the top-level field indices read from each.
    files: Vec<(Arc<FileReader>, Vec<usize>)>,
    sources: Vec<Source>,
    fields: Vec<LanceField>,
    schema: SchemaRef,
    /// The dataset root (external blob URIs are opened through it).
    root: Option<Storage>,
}

/// The field ids a field and its descendants carry.
fn subtree_ids(f: &LanceField) -> Vec<i32> {
    f.preorder().iter().map(|x| x.id).collect()
}

impl FragmentReader {
    /// Open the files of `fragment` needed for the dataset `fields`.
    /// `open_file(data_file)` resolves and opens one data file.
    pub fn open(
        fragment: &pb::DataFragment,
        physical_rows: u64,
        fields: &[LanceField],
        schema: SchemaRef,
        open_file: impl Fn(&pb::DataFile) -> Result<Arc<FileReader>>,
    ) -> Result<Self> {
        let mut files: Vec<(Arc<FileReader>, Vec<usize>)> = Vec::new();
        let mut opened: Vec<Option<usize>> = vec![None; fragment.files.len()];
        let mut sources = Vec::with_capacity(fields.len());
        for field in fields {
            let ids = subtree_ids(field);
            let holds = |df: &pb::DataFile| df.fields.iter().any(|id| *id != TOMBSTONE && ids.contains(id));
            let holders: Vec<usize> = (0..fragment.files.len()).filter(|&i| holds(&fragment.files[i])).collect();
            // One file per field, except structs whose children were added
            // or cast later (each file holds some of them); otherwise the
            // last file holding any id of the field wins.
            let chosen: Vec<usize> = match holders.as_slice() {
                [] => {
                    sources.push(Source::Nulls);
                    continue;
                }
                [.., last] if !matches!(field.arrow.data_type(), DataType::Struct(_)) => vec![*last],
                all => all.to_vec(),
            };
            let mut parts = Vec::with_capacity(chosen.len());
            for fi in chosen {
                let slot_file = match opened[fi] {
                    Some(i) => i,
                    None => {
                        let df = &fragment.files[fi];
                        let reader = open_file(df)?;
                        if reader.num_rows() != physical_rows {
                            return Err(Error::corrupt_in(
                                reader.path(),
                                format!("data file has {} rows but fragment {} has {physical_rows}", reader.num_rows(), fragment.id),
                            ));
                        }
                        files.push((reader, Vec::new()));
                        opened[fi] = Some(files.len() - 1);
                        files.len() - 1
                    }
                };
                let (reader, proj) = &mut files[slot_file];
                let top = reader.lance_schema().fields.iter().position(|f| f.id == field.id);
                let Some(top) = top else {
                    // The file lists the id but its schema has no such
                    // top-level field: not a layout any writer produces.
                    return Err(Error::unsupported_in(
                        reader.path(),
                        format!(
                            "field {:?} (id {}) of fragment {} is not a top-level field of this data file",
                            field.arrow.name(),
                            field.id,
                            fragment.id
                        ),
                    ));
                };
                let file_field = reader.lance_schema().fields[top].clone();
                let slot = match proj.iter().position(|&p| p == top) {
                    Some(s) => s,
                    None => {
                        proj.push(top);
                        proj.len() - 1
                    }
                };
                parts.push((slot_file, slot, file_field));
            }
            sources.push(match parts.len() {
                1 => {
                    let (file, slot, file_field) = parts.pop().expect("one part");
                    Source::File { file, slot, file_field }
                }
                _ => Source::Split { parts },
            });
        }
        Ok(FragmentReader { fragment_id: fragment.id, physical_rows, files, sources, fields: fields.to_vec(), schema, root: None })
    }

    /// The fragment id.
    pub fn fragment_id(&self) -> u64 {
        self.fragment_id
    }

    /// Rows in the fragment's files.
    pub fn physical_rows(&self) -> u64 {
        self.physical_rows
    }

    /// File statistics of the top-level dataset column `name` (among the
    /// fields this reader reads), when its file keeps them and stores the
    /// column with the dataset's type.
    pub fn column_stats(&self, name: &str) -> Result<Option<crate::file::stats::GroupStats>> {
        let Some(i) = self.fields.iter().position(|f| f.arrow.name() == name) else { return Ok(None) };
        match &self.sources[i] {
            Source::File { file, file_field, .. } if file_field.arrow.data_type() == self.fields[i].arrow.data_type() => {
                self.files[*file].0.group_stats(file_field.id)
            }
            _ => Ok(None),
        }
    }

    /// Read the sorted, non-overlapping physical row `ranges`.
    pub fn read_ranges(&self, ranges: &[std::ops::Range<u64>]) -> Result<RecordBatch> {
        self.read_pieces(ranges)?.into_batch(self.schema.clone())
    }

    /// Like [`FragmentReader::read_ranges`], with columns as the arrays of
    /// their pages where that saves a copy (see [`ColumnPieces`]).
    pub fn read_pieces(&self, ranges: &[std::ops::Range<u64>]) -> Result<ColumnPieces> {
        let all: Vec<usize> = (0..self.fields.len()).collect();
        self.read_columns(&all, ranges)
    }

    /// The fields this reader reads.
    pub fn fields(&self) -> &[LanceField] {
        &self.fields
    }

    /// The Arrow schema of the fields at positions `which`.
    pub fn schema_of(&self, which: &[usize]) -> SchemaRef {
        let fields: Vec<Field> = which.iter().map(|&i| self.schema.field(i).clone()).collect();
        Arc::new(Schema::new(fields).with_metadata(self.schema.metadata().clone()))
    }

    /// Like [`FragmentReader::read_pieces`], for the fields at positions
    /// `which` (of [`FragmentReader::fields`]) only: a filtered scan reads
    /// the filter's columns first and the others later, through one reader.
    pub fn read_columns(&self, which: &[usize], ranges: &[std::ops::Range<u64>]) -> Result<ColumnPieces> {
        let n: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if let Some(r) = ranges.last() {
            if r.end > self.physical_rows {
                return Err(Error::invalid_input(format!(
                    "rows up to {} requested from fragment {} with {} rows",
                    r.end, self.fragment_id, self.physical_rows
                )));
            }
        }
        if let Some(&bad) = which.iter().find(|&&i| i >= self.fields.len()) {
            return Err(Error::Internal { what: format!("field {bad} of a reader of {} fields", self.fields.len()) });
        }
        // The file columns these fields need, per file.
        let mut projections: Vec<Vec<usize>> = vec![Vec::new(); self.files.len()];
        for &i in which {
            let slots: Vec<(usize, usize)> = match &self.sources[i] {
                Source::File { file, slot, .. } => vec![(*file, *slot)],
                Source::Split { parts } => parts.iter().map(|(f, s, _)| (*f, *s)).collect(),
                Source::Nulls => Vec::new(),
            };
            for (file, slot) in slots {
                let top = self.files[file].1[slot];
                if !projections[file].contains(&top) {
                    projections[file].push(top);
                }
            }
        }
        // Position of file column `slot` of file `file` in what was read.
        let position = |file: usize, slot: usize| {
            let top = self.files[file].1[slot];
            projections[file].iter().position(|&p| p == top).expect("projected above")
        };
        // v1 blob columns asked for as descriptions are read as such (no
        // blob byte fetched); see `table/blobs.rs`.
        let described = which.iter().any(|&i| crate::table::blobs::is_v1_description(&self.fields[i].arrow));
        let read = self
            .files
            .iter()
            .zip(&projections)
            .map(|((reader, _), proj)| match (proj.is_empty(), described) {
                (true, _) => Ok(None),
                (false, false) => reader.read_pieces(proj, ranges).map(Some),
                (false, true) => reader.read_pieces_described(proj, ranges).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut columns = Vec::with_capacity(which.len());
        for &i in which {
            let (src, field, out) = (&self.sources[i], &self.fields[i], self.schema.field(i));
            let col = match src {
                Source::Nulls => vec![new_null_array(out.data_type(), n as usize)],
                Source::File { file, slot, file_field } => read[*file]
                    .as_ref()
                    .expect("file read above")
                    .column(position(*file, *slot))
                    .iter()
                    .map(|piece| {
                        self.adapt_piece(piece.clone(), *file, file_field, field)
                            .map_err(|e| e.in_file(self.files[*file].0.path()).context(format!("column {:?}", field.arrow.name())))
                    })
                    .collect::<Result<Vec<_>>>()?,
                Source::Split { parts } => {
                    let arrays = parts
                        .iter()
                        .map(|(file, slot, _)| read[*file].as_ref().expect("file read above").concat_column(position(*file, *slot)))
                        .collect::<Result<Vec<_>>>()?;
                    let with_fields: Vec<(ArrayRef, &LanceField)> = arrays.into_iter().zip(parts.iter().map(|(_, _, f)| f)).collect();
                    vec![merge_struct(&with_fields, field).map_err(|e| e.context(format!("column {:?}", field.arrow.name())))?]
                }
            };
            columns.push(col);
        }
        ColumnPieces::new(columns, n as usize)
    }

    /// A column piece read from file `file` given the requested type: v2
    /// blob descriptors become the requested descriptor type, or the blob
    /// bytes they point at when `large_binary` is requested.
    fn adapt_piece(&self, piece: ArrayRef, file: usize, file_field: &LanceField, field: &LanceField) -> Result<ArrayRef> {
        use crate::table::blobs;
        if !blobs::is_v2_descriptor(&file_field.arrow) {
            return adapt(piece, file_field, field);
        }
        match field.arrow.data_type() {
            DataType::LargeBinary => {
                let file_storage = self.files[file].0.storage();
                let root = self.root.clone().unwrap_or_else(|| file_storage.clone());
                blobs::read_locations(&blobs::v2_locations(&piece, file_storage, &root)?)
            }
            dt if blobs::is_v2_descriptor(&field.arrow) => blobs::as_v2_descriptor(piece, dt),
            dt => Err(Error::unsupported(format!(
                "blob v2 column {:?} read as {dt}: read it with blob_handling, or with take_blobs",
                field.arrow.name()
            ))),
        }
    }

    /// Set the dataset root external blob URIs are opened through.
    pub fn with_root(mut self, root: Storage) -> Self {
        self.root = Some(root);
        self
    }

    /// The data file the field at position `i` (of [`Self::fields`]) is
    /// read from, when it is read from exactly one.
    pub fn file_of(&self, i: usize) -> Option<&Arc<FileReader>> {
        match self.sources.get(i)? {
            Source::File { file, .. } => Some(&self.files[*file].0),
            _ => None,
        }
    }

    /// The dataset root, when set.
    pub fn root(&self) -> Option<&Storage> {
        self.root.as_ref()
    }

    /// Read physical rows at `offsets` (any order, repeats allowed).
    pub fn take(&self, offsets: &[u64]) -> Result<RecordBatch> {
        let mut sorted = offsets.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut ranges: Vec<std::ops::Range<u64>> = Vec::new();
        for &i in &sorted {
            match ranges.last_mut() {
                Some(r) if r.end == i => r.end += 1,
                _ => ranges.push(i..i + 1),
            }
        }
        let batch = self.read_ranges(&ranges)?;
        if sorted.as_slice() == offsets {
            return Ok(batch);
        }
        let idx: UInt32Array = offsets.iter().map(|o| sorted.binary_search(o).expect("present") as u32).collect();
        take_batch(&batch, &idx)
    }
}

/// Reorder a batch by `idx`.
pub fn take_batch(batch: &RecordBatch, idx: &UInt32Array) -> Result<RecordBatch> {
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::internal_arrow)?;
    RecordBatch::try_new_with_options(batch.schema(), cols, &RecordBatchOptions::new().with_row_count(Some(idx.len()))).map_err(Error::internal_arrow)
}

/// Join the parts of a struct stored in several files into the dataset's
/// struct: each child comes from the last part holding any of its ids
/// (children split again are joined recursively), missing children are
/// nulls. The struct's own validity is the first (original) file's.
pub fn merge_struct(parts: &[(ArrayRef, &LanceField)], ds: &LanceField) -> Result<ArrayRef> {
    let DataType::Struct(ds_fields) = ds.arrow.data_type() else {
        return Err(Error::Internal { what: format!("merge_struct on non-struct field {:?}", ds.arrow.name()) });
    };
    let (first, _) = parts.first().ok_or_else(|| Error::Internal { what: "merge_struct without parts".into() })?;
    let len = first.len();
    let structs = parts
        .iter()
        .map(|(a, f)| {
            a.as_any()
                .downcast_ref::<StructArray>()
                .map(|s| (s, *f))
                .ok_or_else(|| Error::corrupt(format!("field {:?} is not a struct in every data file", ds.arrow.name())))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut children = Vec::with_capacity(ds.children.len());
    for (dc, df) in ds.children.iter().zip(ds_fields.iter()) {
        let ids = subtree_ids(dc);
        let mut holding: Vec<(ArrayRef, &LanceField)> = Vec::new();
        for (s, f) in &structs {
            if let Some(i) = f.children.iter().position(|fc| fc.preorder().iter().any(|x| ids.contains(&x.id))) {
                holding.push((s.column(i).clone(), &f.children[i]));
            }
        }
        let col = match holding.len() {
            0 => new_null_array(df.data_type(), len),
            1 => adapt(holding[0].0.clone(), holding[0].1, dc)?,
            _ if matches!(dc.arrow.data_type(), DataType::Struct(_)) => merge_struct(&holding, dc)?,
            _ => {
                let (a, f) = holding.pop().expect("several");
                adapt(a, f, dc)?
            }
        };
        children.push(col);
    }
    Ok(Arc::new(StructArray::try_new(ds_fields.clone(), children, structs[0].0.nulls().cloned()).map_err(Error::corrupt_arrow)?))
}

/// Give a column read from a file the dataset's type: children of structs
/// are matched by field id (missing ones become nulls, dropped ones are
/// left out), names and nullability come from the dataset.
pub fn adapt(array: ArrayRef, file: &LanceField, ds: &LanceField) -> Result<ArrayRef> {
    if array.data_type() == ds.arrow.data_type() {
        return Ok(array);
    }
    match (array.data_type(), ds.arrow.data_type()) {
        (DataType::Struct(_), DataType::Struct(ds_fields)) => {
            let s = array.as_any().downcast_ref::<StructArray>().expect("struct");
            let mut children = Vec::with_capacity(ds.children.len());
            for (dc, df) in ds.children.iter().zip(ds_fields.iter()) {
                let col = match file.children.iter().position(|fc| fc.id == dc.id) {
                    Some(i) => adapt(s.column(i).clone(), &file.children[i], dc)?,
                    None => new_null_array(df.data_type(), s.len()),
                };
                children.push(col);
            }
            Ok(Arc::new(StructArray::try_new(ds_fields.clone(), children, s.nulls().cloned()).map_err(Error::corrupt_arrow)?))
        }
        (DataType::List(_), DataType::List(item)) if !file.children.is_empty() && !ds.children.is_empty() => {
            let l = array.as_any().downcast_ref::<ListArray>().expect("list");
            let values = adapt(l.values().clone(), &file.children[0], &ds.children[0])?;
            Ok(Arc::new(ListArray::try_new(item.clone(), l.offsets().clone(), values, l.nulls().cloned()).map_err(Error::corrupt_arrow)?))
        }
        (DataType::LargeList(_), DataType::LargeList(item)) if !file.children.is_empty() && !ds.children.is_empty() => {
            let l = array.as_any().downcast_ref::<LargeListArray>().expect("large list");
            let values = adapt(l.values().clone(), &file.children[0], &ds.children[0])?;
            Ok(Arc::new(LargeListArray::try_new(item.clone(), l.offsets().clone(), values, l.nulls().cloned()).map_err(Error::corrupt_arrow)?))
        }
        (have, want) => {
            // Same layout, different child names/nullability (maps, fixed-size lists).
            let data = array
                .to_data()
                .into_builder()
                .data_type(want.clone())
                .build()
                .map_err(|e| Error::unsupported(format!("data file has type {have}, the dataset says {want}: {e}")).with_source(e))?;
            Ok(make_array(data))
        }
    }
}

/// The Arrow schema of dataset `fields` (with the dataset's schema metadata).
pub fn schema_of(fields: &[LanceField], metadata: &std::collections::HashMap<String, String>) -> SchemaRef {
    Arc::new(Schema::new(fields.iter().map(|f| f.arrow.clone()).collect::<Vec<Field>>()).with_metadata(metadata.clone()))
}

/// Resolve a file stored under `dir` (`data`, `_deletions`) of the dataset
/// or of base path `base_id`.
pub fn resolve(root: &Storage, bases: &[pb::BasePath], base_id: Option<u32>, dir: &str, rel: &str) -> Result<Storage> {
    match base_id {
        None => root.child(&format!("{dir}/{rel}")),
        Some(id) => {
            let base = bases
                .iter()
                .find(|b| b.id == id)
                .ok_or_else(|| Error::corrupt(format!("file {rel} names base path {id}, which the manifest does not list")))?;
            let base_root = root.open_uri(&base.path)?;
            if base.is_dataset_root {
                base_root.child(&format!("{dir}/{rel}"))
            } else {
                base_root.child(rel)
            }
        }
    }
}
