//! Creating and deleting tags: `_refs/tags/{name}.json`.
//!
//! The file is pretty-printed JSON (two-space indent) exactly as pylance 14
//! writes it:
//!
//! ```text
//! {
//!   "branch": null,
//!   "version": 2,
//!   "createdAt": "2026-11-22T05:41:39.471464177Z",
//!   "updatedAt": "2026-11-22T05:41:39.471464177Z",
//!   "manifestSize": 459,
//!   "metadata": {}
//! }
//! ```
//!
//! `manifestSize` is the size in bytes of the tagged version's manifest
//! file. A tag is created with put-if-not-exists, so two writers cannot
//! both create the same tag.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::table::dataset::TAGS_DIR;
use crate::table::manifest::list_versions;

/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` for a time since the epoch.
pub fn rfc3339(d: std::time::Duration) -> String {
    let secs = d.as_secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = if month <= 2 { y + 1 } else { y };
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z", rem / 3600, rem % 3600 / 60, rem % 60, d.subsec_nanos())
}

/// Check a tag name the way pylance 14 does: not empty, letters, digits,
/// `.`, `-` and `_` only (so no path separators: a tag is the file
/// `_refs/tags/{name}.json`), not starting or ending with `.`, no `..`, not
/// ending with `.lock`; and short enough for a file name. Unlike pylance,
/// letters are ASCII only: pylance 14 stores a tag `tä` as the file
/// `t%C3%A4.json` (percent-encoded by object_store) and then cannot list
/// its own tags, so there is no layout of such tags to share.
pub fn check_tag_name(name: &str) -> Result<()> {
    const MAX_BYTES: usize = 250; // + ".json" within the usual 255-byte file name limit
    let problem = if name.is_empty() {
        Some("it is empty")
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
        Some("only ASCII letters, digits, '.', '-' and '_' are allowed")
    } else if name.starts_with('.') || name.ends_with('.') {
        Some("it may not start or end with '.'")
    } else if name.contains("..") {
        Some("it may not contain '..'")
    } else if name.ends_with(".lock") {
        Some("it may not end with '.lock'")
    } else if name.len() > MAX_BYTES {
        Some("it is longer than 250 bytes")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(why) => Err(Error::invalid_input(format!("bad tag name {:?}: {why}", shorten(name)))),
    }
}

fn shorten(name: &str) -> String {
    if name.chars().count() <= 60 {
        name.to_string()
    } else {
        format!("{}...", name.chars().take(60).collect::<String>())
    }
}

/// The JSON text of a tag file (`branch`: the branch whose version it
/// names, `None` for the main line).
pub fn tag_json(branch: Option<&str>, version: u64, manifest_size: u64, now: std::time::Duration) -> String {
    let t = rfc3339(now);
    let branch = branch.map(|b| serde_json::Value::String(b.to_string()).to_string()).unwrap_or_else(|| "null".into());
    format!(
        "{{\n  \"branch\": {branch},\n  \"version\": {version},\n  \"createdAt\": \"{t}\",\n  \"updatedAt\": \"{t}\",\n  \"manifestSize\": {manifest_size},\n  \"metadata\": {{}}\n}}"
    )
}

/// Create tag `name` → `version` of the main line of the dataset at `root`.
pub fn create_tag(root: &Storage, name: &str, version: u64) -> Result<()> {
    create_branch_tag(root, name, None, version)
}

/// Create tag `name` → `version` of branch `branch` (`None`: the main
/// line) of the dataset at `root` (the main root: tags live there). An
/// unknown branch or version is `NotFound`; nothing is written then.
pub fn create_branch_tag(root: &Storage, name: &str, branch: Option<&str>, version: u64) -> Result<()> {
    check_tag_name(name)?;
    let vroot = match branch {
        None => root.clone(),
        Some(b) => {
            crate::table::branches::require_branch(root, b)?;
            crate::table::branches::branch_root(root, b)?
        }
    };
    let versions = list_versions(&vroot)?;
    let Some(loc) = versions.iter().find(|l| l.version == version) else {
        let on = branch.map(|b| format!(" branch {b:?} of")).unwrap_or_default();
        return Err(Error::not_found(format!("version {version} of{on} dataset {} (cannot tag it)", root.display())));
    };
    let size = match loc.size {
        Some(s) => s,
        None => vroot.child(&format!("_versions/{}", loc.name))?.size()?,
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let s = root.child(&format!("{TAGS_DIR}/{name}.json"))?;
    s.write_new(Bytes::from(tag_json(branch, version, size, now))).map_err(|e| match e {
        e @ Error::AlreadyExists { .. } => e.reworded(format!("tag {name:?} of dataset {}", root.display())).as_reference_exists(),
        e => e,
    })
}

/// Delete tag `name`.
pub fn delete_tag(root: &Storage, name: &str) -> Result<()> {
    check_tag_name(name)?;
    let s = root.child(&format!("{TAGS_DIR}/{name}.json"))?;
    s.delete().map_err(|e| match e {
        e @ Error::NotFound { .. } => e.reworded(format!("tag {name:?} of dataset {}", root.display())),
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_format() {
        let d = std::time::Duration::new(1_795_326_099, 471_464_177);
        assert_eq!(rfc3339(d), "2026-11-22T05:41:39.471464177Z");
        assert_eq!(rfc3339(std::time::Duration::ZERO), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(rfc3339(std::time::Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000000000Z");
    }

    #[test]
    fn json_matches_pylance_shape() {
        let text = std::fs::read_to_string(crate::testdata::pylance14("ops_history/_refs/tags/t1.json")).unwrap();
        let ours = tag_json(None, 2, 459, std::time::Duration::new(1_795_326_099, 471_464_177));
        assert_eq!(ours, text.trim_end());
    }

    #[test]
    fn names() {
        assert!(check_tag_name("t1").is_ok());
        assert!(check_tag_name("v1.0-rc_2").is_ok());
        assert!(check_tag_name("-x").is_ok());
        assert!(check_tag_name("é").is_err());
        for bad in ["", "a/b", "..", ".x", "x.", "a b", "a..b", "a\\b", "x.lock", "a\0"] {
            assert!(check_tag_name(bad).is_err(), "{bad}");
        }
        assert!(check_tag_name(&"a".repeat(250)).is_ok());
        assert!(check_tag_name(&"a".repeat(251)).is_err());
    }
}
