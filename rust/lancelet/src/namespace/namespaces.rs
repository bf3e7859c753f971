//! Namespace operations: list, describe, create, drop, exists. Namespaces
//! other than the root exist only in the V2 catalog; the root always
//! exists and its properties are the catalog's `table_metadata` (without
//! `lance.*` keys).

use std::collections::BTreeMap;

use super::catalog::{self, NewRow};
use super::names::{check_id, object_id};
use super::tables::CreateMode;
use super::{backoff, show, unsupported, DirectoryNamespace, NsError, NsResult, MAX_ATTEMPTS};
use crate::error::Error;

/// What a namespace is described by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Properties {
    /// The root namespace's properties.
    Root(BTreeMap<String, String>),
    /// A child namespace's `metadata` (a JSON object), if any.
    Json(Option<String>),
}

fn lost_races(id: &[String]) -> NsError {
    NsError::Core(Error::Conflict { what: format!("gave up on namespace {} after {MAX_ATTEMPTS} lost commit races", show(id)) })
}

impl DirectoryNamespace {
    /// The names of the namespaces directly in `parent`, sorted.
    pub fn list_namespaces(&self, parent: &[String]) -> NsResult<Vec<String>> {
        check_id(parent, "namespace id")?;
        if !self.manifest {
            self.v1_guard(parent, "namespace")?;
            if !parent.is_empty() {
                return Err(unsupported("child namespaces need manifest_enabled=true"));
            }
            return Ok(Vec::new());
        }
        let snap = self.snapshot()?;
        self.check_namespace(&snap, parent)?;
        let mut out: Vec<String> = self.children(&snap, parent, catalog::NAMESPACE).map(|(_, n)| n).collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// A namespace's properties.
    pub fn describe_namespace(&self, id: &[String]) -> NsResult<Properties> {
        check_id(id, "namespace id")?;
        let snap = self.snapshot()?;
        if id.is_empty() {
            return Ok(Properties::Root(snap.root_properties()));
        }
        self.check_namespace(&snap, id)?;
        let i = snap.find(&object_id(id), catalog::NAMESPACE).expect("checked");
        Ok(Properties::Json(snap.entries[i].metadata.clone()))
    }

    /// Fails with `NamespaceNotFound` unless the namespace exists.
    pub fn namespace_exists(&self, id: &[String]) -> NsResult<()> {
        check_id(id, "namespace id")?;
        if id.is_empty() {
            return Ok(());
        }
        let snap = self.snapshot()?;
        self.check_namespace(&snap, id)
    }

    /// Create namespace `id` with properties `metadata` (a JSON object).
    /// `ExistOk` keeps an existing one; `Overwrite` replaces the
    /// properties of an existing empty one. Returns the namespace's
    /// properties afterwards.
    pub fn create_namespace(&self, id: &[String], metadata: Option<String>, mode: CreateMode) -> NsResult<Properties> {
        check_id(id, "namespace id")?;
        if id.is_empty() {
            return match mode {
                CreateMode::ExistOk => self.describe_namespace(id),
                _ => Err(NsError::NamespaceAlreadyExists(format!("the root namespace of {} always exists", self.root_uri))),
            };
        }
        if !self.manifest {
            return Err(unsupported(format!(
                "cannot create namespace {}: child namespaces need manifest_enabled=true (this namespace is V1)",
                show(id)
            )));
        }
        let oid = object_id(id);
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            self.check_namespace(&snap, &id[..id.len() - 1])?;
            let (remove, add) = if let Some(i) = snap.find(&oid, catalog::NAMESPACE) {
                match mode {
                    CreateMode::Create => return Err(NsError::NamespaceAlreadyExists(format!("namespace {} already exists", show(id)))),
                    CreateMode::ExistOk => return Ok(Properties::Json(snap.entries[i].metadata.clone())),
                    CreateMode::Overwrite => {
                        if self.children(&snap, id, catalog::NAMESPACE).next().is_some() || self.children(&snap, id, catalog::TABLE).next().is_some()
                        {
                            return Err(NsError::NamespaceNotEmpty(format!(
                                "cannot overwrite namespace {}: it holds tables or namespaces",
                                show(id)
                            )));
                        }
                        (vec![i], vec![NewRow { base: Some(i), metadata: Some(metadata.clone()), ..Default::default() }])
                    }
                }
            } else {
                if snap.find_any(&oid).is_some() || self.find_table(&snap, id)?.is_some() {
                    return Err(NsError::NamespaceAlreadyExists(format!("{} is already taken by a table", show(id))));
                }
                (vec![], vec![NewRow::namespace(oid.clone(), metadata.clone())])
            };
            match catalog::commit(&self.root, &snap, &remove, &add) {
                Ok(_) => return Ok(Properties::Json(metadata)),
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(lost_races(id))
    }

    /// Drop an empty namespace. `skip_missing` makes a missing one a no-op;
    /// `cascade` (dropping what it holds) is not supported.
    pub fn drop_namespace(&self, id: &[String], skip_missing: bool, cascade: bool) -> NsResult<()> {
        check_id(id, "namespace id")?;
        if id.is_empty() {
            return Err(NsError::Core(Error::invalid_input("the root namespace cannot be dropped")));
        }
        if !self.manifest {
            return Err(unsupported("child namespaces need manifest_enabled=true (this namespace is V1)"));
        }
        if cascade {
            return Err(unsupported("drop_namespace with behavior=cascade is not supported: drop the tables and namespaces inside first"));
        }
        let oid = object_id(id);
        for attempt in 0..MAX_ATTEMPTS {
            let snap = self.snapshot()?;
            if let Err(e) = self.check_namespace(&snap, id) {
                return match e {
                    NsError::NamespaceNotFound(_) if skip_missing => Ok(()),
                    e => Err(e),
                };
            }
            let inside = format!("{oid}{}", super::names::DELIMITER);
            let held: Vec<&str> = snap.entries.iter().filter(|e| e.object_id.starts_with(&inside)).map(|e| e.object_id.as_str()).collect();
            if !held.is_empty() {
                return Err(NsError::NamespaceNotEmpty(format!(
                    "namespace {} holds {} object(s) (e.g. {})",
                    show(id),
                    held.len(),
                    held[0].replace(super::names::DELIMITER, ".")
                )));
            }
            let i = snap.find(&oid, catalog::NAMESPACE).expect("checked");
            match catalog::commit(&self.root, &snap, &[i], &[]) {
                Ok(_) => return Ok(()),
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(lost_races(id))
    }
}
