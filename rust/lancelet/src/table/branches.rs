//! Branch records and branch names: the layout pylance 14 writes, which
//! lancelet reads and writes the same way (creating, deleting and
//! committing on branches: [`crate::table::ops::branch`]).
//!
//! A branch is the JSON record `_refs/branches/{name}.json`, its name with
//! every `/` written `%2F` and every non-ASCII byte percent-encoded (so
//! `feat/sub` is `feat%2Fsub.json`, `é` is `%C3%A9.json`):
//!
//! ```text
//! {
//!   "parentBranch": null,
//!   "identifier": {
//!     "version_mapping": [
//!       [
//!         2,
//!         "ef162bc5a33d47b4946f09a84dfed754"
//!       ]
//!     ]
//!   },
//!   "parentVersion": 2,
//!   "createAt": 1796172994,
//!   "manifestSize": 550,
//!   "metadata": {}
//! }
//! ```
//!
//! `parentBranch` is `null` when the branch was made from the main line,
//! else the name of the branch it was made from; `parentVersion` is the
//! version it was made from; `identifier.version_mapping` is the parent's
//! mapping (empty for the main line) followed by `[parentVersion, a new
//! random 32-hex id]`; `createAt` is in seconds since the epoch;
//! `manifestSize` is the byte size of the parent version's manifest.
//!
//! The branch's own versions live below `tree/{name}/` (`/` in the name
//! making nested directories) in the usual layout (`_versions/`,
//! `_transactions/`, `_deletions/`, `data/`). Its first version has the
//! parent's version number and the parent's fragments; its manifests carry
//! the branch name (`Manifest.branch`) and list a base path for every
//! dataset root whose files they use (`BasePath.is_dataset_root`; the main
//! line's is id 0 and unnamed, a parent branch's is named after it), and
//! mark those files with that base's id. Files a branch writes itself have
//! no base id and lie in its tree.

use crate::error::{Error, Result};
use crate::io::Storage;

/// Where branch records live, below the dataset root.
pub const BRANCHES_DIR: &str = "_refs/branches";

/// Where branch trees live, below the dataset root.
pub const TREE_DIR: &str = "tree";

/// The name that stands for the main line in a `(branch, version)`
/// reference; no branch may be called this.
pub const MAIN: &str = "main";

/// One branch record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// The branch's name (`/` allowed, as in `feat/sub`).
    pub name: String,
    /// The branch it was made from; `None` for the main line.
    pub parent_branch: Option<String>,
    /// The version of the parent it was made from.
    pub parent_version: u64,
    /// `identifier.version_mapping`: `(version, id)` pairs, root first.
    pub identifier: Vec<(u64, String)>,
    /// `createAt`: seconds since the epoch.
    pub create_at: u64,
    /// `manifestSize`: bytes of the parent version's manifest.
    pub manifest_size: u64,
    /// `metadata`: string pairs, sorted by key.
    pub metadata: Vec<(String, String)>,
}

/// Characters written as they are in a record's file name; every other
/// byte (`/`, non-ASCII letters) is percent-encoded, as pylance's object
/// store does.
const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'.').remove(b'-').remove(b'_');

/// The record file name of a branch (`feat/sub` → `feat%2Fsub.json`).
pub fn branch_file_name(name: &str) -> String {
    format!("{}.json", percent_encoding::utf8_percent_encode(name, KEEP))
}

/// The branch name a record's file name stands for (`feat%2Fsub.json` →
/// `feat/sub`); `None` for other files.
pub fn branch_name_of_file(file_name: &str) -> Option<String> {
    let stem = file_name.strip_suffix(".json")?;
    let decoded = percent_encoding::percent_decode_str(stem).decode_utf8().ok()?;
    Some(decoded.into_owned())
}

/// Check a new branch name the way pylance 14 does: not empty, not
/// `main`, no `..` or `\\`, no leading, trailing or doubled `/`, not ending
/// with `.lock`, and every `/`-separated segment made of letters, digits,
/// `.`, `-` and `_` (letters may be non-ASCII, as in pylance); and, unlike
/// pylance (which then fails half-way), short enough for file names.
pub fn check_branch_name(name: &str) -> Result<()> {
    let problem = if name.is_empty() {
        "it is empty".to_string()
    } else if name == MAIN {
        format!("{MAIN:?} is reserved for the main line")
    } else if name.contains("..") || name.contains('\\') {
        "it may not contain '..' or '\\'".to_string()
    } else if name.starts_with('/') || name.ends_with('/') {
        "it may not start or end with '/'".to_string()
    } else if name.contains("//") {
        "it may not contain consecutive '/'".to_string()
    } else if name.ends_with(".lock") {
        "it may not end with '.lock'".to_string()
    } else if let Some(seg) = name.split('/').find(|s| !s.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))) {
        format!("segment {seg:?} has characters other than letters, digits, '.', '-' and '_'")
    } else if name.split('/').any(|s| s == ".") || branch_file_name(name).len() > 250 {
        "it is too long for a file name, or a segment is '.'".to_string()
    } else {
        return Ok(());
    };
    let shown: String = name.chars().take(60).collect();
    Err(Error::invalid_input(format!("bad branch name {shown:?}: {problem}")))
}

