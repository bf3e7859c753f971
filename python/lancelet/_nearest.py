"""``nearest=`` queries: pylance 14's argument checks (same exception types
and messages as ``lance.dataset._build_vector_search_query``) and the
parameter dict the native search takes."""

from __future__ import annotations

import operator
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pyarrow as pa

__all__ = ["build", "NEAREST_KEYS"]

NEAREST_KEYS = ("column", "q", "k", "metric", "nprobes", "minimum_nprobes", "maximum_nprobes", "refine_factor",
                "use_index", "ef", "query_parallelism", "approx_mode", "distance_range", "search_effort")


def _coerce(query: Any) -> Tuple[np.ndarray, int, bool]:
    """``(float32 rows (n, d), d, is_batch)`` as pylance coerces queries."""
    if hasattr(query, "__getitem__") and len(query) > 0 and isinstance(query[0], (list, tuple, np.ndarray, pa.Array)):
        dim = len(query[0])
        rows = []
        for q in query:
            if len(q) != dim:
                raise ValueError(f"All query vectors must have the same length, but got {dim} and {len(q)}")
            rows.append(_coerce(q)[0][0])
        return np.stack(rows).astype(np.float32), dim, True
    if isinstance(query, pa.Scalar):
        if isinstance(query, pa.ExtensionScalar):
            query = query.value
        if isinstance(query.type, pa.FixedSizeListType):
            query = query.values
    elif isinstance(query, (list, tuple, np.ndarray)):
        query = pa.FloatingPointArray.from_pandas(np.array(query).astype("float64"), type=pa.float32())
    elif not isinstance(query, pa.Array):
        try:
            query = pa.array(query)
        except Exception:
            raise TypeError("Query vectors should be an array of floats, "
                            f"got {type(query)} which we cannot coerce to a float array") from None
    if not isinstance(query, pa.FloatingPointArray):
        if pa.types.is_integer(query.type):
            query = query.cast(pa.float32())
        else:
            raise TypeError(f"query vector must be list-like or pa.FloatingPointArray but received {query.type}")
    arr = query.to_numpy(zero_copy_only=False).astype(np.float32)
    return arr.reshape(1, -1), len(arr), False


def _field(schema: pa.Schema, column: str) -> Optional[pa.Field]:
    for f in schema:
        if f.name.lower() == column.lower():
            return f
    return None


