"""Distributed writes: plan once, write fragments in many workers, commit once.

>>> plan = lancelet.distributed.plan_write(uri, table.schema, mode="append")
>>> staged = plan.write(part_of_the_data)          # in each worker
>>> ds = plan.commit(staged_from_all_workers)      # once, on the driver

A :class:`WritePlan` is plain, picklable data: the dataset URI, the mode,
the version read when planning, the Arrow schema of the data and a job id.
Workers write ordinary Lance data files whose names start with the job id
and return the fragments they made as opaque ``bytes`` (the table format's
``DataFragment`` message); nothing is visible until :meth:`WritePlan.commit`
writes one new version holding all of them. ``commit`` then closes the job
and removes the job's files that it did not reference (from failed or
duplicate task attempts); :meth:`WritePlan.abort` closes it and removes all
of them. A task that finishes writing after its job was closed removes its
own files and raises :class:`~lancelet.exceptions.CommitConflictError`.

Adding columns works the same way (:func:`plan_add_columns`):

>>> plan = lancelet.distributed.plan_add_columns(uri, pa.schema([("emb", ...)]), read_columns=["text"])
>>> staged = [plan.write(fid, embed) for fid in plan.fragment_ids]   # anywhere
>>> ds = plan.commit(staged)                                        # one Merge
"""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancelet import _args, _inputs, _native
from lancelet.dataset import Dataset
from lancelet.exceptions import CommitConflictError, InvalidInputError

__all__ = ["WritePlan", "plan_write", "AddColumnsPlan", "plan_add_columns"]

_MODES = ("create", "append", "overwrite")


@dataclasses.dataclass(frozen=True)
class WritePlan:
    """What every worker of one distributed write shares (picklable)."""

    uri: str
    mode: str
    read_version: int
    schema: pa.Schema
    data_storage_version: Optional[str]
    max_rows_per_file: int
    enable_stable_row_ids: bool
    job_id: str
    storage_options: Optional[Dict[str, str]] = None

    @property
    def file_prefix(self) -> str:
        """Every data file of this job starts with this."""
        return f"{self.job_id}-"

    def write(self, data: Any) -> List[bytes]:
        """Write ``data`` (Table, RecordBatchReader, batches, anything with
        ``__arrow_c_stream__``) as new, uncommitted data files; returns the
        staged fragments."""
        if isinstance(data, (list, tuple)) and all(isinstance(b, pa.RecordBatch) for b in data):
            data = pa.RecordBatchReader.from_batches(self.schema, data)
        so = self.storage_options
        staged = list(_native.staged_write(self.uri, self.mode, self.read_version, self.data_storage_version,
                                           _inputs.stream(data, self.schema), self.max_rows_per_file, self.file_prefix, so))
        if _native.staged_job_closed(self.uri, self.file_prefix, so):
            _native.staged_remove_files(self.uri, _native.staged_file_names(staged), so)
            raise CommitConflictError(f"write job {self.job_id} on {self.uri} was already committed or aborted; "
                                      "this task's data files were removed")
        return staged

    def commit(self, fragments: Iterable[bytes], *, commit_message: Optional[str] = None,
               transaction_properties: Optional[Dict[str, str]] = None) -> Dataset:
        """Commit all staged fragments as one new version, then remove this
        job's data files that the commit does not reference.
        ``commit_message``/``transaction_properties`` are recorded in the
        version's transaction (as ``write_dataset`` records them)."""
        frags = [bytes(f) for f in fragments]
        commit = _inputs.commit_args(commit_message=commit_message, transaction_properties=transaction_properties)
        native_ds = _native.staged_commit(self.uri, self.mode, self.read_version, self.data_storage_version,
                                          self.schema, frags, self.enable_stable_row_ids, self.storage_options,
                                          commit=commit)
        _native.staged_close_job(self.uri, self.file_prefix, self.storage_options)
        self.cleanup(keep=_native.staged_file_names(frags))
        return Dataset(self.uri, storage_options=self.storage_options, _native_ds=native_ds)

    def abort(self) -> int:
        """Close the job and remove every data file it wrote; returns how many."""
        _native.staged_close_job(self.uri, self.file_prefix, self.storage_options)
        return self.cleanup(keep=())

    def cleanup(self, keep: Sequence[str] = ()) -> int:
        """Remove this job's data files except those named in ``keep``."""
        return _native.staged_cleanup(self.uri, self.file_prefix, list(keep), self.storage_options)