fn parse_identifier(v: Option<&serde_json::Value>) -> Option<Vec<(u64, String)>> {
    let Some(v) = v else { return Some(Vec::new()) };
    let list = v.get("version_mapping")?.as_array()?;
    list.iter().map(|pair| Some((pair.get(0)?.as_u64()?, pair.get(1)?.as_str()?.to_string()))).collect()
}

/// Parse one branch record.
pub fn parse_branch(name: &str, json: &[u8], path: &str) -> Result<BranchInfo> {
    let corrupt = |what: String| Error::corrupt_in(path.to_string(), what);
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| corrupt(format!("branch record is not JSON: {e}")).with_source(e))?;
    let parent_branch = match v.get("parentBranch") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(corrupt(format!("branch record's \"parentBranch\" is {other}, not a string or null"))),
    };
    let parent_version =
        v.get("parentVersion").and_then(serde_json::Value::as_u64).ok_or_else(|| corrupt("branch record has no \"parentVersion\" number".into()))?;
    let identifier = parse_identifier(v.get("identifier"))
        .ok_or_else(|| corrupt("branch record's \"identifier\" is not {\"version_mapping\": [[version, id], ...]}".into()))?;
    let number = |key: &str| v.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let metadata = match v.get("metadata") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, x)| x.as_str().map(|s| (k.clone(), s.to_string())))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| corrupt("branch record's \"metadata\" has a value that is not a string".into()))?,
        Some(other) => return Err(corrupt(format!("branch record's \"metadata\" is {other}, not an object"))),
    };
    Ok(BranchInfo {
        name: name.to_string(),
        parent_branch,
        parent_version,
        identifier,
        create_at: number("createAt"),
        manifest_size: number("manifestSize"),
        metadata,
    })
}

/// The JSON text of a branch record, laid out as pylance 14 writes it
/// (two-space indent, its key order).
pub fn branch_json(b: &BranchInfo) -> String {
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let parent = b.parent_branch.as_deref().map(q).unwrap_or_else(|| "null".into());
    let mapping = if b.identifier.is_empty() {
        "[]".to_string()
    } else {
        let items: Vec<String> = b.identifier.iter().map(|(v, id)| format!("      [\n        {v},\n        {}\n      ]", q(id))).collect();
        format!("[\n{}\n    ]", items.join(",\n"))
    };
    let metadata = if b.metadata.is_empty() {
        "{}".to_string()
    } else {
        let items: Vec<String> = b.metadata.iter().map(|(k, v)| format!("    {}: {}", q(k), q(v))).collect();
        format!("{{\n{}\n  }}", items.join(",\n"))
    };
    format!(
        "{{\n  \"parentBranch\": {parent},\n  \"identifier\": {{\n    \"version_mapping\": {mapping}\n  }},\n  \"parentVersion\": {},\n  \"createAt\": {},\n  \"manifestSize\": {},\n  \"metadata\": {metadata}\n}}",
        b.parent_version, b.create_at, b.manifest_size
    )
}

