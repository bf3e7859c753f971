"""The ``lancelet`` streaming sink: each micro-batch is one commit, exactly once.

>>> (df.writeStream.format("lancelet").option("checkpointLocation", ckpt)
...    .start(uri))

Every task of a micro-batch writes its rows as staged data files (named
with a prefix of its own: writer id, stage and partition, so retried
attempts of one task share it) and returns the staged fragments. The
driver commits all of them as one ``Append`` whose transaction properties
record the streaming query's id and the batch id
(``lancelet.stream.query_id``, ``lancelet.stream.batch_id``).

Exactly once: Spark re-runs a micro-batch after a restart when it had not
recorded the batch as done, which happens if the driver stopped after the
table commit and before Spark's own commit log. Before committing, the sink
looks at the transaction properties of the recent versions (newest first,
back to the previous batch of the same query): if this query already
committed this batch, the batch's new files are removed and nothing is
committed. The query id is the one Spark keeps in the checkpoint's
``metadata`` file (it survives restarts); without a local checkpoint the
checkpoint location itself identifies the query.

A checkpoint belongs to one table: the first start records the table in
``<checkpointLocation>/lancelet_sink.json``; starting the query with the
same checkpoint against another table raises
:class:`~lancelet.exceptions.InvalidInputError` before any task writes.

Options are the batch writer's (``max_rows_per_file``,
``data_storage_version``, ``vector_columns``, ``enable_stable_row_ids``,
``storage_options.<key>``) plus Spark's ``checkpointLocation`` (required).

Staged files and failures: every task of micro-batch ``b`` names its files
``{writer}b{b}-...`` (the batch id is the ``streaming.sql.batchId`` property
Spark gives the batch's tasks; ``writer`` is new at every query start). The
commit keeps the files its fragments name and removes every other file of
the batch (failed or speculative attempts); a failed batch's ``abort``
closes the batch and removes all its files, also those of tasks that died
before sending a message. What stays unreachable: the files of a batch
whose driver died before commit or abort (a restart replays the batch
under a new writer id). No version references them, so
``cleanup_old_versions`` removes them once they are older than its
unverified-file age (7 days), or at once with ``delete_unverified=True``.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import lancelet
from lancelet import _inputs, _native
from lancelet.distributed import plan_write
from lancelet.exceptions import InvalidInputError, NotFoundError

__all__ = ["LanceletStreamWriter", "QUERY_ID", "BATCH_ID", "committed_batch"]

#: Transaction property keys of a streamed commit.
QUERY_ID = "lancelet.stream.query_id"
BATCH_ID = "lancelet.stream.batch_id"
#: The file in the checkpoint directory naming the table it writes.
MARKER = "lancelet_sink.json"
#: Versions looked at, at most, when deciding whether a batch was committed.
LOOKBACK = 1000
#: Test hook: raise right after committing this batch id (as if the driver
#: died before Spark recorded the batch).
_FAIL_AFTER_COMMIT = "LANCELET_STREAM_FAIL_AFTER_COMMIT"
#: Test hook (read when the query starts, carried to the tasks by the
#: writer): the task of partition 0 of this batch id dies (``os._exit``)
#: right after writing its files, without sending a message.
_FAIL_TASK = "LANCELET_STREAM_FAIL_TASK"
#: The local property Spark sets on a micro-batch's jobs.
_BATCH_PROPERTY = "streaming.sql.batchId"


@dataclass
class StagedStream(WriterCommitMessage):
    """What one task of a micro-batch staged: its file prefix and fragments."""

    prefix: str
    fragments: List[bytes]


def _local(path: str) -> Optional[str]:
    """A local filesystem path for ``path`` (``file:`` URIs too), else None."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if "://" in path:
        return None
    return path


def _table_identity(uri: str) -> str:
    local = _local(uri)
    return os.path.realpath(local) if local is not None else uri


def check_checkpoint(checkpoint: str, uri: str) -> None:
    """Record the table this checkpoint writes, or refuse a checkpoint that
    another table's query made."""
    local = _local(checkpoint)
    if local is None:
        return
    marker = os.path.join(local, MARKER)
    table = _table_identity(uri)
    try:
        with open(marker) as f:
            recorded = json.load(f).get("table")
    except FileNotFoundError:
        os.makedirs(local, exist_ok=True)
        tmp = f"{marker}.{secrets.token_hex(4)}"
        with open(tmp, "w") as f:
            json.dump({"table": table}, f)
        os.replace(tmp, marker)
        return
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"streaming checkpoint {checkpoint}: cannot read {MARKER}: {e}") from None
    if recorded != table:
        raise InvalidInputError(f"streaming checkpoint {checkpoint} belongs to a query writing the lancelet table "
                                f"{recorded}, not {table}: use a new checkpointLocation for this table")


def query_id(checkpoint: str) -> str:
    """The streaming query's id from the checkpoint's ``metadata`` (kept
    across restarts), or the checkpoint location when it is not local."""
    local = _local(checkpoint)
    if local is not None:
        try:
            with open(os.path.join(local, "metadata")) as f:
                qid = json.loads(f.readline()).get("id")
            if qid:
                return str(qid)
        except (OSError, ValueError):
            pass
    return checkpoint.rstrip("/")


