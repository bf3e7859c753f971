//! Manifest feature flags.
//!
//! Every manifest carries two bit sets, `reader_feature_flags` (field 9)
//! and `writer_feature_flags` (field 10). A reader must refuse a version
//! whose reader flags contain a bit it does not understand, because the
//! data would be read wrongly (e.g. rows shown that a newer mechanism
//! hides). The bits lancelet knows:
//!
//! | bit | meaning | reading |
//! |---|---|---|
//! | 1 | fragments may have deletion files | applied as masks |
//! | 2 | stable row ids (fragments carry a RowIdSequence) | `_rowid` from the sequence |
//! | 4 | "v2 format" (deprecated, never set) | nothing to do |
//! | 8 | table config present (writer only) | nothing to do |
//! | 16 | multiple base paths | files resolved through `base_paths` |
//! | 32 | no separate transaction file (writer only) | nothing to do |
//! | 256 | data files of different 2.x versions in one dataset | each file is read by its own version |
//!
//! Bit 256 is not in the digest; pylance 14 sets it (reader and writer) as
//! soon as an append uses another `data_storage_version` than the dataset's
//! files (e.g. 2.0 then 2.1), and newer Lance sources name it
//! "mixed data file versions". Every other bit (64, 128, 512 and up) is
//! unknown and refused with `Unsupported`.

use crate::error::{Error, Result};

/// Fragments may carry deletion files.
pub const DELETION_FILES: u64 = 1;
/// Row ids are stable across updates and compaction.
pub const STABLE_ROW_IDS: u64 = 2;
/// Deprecated "use v2 format" flag.
pub const USE_V2_FORMAT_DEPRECATED: u64 = 4;
/// Table config present (writers only).
pub const TABLE_CONFIG: u64 = 8;
/// Files may live under other base paths.
pub const BASE_PATHS: u64 = 16;
/// Transactions are only embedded in the manifest (writers only).
pub const DISABLE_TRANSACTION_FILE: u64 = 32;

/// Data files of different exact 2.x versions are mixed in the dataset.
pub const MIXED_DATA_FILE_VERSIONS: u64 = 256;

/// Every flag this implementation understands when reading.
pub const KNOWN_READER_FLAGS: u64 =
    DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG | BASE_PATHS | DISABLE_TRANSACTION_FILE | MIXED_DATA_FILE_VERSIONS;

/// Names of the bits set in `flags`, lowest first; bits lancelet does not
/// know show as `unknown(0x…)`.
pub fn flag_names(flags: u64) -> Vec<String> {
    const NAMES: [(u64, &str); 7] = [
        (DELETION_FILES, "deletion_files"),
        (STABLE_ROW_IDS, "stable_row_ids"),
        (USE_V2_FORMAT_DEPRECATED, "use_v2_format_deprecated"),
        (TABLE_CONFIG, "table_config"),
        (BASE_PATHS, "base_paths"),
        (DISABLE_TRANSACTION_FILE, "disable_transaction_file"),
        (MIXED_DATA_FILE_VERSIONS, "mixed_data_file_versions"),
    ];
    (0..64)
        .map(|b| 1u64 << b)
        .filter(|bit| flags & bit != 0)
        .map(|bit| match NAMES.iter().find(|(b, _)| *b == bit) {
            Some((_, name)) => name.to_string(),
            None => format!("unknown({bit:#x})"),
        })
        .collect()
}

/// Refuse a manifest whose reader flags name something we cannot honour.
pub fn check_reader_flags(flags: u64, manifest: &str) -> Result<()> {
    let unknown = flags & !KNOWN_READER_FLAGS;
    if unknown != 0 {
        return Err(Error::unsupported_in(
            manifest,
            format!(
                "reader feature flags {flags:#x} include unknown bits {unknown:#x} \
                 (lancelet understands {KNOWN_READER_FLAGS:#x}); a newer Lance wrote this version"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_flags() {
        assert!(check_reader_flags(0, "m").is_ok());
        assert!(check_reader_flags(1 | 2 | 8 | 16 | 32 | 256, "m").is_ok());
        assert!(check_reader_flags(128, "m").is_err());
        assert!(check_reader_flags(512, "m").is_err());
        let e = check_reader_flags(64 | 1, "x.manifest").unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }));
        assert!(e.to_string().contains("0x40") && e.to_string().contains("x.manifest"), "{e}");
        assert!(check_reader_flags(1 << 40, "m").is_err());
    }
}
