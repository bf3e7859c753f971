"""Upserts and deletes from a Spark DataFrame: a distributed ``merge_insert``.

>>> stats = lancelet.spark.merge_insert(changes, uri, on="id")      # upsert
>>> lancelet.spark.delete(uri, gone_keys, on="id")                  # delete by key

How it runs (pylance's ``merge_insert`` semantics, one commit):

1. On the driver, the DataFrame's schema is checked against the dataset
   (every column must be a dataset column of the same Spark type, the key
   columns must be there, a source lacking a non-nullable column cannot
   insert, the conditions must plan) with the same rules and errors as
   the single-process :meth:`lancelet.Dataset.merge_insert`, before any task
   writes.
2. The dataset's key columns (and the columns the conditions read), with
   ``_rowaddr`` (and ``_rowid`` when the dataset has stable row ids), are
   read as a DataFrame of the version just checked (one task per fragment
   slice) and joined with the source on the keys in Spark (inner, left,
   right or full outer, as the clauses need; a null key matches nothing).
3. Every task of the joined rows decides their fate in the Rust core
   (``merge_staged.merge_task``: the condition, updated rows keeping the
   dataset's values of the columns the source lacks, inserts, deletes of
   unmatched dataset rows) and writes the new rows as staged data files
   named with the job's prefix; it returns them with the offsets of the
   rows it updated or deleted, one row per fragment touched.
4. Those rows are repartitioned by fragment id, so one task owns each
   touched fragment: it writes the fragment's new deletion file (the
   fragment's deletions at the version read plus the job's rows; its id
   carries the job's tag, see ``merge_deletions.rs``). A dataset row
   updated or deleted twice (two source rows with its key, in different
   tasks) is pylance's "Ambiguous merge inserts are prohibited" error.
5. The driver commits one ``Update`` (``merge_staged.commit_merge``) of
   the staged fragments and deletion files, under the conflict rules of
   the single-process merge: rebased over concurrent appends, and over
   concurrent deletes of other rows of the same fragments (the commit
   then merges both deletion vectors into a new file and the task's is
   removed). When a concurrent commit made the rows read stale, the whole
   job runs again on the latest version (at most ``conflict_retries``
   times).

A failed job commits nothing: the job is closed and every data file and
deletion file it wrote is removed, those of tasks that died before
reporting them too (found by the job's prefix and tag; a task still
running then removes its own files). An error a task raised is raised
again on the driver as the same lancelet exception.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, LongType, StringType, StructField, StructType

import lancelet
from lancelet import _inputs, _native
from lancelet.exceptions import CommitConflictError, InvalidInputError
from lancelet.spark.source import _open_cached, plan_slices
from lancelet.spark.types import _same_spark_type, spark_arrow_schema, spark_schema, spark_type

__all__ = ["merge_insert", "delete"]

#: Dataset-side columns of the joined rows are ``__t_{name}``.
TARGET_PREFIX = "__t_"
#: True where the joined row has a source row.
SOURCE_MARK = "__s"
#: Joined rows handed to one call of the core at most (a task's rows beyond
#: this go into further calls, so a task never holds more at once).
TASK_CHUNK_ROWS = 1 << 20

_TASKS = StructType([StructField("fragment_id", LongType(), False), StructField("row_start", LongType(), False),
                     StructField("row_end", LongType(), False)])
#: A merge task yields one row of what it staged (``fragment_id`` -1) and
#: one row per fragment it touched (``offsets``: little-endian u32s); a
#: deletion task turns the latter into one row per fragment (``offsets``:
#: the rows removed, serialized; ``deletion``: the staged file, none when
#: the fragment goes whole).
_STAGED = StructType([
    StructField("fragment_id", LongType(), False),
    StructField("offsets", BinaryType(), False),
    StructField("deletion", BinaryType(), True),
    StructField("deletion_name", StringType(), True),
    StructField("updated", ArrayType(BinaryType(), False), False),
    StructField("inserted", ArrayType(BinaryType(), False), False),
    StructField("num_inserted", LongType(), False),
    StructField("num_updated", LongType(), False),
    StructField("num_deleted", LongType(), False),
])

#: Test hook (read on the driver when the job is built, so it reaches the
#: tasks in their closures): ``merge`` / ``deletions`` makes one task of
#: that step raise after writing its files, ``merge-exit`` /
#: ``deletions-exit`` makes it die (``os._exit``) without removing them or
#: reporting anything.
_FAIL_TASK = "LANCELET_SPARK_MERGE_FAIL_TASK"

_Spec = Tuple[List[str], str, Optional[str], bool, bool, Optional[str]]


def _spec(on: Union[str, Sequence[str]], when_matched: str, when_not_matched: str,
          when_not_matched_by_source: str) -> _Spec:
    """The job as the core takes it, from the clause arguments."""
    keys = [on] if isinstance(on, str) else list(on) if isinstance(on, (list, tuple)) else None
    if not keys or not all(isinstance(k, str) for k in keys):
        raise InvalidInputError(f"on must be a column name or a non-empty list of column names, got {on!r}")
    for name, v in (("when_matched", when_matched), ("when_not_matched", when_not_matched),
                    ("when_not_matched_by_source", when_not_matched_by_source)):
        if not isinstance(v, str) or not v.strip():
            raise InvalidInputError(f"{name} must be a non-empty string, got {v!r}")
    matched, condition = {"update_all": ("update", None), "delete": ("delete", None), "do_nothing": ("nothing", None),
                          "fail": ("fail", None)}.get(when_matched, ("update", when_matched))
    if when_not_matched not in ("insert_all", "do_nothing"):
        raise InvalidInputError(f"when_not_matched must be 'insert_all' or 'do_nothing', got {when_not_matched!r}")
    by_source, by_condition = {"keep": (False, None), "delete": (True, None)}.get(
        when_not_matched_by_source, (True, when_not_matched_by_source))
    return keys, matched, condition, when_not_matched == "insert_all", by_source, by_condition


def _source_schema(st: StructType, target: pa.Schema) -> pa.Schema:
    """The Arrow schema the source rows are handed to the core with: the
    dataset's type for every column the dataset has (after checking that
    Spark holds it as that type), Spark's own otherwise (the core then
    names the column the dataset lacks)."""
    fields = []
    for f in st.fields:
        if f.name in target.names:
            t = target.field(f.name).type
            if not _same_spark_type(t, f.dataType):
                try:
                    want = spark_type(t).simpleString()
                except Exception:
                    want = "none"
                raise InvalidInputError(
                    f"merge_insert: source column {f.name!r} has Spark type {f.dataType.simpleString()} but the dataset's "
                    f"column {f.name!r} has type {t} (Spark type {want})")
            fields.append(pa.field(f.name, t, True))
        else:
            fields.append(pa.field(f.name, spark_arrow_schema(StructType([f])).field(0).type, True))
    return pa.schema(fields)


def _read_keys(uri: str, version: int, so: Optional[Dict[str, str]], columns: List[str], stable: bool,
               delivered: pa.Schema):
    """``mapInArrow`` over fragment-slice task rows: the slice's ``columns``
    with ``_rowaddr`` (``_rowid``), renamed ``__t_*``, as Spark expects."""
    def read(tasks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lancelet.spark.types import cast_batch

        ds = _open_cached(uri, version, so)
        for t in tasks:
            for row in t.to_pylist():
                sc = ds.scanner(columns=columns, with_row_address=True, with_row_id=stable,
                                fragments=[row["fragment_id"]], row_range=(row["row_start"], row["row_end"]))
                for b in sc.to_batches():
                    if b.num_rows:
                        renamed = pa.RecordBatch.from_arrays(b.columns, names=[TARGET_PREFIX + n for n in b.schema.names])
                        yield cast_batch(renamed, delivered)
    return read


def _fail_hook(fail: Optional[str], step: str, uri: str) -> None:
    if fail == step:
        raise RuntimeError(f"{_FAIL_TASK}: a {step} task of the job on {uri} fails after writing")
    if fail == f"{step}-exit":
        os._exit(17)


def _merge_rows(uri: str, version: int, so: Optional[Dict[str, str]], spec: _Spec, conform: pa.Schema, prefix: str,
                fail: Optional[str]):
    """``mapInArrow`` over the joined rows: each task runs the core's merge
    task and yields what it staged (see :data:`_STAGED`)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from lancelet.spark.types import cast_batch

        ds = _open_cached(uri, version, so)
        upd: List[bytes] = []
        ins: List[bytes] = []
        offsets: Dict[int, List[bytes]] = {}
        counts = [0, 0, 0]
        staged_names: List[str] = []

        def flush(chunk: List[pa.RecordBatch]) -> None:
            u, i, a, (ni, nu, nd) = _native.merge_task(ds._native, pa.Table.from_batches(chunk, conform), spec, prefix)
            upd.extend(bytes(x) for x in u)
            ins.extend(bytes(x) for x in i)
            staged_names.extend(_native.staged_file_names([bytes(x) for x in list(u) + list(i)]))
            for fid, offs in a:
                offsets.setdefault(fid, []).append(bytes(offs))
            counts[0] += ni
            counts[1] += nu
            counts[2] += nd

        try:
            chunk: List[pa.RecordBatch] = []
            rows = 0
            for b in batches:
                if b.num_rows:
                    chunk.append(cast_batch(b, conform))
                    rows += b.num_rows
                if rows >= TASK_CHUNK_ROWS:
                    flush(chunk)
                    chunk, rows = [], 0
            if chunk:
                flush(chunk)
            tc = TaskContext.get()
            if staged_names and (tc is None or tc.partitionId() == 0):
                _fail_hook(fail, "merge", uri)
        except BaseException:
            _native.staged_remove_files(uri, staged_names, so)
            raise
        if _native.staged_job_closed(uri, prefix, so):
            _native.staged_remove_files(uri, staged_names, so)
            raise CommitConflictError(f"merge_insert job {prefix[:-1]} on {uri} was already closed; "
                                      "this task's data files were removed")
        out = [_row(-1, updated=upd, inserted=ins, counts=counts)]
        out += [_row(fid, offsets=b"".join(parts)) for fid, parts in sorted(offsets.items())]
        yield pa.RecordBatch.from_pylist(out, schema=spark_arrow_schema(_STAGED))
    return run