def committed_batch(uri: str, qid: str, batch_id: int, storage_options: Optional[Dict[str, str]] = None) -> Optional[int]:
    """The version in which query ``qid`` committed batch ``batch_id``, if
    it did (looking back from the latest version to the query's previous
    batch, at most :data:`LOOKBACK` versions)."""
    try:
        ds = lancelet.dataset(uri, storage_options=storage_options)
    except NotFoundError:
        return None
    v = ds.version
    for _ in range(LOOKBACK):
        if v < 1:
            return None
        props = _native.transaction_properties(ds.checkout_version(v)._native) or {}
        if props.get(QUERY_ID) == qid:
            b = int(props.get(BATCH_ID, "-1"))
            if b == batch_id:
                return v
            if b < batch_id:
                return None
        v -= 1
    return None


class LanceletStreamWriter(DataSourceStreamArrowWriter):
    """Tasks stage fragments; the driver commits each micro-batch once."""

    def __init__(self, opts, schema: StructType, checkpoint: Optional[str]) -> None:
        from lancelet.spark.types import lance_schema_for

        if not checkpoint:
            raise InvalidInputError("the lancelet streaming sink needs .option('checkpointLocation', ...) "
                                    "(its query id makes each micro-batch commit exactly once)")
        if not opts.uri:
            raise InvalidInputError("the lancelet streaming sink needs a dataset URI (.start(uri))")
        check_checkpoint(checkpoint, opts.uri)
        self.opts = opts
        self.checkpoint = checkpoint
        try:
            existing: Optional[pa.Schema] = lancelet.dataset(opts.uri, storage_options=opts.storage_options).schema
        except NotFoundError:
            existing = None
        self.schema = lance_schema_for(schema, existing, opts.vector_columns, append=True)
        # checked now, before any task writes
        plan_write(opts.uri, self.schema, mode="append", data_storage_version=opts.data_storage_version,
                   storage_options=opts.storage_options)
        self.writer_id = secrets.token_hex(4)
        self.fail_task = os.environ.get(_FAIL_TASK)

    def _batch_job(self, batch_id) -> str:
        """The file prefix (without its ``-``) of every task of a batch."""
        return f"{self.writer_id}b{batch_id}"

    def _plan(self, prefix_job: str):
        import dataclasses

        plan = plan_write(self.opts.uri, self.schema, mode="append", data_storage_version=self.opts.data_storage_version,
                          max_rows_per_file=self.opts.max_rows_per_file,
                          enable_stable_row_ids=self.opts.enable_stable_row_ids, storage_options=self.opts.storage_options)
        return dataclasses.replace(plan, job_id=prefix_job)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedStream:
        from pyspark import TaskContext

        from lancelet.spark.source import stage_batches

        tc = TaskContext.get()
        batch = tc.getLocalProperty(_BATCH_PROPERTY) if tc is not None else None
        if batch is not None:
            job = self._batch_job(batch)
        elif tc is not None:  # no batch id: a prefix of the task's own, found only through its message
            job = f"{self.writer_id}s{tc.stageId()}p{tc.partitionId()}"
        else:
            job = secrets.token_hex(6)
        plan = self._plan(job)
        staged = StagedStream(plan.file_prefix, stage_batches(plan, iterator))
        if self.fail_task is not None and batch == self.fail_task and tc.partitionId() == 0 and staged.fragments:
            os._exit(17)
        return staged

    def _messages(self, messages) -> List[StagedStream]:
        return [m for m in messages if isinstance(m, StagedStream)]

    def _close(self, staged: List[StagedStream], keep: List[str], batch_id: Optional[int] = None) -> None:
        so = self.opts.storage_options
        prefixes = {m.prefix for m in staged}
        if batch_id is not None:
            prefixes.add(f"{self._batch_job(batch_id)}-")
        for prefix in sorted(prefixes):
            _native.staged_close_job(self.opts.uri, prefix, so)
            _native.staged_cleanup(self.opts.uri, prefix, keep, so)

    def commit(self, messages, batchId: int) -> None:
        staged = self._messages(messages)
        frags = [f for m in staged for f in m.fragments]
        qid = query_id(self.checkpoint)
        so = self.opts.storage_options
        if not frags or committed_batch(self.opts.uri, qid, batchId, so) is not None:
            # nothing to add, or a replay of a batch already in the table
            self._close(staged, [], batchId)
            return
        rv = _native.staged_latest_version(self.opts.uri, so)
        commit = _inputs.commit_args(commit_message=f"streaming batch {batchId}",
                                     transaction_properties={QUERY_ID: qid, BATCH_ID: str(batchId)})
        _native.staged_commit(self.opts.uri, "append", rv, self.opts.data_storage_version, self.schema, frags,
                              self.opts.enable_stable_row_ids, so, commit=commit)
        self._close(staged, _native.staged_file_names(frags), batchId)
        if os.environ.get(_FAIL_AFTER_COMMIT) == str(batchId):
            raise RuntimeError(f"{_FAIL_AFTER_COMMIT}: failing after committing batch {batchId}")

    def abort(self, messages, batchId: int) -> None:
        # Spark aborts a batch whose commit raised; if the table commit had
        # happened (a failure after it), its files are the table's now.
        if committed_batch(self.opts.uri, query_id(self.checkpoint), batchId, self.opts.storage_options) is not None:
            return
        self._close(self._messages(messages), [], batchId)
