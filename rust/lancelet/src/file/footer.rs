//! The Lance 2.x file container.
//!
//! ```text
//! [page buffers]            64-byte aligned, padded with 0x48
//! [global buffers]          buffer 0 = FileDescriptor protobuf
//! [column metadata 0..C-1]  ColumnMetadata protobufs, back to back
//! [CMO table]               C × (u64 position, u64 size)
//! [GBO table]               G × (u64 position, u64 size)
//! [footer, 40 bytes]        u64 column-meta-0 offset | u64 CMO offset |
//!                           u64 GBO offset | u32 G | u32 C |
//!                           u16 major | u16 minor | "LANC"
//! ```
//! All integers are little-endian. Legacy (v0.1) files end in a 16-byte
//! footer instead (`u64 metadata position | u16 major | u16 minor | LANC`).

use std::ops::Range;

use crate::error::{Error, Result};
use crate::file::version::FileVersion;

/// The magic at the end of every Lance file.
pub const MAGIC: &[u8; 4] = b"LANC";
/// Size of the 2.x footer.
pub const FOOTER_LEN: u64 = 40;
/// Page and global buffers start at multiples of this.
pub const BUFFER_ALIGNMENT: u64 = 64;
/// Byte used to pad between buffers.
pub const PAD_BYTE: u8 = 0x48;

/// The parsed 2.x footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Where column metadata 0 starts.
    pub column_meta_start: u64,
    /// Where the column-metadata offset table starts.
    pub cmo_table_offset: u64,
    /// Where the global-buffer offset table starts.
    pub gbo_table_offset: u64,
    /// Number of global buffers.
    pub num_global_buffers: u32,
    /// Number of columns.
    pub num_columns: u32,
    /// The file version from the footer numbers.
    pub version: FileVersion,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

/// Read the version numbers and magic from the last 8 bytes of a file.
pub fn parse_version_tail(tail: &[u8]) -> Result<FileVersion> {
    if tail.len() < 8 {
        return Err(Error::corrupt(format!("file is {} bytes, too short to be a Lance file", tail.len())));
    }
    let end = &tail[tail.len() - 8..];
    if &end[4..] != MAGIC {
        return Err(Error::corrupt(format!("no Lance magic at end of file (found {:02x?}, expected \"LANC\")", &end[4..])));
    }
    FileVersion::from_footer(u16_at(end, 0), u16_at(end, 2))
}

impl Footer {
    /// Parse the footer from the tail of a file of `file_size` bytes.
    /// `tail` must hold at least the last 40 bytes.
    pub fn parse(tail: &[u8], file_size: u64) -> Result<Self> {
        let version = parse_version_tail(tail)?;
        if version == FileVersion::Legacy {
            return Err(Error::unsupported("legacy (v0.1) file footer where a 2.x footer was expected"));
        }
        if tail.len() < FOOTER_LEN as usize || file_size < FOOTER_LEN {
            return Err(Error::corrupt("file too short for a 40-byte footer"));
        }
        let f = &tail[tail.len() - FOOTER_LEN as usize..];
        let footer = Footer {
            column_meta_start: u64_at(f, 0),
            cmo_table_offset: u64_at(f, 8),
            gbo_table_offset: u64_at(f, 16),
            num_global_buffers: u32_at(f, 24),
            num_columns: u32_at(f, 28),
            version,
        };
        footer.validate(file_size)?;
        Ok(footer)
    }

    fn validate(&self, file_size: u64) -> Result<()> {
        let body_end = file_size - FOOTER_LEN;
        let cmo_len = self.num_columns as u64 * 16;
        let gbo_len = self.num_global_buffers as u64 * 16;
        let ok = self.column_meta_start <= self.cmo_table_offset
            && self.cmo_table_offset.checked_add(cmo_len).is_some_and(|e| e <= body_end)
            && self.gbo_table_offset.checked_add(gbo_len).is_some_and(|e| e <= body_end);
        if !ok {
            return Err(Error::corrupt(format!(
                "footer offsets out of range (column metadata at {}, CMO table at {} for {} columns, \
                 GBO table at {} for {} buffers, file size {file_size})",
                self.column_meta_start, self.cmo_table_offset, self.num_columns, self.gbo_table_offset, self.num_global_buffers
            )));
        }
        if self.num_global_buffers == 0 {
            return Err(Error::corrupt("file has no global buffers (buffer 0 must hold the schema)"));
        }
        Ok(())
    }

    /// The byte range holding column metadata and both offset tables,
    /// i.e. everything from the first column metadata to the footer.
    pub fn metadata_range(&self, file_size: u64) -> Range<u64> {
        let start = self.column_meta_start.min(self.gbo_table_offset).min(self.cmo_table_offset);
        start..file_size - FOOTER_LEN
    }

    /// Serialize this footer.
    pub fn to_bytes(&self) -> [u8; FOOTER_LEN as usize] {
        let mut out = [0u8; FOOTER_LEN as usize];
        out[0..8].copy_from_slice(&self.column_meta_start.to_le_bytes());
        out[8..16].copy_from_slice(&self.cmo_table_offset.to_le_bytes());
        out[16..24].copy_from_slice(&self.gbo_table_offset.to_le_bytes());
        out[24..28].copy_from_slice(&self.num_global_buffers.to_le_bytes());
        out[28..32].copy_from_slice(&self.num_columns.to_le_bytes());
        let (major, minor) = self.version.footer_numbers();
        out[32..34].copy_from_slice(&major.to_le_bytes());
        out[34..36].copy_from_slice(&minor.to_le_bytes());
        out[36..40].copy_from_slice(MAGIC);
        out
    }
}

/// Parse an offset table of `count` (u64 position, u64 size) pairs, checking
/// that every range lies inside `bounds`.
pub fn parse_offset_table(bytes: &[u8], count: usize, bounds: u64, what: &str) -> Result<Vec<Range<u64>>> {
    if bytes.len() < count * 16 {
        return Err(Error::corrupt(format!("{what} offset table truncated")));
    }
    (0..count)
        .map(|i| {
            let pos = u64_at(bytes, i * 16);
            let size = u64_at(bytes, i * 16 + 8);
            match pos.checked_add(size) {
                Some(end) if end <= bounds => Ok(pos..end),
                _ => Err(Error::corrupt(format!("{what} {i} at {pos}+{size} lies outside the file ({bounds} bytes)"))),
            }
        })
        .collect()
}
