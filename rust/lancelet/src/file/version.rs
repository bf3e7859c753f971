//! File format versions as values.
//!
//! A version is never compared with `<`/`>`: each one is a [`FileVersion`]
//! whose [`FileVersion::traits`] lists the version-free mechanisms it
//! composes (which page-encoding family, chunk word width, whether constant
//! pages exist, …). Readers and writers ask the traits, not the number.

use crate::error::{Error, Result};

/// A Lance data file version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileVersion {
    /// The v0.1 ("legacy") file format.
    Legacy,
    /// 2.0: `lance.encodings.ArrayEncoding` pages, a column per field.
    V2_0,
    /// 2.1: structural (mini-block / full-zip) pages with u16 chunk words.
    V2_1,
    /// 2.2: 2.1 plus u32 chunk words, constant pages, compressed dictionaries.
    V2_2,
}

/// How a file version's pages are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageFamily {
    /// 2.0 `ArrayEncoding` trees; struct and list parents own columns.
    ArrayEncoding,
    /// 2.1+ `PageLayout`s; one column per leaf, rep/def levels.
    Structural,
}

/// The mechanisms a version composes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionTraits {
    /// Which page encoding family the file uses.
    pub family: PageFamily,
    /// Mini-block chunk metadata words and value sizes are u32 (else u16).
    pub large_chunk_words: bool,
    /// All-null and all-equal pages become constant layouts (else all-null
    /// pages use the all-null layout and all-equal pages are encoded normally).
    pub constant_pages: bool,
    /// Dictionaries may be used for fixed-width values (else only strings).
    pub fixed_width_dictionaries: bool,
    /// The dictionary buffer is wrapped in LZ4 general compression.
    pub compressed_dictionaries: bool,
    /// Struct validity can be stored.
    pub struct_validity: bool,
    /// Map columns can be stored.
    pub maps: bool,
    /// Fields may be added to an existing struct column, their data in a
    /// later data file of the fragment (pylance allows it from 2.2 on).
    pub struct_fields_added: bool,
}

impl FileVersion {
    /// Parse a version name as pylance accepts it.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "0.1" | "legacy" => Ok(FileVersion::Legacy),
            "2.0" => Ok(FileVersion::V2_0),
            "2.1" => Ok(FileVersion::V2_1),
            "2.2" | "stable" => Ok(FileVersion::V2_2),
            other => Err(Error::invalid_input(format!("unknown file version {other:?} (expected one of 0.1, legacy, 2.0, 2.1, 2.2, stable)"))),
        }
    }

    /// Map the footer's (major, minor) to a version.
    pub fn from_footer(major: u16, minor: u16) -> Result<Self> {
        match (major, minor) {
            (0, 0..=2) => Ok(FileVersion::Legacy),
            (0, 3) | (2, 0) => Ok(FileVersion::V2_0),
            (2, 1) => Ok(FileVersion::V2_1),
            (2, 2) => Ok(FileVersion::V2_2),
            (major, minor) => Err(Error::unsupported(format!("file format version {major}.{minor}"))),
        }
    }

    /// The (major, minor) written into the file footer.
    pub fn footer_numbers(self) -> (u16, u16) {
        match self {
            FileVersion::Legacy => (0, 2),
            FileVersion::V2_0 => (0, 3),
            FileVersion::V2_1 => (2, 1),
            FileVersion::V2_2 => (2, 2),
        }
    }

    /// The (major, minor) a dataset manifest records for this file.
    pub fn data_file_numbers(self) -> (u32, u32) {
        match self {
            FileVersion::Legacy => (0, 0),
            FileVersion::V2_0 => (2, 0),
            FileVersion::V2_1 => (2, 1),
            FileVersion::V2_2 => (2, 2),
        }
    }

    /// The name users see ("0.1", "2.0", "2.1", "2.2").
    pub fn as_str(self) -> &'static str {
        match self {
            FileVersion::Legacy => "0.1",
            FileVersion::V2_0 => "2.0",
            FileVersion::V2_1 => "2.1",
            FileVersion::V2_2 => "2.2",
        }
    }

    /// The mechanisms this version composes. `None` for the legacy format,
    /// which has its own reader.
    pub fn traits(self) -> Option<VersionTraits> {
        let structural = VersionTraits {
            family: PageFamily::Structural,
            large_chunk_words: false,
            constant_pages: false,
            fixed_width_dictionaries: false,
            compressed_dictionaries: false,
            struct_validity: true,
            maps: false,
            struct_fields_added: false,
        };
        match self {
            FileVersion::Legacy => None,
            FileVersion::V2_0 => Some(VersionTraits { family: PageFamily::ArrayEncoding, struct_validity: false, ..structural }),
            FileVersion::V2_1 => Some(structural),
            FileVersion::V2_2 => Some(VersionTraits {
                large_chunk_words: true,
                constant_pages: true,
                fixed_width_dictionaries: true,
                compressed_dictionaries: true,
                maps: true,
                struct_fields_added: true,
                ..structural
            }),
        }
    }
}

impl std::fmt::Display for FileVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
