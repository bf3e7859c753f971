//! Building an INVERTED index (pylance 14's format v2) from a stream of
//! documents.
//!
//! Documents arrive in row order ([`InvertedBuilder::add_batch`]); each is
//! analyzed ([`super::tokenizer`]); one with no token left (null, empty,
//! only stop words) is not indexed. A document gets the next doc id of the
//! current partition, each new token the next token id (first appearance),
//! and the token's posting list gains `(doc id, frequency, positions)`.
//! When the partition's in-memory postings pass the memory budget it is
//! written out (`part_N_*.lance`, see [`super::write`]) and a new one starts
//! with local doc and token ids, as pylance cuts partitions; memory stays
//! bounded by the budget whatever the column's size. [`InvertedBuilder::finish`]
//! writes the last partition and `metadata.lance`.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::tokenizer::{Token, Tokenizer, TokenizerParams};
use super::write::{write_metadata, write_partition, PartitionData, TokenPosting};
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::io::Storage;

/// Default bytes of postings a partition holds in memory before it is
/// written (pylance's default budget is 2 GiB per worker; a smaller one
/// keeps lancelet's peak memory low at the cost of more partitions on very
/// large columns).
pub const DEFAULT_MEMORY_BUDGET: usize = 512 << 20;

/// Builds the files of one INVERTED index in a directory.
pub struct InvertedBuilder {
    params: TokenizerParams,
    tokenizer: Tokenizer,
    dir: Storage,
    version: FileVersion,
    budget: usize,
    part: PartitionData,
    part_bytes: usize,
    partitions: Vec<u64>,
    files: Vec<(String, u64)>,
    scratch: Vec<Token>,
    pairs: Vec<(u32, u32)>,
}

impl InvertedBuilder {
    /// A builder writing into `dir` as Lance files of `version`.
    pub fn new(params: TokenizerParams, dir: Storage, version: FileVersion) -> Result<Self> {
        let tokenizer = Tokenizer::new(&params)?;
        Ok(InvertedBuilder {
            part: PartitionData::new(params.with_position),
            params,
            tokenizer,
            dir,
            version,
            budget: DEFAULT_MEMORY_BUDGET,
            part_bytes: 0,
            partitions: Vec::new(),
            files: Vec::new(),
            scratch: Vec::new(),
            pairs: Vec::new(),
        })
    }

    /// Continue an index whose partitions `ids` exist already (their files
    /// copied into the directory by the caller): new partitions take the
    /// following ids and `metadata.lance` lists all of them.
    pub fn with_existing_partitions(mut self, ids: &[u64]) -> Self {
        self.partitions = ids.to_vec();
        self
    }

    /// Cut partitions after about `bytes` of postings (tests use small ones).
    pub fn with_memory_budget(mut self, bytes: usize) -> Self {
        self.budget = bytes.max(1);
        self
    }

    /// Index the documents `values` (strings; nulls skipped) of the rows
    /// `ids` (row addresses, or stable row ids on datasets that have them).
    pub fn add_batch(&mut self, values: &ArrayRef, ids: &[u64]) -> Result<()> {
        if values.len() != ids.len() {
            return Err(Error::internal(format!("{} documents for {} row ids", values.len(), ids.len())));
        }
        match values.data_type() {
            DataType::Utf8 => {
                let a = values.as_string::<i32>();
                for (i, &id) in ids.iter().enumerate() {
                    if a.is_valid(i) {
                        self.add_doc(id, a.value(i))?;
                    }
                }
            }
            DataType::LargeUtf8 => {
                let a = values.as_string::<i64>();
                for (i, &id) in ids.iter().enumerate() {
                    if a.is_valid(i) {
                        self.add_doc(id, a.value(i))?;
                    }
                }
            }
            DataType::Utf8View => {
                let a = values.as_string_view();
                for (i, &id) in ids.iter().enumerate() {
                    if a.is_valid(i) {
                        self.add_doc(id, a.value(i))?;
                    }
                }
            }
            other => return Err(Error::invalid_input(format!("an INVERTED index column must be string or large string, got {other}"))),
        }
        Ok(())
    }

    /// Index one document.
    pub fn add_doc(&mut self, row_id: u64, text: &str) -> Result<()> {
        self.scratch.clear();
        self.tokenizer.tokenize(text, &mut self.scratch);
        if self.scratch.is_empty() {
            return Ok(());
        }
        let num_tokens =
            u32::try_from(self.scratch.len()).map_err(|_| Error::invalid_input(format!("row {row_id}: a document holds more than 2^32 tokens")))?;
        if self.part.row_ids.len() == u32::MAX as usize {
            self.flush()?;
        }
        let doc = self.part.row_ids.len() as u32;
        self.part.row_ids.push(row_id);
        self.part.num_tokens.push(num_tokens);
        // Token ids in order of first appearance, then group the document's
        // occurrences by token (positions stay in document order).
        self.pairs.clear();
        for t in self.scratch.drain(..) {
            let id = match self.part.token_ids.get(&t.text) {
                Some(&id) => id,
                None => {
                    let id = self.part.tokens.len() as u32;
                    self.part_bytes += 2 * t.text.len() + 64;
                    self.part.token_ids.insert(t.text.clone(), id);
                    self.part.tokens.push(t.text);
                    self.part.postings.push(TokenPosting::default());
                    id
                }
            };
            self.pairs.push((id, t.position));
        }
        self.pairs.sort_by_key(|&(id, _)| id);
        let with_position = self.params.with_position;
        let mut i = 0;
        while i < self.pairs.len() {
            let id = self.pairs[i].0;
            let mut j = i;
            while j < self.pairs.len() && self.pairs[j].0 == id {
                j += 1;
            }
            let p = &mut self.part.postings[id as usize];
            p.docs.push(doc);
            p.freqs.push((j - i) as u32);
            self.part_bytes += 8;
            if with_position {
                p.positions.extend(self.pairs[i..j].iter().map(|&(_, pos)| pos));
                self.part_bytes += 4 * (j - i);
            }
            i = j;
        }
        self.part_bytes += 12;
        if self.part_bytes >= self.budget {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the current partition (if it holds any document).
    fn flush(&mut self) -> Result<()> {
        if self.part.row_ids.is_empty() {
            return Ok(());
        }
        let id = self.partitions.iter().max().map_or(0, |m| m + 1);
        let part = std::mem::replace(&mut self.part, PartitionData::new(self.params.with_position));
        self.part_bytes = 0;
        self.files.extend(write_partition(&self.dir, self.version, id, part)?);
        self.partitions.push(id);
        Ok(())
    }

    /// Write the last partition and `metadata.lance`; returns every file
    /// written with its size, in pylance's order (each partition's invert,
    /// tokens, docs files, then metadata).
    pub fn finish(mut self) -> Result<Vec<(String, u64)>> {
        self.flush()?;
        let meta = write_metadata(&self.dir, self.version, &self.params, &self.partitions)?;
        self.files.push(meta);
        Ok(self.files)
    }
}

impl PartitionData {
    fn new(with_position: bool) -> Self {
        PartitionData {
            with_position,
            token_ids: HashMap::new(),
            tokens: Vec::new(),
            postings: Vec::new(),
            row_ids: Vec::new(),
            num_tokens: Vec::new(),
        }
    }
}
