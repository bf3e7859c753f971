"""Multi-base datasets and clones (pylance 14's names and shapes):
``DatasetBasePath``, ``Dataset.base_paths()``, ``add_bases``,
``shallow_clone`` and ``deep_clone``.

A base path is another location a dataset's files may live under: a
shallow clone reads its source's files through one (``is_dataset_root``:
files under ``data/``, ``_deletions/``, ``_indices/`` of that root), and
``write_dataset(..., initial_bases=..., target_bases=...)`` writes data
files straight into a plain one (files at the base path itself)."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from lancelet import _args, _inputs, _native
from lancelet.exceptions import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from lancelet.dataset import Dataset


class DatasetBasePath:
    """One base path: ``path`` (a URI or local path), an optional ``name``
    that writes refer to it by, whether it is another dataset's root
    (``is_dataset_root``), and its ``id`` in the manifest (given when
    ``None``). Read-only once made, as pylance's is."""

    __slots__ = ("_id", "_name", "_path", "_root")

    def __init__(self, path: Any, name: Optional[str] = None, is_dataset_root: bool = False,
                 id: Optional[int] = None) -> None:
        self._path = _args.uri(path)
        self._name = _args.optional_string(name, "name")
        if not isinstance(is_dataset_root, bool):
            raise InvalidInputError(f"is_dataset_root must be a bool, got {type(is_dataset_root).__name__}")
        self._root = is_dataset_root
        if id is not None and (isinstance(id, bool) or not isinstance(id, int) or not 0 <= id < 2**32):
            raise InvalidInputError(f"id must be an integer in [0, 2**32), got {id!r}")
        self._id = id

    @property
    def id(self) -> int:
        return 0 if self._id is None else self._id

    @property
    def name(self) -> Optional[str]:
        return self._name

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_dataset_root(self) -> bool:
        return self._root

    def __repr__(self) -> str:
        # pylance's repr (its Rust Debug form of the name).
        name = "None" if self._name is None else f'Some("{self._name}")'
        return (f"DatasetBasePath(id={self.id}, name={name}, path={self._path}, "
                f"is_dataset_root={str(self._root).lower()})")

    def _row(self) -> Tuple[Optional[int], Optional[str], bool, str]:
        return (self._id, self._name, self._root, self._path)


def base_paths(ds: "Dataset") -> Dict[int, DatasetBasePath]:
    """``{id: DatasetBasePath}`` of the dataset's version (a fresh dict)."""
    return {i: DatasetBasePath(path, name=name, is_dataset_root=root, id=i)
            for i, name, root, path in _native.dataset_base_paths(ds._native)}


def bases_arg(bases: Any, what: str) -> list:
    """A list of ``DatasetBasePath`` as the native rows."""
    if bases is None:
        return []
    if not isinstance(bases, (list, tuple)):
        raise InvalidInputError(f"{what} must be a list of DatasetBasePath, got {type(bases).__name__}")
    rows = []
    for b in bases:
        if not isinstance(b, DatasetBasePath):
            try:  # pylance's own objects are accepted too
                b = DatasetBasePath(b.path, name=b.name, is_dataset_root=b.is_dataset_root,
                                    id=getattr(b, "id", None) or None)
            except AttributeError:
                raise InvalidInputError(f"{what} must hold DatasetBasePath objects, got {type(b).__name__}") from None
        rows.append(b._row())
    return rows


def target_bases_arg(target_bases: Any) -> Optional[list]:
    """``target_bases`` checked: names or paths of registered bases."""
    if target_bases is None:
        return None
    if isinstance(target_bases, str) or not isinstance(target_bases, (list, tuple)):
        raise InvalidInputError(f"target_bases must be a list of base names or paths, got {type(target_bases).__name__}")
    for t in target_bases:
        _args.string(t, "target_bases entry")
    return list(target_bases)


def _source(ds: "Dataset", reference: Any) -> "Dataset":
    """The dataset version a clone's ``reference`` names: a version number,
    a tag name, or ``(branch, version)`` (``None``/``"main"`` the main
    line, a ``None`` version its latest)."""
    from lancelet.dataset import Dataset

    if isinstance(reference, tuple):
        if len(reference) != 2:
            raise InvalidInputError(f"reference must be (branch, version), got {reference!r}")
        branch, version = reference
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise InvalidInputError(f"reference version must be an integer, got {version!r}")
        if branch is None or branch == "main":
            base = ds
        else:
            _args.string(branch, "branch")
            uri = posixpath.join(ds.uri.rstrip("/"), "tree", branch)
            try:
                base = Dataset(uri, storage_options=getattr(ds, "_storage_options", None))
            except NotFoundError as e:
                raise NotFoundError(f"branch {branch!r} of dataset {ds.uri}") from e
        return base.checkout_version(base.latest_version if version is None else version)
    if isinstance(reference, bool) or not isinstance(reference, (int, str)):
        raise InvalidInputError(f"reference must be a version number, a tag name or (branch, version), got {reference!r}")
    return ds.checkout_version(reference)


def shallow_clone(ds: "Dataset", target_path: Any, reference: Union[int, str, Tuple[Any, Any]],
                  storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "Dataset":
    from lancelet.dataset import Dataset

    target = _args.uri(target_path)
    src = _source(ds, reference)
    commit = _inputs.commit_args(**kwargs)
    opts = None if storage_options is None else _inputs.storage_options(storage_options)
    return Dataset(target, _native_ds=_native.dataset_shallow_clone(src._native, target, opts, commit))


def deep_clone(ds: "Dataset", target_path: Any, reference: Union[int, str, Tuple[Any, Any]],
               storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "Dataset":
    from lancelet.dataset import Dataset

    target = _args.uri(target_path)
    src = _source(ds, reference)
    commit = _inputs.commit_args(**kwargs)
    opts = None if storage_options is None else _inputs.storage_options(storage_options)
    native, _files, _bytes = _native.dataset_deep_clone(src._native, target, opts, commit)
    return Dataset(target, _native_ds=native)
