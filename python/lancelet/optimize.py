"""Table maintenance: compaction and cleanup of old versions, with
pylance's names.

>>> ds.optimize.compact_files(target_rows_per_fragment=1_000_000)
CompactionMetrics(fragments_removed=200, fragments_added=2, files_removed=240, files_added=2)
>>> ds.cleanup_old_versions(older_than=timedelta(days=7))

Distributed compaction: plan once, run the tasks anywhere (they are plain,
picklable data), commit once::

    plan = Compaction.plan(ds, {"target_rows_per_fragment": 1_000_000})
    results = [task.execute(ds) for task in plan.tasks]   # e.g. on workers
    Compaction.commit(ds, results)

A compaction commits two versions, as pylance 14 does: ``ReserveFragments``
(ids for the new fragments) then ``Rewrite`` (old fragments out, new ones in),
both with the plan's version as their read version. A plan with no task
commits nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import numbers
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from lancelet import _inputs, _native
from lancelet._progress import progress_callback
from lancelet.exceptions import InvalidInputError, UnsupportedError

if TYPE_CHECKING:
    from lancelet.dataset import Dataset

__all__ = [
    "Compaction",
    "CompactionMetrics",
    "CompactionOptions",
    "CompactionPlan",
    "CompactionTask",
    "RewriteResult",
    "FragmentMetadata",
    "CleanupStats",
    "DatasetOptimizer",
]

CompactionOptions = Dict[str, Any]

_INT_OPTIONS = ("target_rows_per_fragment", "max_bytes_per_file", "num_threads", "batch_size")
_BOOL_OPTIONS = ("materialize_deletions", "defer_index_remap")
#: pylance options that do not change what lancelet writes (legacy row
#: groups, scan buffer sizes).
_IGNORED_OPTIONS = ("max_rows_per_group", "io_buffer_size", "binary_copy_read_batch_bytes")
#: pylance 14 options lancelet does not implement.
_UNSUPPORTED_OPTIONS = ("max_source_fragments", "max_source_rows", "max_source_bytes", "excluded_fragment_ids",
                        "data_storage_version")


def _options(options: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """Check compaction options and turn them into the native layer's text
    form; ``None`` values mean "default" (the dataset's
    ``lance.compaction.*`` config, else pylance's defaults)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidInputError(f"compaction options must be a dict, got {type(options).__name__}")
    out: Dict[str, str] = {}
    for key, value in options.items():
        if value is None or key in _IGNORED_OPTIONS:
            continue
        if key in _INT_OPTIONS:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise InvalidInputError(f"compaction option {key} must be a positive integer, got {value!r}")
            out[key] = str(int(value))
        elif key in _BOOL_OPTIONS:
            if not isinstance(value, bool):
                raise InvalidInputError(f"compaction option {key} must be True or False, got {value!r}")
            out[key] = "true" if value else "false"
        elif key == "materialize_deletions_threshold":
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
                raise InvalidInputError(f"compaction option {key} must be a number, got {value!r}")
            out[key] = repr(float(value))
        elif key == "compaction_mode":
            if value not in ("reencode", "try_binary_copy", "force_binary_copy"):
                raise InvalidInputError(f"unknown compaction_mode {value!r} "
                                        "(expected reencode, try_binary_copy or force_binary_copy)")
            if value == "force_binary_copy":
                raise UnsupportedError("compaction_mode='force_binary_copy' is not supported: lancelet re-encodes "
                                       "the rows it compacts (use 'reencode' or 'try_binary_copy')")
        elif key in _UNSUPPORTED_OPTIONS:
            raise UnsupportedError(f"compaction option {key!r} is not supported by lancelet")
        else:
            raise InvalidInputError(f"unknown compaction option {key!r}")
    return out


@dataclasses.dataclass(frozen=True)
class CompactionMetrics:
    """What a compaction changed: fragments and files (data and deletion
    files) removed and added."""

    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0

    @classmethod
    def _from_row(cls, row: Sequence[int]) -> "CompactionMetrics":
        return cls(*(int(x) for x in row))

    def _row(self) -> Tuple[int, int, int, int]:
        return (self.fragments_removed, self.fragments_added, self.files_removed, self.files_added)


@dataclasses.dataclass(frozen=True)
class FragmentMetadata:
    """A fragment as a compaction plan or result lists it."""

    id: int
    physical_rows: int
    data_files: Tuple[str, ...]
    num_deletions: int

    @classmethod
    def _decode(cls, data: bytes) -> "FragmentMetadata":
        fid, rows, files, deleted = _native.fragment_summary(data)
        return cls(fid, rows, tuple(files), deleted)


@dataclasses.dataclass(frozen=True)
class RewriteResult:
    """The outcome of one :class:`CompactionTask`: new data files, not yet
    visible. Commit all results of a plan together with
    :meth:`Compaction.commit`. Picklable."""

    read_version: int
    metrics: CompactionMetrics
    #: Encoded ``DataFragment`` protobufs of the fragments replaced ...
    old_fragments_data: Tuple[bytes, ...]
    #: ... and of those written (ids are given at commit).
    new_fragments_data: Tuple[bytes, ...]

    @property
    def old_fragments(self) -> List[FragmentMetadata]:
        return [FragmentMetadata._decode(b) for b in self.old_fragments_data]

    @property
    def original_fragments(self) -> List[FragmentMetadata]:
        """pylance 14's name of :attr:`old_fragments`."""
        return self.old_fragments

    @property
    def new_fragments(self) -> List[FragmentMetadata]:
        return [FragmentMetadata._decode(b) for b in self.new_fragments_data]

    @property
    def data_files(self) -> List[str]:
        """Names (under ``data/``) of the files this result wrote."""
        return [p for f in self.new_fragments for p in f.data_files]

    def _row(self) -> Tuple[int, List[bytes], List[bytes], Tuple[int, int, int, int]]:
        return (self.read_version, list(self.old_fragments_data), list(self.new_fragments_data), self.metrics._row())

    @classmethod
    def _from_row(cls, row: Sequence[Any]) -> "RewriteResult":
        rv, old, new, m = row
        return cls(int(rv), CompactionMetrics._from_row(m), tuple(bytes(b) for b in old), tuple(bytes(b) for b in new))


@dataclasses.dataclass(frozen=True)
class CompactionTask:
    """One group of consecutive fragments to rewrite together. Picklable:
    send it to a worker and call :meth:`execute` there."""

    read_version: int
    fragments_data: Tuple[bytes, ...]
    #: The plan's options, resolved (text values).
    options: Tuple[Tuple[str, str], ...]

    @property
    def fragments(self) -> List[FragmentMetadata]:
        return [FragmentMetadata._decode(b) for b in self.fragments_data]

    @property
    def fragment_ids(self) -> List[int]:
        return [f.id for f in self.fragments]

    def execute(self, dataset: "Dataset", *, _name_prefix: str = "") -> RewriteResult:
        """Write this task's new data files, reading ``dataset`` at the
        plan's version (any version object of the dataset will do)."""
        row = _native.compaction_execute(dataset._native, self.read_version, list(self.fragments_data),
                                         dict(self.options), _name_prefix)
        return RewriteResult._from_row(row)


@dataclasses.dataclass(frozen=True)
class CompactionPlan:
    """The tasks of a compaction, all read at ``read_version``."""

    read_version: int
    tasks: List[CompactionTask]

    def num_tasks(self) -> int:
        return len(self.tasks)


class Compaction:
    """pylance's distributed compaction API: :meth:`plan`, run each task's
    :meth:`CompactionTask.execute`, :meth:`commit`."""

    @staticmethod
    def plan(dataset: "Dataset", options: Optional[CompactionOptions] = None) -> CompactionPlan:
        """Plan a compaction of ``dataset``'s version."""
        rv, tasks, resolved = _native.compaction_plan(dataset._native, _options(options))
        opts = tuple(sorted(resolved.items()))
        return CompactionPlan(rv, [CompactionTask(rv, tuple(bytes(b) for b in t), opts) for t in tasks])

    @staticmethod
    def execute(dataset: "Dataset", options: Optional[CompactionOptions] = None) -> CompactionMetrics:
        """Plan, run and commit in one call (as ``compact_files``)."""
        return DatasetOptimizer(dataset).compact_files(**dict(options or {}))

    @staticmethod
    def commit(dataset: "Dataset", rewrites: Iterable[RewriteResult],
               options: Optional[CompactionOptions] = None) -> CompactionMetrics:
        """Commit the results of a plan's tasks (in plan order) as one
        compaction; ``dataset`` moves to the new version. No results commit
        nothing. If the commit fails, the results' files are removed."""
        rows = []
        for r in rewrites:
            if not isinstance(r, RewriteResult):
                raise InvalidInputError(f"expected RewriteResult objects, got {type(r).__name__}")
            rows.append(r._row())
        native_ds, metrics = _native.compaction_commit(dataset._native, rows, _options(options), _inputs.commit_args())
        dataset._become(native_ds)
        return CompactionMetrics._from_row(metrics)


class DatasetOptimizer:
    """``Dataset.optimize``: maintenance operations on a dataset."""

    def __init__(self, dataset: "Dataset") -> None:
        self._dataset = dataset

    def compact_files(self, *, target_rows_per_fragment: Optional[int] = None, max_bytes_per_file: Optional[int] = None,
                      materialize_deletions: Optional[bool] = None,
                      materialize_deletions_threshold: Optional[float] = None,
                      defer_index_remap: Optional[bool] = None, num_threads: Optional[int] = None,
                      batch_size: Optional[int] = None, progress: Any = None, **kwargs: Any) -> CompactionMetrics:
        """Rewrite small fragments, and fragments with many deleted rows,
        into fragments of about ``target_rows_per_fragment`` rows, keeping
        the row order (see :mod:`lancelet.optimize`). Unset options come from
        the dataset's ``lance.compaction.*`` config, else pylance's defaults
        (1048576 rows, materialize deletions above 10%). The dataset moves
        to the new version; nothing is committed when there is nothing to
        do. ``progress``: ``True`` or a callable getting
        ``{"stage", "done", "total"}`` per task; an exception it raises
        aborts the compaction (nothing committed, new files removed) and
        propagates unchanged (docs/errors.md)."""
        options = dict(target_rows_per_fragment=target_rows_per_fragment, max_bytes_per_file=max_bytes_per_file,
                       materialize_deletions=materialize_deletions,
                       materialize_deletions_threshold=materialize_deletions_threshold,
                       defer_index_remap=defer_index_remap, num_threads=num_threads, batch_size=batch_size, **kwargs)
        commit = _inputs.commit_args(progress=progress_callback(progress))
        native_ds, metrics = _native.compact_files(self._dataset._native, _options(options), commit)
        self._dataset._become(native_ds)
        return CompactionMetrics._from_row(metrics)

    def optimize_indices(self, index_names: Optional[Sequence[str]] = None, *, num_indices_to_merge: Optional[int] = None,
                         retrain: bool = False, **kwargs: Any) -> None:
        """Bring indices up to date with appended rows (see
        :func:`lancelet.indices.optimize_indices`); pylance's signature."""
        from lancelet.indices import optimize_indices
        optimize_indices(self._dataset, index_names, num_indices_to_merge, retrain, **kwargs)


@dataclasses.dataclass(frozen=True)
class CleanupStats:
    """What :meth:`Dataset.cleanup_old_versions` removed (pylance 14's
    ``CleanupStats``: the same attributes and the same ``repr``)."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    transaction_files_removed: int = 0
    deletion_files_removed: int = 0
    index_files_removed: int = 0
    #: Files that could not be removed (they stay; a later cleanup retries).
    failed_deletes: int = 0

    def __repr__(self) -> str:
        order = ("bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed",
                 "index_files_removed", "deletion_files_removed", "failed_deletes")
        return "CleanupStats { " + ", ".join(f"{k}: {getattr(self, k)}" for k in order) + " }"


def cleanup_old_versions(dataset: "Dataset", older_than: Optional[datetime.timedelta] = None,
                         retain_versions: Optional[int] = None, *, delete_unverified: bool = False,
                         error_if_tagged_old_versions: bool = True, progress: Any = None) -> CleanupStats:
    """See :meth:`lancelet.Dataset.cleanup_old_versions`."""
    if older_than is not None and not isinstance(older_than, datetime.timedelta):
        raise InvalidInputError(f"older_than must be a datetime.timedelta, got {type(older_than).__name__}")
    if retain_versions is not None:
        if isinstance(retain_versions, bool) or not isinstance(retain_versions, numbers.Integral) or retain_versions <= 0:
            raise InvalidInputError(f"retain_versions must be a positive integer, got {retain_versions!r}")
    if older_than is None and retain_versions is None:
        older_than = datetime.timedelta(days=14)
    micros = None
    if older_than is not None:
        micros = (older_than.days * 86400 + older_than.seconds) * 1_000_000 + older_than.microseconds
    row = _native.cleanup_old_versions(dataset._native, micros, None if retain_versions is None else int(retain_versions),
                                       bool(delete_unverified), bool(error_if_tagged_old_versions),
                                       _inputs.commit_args(progress=progress_callback(progress)))
    return CleanupStats(*(int(x) for x in row))
