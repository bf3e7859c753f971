"""Reading Lance datasets (the table format): versions, fragments, deletions
and stable row ids, with pylance's method names.

>>> import lancelet
>>> ds = lancelet.dataset("/data/my.lance")          # latest version
>>> ds.version, ds.latest_version, ds.count_rows()
>>> ds.to_table(columns=["x"], with_row_id=True)
>>> lancelet.dataset("/data/my.lance", version="t1")  # a version number or a tag
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from lancelet import _args, _inputs, _native
from lancelet._progress import progress_callback
from lancelet.exceptions import InvalidInputError, UnsupportedError

if TYPE_CHECKING:
    from lancelet._branches import Branches
    from lancelet.merge_insert import MergeInsertBuilder
    from lancelet.optimize import CleanupStats, DatasetOptimizer

__all__ = ["dataset", "write_dataset", "Dataset", "LanceDataset", "LanceFragment", "DataFile", "Scanner", "Tags"]

PathLike = Union[str, "os.PathLike[str]"]


_columns = _args.columns
_non_negative = _args.non_negative
_int_list = _args.int_list


def _no_filter(filter: Any) -> None:
    if filter is not None:
        raise UnsupportedError("filters are not implemented yet")


def _filter(filter: Any) -> Optional[str]:
    """A scan filter: an SQL boolean expression string (or None)."""
    if filter is None or isinstance(filter, str):
        return filter
    if type(filter).__module__.startswith("pyarrow"):
        raise UnsupportedError(f"filters must be SQL strings, not {type(filter).__name__} "
                               "(pyarrow compute expressions are not supported yet)")
    raise TypeError(f"filter must be an SQL string, got {type(filter).__name__}")


def _row_range(r: Any) -> Optional[Tuple[int, int]]:
    if r is None:
        return None
    if not isinstance(r, (tuple, list)):
        raise TypeError(f"row_range must be a (start, end) pair of integers, got {type(r).__name__}")
    if len(r) != 2:
        raise InvalidInputError(f"row_range must be a (start, end) pair of integers, got {r!r}")
    start, end = (_args.integer(x, "row_range") for x in r)
    if start < 0 or end < start:
        raise InvalidInputError(f"row_range {r!r} must satisfy 0 <= start <= end")
    return (start, end)


def _version_args(version: Union[int, str, None]):
    if version is None:
        return None, None
    if isinstance(version, str):
        if version.isdigit():
            return int(version), None
        return None, version
    if isinstance(version, bool) or not hasattr(version, "__index__"):
        raise TypeError(f"version must be a number or a tag name, got {type(version).__name__}")
    v = _args.integer(version, "version")
    if v < 0:
        raise InvalidInputError(f"version must be non-negative, got {v}")
    return v, None


def _timestamp(seconds: int, nanos: int) -> datetime.datetime:
    # Same arithmetic as pylance: local naive time, microsecond precision.
    ts_nanos = seconds * 1_000_000_000 + nanos
    return datetime.datetime.fromtimestamp(ts_nanos // 1e9) + datetime.timedelta(microseconds=(ts_nanos % 1e9) // 1e3)


def _rfc3339(s: Optional[str]) -> Optional[datetime.datetime]:
    if not s:
        return None
    t = s.strip().replace("Z", "+00:00")
    # fromisoformat takes at most 6 fractional digits (and Python 3.9 wants exactly 3 or 6)
    if "." in t:
        head, rest = t.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        frac = (rest[:i] + "000000")[:6]
        t = f"{head}.{frac}{rest[i:]}"
    try:
        return datetime.datetime.fromisoformat(t)
    except ValueError:
        return None


_retyped = _args.retyped


@dataclasses.dataclass(frozen=True)
class FeatureFlags:
    """A version's manifest feature flags: the bit sets a reader
    (``reader``) or writer (``writer``) must understand, and the names of
    their bits (``deletion_files``, ``stable_row_ids``, ``table_config``,
    ``base_paths``, ``mixed_data_file_versions``, ...)."""

    reader: int
    writer: int
    reader_names: Tuple[str, ...]
    writer_names: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class DataFile:
    """One data file of a fragment (pylance's ``DataFile`` fields)."""

    path: str
    fields: List[int]
    column_indices: List[int]
    file_major_version: int
    file_minor_version: int
    file_size_bytes: Optional[int] = None
    base_id: Optional[int] = None


class LanceFragment:
    """A fragment of one dataset version."""

    def __init__(self, ds: "Dataset", row: tuple) -> None:
        self._ds = ds
        fid, physical_rows, files, deletion, num_deleted = row
        self._id = fid
        self._physical_rows = physical_rows
        self._files = [DataFile(p, list(f), list(c), ma, mi, sz or None, b) for (p, f, c, ma, mi, sz, b) in files]
        self._deletion = deletion
        self._num_deleted = num_deleted

    @property
    def fragment_id(self) -> int:
        return self._id

    @property
    def physical_rows(self) -> int:
        """Rows in the data files, deleted ones included."""
        return self._physical_rows

    @property
    def num_deletions(self) -> int:
        return self._num_deleted or 0

    def count_rows(self, filter: Any = None) -> int:
        """Rows that are not deleted (and match ``filter``, an SQL string)."""
        if filter is not None:
            return self._ds._native.count_rows(None, 0, [self._id], _filter(filter))
        return self._ds._native.fragment_count_rows(self._id)

    def data_files(self) -> List[DataFile]:
        return list(self._files)

    def deletion_file(self) -> Optional[str]:
        """The deletion file's path relative to the dataset root, or None."""
        return self._deletion

    def scanner(self, columns: Optional[Sequence[str]] = None, filter: Any = None, batch_size: Optional[int] = None,
                with_row_id: bool = False, with_row_address: bool = False,
                row_range: Optional[Tuple[int, int]] = None) -> "Scanner":
        """A scan of this fragment only; ``row_range=(start, end)`` limits it
        to those physical rows (deleted ones still left out)."""
        return self._ds.scanner(columns=columns, filter=filter, batch_size=batch_size, fragments=[self],
                                with_row_id=with_row_id, with_row_address=with_row_address, row_range=row_range)

    def to_batches(self, columns: Optional[Sequence[str]] = None, filter: Any = None,
                   batch_size: Optional[int] = None, **kwargs: Any):
        return self.scanner(columns=columns, filter=filter, batch_size=batch_size, **kwargs).to_batches()

    def to_table(self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None,
                 offset: Optional[int] = None, with_row_id: bool = False, with_row_address: bool = False) -> pa.Table:
        return self._ds.to_table(columns=columns, filter=filter, limit=limit, offset=offset, with_row_id=with_row_id,
                                 with_row_address=with_row_address, fragments=[self])

    def __repr__(self) -> str:
        return f"LanceFragment(id={self._id}, physical_rows={self._physical_rows}, files={len(self._files)})"


class Tags:
    """The dataset's tags: list, get_version, create, delete."""

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def list(self) -> Dict[str, Dict[str, Any]]:
        out = {}
        for name, version, text in self._ds._native.tags():
            try:
                j = json.loads(text)
            except ValueError:
                j = {}
            out[name] = {
                "branch": j.get("branch"),
                "version": version,
                "created_at": _rfc3339(j.get("createdAt")),
                "updated_at": _rfc3339(j.get("updatedAt")),
                "manifest_size": j.get("manifestSize"),
                "metadata": j.get("metadata") or {},
            }
        return out

    def get_version(self, tag: str) -> int:
        _args.string(tag, "tag")
        tags = self.list()
        if tag not in tags:
            from lancelet.exceptions import NotFoundError
            raise NotFoundError(f"not found: tag {tag!r} of dataset {self._ds.uri}")
        return tags[tag]["version"]

    def create(self, tag: str, version: Union[int, str, Tuple[Optional[str], Optional[int]]]) -> None:
        """Create ``tag`` pointing at ``version`` (``_refs/tags/{tag}.json``):
        a number (of this version's branch), another tag's name (its
        version, on its branch), or a ``(branch, version)`` tuple (``None``
        or ``"main"``: the main line; a version of ``None``: the latest).
        ``tag`` must be a str (else TypeError) of letters, digits, ``.``,
        ``-`` and ``_``, not empty, not starting with ``.`` (else
        InvalidInputError): a tag is a file under ``_refs/tags/``."""
        from lancelet import _branches

        _args.string(tag, "tag")
        if version is None:
            raise TypeError("version must be a number or a tag name, got None")
        kind, name, v = _branches.version_target(version)
        if kind == "number":
            branch = _native.branch_of(self._ds._native)
        elif kind == "tag":
            target = self.list().get(name)
            if target is None:
                self.get_version(name)  # NotFoundError naming it
            branch, v = target["branch"], target["version"]
        else:
            branch = name
            if v is None:
                v = _native.branch_checkout(self._ds._native, branch, None).version
        _native.branch_tag_create(self._ds._native, tag, branch, v)

    def delete(self, tag: str) -> None:
        _native.branch_tag_delete(self._ds._native, _args.string(tag, "tag"))


class Scanner:
    """A planned scan; nothing is read until a result is asked for."""

    def __init__(self, ds: "Dataset", kwargs: Dict[str, Any]) -> None:
        self._ds = ds
        self._kw = kwargs

    @property
    def projected_schema(self) -> pa.Schema:
        return self.to_reader().schema

    def _native_reader(self) -> pa.RecordBatchReader:
        if "nearest" in self._kw:
            return pa.RecordBatchReader.from_stream(_native.nearest_search(self._ds._native, self._kw["nearest"]))
        if "fts" in self._kw:
            return pa.RecordBatchReader.from_stream(_native.fts_search(self._ds._native, self._kw["fts"]))
        return pa.RecordBatchReader.from_stream(self._ds._native.scan(**self._kw))

    def to_reader(self) -> pa.RecordBatchReader:
        """Stream the result batch by batch (errors met while streaming are
        raised as lancelet exceptions)."""
        return _args.typed_reader(self._native_reader())

    def to_batches(self):
        """Iterate the result's batches; errors met while streaming are
        raised as lancelet exceptions."""
        return _args.typed_batches(self._native_reader())

    def to_table(self) -> pa.Table:
        if "nearest" in self._kw or "fts" in self._kw:
            return _args.read_all(self._native_reader())
        return _args.read_all(pa.RecordBatchReader.from_stream(self._ds._native.scan_all(**self._kw)))

    def count_rows(self) -> int:
        kw = self._kw
        if "nearest" in kw or "fts" in kw:
            return self.to_table().num_rows
        return self._ds._native.count_rows(kw["limit"], kw["offset"], kw["fragments"], kw["filter"], kw["row_range"],
                                           kw["use_scalar_index"])

    def explain_plan(self, verbose: bool = False) -> str:
        """The scan's plan; when scalar indices answer (part of) the filter
        it has pylance's ``ScalarIndexQuery: query=[...]@<index>(<type>)``
        line. Nothing is read but index metadata."""
        if "nearest" in self._kw:
            return _native.nearest_plan(self._ds._native, self._kw["nearest"])
        if "fts" in self._kw:
            return _native.fts_plan(self._ds._native, self._kw["fts"])
        from lancelet.indices import scan_plan
        return scan_plan(self._ds, self._kw, verbose=verbose)

    def analyze_plan(self) -> str:
        """Run the scan and return its plan with what happened (rows out,
        rows the indices selected, fragments scanned without them, times)."""
        if "nearest" in self._kw:
            from lancelet import _nearest
            return _nearest.analyze(self)
        from lancelet.indices import scan_plan
        return scan_plan(self._ds, self._kw, analyze=True)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._native_reader().__arrow_c_stream__(requested_schema)


class Dataset:
    """One version of a Lance dataset, opened for reading."""

    def __init__(self, uri: PathLike, version: Union[int, str, Tuple[Optional[str], Optional[int]], None] = None,
                 storage_options: Optional[Dict[str, str]] = None, _native_ds: Any = None,
                 _main_uri: Optional[str] = None) -> None:
        self._uri = _inputs.uri(uri)
        if _native_ds is None:
            if isinstance(version, tuple):
                from lancelet import _branches

                main = _native.Dataset(self._uri, None, None, _inputs.storage_options(storage_options))
                _native_ds = _branches.checkout(Dataset(self._uri, _native_ds=main), version)
            else:
                v, tag = _version_args(version)
                _native_ds = _native.Dataset(self._uri, v, tag, _inputs.storage_options(storage_options))
        self._native = _native_ds
        self._schema = pa.schema(self._native.schema())
        self._main = _main_uri

    @property
    def _main_uri(self) -> str:
        """The URI of the dataset this version's branch belongs to."""
        if self._main is None:
            branch = _native.branch_of(self._native)
            uri = self._uri.rstrip("/")
            suffix = f"/tree/{branch}"
            self._main = uri[: -len(suffix)] if branch and uri.endswith(suffix) else self._uri
        return self._main

    # -- metadata ----------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def version(self) -> int:
        return self._native.version

    @property
    def latest_version(self) -> int:
        return self._native.latest_version()

    @property
    def data_storage_version(self) -> str:
        """The data storage version the manifest names (``"2.0"``, ``"2.1"``,
        ``"2.2"``; ``"0.1"`` for a legacy dataset). An append with another
        version may add data files of that version (see write_dataset)."""
        return self._native.data_storage_version

    @property
    def has_stable_row_ids(self) -> bool:
        return self._native.has_stable_row_ids

    @property
    def feature_flags(self) -> FeatureFlags:
        """This version's reader/writer feature flags (read-only)."""
        r, w, rn, wn = self._native.feature_flags()
        return FeatureFlags(r, w, tuple(rn), tuple(wn))

    @property
    def tags(self) -> Tags:
        return Tags(self)

    @property
    def config(self) -> Dict[str, str]:
        return dict(self._native.config())

    def versions(self) -> List[Dict[str, Any]]:
        """Every version, oldest first: ``{"version", "timestamp", "metadata"}``."""
        return [{"version": v, "timestamp": _timestamp(s, n), "metadata": dict(md)}
                for v, s, n, md in self._native.versions()]

    def checkout_version(self, version: Union[int, str, Tuple[Optional[str], Optional[int]]]) -> "Dataset":
        """The same dataset at another version: a number (of this version's
        branch), a tag name, or a ``(branch, version)`` tuple (``None`` or
        ``"main"`` for the main line; a version of ``None``: the latest)."""
        from lancelet import _branches

        return Dataset(self._uri, _native_ds=_branches.checkout(self, version), _main_uri=self._main)

    def checkout_latest(self) -> None:
        """Move this object to the latest version of its branch (returns
        None, as pylance 14's does)."""
        self._become(self._native.checkout(None, None))

    # -- branches (lancelet/_branches.py) -----------------------------------
    def create_branch(self, branch: str, reference: Union[int, str, Tuple[Optional[str], Optional[int]], None] = None,
                      storage_options: Optional[Dict[str, str]] = None) -> "Dataset":
        """Create branch ``branch`` from ``reference``: a version number of
        this version's branch, a tag name, a ``(branch, version)`` tuple
        (``None``/``"main"``: the main line, a version of ``None``: its
        latest), or ``None`` (the latest of this version's branch). Returns
        the branch's first version (its URI is ``{uri}/tree/{branch}``).
        A name pylance refuses (``main``, ``a b``, ``x.lock`` ...) is
        :class:`InvalidReferenceError`, a name in use
        :class:`ReferenceExistsError`, an unknown source
        :class:`NotFoundError`; nothing is written then."""
        from lancelet import _branches

        return _branches.create_branch(self, branch, reference, storage_options)

    @property
    def branches(self) -> "Branches":
        """The dataset's branches: ``list()``, ``list_ordered(order)``,
        ``delete(name)``, ``replace_metadata(name, metadata)``."""
        from lancelet._branches import Branches

        return Branches(self)

    def get_fragments(self, filter: Any = None) -> List[LanceFragment]:
        _no_filter(filter)
        return [LanceFragment(self, row) for row in self._native.fragments()]

    def get_fragment(self, fragment_id: int) -> Optional[LanceFragment]:
        for f in self.get_fragments():
            if f.fragment_id == fragment_id:
                return f
        return None

    # -- reading -----------------------------------------------------------
    def scanner(self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None,
                offset: Optional[int] = None, batch_size: Optional[int] = None,
                fragments: Optional[Iterable[LanceFragment]] = None, *, with_row_id: bool = False,
                with_row_address: bool = False, row_range: Optional[Tuple[int, int]] = None,
                use_scalar_index: Optional[bool] = None, blob_handling: Optional[str] = None,
                **unsupported: Any) -> Scanner:
        """Plan a scan. ``row_range=(start, end)`` keeps only the physical
        rows ``start <= offset < end`` of each fragment scanned (how a
        distributed task reads one slice of a large fragment).
        ``blob_handling``: blob columns read as their descriptors
        (``"blobs_descriptions"``, the default, or ``"all_descriptions"``) or
        as their bytes (``"all_binary"``), as pylance's."""
        filter = _filter(filter)
        from lancelet.blob import check_blob_handling
        blob_handling = check_blob_handling(blob_handling)
        nearest = unsupported.pop("nearest", None)
        full_text_query = unsupported.pop("full_text_query", None)
        prefilter = bool(unsupported.pop("prefilter", False))
        fast_search = bool(unsupported.pop("fast_search", False))
        for k, v in unsupported.items():
            if v is not None and v is not False:
                raise UnsupportedError(f"scanner option {k!r} is not implemented yet")
        bs = _non_negative("batch_size", batch_size)
        if bs == 0:
            raise InvalidInputError("batch_size must be positive")
        frag_ids = None
        if fragments is not None:
            frag_ids = [f.fragment_id if isinstance(f, LanceFragment) else _args.integer(f, "fragments")
                        for f in fragments]
        kw = dict(
            columns=_columns(columns), limit=_non_negative("limit", limit), offset=_non_negative("offset", offset) or 0,
            with_row_id=bool(with_row_id), with_row_address=bool(with_row_address), batch_size=bs, fragments=frag_ids,
            filter=filter, row_range=_row_range(row_range),
            use_scalar_index=True if use_scalar_index is None else bool(use_scalar_index))
        if nearest is None and full_text_query is None:
            kw["blob_handling"] = blob_handling
        if nearest is not None:
            from lancelet import _nearest
            kw["nearest"] = _nearest.scan_params(self.schema, nearest, kw, prefilter=prefilter, fast_search=fast_search)
        if full_text_query is not None:
            from lancelet import _fts
            kw["fts"] = _fts.scan_params(full_text_query, kw, prefilter=prefilter)
        return Scanner(self, kw)

    def to_table(self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None,
                 offset: Optional[int] = None, with_row_id: bool = False, with_row_address: bool = False,
                 batch_size: Optional[int] = None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset, batch_size=batch_size,
                            with_row_id=with_row_id, with_row_address=with_row_address, **kwargs).to_table()

    def to_batches(self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None,
                   offset: Optional[int] = None, with_row_id: bool = False, with_row_address: bool = False,
                   batch_size: Optional[int] = None, **kwargs: Any):
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset, batch_size=batch_size,
                            with_row_id=with_row_id, with_row_address=with_row_address, **kwargs).to_batches()

    def count_rows(self, filter: Any = None, **kwargs: Any) -> int:
        """Rows in this version (matching ``filter``, an SQL string)."""
        return self._native.count_rows(None, 0, None, _filter(filter))

    def take(self, indices: Any, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows at positions ``indices`` of the dataset (after deletions)."""
        stream = self._native.take(_int_list(indices, "row indices"), _columns(columns))
        return _args.read_all(pa.RecordBatchReader.from_stream(stream))

    def take_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   buffer_size: int = 512 * 1024) -> List[Any]:
        """File-like :class:`lancelet.blob.BlobFile` objects for the blobs of
        ``blob_column`` at the selected rows (exactly one of ``ids``,
        ``addresses`` or ``indices``); ``None`` for null blobs. Bytes are read
        lazily, in ranges, as the files are read."""
        from lancelet.blob import take_blobs
        return take_blobs(self, blob_column, ids=ids, addresses=addresses, indices=indices, buffer_size=buffer_size)

    def take_row_ids(self, row_ids: Any, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows with these row ids (stable ids, else row addresses); deleted
        rows are left out."""
        stream = self._native.take_row_ids(_int_list(row_ids, "row ids"), _columns(columns))
        return _args.read_all(pa.RecordBatchReader.from_stream(stream))

    # pylance's private spelling
    _take_rows = take_row_ids

    # -- writing -----------------------------------------------------------
    def _become(self, native_ds: Any) -> None:
        self._native = native_ds
        self._schema = pa.schema(self._native.schema())

    def insert(self, data: Any, *, commit_message: Optional[str] = None,
               transaction_properties: Optional[Dict[str, str]] = None, **kwargs: Any) -> None:
        """Append ``data`` (a pyarrow Table, RecordBatchReader, pandas
        DataFrame or any Arrow stream) as a new version; this object moves
        to the new version. Returns None, as pylance 14's does.
        ``commit_message`` and ``transaction_properties`` are recorded in
        the version's transaction, as :func:`write_dataset` does."""
        for k, v in kwargs.items():
            if v is not None:
                raise UnsupportedError(f"insert option {k!r} is not implemented yet")
        commit = _inputs.commit_args(commit_message=commit_message, transaction_properties=transaction_properties)
        self._become(_native.dataset_insert(self._native, _inputs.stream(data, convert_schema=self._schema), commit))

    def delete(self, predicate: Any, *, conflict_retries: int = 10,
               retry_timeout: datetime.timedelta = datetime.timedelta(seconds=30)) -> Dict[str, int]:
        """Delete the rows matching a SQL predicate; returns
        ``{"num_deleted_rows": n}`` (pylance 14's ``DeleteResult``). This
        object moves to the new version (a delete matching nothing still
        commits one, as pylance's does).

        If a concurrent commit removed rows this delete read, it runs again
        on the latest version, at most ``conflict_retries`` more times and
        not after ``retry_timeout``; then :class:`CommitConflictError`."""
        if not isinstance(predicate, str):
            if type(predicate).__module__.startswith("pyarrow"):
                raise UnsupportedError("delete predicates must be SQL strings (pyarrow expressions are not supported)")
            raise TypeError(f"the delete predicate must be an SQL string, got {type(predicate).__name__}")
        commit = _inputs.commit_args(conflict_retries=conflict_retries, retry_timeout=retry_timeout)
        native_ds, n = _native.dataset_delete(self._native, predicate, commit)
        self._become(native_ds)
        return {"num_deleted_rows": n}

    def update(self, updates: Dict[str, str], where: Optional[str] = None, *, conflict_retries: int = 10,
               retry_timeout: datetime.timedelta = datetime.timedelta(seconds=30),
               progress: Any = None) -> Dict[str, int]:
        """Set columns to SQL expressions in the rows where ``where`` holds
        (all rows when ``None``); returns ``{"num_rows_updated": n}``.

        ``updates`` maps column names to SQL expressions evaluated on each
        row as it was (``{"a": "b", "b": "a"}`` swaps), cast to the column's
        type: ``{"price": "price * 1.1", "name": "upper(name)"}``. Updated
        rows are rewritten into new fragments (pylance's ``Update``
        transaction); an update matching nothing still commits a version.
        ``conflict_retries``/``retry_timeout`` bound re-runs after a
        concurrent commit changed the rows read (see :meth:`delete`);
        ``progress`` is a callable receiving ``{"stage", "done", "total"}``
        per fragment scanned, or ``True`` for a line on stderr; an exception
        it raises aborts the update (nothing committed) and propagates
        unchanged."""
        if not isinstance(updates, dict):
            raise InvalidInputError(f"updates must be a dict of column name -> SQL expression, got {type(updates).__name__}")
        pairs = []
        for k, v in updates.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidInputError(f"updates must map column names to SQL expression strings, got {k!r}: {v!r}")
            pairs.append((k, v))
        if where is not None and not isinstance(where, str):
            raise UnsupportedError("update predicates must be SQL strings")
        commit = _inputs.commit_args(conflict_retries=conflict_retries, retry_timeout=retry_timeout,
                                     progress=progress_callback(progress))
        native_ds, n = _native.dataset_update(self._native, pairs, where, commit)
        self._become(native_ds)
        return {"num_rows_updated": n}

    def merge_insert(self, on: Union[str, List[str]]) -> "MergeInsertBuilder":
        """Start a merge_insert (upsert) keyed on ``on``: see
        :class:`lancelet.merge_insert.MergeInsertBuilder`."""
        from lancelet.merge_insert import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    # -- schema evolution (lancelet/_evolve.py) -----------------------------
    def add_columns(self, transforms: Any, read_columns: Optional[List[str]] = None,
                    reader_schema: Optional[pa.Schema] = None, batch_size: Optional[int] = None, *,
                    progress: Any = None) -> None:
        """Add columns (one new version, a ``Merge``): ``transforms`` is a
        dict of name -> SQL expression; a function ``fn(pa.RecordBatch) ->
        pa.RecordBatch | pandas.DataFrame`` called with ``read_columns``
        (all when None; ``_rowid``/``_rowaddr`` allowed) of the live rows,
        ``batch_size`` rows at a time; a Table/RecordBatchReader/DataFrame
        with one row per live row in scan order (``reader_schema`` for an
        iterator of batches); or a ``pa.Field``/list of them/``pa.Schema``
        of all-null columns (metadata only). ``progress``: True or a
        callable getting ``{"stage", "done", "total"}`` per fragment."""
        from lancelet import _evolve
        self._become(_evolve.add_columns(self, transforms, read_columns, reader_schema, batch_size, progress))

    def drop_columns(self, columns: List[str]) -> None:
        """Drop columns (names, or dotted paths of struct fields): a
        ``Project``; data files are not rewritten."""
        from lancelet import _evolve
        self._become(_evolve.drop_columns(self, columns))

    def alter_columns(self, *alterations: Dict[str, Any]) -> None:
        """Rename (``name``), change nullability (``nullable``) or cast
        (``data_type``) columns given by ``path`` ("a" or "a.b"). Casts
        write the cast columns anew (a ``Merge``); the rest is a ``Project``."""
        from lancelet import _evolve
        self._become(_evolve.alter_columns(self, alterations))

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None) -> None:
        """Left-join ``data_obj`` on ``left_on == right_on``, adding its
        other columns (nulls where no row matches; the last of repeated
        keys wins)."""
        from lancelet import _evolve
        self._become(_evolve.merge(self, data_obj, left_on, right_on, schema))

    # -- scalar indices (lancelet.indices) ---------------------------------
    def create_scalar_index(self, column: str, index_type: str, name: Optional[str] = None, *, replace: bool = True,
                            **kwargs: Any) -> None:
        """Build a BTREE, BITMAP or LABEL_LIST index (see
        :mod:`lancelet.indices`); this object moves to the new version
        (returns None, as pylance 14's does)."""
        from lancelet.indices import create_scalar_index
        create_scalar_index(self, column, index_type, name, replace=replace, **kwargs)

    def create_index(self, column: Any, index_type: str, name: Optional[str] = None, metric: str = "L2",
                     replace: bool = False, num_partitions: Optional[int] = None, ivf_centroids: Any = None,
                     pq_codebook: Any = None, num_sub_vectors: Optional[int] = None, **kwargs: Any) -> "Dataset":
        """Build a vector index (IVF_FLAT, IVF_PQ, IVF_SQ; see
        :func:`lancelet.indices.create_index`); this object moves to the new
        version and is returned, as pylance 14's."""
        from lancelet.indices import create_index
        create_index(self, column, index_type, name, metric, replace, num_partitions, ivf_centroids, pq_codebook,
                     num_sub_vectors, **kwargs)
        return self

    def index_statistics(self, index_name: str) -> Dict[str, Any]:
        """Statistics of an index, as pylance's ``index_statistics`` / ``stats.index_stats``."""
        from lancelet.indices import index_statistics
        return index_statistics(self, index_name)

    @property
    def stats(self) -> Any:
        """``ds.stats.index_stats(name)``."""
        from lancelet.indices import DatasetStats
        return DatasetStats(self)

    def list_indices(self) -> List[Dict[str, Any]]:
        from lancelet.indices import list_indices
        return list_indices(self)

    def describe_indices(self) -> List[Any]:
        from lancelet.indices import describe_indices
        return describe_indices(self)

    def drop_index(self, name: str) -> None:
        """Remove the index ``name``; this object moves to the new version."""
        from lancelet.indices import drop_index
        drop_index(self, name)

    def restore(self) -> None:
        """Make this (old) version the latest one by committing a new version
        with its content; this object moves to it (returns None, as
        pylance 14's does)."""
        self._become(_native.dataset_restore(self._native, _inputs.commit_args()))

    # -- bases and clones (lancelet._bases) ----------------------------------
    def base_paths(self) -> Dict[int, Any]:
        """``{id: DatasetBasePath}``: the base paths this version's manifest
        registers (a fresh dict; the dataset's own root is not one unless
        registered)."""
        from lancelet import _bases

        return _bases.base_paths(self)

    def add_bases(self, new_bases: List[Any], transaction_properties: Optional[Dict[str, str]] = None) -> "Dataset":
        """Register more base paths (``DatasetBasePath`` list; ids are given
        one past the largest in use) in a new version; this object moves to
        it and is returned, as pylance's is. A name or path already
        registered is ``InvalidInputError``."""
        from lancelet import _bases

        rows = _bases.bases_arg(new_bases, "new_bases")
        commit = _inputs.commit_args(transaction_properties=transaction_properties)
        self._become(_native.dataset_add_bases(self._native, rows, commit))
        return self

    def shallow_clone(self, target_path: PathLike, reference: Any,
                      storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "Dataset":
        """Clone version ``reference`` (a number, a tag name, or ``(branch,
        version)``) to ``target_path`` without copying data: the clone's
        manifest reads this dataset's files through base path 0 (or the
        next free id); what is written to the clone stays in the clone.
        A target holding a dataset is ``AlreadyExistsError``."""
        from lancelet import _bases

        return _bases.shallow_clone(self, target_path, reference, storage_options, **kwargs)

    def deep_clone(self, target_path: PathLike, reference: Any,
                   storage_options: Optional[Dict[str, str]] = None, **kwargs: Any) -> "Dataset":
        """Clone version ``reference`` to ``target_path`` copying its data,
        deletion and index files, so that the clone stands alone."""
        from lancelet import _bases

        return _bases.deep_clone(self, target_path, reference, storage_options, **kwargs)

    # -- maintenance (lancelet.optimize) ------------------------------------
    @property
    def optimize(self) -> "DatasetOptimizer":
        """Maintenance: ``ds.optimize.compact_files(...)``, ``ds.optimize.optimize_indices(...)``."""
        from lancelet.optimize import DatasetOptimizer

        return DatasetOptimizer(self)

    def cleanup_old_versions(self, older_than: Optional[datetime.timedelta] = None,
                             retain_versions: Optional[int] = None, *, delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True, progress: Any = None) -> "CleanupStats":
        """Remove versions older than ``older_than`` (default 14 days, when
        ``retain_versions`` is not given either) and beyond the newest
        ``retain_versions``, and the files only they use. The latest version,
        versions after this object's and tagged versions stay; unreferenced
        files younger than 7 days stay unless ``delete_unverified``. With a
        tagged version in range and ``error_if_tagged_old_versions``, nothing
        is removed and :class:`~lancelet.exceptions.InvalidInputError` names
        the tags. ``progress``: ``True`` or a callable getting ``{"stage",
        "done", "total"}`` (``read`` per manifest, ``delete`` per file); an
        exception it raises stops the cleanup and propagates unchanged
        (before the first ``delete`` report nothing is removed)."""
        from lancelet.optimize import cleanup_old_versions

        return cleanup_old_versions(self, older_than, retain_versions, delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions, progress=progress)

    def __len__(self) -> int:
        return self.count_rows()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.scanner().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"Dataset({self._uri!r}, version={self.version})"

LanceDataset = Dataset

# Arrow bytes of a resident input's chunks the writer encodes in one pass
# (benches/RESULTS.md, session 12: a wide table's 64k-row chunks one by one
# left a core idle between them).
_RESIDENT_GROUP_BYTES = 48 << 20

def write_dataset(data: Any, uri: Optional[PathLike] = None, schema: Optional[pa.Schema] = None, mode: str = "create",
                  max_rows_per_file: int = 1024 * 1024, data_storage_version: Optional[str] = None,
                  enable_stable_row_ids: bool = False, storage_options: Optional[Dict[str, str]] = None,
                  namespace_client: Any = None, table_id: Optional[List[str]] = None,
                  commit_message: Optional[str] = None, transaction_properties: Optional[Dict[str, str]] = None,
                  initial_bases: Optional[List[Any]] = None, target_bases: Optional[List[str]] = None,
                  **kwargs: Any) -> Dataset:
    """Write ``data`` as a Lance dataset at ``uri`` (pylance's signature):
    ``mode`` is ``"create"`` (fail if it exists), ``"append"`` or
    ``"overwrite"``; data files hold at most ``max_rows_per_file`` rows.

    ``data_storage_version`` (``"2.0"``, ``"2.1"``, ``"2.2"``/``"stable"``):
    a new dataset's file version (2.2 when None); as in pylance 14, an
    overwrite keeps the dataset's version unless another is given, and an
    append writes files of the version given (the dataset's when None).

    Instead of ``uri``, ``namespace_client`` (any ``LanceNamespace``) and
    ``table_id`` name a table of a catalog: ``create`` declares it and writes
    at the location the namespace gives (a failed first write takes the
    declaration back), ``append``/``overwrite`` write where
    ``describe_table`` says it is.

    ``commit_message`` and ``transaction_properties`` (a dict of strings)
    are recorded in the new version's transaction, as pylance records them
    (the message under ``__lance_commit_message``).

    ``initial_bases`` (``DatasetBasePath`` list; a new dataset only)
    registers base paths; ``target_bases`` (names or paths of registered
    bases) puts the new data files under the first one instead of
    ``data/``."""
    if namespace_client is not None or table_id is not None:
        from lancelet.namespace.resolve import table_location, undo_declare

        _namespace_args(uri, namespace_client, table_id)
        uri, storage_options = table_location(namespace_client, table_id, mode, storage_options)
        try:
            return write_dataset(data, uri, schema=schema, mode=mode, max_rows_per_file=max_rows_per_file,
                                 data_storage_version=data_storage_version,
                                 enable_stable_row_ids=enable_stable_row_ids, storage_options=storage_options,
                                 commit_message=commit_message, transaction_properties=transaction_properties,
                                 initial_bases=initial_bases, target_bases=target_bases, **kwargs)
        except BaseException:
            if mode == "create":
                undo_declare(namespace_client, table_id)
            raise
    if uri is None:
        raise InvalidInputError("write_dataset needs a uri, or namespace_client and table_id")
    uri = _args.uri(uri)
    options = _inputs.storage_options(storage_options)
    for k, v in kwargs.items():
        if v is not None and v is not False:
            raise UnsupportedError(f"write_dataset option {k!r} is not implemented yet")
    _args.string(mode, "mode")
    if mode not in ("create", "append", "overwrite"):
        raise InvalidInputError(f"unknown mode {mode!r} (expected create, append or overwrite)")
    max_rows = _args.positive("max_rows_per_file", max_rows_per_file)
    version = _args.optional_string(data_storage_version, "data_storage_version")
    commit = _inputs.commit_args(commit_message=commit_message, transaction_properties=transaction_properties)
    stream = _inputs.stream(data, schema)
    # A table's chunks are resident anyway: the writer may gather them into
    # larger units of work (a stream's batches would be held longer).
    group = _RESIDENT_GROUP_BYTES if isinstance(stream, pa.Table) else 0
    from lancelet import _bases

    bases = _bases.bases_arg(initial_bases, "initial_bases")
    targets = _bases.target_bases_arg(target_bases)
    native_ds = _native.write_dataset(uri, stream, mode, max_rows, version, bool(enable_stable_row_ids), options,
                                      group_bytes=group, commit=commit, initial_bases=bases, target_bases=targets)
    return Dataset(uri, _native_ds=native_ds)

def _namespace_args(uri: Any, namespace_client: Any, table_id: Any) -> None:
    if uri is not None:
        raise InvalidInputError("pass either uri or namespace_client and table_id, not both")
    if namespace_client is None or table_id is None:
        raise InvalidInputError("namespace_client and table_id must be given together")

def dataset(uri: Optional[PathLike] = None, version: Union[int, str, None] = None,
            storage_options: Optional[Dict[str, str]] = None, *, namespace_client: Any = None,
            table_id: Optional[List[str]] = None, **kwargs: Any) -> Dataset:
    """Open the dataset at ``uri`` (local path, ``file://``, ``s3://`` or
    ``memory://``) at ``version`` (a number or a tag name; the latest when
    None). ``storage_options`` configure the object store as in pylance
    (``aws_access_key_id``, ``aws_secret_access_key``, ``aws_endpoint``,
    ``aws_region``, ``allow_http``, ...; ``AWS_*`` environment variables
    fill in the rest). Instead of ``uri``, ``namespace_client`` (any
    ``LanceNamespace``) and ``table_id`` open a table of a catalog."""
    if namespace_client is not None or table_id is not None:
        from lancelet.namespace.resolve import table_location

        _namespace_args(uri, namespace_client, table_id)
        uri, storage_options = table_location(namespace_client, table_id, "read", storage_options)
    if uri is None:
        raise InvalidInputError("dataset() needs a uri, or namespace_client and table_id")
    for k, v in kwargs.items():
        if v is not None:
            raise UnsupportedError(f"dataset option {k!r} is not implemented yet")
    return Dataset(uri, version=version, storage_options=storage_options)
