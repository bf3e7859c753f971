//! Base paths of multi-base datasets, as pylance 14 records them.
//!
//! `Manifest.base_paths` lists `BasePath { id, name?, is_dataset_root,
//! path }`; a data file, deletion file or index entry with `base_id = id`
//! lives under that base instead of the dataset root:
//!
//! ```text
//! is_dataset_root = true    {path}/data/{file}, {path}/_deletions/{file}, {path}/_indices/{uuid}/
//! is_dataset_root = false   {path}/{file}  (data files written there by `target_bases`)
//! ```
//!
//! Bases are registered when a dataset is created
//! (`Overwrite.initial_bases`, ids as given, else 1, 2, … in order) or
//! later by an `UpdateBases` transaction whose `new_bases` carry no ids:
//! each gets one past the largest id in use. A name or path already
//! registered is refused. A write names its target base by name or path;
//! deletion files always go to the dataset's own `_deletions/`.

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;

/// Where a write puts its new data files: a base path's directory and the
/// `base_id` the files record.
#[derive(Debug, Clone)]
pub struct DataPlace {
    /// The directory the file names go under.
    pub dir: Storage,
    /// The base the files are marked with.
    pub base_id: u32,
}

/// Give the bases without an id (`id == 0` and not explicitly 0 is not
/// expressible in the message, so `given` says which were given) the next
/// free ids, and refuse duplicate names or paths among `existing` and them.
pub fn register(existing: &[pb::BasePath], new: &[(Option<u32>, pb::BasePath)]) -> Result<Vec<pb::BasePath>> {
    let mut all: Vec<pb::BasePath> = existing.to_vec();
    let mut next = existing.iter().map(|b| b.id).max().map(|x| x + 1).unwrap_or(1).max(1);
    let mut out = Vec::with_capacity(new.len());
    for (id, b) in new {
        if b.path.is_empty() {
            return Err(Error::invalid_input("a base path needs a non-empty path"));
        }
        if let Some(clash) = all.iter().find(|e| (e.name.is_some() && e.name == b.name) || e.path == b.path) {
            return Err(Error::invalid_input(format!(
                "base path {:?} ({}) clashes with registered base {} ({:?}, {}): names and paths must be unique",
                b.name.as_deref().unwrap_or(""),
                b.path,
                clash.id,
                clash.name.as_deref().unwrap_or(""),
                clash.path
            )));
        }
        let id = match id {
            Some(i) => {
                if all.iter().any(|e| e.id == *i) {
                    return Err(Error::invalid_input(format!("base path id {i} is already registered")));
                }
                *i
            }
            None => {
                let i = next;
                next += 1;
                i
            }
        };
        next = next.max(id + 1);
        let b = pb::BasePath { id, ..b.clone() };
        all.push(b.clone());
        out.push(b);
    }
    Ok(out)
}

/// The `UpdateBases` step of building a manifest: the new bases get ids
/// and join the manifest's.
pub fn apply_update(m: &mut pb::Manifest, new_bases: &[pb::BasePath]) -> Result<()> {
    let ided: Vec<(Option<u32>, pb::BasePath)> = new_bases.iter().map(|b| (None, b.clone())).collect();
    let added = register(&m.base_paths, &ided)?;
    m.base_paths.extend(added);
    Ok(())
}

/// The base a write names (`target`: its name, else its path).
pub fn find<'a>(bases: &'a [pb::BasePath], target: &str) -> Result<&'a pb::BasePath> {
    bases.iter().find(|b| b.name.as_deref() == Some(target)).or_else(|| bases.iter().find(|b| b.path == target)).ok_or_else(|| {
        let have: Vec<String> = bases.iter().map(|b| b.name.clone().unwrap_or_else(|| b.path.clone())).collect();
        Error::not_found(format!("base {target:?} (registered bases: {})", if have.is_empty() { "none".to_string() } else { have.join(", ") }))
    })
}

/// Where data files written to `base` go.
pub fn place(root: &Storage, base: &pb::BasePath) -> Result<DataPlace> {
    let r = root.open_uri(&base.path)?;
    let dir = if base.is_dataset_root { r.child("data")? } else { r };
    Ok(DataPlace { dir, base_id: base.id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(name: Option<&str>, path: &str) -> pb::BasePath {
        pb::BasePath { id: 0, name: name.map(str::to_string), is_dataset_root: false, path: path.into() }
    }

    #[test]
    fn ids_follow_pylance_and_clashes_are_refused() {
        let first = register(&[], &[(None, b(Some("a"), "/a")), (None, b(Some("b"), "/b"))]).unwrap();
        assert_eq!(first.iter().map(|x| x.id).collect::<Vec<_>>(), vec![1, 2]);
        let mut m = pb::Manifest { base_paths: first, ..Default::default() };
        apply_update(&mut m, &[b(Some("c"), "/c")]).unwrap();
        assert_eq!(m.base_paths.last().unwrap().id, 3);
        assert!(matches!(apply_update(&mut m, &[b(Some("a"), "/z")]), Err(Error::InvalidInput { .. })));
        assert!(matches!(apply_update(&mut m, &[b(Some("z"), "/a")]), Err(Error::InvalidInput { .. })));
        assert!(matches!(register(&m.base_paths, &[(Some(2), b(None, "/q"))]), Err(Error::InvalidInput { .. })));
        // a clone's base 0 is followed by 1
        let zero = pb::BasePath { id: 0, name: None, is_dataset_root: true, path: "/src".into() };
        assert_eq!(register(&[zero], &[(None, b(None, "/n"))]).unwrap()[0].id, 1);
        assert_eq!(find(&m.base_paths, "b").unwrap().id, 2);
        assert_eq!(find(&m.base_paths, "/c").unwrap().id, 3);
        assert!(matches!(find(&m.base_paths, "nope"), Err(Error::NotFound { .. })));
    }
}