def build(schema: pa.Schema, nearest: Dict[str, Any]) -> Dict[str, Any]:
    """Check a ``nearest`` dict against the dataset ``schema``; the native
    parameters (``columns``, ``filter``... are added by the scanner)."""
    if not isinstance(nearest, dict):
        raise TypeError(f"nearest must be a dict, got {type(nearest).__name__}")
    unknown = [k for k in nearest if k not in NEAREST_KEYS]
    if unknown:
        raise TypeError(f"ScannerBuilder.nearest() got an unexpected keyword argument '{unknown[0]}'")
    for req in ("column", "q"):
        if req not in nearest:
            raise TypeError(f"ScannerBuilder.nearest() missing 1 required positional argument: '{req}'")
    column, k = nearest["column"], nearest.get("k")
    q, q_dim, batch = _coerce(nearest["q"])
    field = _field(schema, column)
    if field is None:
        raise ValueError(f"Embedding column {column} is not in the dataset")
    t = field.type
    if hasattr(t, "storage_type"):
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
    elif pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
        dim = t.value_type.list_size
    else:
        raise TypeError(f"Query column {column} must be a vector. Got {field.type}.")
    if q_dim != dim:
        raise ValueError(f"Query vector size {q.shape[0] if batch else q_dim} does not match index column size {dim}")
    nprobes, mn, mx = nearest.get("nprobes"), nearest.get("minimum_nprobes"), nearest.get("maximum_nprobes")
    refine, ef, effort = nearest.get("refine_factor"), nearest.get("ef"), nearest.get("search_effort")
    if k is not None and int(k) <= 0:
        raise ValueError(f"Nearest-K must be > 0 but got {k}")
    if effort is None and nprobes is not None and int(nprobes) <= 0:
        raise ValueError(f"Nprobes must be > 0 but got {nprobes}")
    if mn is not None and int(mn) < 0:
        raise ValueError(f"Minimum nprobes must be >= 0 but got {mn}")
    if mx is not None and int(mx) < 0:
        raise ValueError(f"Maximum nprobes must be >= 0 but got {mx}")
    if mn is not None and mx is not None and mn > mx:
        raise ValueError("minimum_nprobes must be <= maximum_nprobes")
    if refine is not None and int(refine) < 1:
        raise ValueError(f"Refine factor must be 1 or more got {refine}")
    if ef is not None and int(ef) <= 0:
        raise ValueError(f"ef must be > 0 but got {ef}")
    qp = nearest.get("query_parallelism")
    if qp is not None and operator.index(qp) < -1:
        raise ValueError("query_parallelism must be >= -1")
    mode = nearest.get("approx_mode", "normal")
    if mode not in {"fast", "normal", "accurate"}:
        raise ValueError(f"approx_mode must be one of 'fast', 'normal', or 'accurate', got {mode!r}")
    lo = hi = None
    dr = nearest.get("distance_range")
    if dr is not None:
        if len(dr) != 2:
            raise ValueError("distance_range must be a tuple of (lower_bound, upper_bound)")
        lo, hi = (None if v is None else float(v) for v in dr)
    metric = nearest.get("metric")
    if metric is not None and str(metric).lower() not in ("l2", "euclidean", "cosine", "dot", "hamming"):
        raise ValueError(f"Invalid argument error: Metric type '{metric}' is not supported")
    if nprobes is not None and effort is None:
        mn = mx = int(nprobes)
    return {
        "column": field.name, "q": np.ascontiguousarray(q, dtype="<f4").tobytes(), "num_queries": int(q.shape[0]),
        "batch": batch, "k": None if k is None else int(k), "metric": metric,
        "minimum_nprobes": None if mn is None else int(mn), "maximum_nprobes": None if mx is None else int(mx),
        "search_effort": None if effort is None else float(effort),
        "refine_factor": None if refine is None else int(refine), "ef": None if ef is None else int(ef),
        "use_index": bool(nearest.get("use_index", True)), "distance_lo": lo, "distance_hi": hi,
    }


def scan_params(schema: pa.Schema, nearest: Dict[str, Any], kw: Dict[str, Any], *, prefilter: bool,
                fast_search: bool) -> Dict[str, Any]:
    """The native parameters of a scanner with ``nearest=`` (the scan's
    ``columns``, ``filter``, ``limit``/``offset`` and ``with_row_id``)."""
    from lancelet.exceptions import UnsupportedError
    if kw.get("with_row_address"):
        raise UnsupportedError("with_row_address is not supported with nearest= yet")
    if kw.get("fragments") is not None or kw.get("row_range") is not None:
        raise UnsupportedError("fragments= and row_range= are not supported with nearest= yet")
    p = build(schema, nearest)
    p.update(columns=kw.get("columns"), filter=kw.get("filter"), prefilter=prefilter, fast_search=fast_search,
             with_row_id=kw.get("with_row_id", False), limit=kw.get("limit"), offset=kw.get("offset") or 0)
    return p


def analyze(scanner: Any) -> str:
    """Run the query; its plan with the rows and time it took."""
    import time

    from lancelet import _native
    t0 = time.perf_counter()
    rows = scanner.to_table().num_rows
    dt = time.perf_counter() - t0
    plan = _native.nearest_plan(scanner._ds._native, scanner._kw["nearest"])
    head = f"AnalyzeExec: elapsed={dt * 1e3:.3f}ms, metrics=[output_rows={rows}]\n"
    return head + "".join("  " + line + "\n" for line in plan.splitlines())
