"""Compaction as a Spark job: one Spark task per compaction task, one
commit on the driver.

The driver plans (:meth:`lancelet.optimize.Compaction.plan`), ships each
task (plain picklable data) to an executor, which writes the new data files
with a job-id prefix and returns a :class:`~lancelet.optimize.RewriteResult`;
the driver commits all of them at once. The job's files are tracked the way
distributed writes track theirs (:mod:`lancelet.distributed`): after the
commit, or after a failure, the driver marks the job closed and removes
every file of the job that the dataset does not reference, so a failed job
commits nothing and leaves nothing behind; a task that finishes after the
job was closed removes its own files.
"""

from __future__ import annotations

import secrets
from typing import Any, Dict, List, Optional, Tuple

from pyspark.sql import SparkSession

import lancelet
from lancelet import _inputs, _native
from lancelet.exceptions import CommitConflictError, InvalidInputError
from lancelet.optimize import Compaction, CompactionMetrics, CompactionTask, RewriteResult

__all__ = ["compact_files"]


def _run_task(uri: str, storage_options: Optional[Dict[str, str]], prefix: str,
              item: Tuple[int, CompactionTask]) -> Tuple[int, RewriteResult]:
    """Executor side: run one task, writing files named ``{prefix}...``."""
    index, task = item
    ds = lancelet.dataset(uri, version=task.read_version, storage_options=storage_options)
    result = task.execute(ds, _name_prefix=prefix)
    if _native.staged_job_closed(uri, prefix, storage_options):
        _native.staged_remove_files(uri, result.data_files, storage_options)
        raise CommitConflictError(f"compaction job {prefix[:-1]} on {uri} was already closed; "
                                  "this task's data files were removed")
    return index, result


def _referenced_job_files(uri: str, prefix: str, storage_options: Optional[Dict[str, str]]) -> List[str]:
    """The job's data files the latest version references (kept by cleanup)."""
    ds = lancelet.dataset(uri, storage_options=storage_options)
    return [df.path for f in ds.get_fragments() for df in f.data_files() if df.path.startswith(prefix)]


def compact_files(uri: str, *, spark: Optional[SparkSession] = None,
                  storage_options: Optional[Dict[str, str]] = None, **options: Any) -> CompactionMetrics:
    """Compact the dataset at ``uri`` with Spark: the options of
    :meth:`lancelet.Dataset.optimize.compact_files` (``progress`` excepted),
    one Spark task per compaction task, one commit on the driver. Returns
    the metrics (all zero, and no commit, when there is nothing to do)."""
    if "progress" in options:
        raise InvalidInputError("progress is not available for Spark compaction (watch the Spark UI)")
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise InvalidInputError("no active SparkSession: pass spark=...")
    so = _inputs.storage_options(storage_options)
    ds = lancelet.dataset(uri, storage_options=so)
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return CompactionMetrics()
    prefix = f"{secrets.token_hex(6)}-"
    items = list(enumerate(plan.tasks))
    try:
        rdd = session.sparkContext.parallelize(items, len(items))
        collected = rdd.map(lambda item: _run_task(uri, so, prefix, item)).collect()
        results = [r for _, r in sorted(collected, key=lambda x: x[0])]
        return Compaction.commit(ds, results)
    finally:
        _native.staged_close_job(uri, prefix, so)
        _native.staged_cleanup(uri, prefix, _referenced_job_files(uri, prefix, so), so)
