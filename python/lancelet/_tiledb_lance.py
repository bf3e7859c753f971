"""TileDB arrays into Lance datasets (``lancelet.tiledb.to_lance``), and the
region-by-region reads that both it and the ``lancelet_tiledb`` Spark
source use.

A read is cut (in Rust) into disjoint regions of about ``batch_size``
cells: dense arrays at space-tile boundaries, sparse arrays where the
R-tree's data tiles end. Every region is read with every visible fragment
resolved over it, so the regions together hold exactly the cells of one
whole ``read`` (newest cell wins, fills where nothing was written), while
only one region's cells are in memory at a time.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa

from lancelet import _native
from lancelet.exceptions import InvalidInputError

#: Cells per region when streaming an array (one Arrow batch each).
DEFAULT_BATCH_CELLS = 65536


def check_read_args(arr: Any, attrs: Optional[Sequence[str]], dims: bool, filter: Optional[str]) -> pa.Schema:
    """The Arrow schema a read returns; raises ``InvalidInputError`` for
    unknown attributes or a filter that does not parse against the array."""
    if isinstance(attrs, str):
        attrs = [attrs]
    if not isinstance(dims, bool):
        raise InvalidInputError(f"dims must be True or False, got {dims!r}")
    if filter is not None and not isinstance(filter, str):
        raise InvalidInputError(f"filter must be a lancelet SQL string, got {type(filter).__name__}")
    schema = pa.schema(arr._native.arrow_schema(list(attrs) if attrs is not None else None, dims))
    if filter is not None:
        _native.tiledb_check_filter(arr._native, filter)
    return schema


def plan_regions(arr: Any, subarray: Any, cells: int) -> List[list]:
    """Disjoint subarrays of about ``cells`` cells that together select
    what ``subarray`` does (plain Python values: picklable)."""
    from lancelet import _inputs

    if not isinstance(cells, int) or isinstance(cells, bool) or cells <= 0:
        raise InvalidInputError(f"cells per region must be a positive integer, got {cells!r}")
    sub = _inputs.tiledb_subarray(subarray, arr.schema.ndim)
    return _native.tiledb_plan_regions(arr._native, sub, cells)


def read_region(arr: Any, region: list, attrs: Optional[Sequence[str]], dims: bool,
                filter: Optional[str]) -> pa.RecordBatch:
    """One region's cells (dense: row-major; sparse: cell order) as a batch."""
    stream = _native.tiledb_read_region(arr._native, region, list(attrs) if attrs is not None else None, dims, filter)
    table = pa.RecordBatchReader.from_stream(stream).read_all()
    return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=table.schema)


def iter_batches(arr: Any, subarray: Any = None, attrs: Optional[Sequence[str]] = None, dims: bool = True,
                 filter: Optional[str] = None, batch_size: int = DEFAULT_BATCH_CELLS) -> Iterator[pa.RecordBatch]:
    """The cells of ``arr.read(subarray, attrs, dims=dims, filter=filter)``,
    one region (about ``batch_size`` cells before filtering) at a time."""
    if isinstance(attrs, str):
        attrs = [attrs]
    check_read_args(arr, attrs, dims, filter)
    for region in plan_regions(arr, subarray, batch_size):
        batch = read_region(arr, region, attrs, dims, filter)
        if batch.num_rows:
            yield batch


def to_lance(uri: str, dest: Any, *, timestamp: Any = None, subarray: Any = None,
             attrs: Optional[Sequence[str]] = None, dims: bool = True, filter: Optional[str] = None,
             mode: str = "create", storage_options: Optional[Dict[str, str]] = None,
             dest_storage_options: Optional[Dict[str, str]] = None, batch_size: int = DEFAULT_BATCH_CELLS,
             **write_options: Any):
    """Write what ``open_array(uri, timestamp).read(subarray, attrs,
    dims=dims, filter=filter)`` returns into the Lance dataset ``dest``,
    streaming: one region of about ``batch_size`` cells is in memory at a
    time. ``mode``: "create", "append" or "overwrite" (as
    ``lancelet.write_dataset``, which gets ``write_options``, e.g.
    ``max_rows_per_file``, ``data_storage_version``). ``storage_options``
    configure the array's object store, ``dest_storage_options`` the
    dataset's (the same by default). Returns the written dataset; a failed
    import leaves ``dest`` as it was."""
    import lancelet
    from lancelet.tiledb import open_array

    if mode not in ("create", "append", "overwrite"):
        raise InvalidInputError(f"unknown mode {mode!r} (expected create, append or overwrite)")
    arr = open_array(uri, timestamp, storage_options=storage_options)
    if isinstance(attrs, str):
        attrs = [attrs]
    schema = check_read_args(arr, attrs, dims, filter)
    regions = plan_regions(arr, subarray, batch_size)
    failure: List[BaseException] = []

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for region in regions:
                batch = read_region(arr, region, attrs, dims, filter)
                if batch.num_rows:
                    yield batch
        except BaseException as e:  # the writer sees a stream error; re-raise ours after it
            failure.append(e)
            raise

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    target_options = dest_storage_options if dest_storage_options is not None else storage_options
    try:
        return lancelet.write_dataset(reader, dest, mode=mode, storage_options=target_options, **write_options)
    except BaseException:
        if failure:
            raise failure[0] from None
        raise