def _row(fid: int, offsets: bytes = b"", deletion: Optional[bytes] = None, name: Optional[str] = None,
         updated: Sequence[bytes] = (), inserted: Sequence[bytes] = (), counts: Sequence[int] = (0, 0, 0)) -> dict:
    return {"fragment_id": fid, "offsets": offsets, "deletion": deletion, "deletion_name": name,
            "updated": list(updated), "inserted": list(inserted), "num_inserted": counts[0],
            "num_updated": counts[1], "num_deleted": counts[2]}


def _write_deletions(uri: str, version: int, so: Optional[Dict[str, str]], prefix: str, first_fragment: int,
                     fail: Optional[str]):
    """``mapInArrow`` over the merge tasks' rows, partitioned by fragment
    id: writes each touched fragment's new deletion file (the merge tasks'
    summary rows pass through)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ds = _open_cached(uri, version, so)
        passed: List[dict] = []
        offsets: Dict[int, List[bytes]] = {}
        for b in batches:
            for r in b.to_pylist():
                if r["fragment_id"] < 0:
                    passed.append(r)
                else:
                    offsets.setdefault(r["fragment_id"], []).append(r["offsets"])
        written: List[str] = []
        out: List[dict] = []
        try:
            for fid in sorted(offsets):
                (f, d, rows), name = _native.merge_deletions(ds._native, fid, b"".join(offsets[fid]), prefix)
                if name is not None:
                    written.append(name)
                out.append(_row(f, offsets=bytes(rows), deletion=None if d is None else bytes(d), name=name))
            if written and first_fragment in offsets:
                _fail_hook(fail, "deletions", uri)
        except BaseException:
            _native.merge_remove_deletions(uri, written, so)
            raise
        if written and _native.staged_job_closed(uri, prefix, so):
            _native.merge_remove_deletions(uri, written, so)
            raise CommitConflictError(f"merge_insert job {prefix[:-1]} on {uri} was already closed; "
                                      "this task's deletion files were removed")
        if passed or out:
            yield pa.RecordBatch.from_pylist(passed + out, schema=spark_arrow_schema(_STAGED))
    return run


#: A lancelet exception as a Spark task error shows it.
_TASK_ERROR = re.compile(r"lancelet\.exceptions\.(\w+): (.*)")


def _reraise_task_error(e: BaseException) -> None:
    """Raise the lancelet exception a task raised (Spark reports it as its
    own exception with the worker's traceback in the text)."""
    import lancelet.exceptions as lx

    found = list(_TASK_ERROR.finditer(str(e)))
    if found:
        m = found[-1]  # the innermost (last) one the traceback shows
        cls = getattr(lx, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            raise cls(m.group(2)) from e


def _session(df: DataFrame, spark: Optional[SparkSession]) -> SparkSession:
    s = spark or getattr(df, "sparkSession", None) or SparkSession.getActiveSession()
    if s is None:
        raise InvalidInputError("no active SparkSession: pass spark=...")
    return s


def _joined(session: SparkSession, df: DataFrame, uri: str, ds: lancelet.Dataset, spec: _Spec, columns: List[str],
            so: Optional[Dict[str, str]]) -> DataFrame:
    """The source joined with the dataset's key rows of version ``ds.version``."""
    keys, _, _, insert, by_source, _ = spec
    stable = ds.has_stable_row_ids
    tfields = [pa.field(TARGET_PREFIX + c, ds.schema.field(c).type, True) for c in columns]
    tfields.append(pa.field(TARGET_PREFIX + "_rowaddr", pa.int64(), True))
    if stable:
        tfields.append(pa.field(TARGET_PREFIX + "_rowid", pa.int64(), True))
    tspark = spark_schema(pa.schema(tfields))
    slices = [(s.fragment_id, s.start, s.end) for s in plan_slices(ds, 1 << 20)]
    rdd = session.sparkContext.parallelize(slices, max(len(slices), 1))
    target = session.createDataFrame(rdd, _TASKS).mapInArrow(
        _read_keys(uri, ds.version, so, columns, stable, spark_arrow_schema(tspark)), tspark)
    source = df.withColumn(SOURCE_MARK, F.lit(True))
    cond = functools.reduce(lambda a, b: a & b, [F.col(k) == F.col(TARGET_PREFIX + k) for k in keys])
    how = {(True, True): "full_outer", (True, False): "left_outer", (False, True): "right_outer",
           (False, False): "inner"}[(insert, by_source)]
    joined = source.join(target, cond, how)
    # one task per core, not one per shuffle partition: fewer, larger fragments
    n = max(session.sparkContext.defaultParallelism, 1)
    return joined.coalesce(n)


def merge_insert(df: DataFrame, uri: str, on: Union[str, Sequence[str]], when_matched: str = "update_all",
                 when_not_matched: str = "insert_all", when_not_matched_by_source: str = "keep", *,
                 conflict_retries: int = 10, spark: Optional[SparkSession] = None,
                 storage_options: Optional[Dict[str, str]] = None,
                 commit_message: Optional[str] = None,
                 transaction_properties: Optional[Dict[str, str]] = None) -> Dict[str, int]:
    """Merge the rows of ``df`` into the dataset at ``uri`` on the key
    columns ``on``, as a Spark job with one commit (see the module docs).

    ``when_matched``: ``"update_all"``, an SQL condition (update where it
    holds; ``source.x`` / ``target.x``), ``"delete"``, ``"do_nothing"`` or
    ``"fail"``. ``when_not_matched``: ``"insert_all"`` or ``"do_nothing"``.
    ``when_not_matched_by_source``: ``"keep"``, ``"delete"`` or an SQL
    condition over dataset columns (delete where it holds). Returns
    pylance's stats ``{"num_inserted_rows", "num_updated_rows",
    "num_deleted_rows"}``."""
    if not isinstance(df, DataFrame):
        raise InvalidInputError(f"df must be a pyspark DataFrame, got {type(df).__name__}")
    spec = _spec(on, when_matched, when_not_matched, when_not_matched_by_source)
    if isinstance(conflict_retries, bool) or not isinstance(conflict_retries, int) or conflict_retries < 0:
        raise InvalidInputError(f"conflict_retries must be a non-negative integer, got {conflict_retries!r}")
    session = _session(df, spark)
    uri = _inputs.uri(uri)
    so = _inputs.storage_options(storage_options)
    commit = _inputs.commit_args(commit_message=commit_message, transaction_properties=transaction_properties)
    why = ""
    for _ in range(conflict_retries + 1):
        ds = lancelet.dataset(uri, storage_options=so)
        source_schema = _source_schema(df.schema, ds.schema)
        columns = list(_native.merge_columns(ds._native, source_schema, spec))
        stable = ds.has_stable_row_ids
        conform = pa.schema(list(source_schema) + [pa.field(SOURCE_MARK, pa.bool_(), True)]
                            + [pa.field(TARGET_PREFIX + c, ds.schema.field(c).type, True) for c in columns]
                            + [pa.field(TARGET_PREFIX + "_rowaddr", pa.int64(), True)]
                            + ([pa.field(TARGET_PREFIX + "_rowid", pa.int64(), True)] if stable else []))
        prefix = f"{secrets.token_hex(6)}-"
        rv = ds.version
        fail = os.environ.get(_FAIL_TASK)
        first = ds.get_fragments()[0].fragment_id if ds.get_fragments() else -1
        try:
            joined = _joined(session, df, uri, ds, spec, columns, so)
            staged = joined.mapInArrow(_merge_rows(uri, rv, so, spec, conform, prefix, fail), _STAGED)
            n = max(session.sparkContext.defaultParallelism, 1)
            try:
                rows = (staged.repartition(n, "fragment_id")
                        .mapInArrow(_write_deletions(uri, rv, so, prefix, first, fail), _STAGED).collect())
            except Exception as e:
                _reraise_task_error(e)
                raise
            summary = [r for r in rows if r["fragment_id"] < 0]
            upd = [bytes(f) for r in summary for f in r["updated"]]
            ins = [bytes(f) for r in summary for f in r["inserted"]]
            deletions = [(r["fragment_id"], None if r["deletion"] is None else bytes(r["deletion"]), bytes(r["offsets"]))
                         for r in rows if r["fragment_id"] >= 0]
            names = [r["deletion_name"] for r in rows if r["fragment_id"] >= 0 and r["deletion_name"] is not None]
            stats = (sum(r["num_inserted"] for r in summary), sum(r["num_updated"] for r in summary),
                     sum(r["num_deleted"] for r in summary))
            native_ds, why = _native.merge_commit(ds._native, upd, ins, deletions, stats, commit)
        except BaseException:
            _close(uri, prefix, so, rv)
            raise
        if native_ds is None:  # a concurrent commit made this run stale: run again
            _close(uri, prefix, so, rv)
            continue
        _close(uri, prefix, so, rv, keep=_native.staged_file_names(upd + ins), keep_deletions=names)
        return {"num_inserted_rows": stats[0], "num_updated_rows": stats[1], "num_deleted_rows": stats[2]}
    raise CommitConflictError(f"merge_insert into {uri}: {why} (gave up after {conflict_retries + 1} run(s): "
                              f"conflict_retries = {conflict_retries})")


def _close(uri: str, prefix: str, so: Optional[Dict[str, str]], read_version: int, keep: Sequence[str] = (),
           keep_deletions: Sequence[str] = ()) -> None:
    """Close the job and remove its data files not in ``keep`` and its
    deletion files not in ``keep_deletions``."""
    _native.staged_close_job(uri, prefix, so)
    _native.staged_cleanup(uri, prefix, list(keep), so)
    _native.merge_cleanup_deletions(uri, prefix, read_version, list(keep_deletions), so)


def delete(uri: str, keys_df: DataFrame, on: Union[str, Sequence[str]], *, spark: Optional[SparkSession] = None,
           conflict_retries: int = 10, storage_options: Optional[Dict[str, str]] = None) -> Dict[str, int]:
    """Delete the dataset rows whose keys (``on``) appear in ``keys_df`` (a
    key listed twice is fine), as one commit. Returns the stats dict
    (``num_deleted_rows``)."""
    keys = [on] if isinstance(on, str) else list(on)
    if isinstance(keys_df, DataFrame) and all(isinstance(k, str) for k in keys):
        missing = [k for k in keys if k not in keys_df.columns]
        if missing:
            raise InvalidInputError(f"delete: key column {missing[0]!r} is not in keys_df (its columns: "
                                    f"{', '.join(keys_df.columns)})")
        keys_df = keys_df.select(*keys).dropDuplicates(keys)
    return merge_insert(keys_df, uri, keys, when_matched="delete", when_not_matched="do_nothing", spark=spark,
                        conflict_retries=conflict_retries, storage_options=storage_options)
