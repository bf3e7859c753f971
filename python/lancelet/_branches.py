"""Branches of a dataset, with pylance 14's names and shapes.

A branch is a line of versions made from a version of the main line or of
another branch: ``ds.create_branch("feat", 2)`` makes it, its versions live
under ``{uri}/tree/feat/`` (appends, deletes, updates and compactions on it
leave the main line unchanged), ``ds.checkout_version(("feat", 3))`` opens
one, ``ds.branches`` lists and deletes them. Tags may name branch versions
(``ds.tags.create("t", ("feat", 3))``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from lancelet import _args, _inputs, _native
from lancelet.exceptions import InvalidInputError, InvalidReferenceError, NotFoundError, ReferenceNotFoundError

if TYPE_CHECKING:
    from lancelet.dataset import Dataset


def _as_reference_error(fn, *args: Any) -> Any:
    """Run a native call; a refused name or reference (InvalidInputError) is
    raised as :class:`InvalidReferenceError`, also an ``OSError`` as
    pylance's."""
    try:
        return fn(*args)
    except InvalidReferenceError:
        raise
    except InvalidInputError as e:
        raise InvalidReferenceError(str(e)) from e


def version_target(version: Any) -> Tuple[str, Optional[str], Optional[int]]:
    """Parse a pylance version reference: ``("number", None, n)`` for an int
    (of the current branch), ``("tag", name, None)`` for a str,
    ``("branch", branch, n)`` for a ``(branch, version)`` tuple (``None`` or
    ``"main"``: the main line; a version of ``None``: the latest)."""
    if isinstance(version, tuple):
        if len(version) != 2:
            raise InvalidInputError(f"a version reference tuple is (branch, version), got {version!r}")
        branch, v = version
        branch = _args.optional_string(branch, "branch")
        if v is not None:
            v = _args.integer(v, "version")
            if v < 0:
                raise InvalidInputError(f"version must be non-negative, got {v}")
        return "branch", (None if branch == "main" else branch), v
    if isinstance(version, str):
        if version.isdigit():
            return "number", None, int(version)
        return "tag", version, None
    if isinstance(version, bool) or not hasattr(version, "__index__"):
        raise TypeError(f"version must be a number, a tag name or a (branch, version) tuple, got {type(version).__name__}")
    v = _args.integer(version, "version")
    if v < 0:
        raise InvalidInputError(f"version must be non-negative, got {v}")
    return "number", None, v


def checkout(ds: "Dataset", version: Any) -> Any:
    """The native dataset ``version`` names (see :func:`version_target`)."""
    kind, name, v = version_target(version)
    if kind == "branch":
        return _native.branch_checkout(ds._native, name, v)
    if kind == "tag":
        return ds._native.checkout(None, name)
    return ds._native.checkout(v, None)


def create_branch(ds: "Dataset", branch: str, reference: Any = None,
                  storage_options: Optional[Dict[str, str]] = None) -> "Dataset":
    from lancelet.dataset import Dataset

    _args.string(branch, "branch")
    # storage_options: the dataset's own are used (they reach the same store).
    _inputs.storage_options(storage_options)
    current = _native.branch_of(ds._native)
    if reference is None:
        args: Tuple[Any, ...] = (current, None, None)
    else:
        kind, name, v = version_target(reference)
        args = {"number": (current, v, None), "tag": (None, None, name), "branch": (name, v, None)}[kind]
    native = _as_reference_error(_native.branch_create, ds._native, branch, *args, _inputs.commit_args())
    return Dataset(_tree_uri(ds, branch), _native_ds=native, _main_uri=ds._main_uri)


def _tree_uri(ds: "Dataset", branch: str) -> str:
    return f"{ds._main_uri.rstrip('/')}/tree/{branch}"


def _record(row: tuple) -> Dict[str, Any]:
    _, parent, parent_version, identifier, create_at, manifest_size, metadata = row
    return {"parent_branch": parent, "branch_identifier": [tuple(p) for p in identifier],
            "parent_version": parent_version, "create_at": create_at, "manifest_size": manifest_size,
            "metadata": dict(metadata)}


class Branches:
    """The dataset's branches: list, list_ordered, delete, replace_metadata."""

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def list(self) -> Dict[str, Dict[str, Any]]:
        """``{name: {"parent_branch", "branch_identifier", "parent_version",
        "create_at", "manifest_size", "metadata"}}``, as pylance's."""
        return {row[0]: _record(row) for row in _native.branch_list(self._ds._native)}

    def list_ordered(self, order: Optional[str] = None) -> List[Tuple[str, Dict[str, Any]]]:
        """``[(name, record)]`` ordered by parent version: ``"desc"`` (the
        default, as pylance's) or ``"asc"``; ties by name."""
        if order is not None:
            _args.string(order, "order")
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"Invalid sort order {order!r}. Valid values are: asc, desc")
        items = sorted(self.list().items())
        items.sort(key=lambda kv: kv[1]["parent_version"], reverse=order != "asc")
        return items

    def delete(self, branch: str) -> None:
        """Delete ``branch``: its record and its versions' files. Refused
        (:class:`InvalidReferenceError`) while a branch was made from it or a
        tag names one of its versions; an unknown branch is
        :class:`ReferenceNotFoundError` (a ``ValueError``, as pylance's)."""
        _args.string(branch, "branch")
        try:
            _as_reference_error(_native.branch_delete, self._ds._native, branch)
        except NotFoundError as e:
            if branch in self.list():
                raise
            raise ReferenceNotFoundError(str(e)) from e

    def replace_metadata(self, branch: str, metadata: Dict[str, str]) -> None:
        """Replace the ``metadata`` of ``branch``'s record."""
        _args.string(branch, "branch")
        if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise InvalidInputError("metadata must be a dict of str -> str")
        try:
            _native.branch_replace_metadata(self._ds._native, branch, sorted(metadata.items()))
        except NotFoundError as e:
            raise ReferenceNotFoundError(str(e)) from e