def plan_write(uri: Any, schema: pa.Schema, mode: str = "append", data_storage_version: Optional[str] = None,
               max_rows_per_file: int = 1024 * 1024, enable_stable_row_ids: bool = False,
               read_version: Optional[int] = None,
               storage_options: Optional[Dict[str, str]] = None) -> WritePlan:
    """Plan a distributed write of data with ``schema`` to ``uri``.

    ``mode``: ``"append"`` (creates the dataset when missing),
    ``"overwrite"`` or ``"create"``. The schema is checked against the
    dataset here, before any worker writes: an append whose columns or types
    differ from the dataset's raises :class:`InvalidInputError`."""
    if _args.string(mode, "mode") not in _MODES:
        raise InvalidInputError(f"unknown mode {mode!r} (expected create, append or overwrite)")
    max_rows_per_file = _args.positive("max_rows_per_file", max_rows_per_file)
    _args.schema(schema)
    _args.optional_string(data_storage_version, "data_storage_version")
    uri = _inputs.uri(uri)
    so = _inputs.storage_options(storage_options)
    rv = _native.staged_latest_version(uri, so) if read_version is None else int(read_version)
    plan = WritePlan(uri=uri, mode=mode, read_version=rv, schema=schema,
                     data_storage_version=data_storage_version, max_rows_per_file=int(max_rows_per_file),
                     enable_stable_row_ids=bool(enable_stable_row_ids), job_id=secrets.token_hex(6),
                     storage_options=so)
    _native.staged_check(plan.uri, plan.mode, plan.read_version, plan.data_storage_version, plan.schema, so)
    return plan


@dataclasses.dataclass(frozen=True)
class AddColumnsPlan:
    """A distributed ``add_columns`` (picklable): every task computes the
    new columns of some fragments of version ``read_version`` with
    :meth:`write`; the driver commits all of them with :meth:`commit` (one
    ``Merge``, which conflicts if the dataset changed since planning)."""

    uri: str
    read_version: int
    schema: pa.Schema
    read_columns: Optional[Tuple[str, ...]]
    batch_size: Optional[int]
    job_id: str
    fragment_ids: Tuple[int, ...]
    storage_options: Optional[Dict[str, str]] = None

    @property
    def file_prefix(self) -> str:
        """Every data file of this job starts with this."""
        return f"{self.job_id}-"

    def _job(self) -> Any:
        """The native description of this job (what every task and the commit share)."""
        cols = None if self.read_columns is None else list(self.read_columns)
        return _native.ColumnsJob(self.uri, self.read_version, self.schema, cols, self.batch_size, self.file_prefix,
                                  self.storage_options)

    def write(self, fragment_id: int, func: Callable[[pa.RecordBatch], Any]) -> bytes:
        """Compute the new columns of one fragment with ``func`` (called with
        batches of ``read_columns`` of its live rows, returning a RecordBatch
        or DataFrame of ``schema``) and write them; returns the staged
        fragment for :meth:`commit`."""
        from lancelet._evolve import udf_caller

        so = self.storage_options
        staged = bytes(self._job().write(int(fragment_id), udf_caller(func)))
        if _native.staged_job_closed(self.uri, self.file_prefix, so):
            names = [n for n in _native.staged_file_names([staged]) if n.startswith(self.file_prefix)]
            _native.staged_remove_files(self.uri, names, so)
            raise CommitConflictError(f"add_columns job {self.job_id} on {self.uri} was already committed or aborted; "
                                      "this task's data files were removed")
        return staged

    def commit(self, staged: Iterable[bytes]) -> Dataset:
        """Commit the staged fragments (in any order; every fragment exactly
        once) as one new version, then remove this job's unused files."""
        frags = [bytes(f) for f in staged]
        so = self.storage_options
        native_ds = self._job().commit(frags, _inputs.commit_args())
        _native.staged_close_job(self.uri, self.file_prefix, so)
        _native.staged_cleanup(self.uri, self.file_prefix, _native.staged_file_names(frags), so)
        return Dataset(self.uri, storage_options=so, _native_ds=native_ds)

    def abort(self) -> int:
        """Close the job and remove every data file it wrote; returns how many."""
        _native.staged_close_job(self.uri, self.file_prefix, self.storage_options)
        return _native.staged_cleanup(self.uri, self.file_prefix, [], self.storage_options)


def plan_add_columns(uri: Any, schema: pa.Schema, read_columns: Optional[Sequence[str]] = None,
                     storage_options: Optional[Dict[str, str]] = None, *, batch_size: Optional[int] = None,
                     read_version: Optional[int] = None) -> AddColumnsPlan:
    """Plan adding the columns of ``schema`` to the latest version (or
    ``read_version``) of the dataset at ``uri``, computed from
    ``read_columns`` (all when None; ``_rowid``/``_rowaddr`` allowed). The
    new names and the read columns are checked here, before any task runs."""
    if not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if read_columns is not None and isinstance(read_columns, str):
        raise TypeError("read_columns must be a list of column names, not a string")
    if batch_size is not None and int(batch_size) <= 0:
        raise InvalidInputError(f"batch_size must be positive, got {batch_size}")
    uri = _inputs.uri(uri)
    so = _inputs.storage_options(storage_options)
    rv = _native.staged_latest_version(uri, so) if read_version is None else int(read_version)
    if rv == 0:
        from lancelet.exceptions import NotFoundError
        raise NotFoundError(f"not found: dataset at {uri}")
    cols = None if read_columns is None else tuple(str(c) for c in read_columns)
    job_id = secrets.token_hex(6)
    bs = None if batch_size is None else int(batch_size)
    ids = _native.ColumnsJob(uri, rv, schema, None if cols is None else list(cols), bs, f"{job_id}-", so).fragment_ids()
    return AddColumnsPlan(uri=uri, read_version=rv, schema=schema, read_columns=cols, batch_size=bs, job_id=job_id,
                          fragment_ids=tuple(ids), storage_options=so)
