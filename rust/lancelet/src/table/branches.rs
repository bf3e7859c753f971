//! Reading the branches pylance 14 writes (lancelet does not create them
//! yet; it must not lose what they need).
//!
//! A branch is the JSON record `_refs/branches/{name}.json`, its name with
//! every `/` written `%2F` (so `feat/sub` is `feat%2Fsub.json`):
//!
//! ```text
//! {
//!   "parentBranch": null,
//!   "identifier": { "version_mapping": [[2, "ef162bc5a33d47b4946f09a84dfed754"]] },
//!   "parentVersion": 2,
//!   "createAt": 1796172994,
//!   "manifestSize": 550,
//!   "metadata": {}
//! }
//! ```
//!
//! `parentBranch` is `null` when the branch was made from the main line,
//! else the name of the branch it was made from; `parentVersion` is the
//! version it was made from. The branch's own versions live below
//! `tree/{name}/` (`/` in the name making nested directories) in the
//! usual layout (`_versions/`, `_transactions/`, `_deletions/`, `data/`).
//! Its manifests list a base path for every dataset root whose files they
//! use (`BasePath.is_dataset_root`), the main line's among them, and mark
//! those files with that base's id.

use crate::error::{Error, Result};
use crate::io::Storage;

/// Where branch records live, below the dataset root.
pub const BRANCHES_DIR: &str = "_refs/branches";

/// Where branch trees live, below the dataset root.
pub const TREE_DIR: &str = "tree";

/// One branch record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// The branch's name (`/` allowed, as in `feat/sub`).
    pub name: String,
    /// The branch it was made from; `None` for the main line.
    pub parent_branch: Option<String>,
    /// The version of the parent it was made from.
    pub parent_version: u64,
}

/// The branch name a record's file name stands for (`feat%2Fsub.json` →
/// `feat/sub`); `None` for other files.
pub fn branch_name_of_file(file_name: &str) -> Option<String> {
    let stem = file_name.strip_suffix(".json")?;
    let decoded = percent_encoding::percent_decode_str(stem).decode_utf8().ok()?;
    Some(decoded.into_owned())
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
    Ok(BranchInfo { name: name.to_string(), parent_branch, parent_version })
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
        let b = parse_branch("feat", br#"{"parentBranch": null, "parentVersion": 2, "metadata": {}}"#, "x").unwrap();
        assert_eq!(b, BranchInfo { name: "feat".into(), parent_branch: None, parent_version: 2 });
        let b = parse_branch("f/s", br#"{"parentBranch": "feat", "parentVersion": 7}"#, "x").unwrap();
        assert_eq!(b.parent_branch.as_deref(), Some("feat"));
        assert!(matches!(parse_branch("f", b"{}", "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", b"not json", "x"), Err(Error::Corrupt { .. })));
        assert!(matches!(parse_branch("f", br#"{"parentBranch": 3, "parentVersion": 1}"#, "x"), Err(Error::Corrupt { .. })));
    }
}