/// Read the record of branch `name`; `Ok(None)` when there is none.
pub fn read_branch(root: &Storage, name: &str) -> Result<Option<BranchInfo>> {
    let s = root.child(&format!("{BRANCHES_DIR}/{}", branch_file_name(name)))?;
    match s.read_all() {
        Ok(bytes) => parse_branch(name, &bytes, s.display()).map(Some),
        Err(Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The record of branch `name`, or `NotFound` naming the branches there are.
pub fn require_branch(root: &Storage, name: &str) -> Result<BranchInfo> {
    if let Some(b) = read_branch(root, name)? {
        return Ok(b);
    }
    let have: Vec<String> = list_branches(root)?.into_iter().map(|b| b.name).collect();
    let have = if have.is_empty() { "none".to_string() } else { have.join(", ") };
    Err(Error::not_found(format!("branch {name:?} of dataset {} (branches: {have})", root.display())))
}

/// Every branch of the dataset at `root`, sorted by name. A record that
/// cannot be read or parsed is an error (a caller about to remove files
/// must not guess what a branch needs).
pub fn list_branches(root: &Storage) -> Result<Vec<BranchInfo>> {
    let dir = root.child(BRANCHES_DIR)?;
    let mut out = Vec::new();
    for (file, _) in dir.list()? {
        let Some(name) = branch_name_of_file(&file) else { continue };
        let s = dir.child(&file)?;
        out.push(parse_branch(&name, &s.read_all()?, s.display())?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The root of a branch's own tree (`tree/{name}`).
pub fn branch_root(root: &Storage, name: &str) -> Result<Storage> {
    if name.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
        return Err(Error::corrupt_in(format!("{}/{BRANCHES_DIR}", root.display()), format!("bad branch name {name:?}")));
    }
    root.child(&format!("{TREE_DIR}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_records() {
        assert_eq!(branch_name_of_file("feat%2Fsub.json").as_deref(), Some("feat/sub"));
        assert_eq!(branch_name_of_file("feat.json").as_deref(), Some("feat"));
        assert_eq!(branch_name_of_file("feat.txt"), None);
        assert_eq!(branch_file_name("feat/sub"), "feat%2Fsub.json");
        assert_eq!(branch_file_name("é"), "%C3%A9.json");
        assert_eq!(branch_file_name("a.b-c_d"), "a.b-c_d.json");
        for n in ["feat/sub", "é", "a.b-c_d", "x/.y"] {
            assert_eq!(branch_name_of_file(&branch_file_name(n)).as_deref(), Some(n));
        }
        let b = parse_branch("feat", br#"{"parentBranch": null, "parentVersion": 2, "metadata": {}}"#, "x").unwrap();
        assert_eq!((b.name.as_str(), b.parent_branch.as_deref(), b.parent_version), ("feat", None, 2));
        let b = parse_branch("f/s", br#"{"parentBranch": "feat", "parentVersion": 7}"#, "x").unwrap();
        assert_eq!(b.parent_branch.as_deref(), Some("feat"));
        assert!(matches!(parse_branch("f", b"{}", "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", b"not json", "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", br#"{"parentBranch": 3, "parentVersion": 1}"#, "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", br#"{"parentVersion": 1, "identifier": 3}"#, "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", br#"{"parentVersion": 1, "metadata": {"a": 1}}"#, "x"), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn record_json_round_trips_in_pylance_layout() {
        let b = BranchInfo {
            name: "feat/sub".into(),
            parent_branch: Some("feat".into()),
            parent_version: 3,
            identifier: vec![(1, "6b10e258bcf54f6d9de2684b06bea9ce".into()), (3, "36a9497d962a4041a8d900b72fe243a6".into())],
            create_at: 1796209693,
            manifest_size: 493,
            metadata: vec![],
        };
        // pylance 14's record of the same branch, byte for byte.
        let pylance = "{\n  \"parentBranch\": \"feat\",\n  \"identifier\": {\n    \"version_mapping\": [\n      [\n        1,\n        \"6b10e258bcf54f6d9de2684b06bea9ce\"\n      ],\n      [\n        3,\n        \"36a9497d962a4041a8d900b72fe243a6\"\n      ]\n    ]\n  },\n  \"parentVersion\": 3,\n  \"createAt\": 1796209693,\n  \"manifestSize\": 493,\n  \"metadata\": {}\n}";
        assert_eq!(branch_json(&b), pylance);
        assert_eq!(parse_branch("feat/sub", pylance.as_bytes(), "x").unwrap(), b);
        let m = BranchInfo { metadata: vec![("k".into(), "v \"q\"".into())], parent_branch: None, identifier: vec![], ..b };
        assert_eq!(parse_branch("feat/sub", branch_json(&m).as_bytes(), "x").unwrap(), m);
    }

    #[test]
    fn names_pylance_refuses() {
        for ok in ["feat", "feat/sub", ".x", "x.", "-x", "HEAD", "é", "ab.lock/c", "x/.y", "a_b.c-d"] {
            assert!(check_branch_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "main", "a b", "a..b", "/x", "x/", "a//b", "x.lock", "a/b.lock", "a\\b", "a:b", "a*b", "x~", "a^b", "a?b", "a[b", "@", "a@{b",
            "a/./b",
        ] {
            assert!(matches!(check_branch_name(bad), Err(Error::InvalidInput { .. })), "{bad}");
        }
        assert!(check_branch_name(&"a".repeat(245)).is_ok());
        assert!(check_branch_name(&"a".repeat(300)).is_err());
    }
}
