"""Scalar indices (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER) in
pylance 14's format.

>>> ds.create_scalar_index("id", "BTREE")              # name "id_idx"
>>> ds.create_scalar_index("tags", "LABEL_LIST")
>>> ds.create_scalar_index("x", IndexConfig("zonemap", {"rows_per_zone": 1024}))
>>> ds.create_scalar_index("s", "BLOOMFILTER", number_of_items=4096, probability=0.001)
>>> ds.list_indices()
>>> ds.scanner(filter="id = 5").explain_plan()          # ... ScalarIndexQuery: query=[id = 5]@id_idx(BTree)
>>> ds.optimize.optimize_indices()                      # cover fragments appended since
>>> ds.drop_index("id_idx")

Filters use an index for the fragments it covers (``=``, ``IN``, ``<``,
``<=``, ``>``, ``>=``, ``BETWEEN``, ``IS NULL`` on BTREE/BITMAP;
``array_has_any``, ``array_has_all``, ``array_contains`` on LABEL_LIST; and
``AND``/``OR``/``NOT`` of those); other fragments are scanned, and the rest
of the filter is applied on top, so results always equal an unindexed scan
(``use_scalar_index=False``).

ZONEMAP (``=``, ``IN``, ranges, ``IS NULL``, ``IS NOT NULL``) and
BLOOMFILTER (``=``, ``IN``, ``IS NULL``) skip the zones of rows that cannot
match; the filter is applied to the rows of the others. Their parameters
come as pylance's ``IndexConfig(type, {params})`` or as keyword arguments
(pylance 14 silently ignores ``rows_per_zone=`` given as a keyword; lancelet
uses it).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from lancelet import _inputs, _native
from lancelet._progress import progress_callback
from lancelet.exceptions import InvalidInputError

if TYPE_CHECKING:
    from lancelet.dataset import Dataset

__all__ = ["IndexConfig", "IndexDescription", "IndexSegmentDescription", "create_scalar_index", "list_indices",
           "describe_indices", "drop_index", "optimize_indices", "create_index", "index_statistics"]

INDEX_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "ZONEMAP", "BLOOMFILTER", "NGRAM")

#: Parameters each index type takes (pylance's names).
INDEX_PARAMS = {"ZONEMAP": ("rows_per_zone",), "BLOOMFILTER": ("number_of_items", "probability")}


@dataclasses.dataclass
class IndexConfig:
    """pylance's ``lance.indices.IndexConfig``: an index type with its
    parameters, e.g. ``IndexConfig("zonemap", {"rows_per_zone": 1024})``."""
    index_type: str
    parameters: dict


def _index_spec(index_type: Any, kwargs: Dict[str, Any]) -> "tuple[str, Optional[str]]":
    """The native ``index_type`` and ``params`` arguments: the type name and
    its parameters under pylance's names as a JSON object (``None`` when
    there are none), checked here so a bad one names itself."""
    import json
    params: Dict[str, Any] = {}
    if not isinstance(index_type, str) and hasattr(index_type, "index_type") and hasattr(index_type, "parameters"):
        params = dict(index_type.parameters or {})
        index_type = index_type.index_type
    if not isinstance(index_type, str):
        raise InvalidInputError(f"index_type must be a string like 'BTREE' or an IndexConfig, not {type(index_type).__name__}")
    if index_type.upper() in ("INVERTED", "FTS"):
        return _inverted_spec(index_type, {**params, **kwargs})
    allowed = INDEX_PARAMS.get(index_type.upper(), ())
    for k, v in kwargs.items():
        if v is None:
            continue
        if k not in allowed:
            raise InvalidInputError(f"create_scalar_index does not take {k!r} for {index_type} indices")
        params[k] = v
    for k in allowed:
        v = params.get(k)
        if v is None:
            continue
        if k == "probability":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InvalidInputError(f"probability must be a number, not {v!r}")
        elif isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidInputError(f"{k} must be a non-negative integer, not {v!r}")
    # Other names in an IndexConfig are ignored, as pylance ignores them.
    known = {k: params[k] for k in allowed if params.get(k) is not None}
    return index_type, (json.dumps(known) if known else None)


# create_scalar_index keywords pylance takes for INVERTED indices that are
# not tokenizer parameters: accepted with their default (or a value lancelet
# honours) and not stored.
_INVERTED_BUILD_KWARGS = ("train", "fragment_ids", "index_uuid", "progress_callback", "format_version",
                          "document_granularity")


def _inverted_spec(index_type: str, kwargs: Dict[str, Any]) -> "tuple[str, Optional[str]]":
    """The type and its options as JSON: the tokenizer options (checked by
    the core, which names an unknown or bad one) and pylance's build
    keywords."""
    import json
    options = {}
    for k, v in kwargs.items():
        if k == "format_version":
            if v not in (None, 2, "2", "v2", "V2"):
                raise InvalidInputError(f"lancelet writes FTS format version 2 only, not format_version={v!r}")
        elif k == "train":
            if v is not True:
                raise InvalidInputError("lancelet builds INVERTED indices with train=True only")
        elif k == "document_granularity":
            if v is not None and str(getattr(v, "value", getattr(v, "name", v))).upper() != "ROW":
                raise InvalidInputError(f"lancelet builds INVERTED indices with document_granularity=ROW only, not {v!r}")
        elif k in _INVERTED_BUILD_KWARGS:
            if v is not None:
                raise InvalidInputError(f"create_scalar_index does not take {k!r} for INVERTED indices in lancelet")
        else:
            options[k] = v
    try:
        body = json.dumps(options)
    except TypeError as e:
        raise InvalidInputError(f"INVERTED index options must be bools, numbers, strings or lists of strings: {e}") from None
    return index_type.upper(), body


class FragmentIds(set):
    """The fragment ids an index covers (a set, shown like pylance's Bitmap)."""

    def __repr__(self) -> str:
        return f"Bitmap({{{', '.join(str(i) for i in sorted(self))}}})"


@dataclasses.dataclass
class IndexSegmentDescription:
    """One segment (manifest entry) of an index."""
    uuid: str
    fragment_ids: set
    dataset_version_at_last_update: int
    index_version: int
    created_at: Optional[datetime.datetime]
    size_bytes: Optional[int]


@dataclasses.dataclass
class IndexDescription:
    """An index (all segments of one name), as pylance's ``describe_indices``."""
    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: List[int]
    field_names: List[str]
    segments: List[IndexSegmentDescription]
    details: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def total_size_bytes(self) -> Optional[int]:
        """Bytes of every segment's files (None when no segment lists its
        files, as for ``__lance_frag_reuse``)."""
        sizes = [s.size_bytes for s in self.segments if s.size_bytes is not None]
        return sum(sizes) if sizes else None


def create_scalar_index(ds: "Dataset", column: str, index_type: str, name: Optional[str] = None, *,
                        replace: bool = True, progress: Any = None, **kwargs: Any) -> None:
    """Build a scalar index on ``column`` and commit it (``ds`` moves to the
    new version). ``index_type``: ``"BTREE"``, ``"BITMAP"``,
    ``"LABEL_LIST"``, ``"ZONEMAP"`` or ``"BLOOMFILTER"`` (or an
    :class:`IndexConfig` carrying ``rows_per_zone`` / ``number_of_items``,
    ``probability``, which may also come as keywords); ``name`` defaults to ``f"{column}_idx"``; an existing
    index of that name is replaced unless ``replace=False``
    (:class:`~lancelet.exceptions.AlreadyExistsError`). ``progress``: True
    or a callable getting ``{"stage", "done", "total"}`` (stages
    ``load_data`` in rows, then ``build``); an exception it raises aborts
    the build and propagates (nothing committed)."""
    if not isinstance(column, str):
        if isinstance(column, (list, tuple)) and len(column) == 1 and isinstance(column[0], str):
            column = column[0]
        else:
            raise InvalidInputError(f"create_scalar_index takes one column name, not {column!r}")
    index_type, params = _index_spec(index_type, kwargs)
    if name is not None and not isinstance(name, str):
        raise InvalidInputError(f"name must be a string, not {type(name).__name__}")
    native = _native.dataset_create_scalar_index(ds._native, column, index_type, name, bool(replace),
                                                  _inputs.commit_args(progress=progress_callback(progress)), params=params)
    ds._become(native)


def _rows(ds: "Dataset"):
    return [a + b for a, b in _native.dataset_list_indices(ds._native)]


def list_indices(ds: "Dataset") -> List[Dict[str, Any]]:
    """Every index segment: ``name``, ``type`` (``BTree``, ``Bitmap``,
    ``LabelList``, ...), ``uuid``, ``fields`` (column names), ``version``
    (dataset version it was built from), ``fragment_ids``, ``base_id``."""
    out = []
    for (name, type_name, uuid, fields, _ids, version, frags, base_id, *_rest) in _rows(ds):
        out.append({"name": name, "type": type_name, "uuid": uuid, "fields": list(fields), "version": version,
                    "fragment_ids": FragmentIds(frags), "base_id": base_id})
    out.sort(key=lambda d: d["name"])
    return out


def describe_indices(ds: "Dataset") -> List[IndexDescription]:
    """One description per index name, system indices (``__lance_frag_reuse``,
    after a deferred remap) included, as pylance 14 lists them."""
    by_name: Dict[str, IndexDescription] = {}
    for (name, type_name, uuid, fields, field_ids, version, frags, _base, type_url, index_version, created_at,
         files, rows) in _rows(ds):
        seg = IndexSegmentDescription(
            uuid=uuid, fragment_ids=FragmentIds(frags), dataset_version_at_last_update=version,
            index_version=index_version,
            created_at=None if created_at is None else datetime.datetime.fromtimestamp(created_at / 1000,
                                                                                       datetime.timezone.utc),
            size_bytes=sum(size for _, size in files) if files else None)
        d = by_name.get(name)
        if d is None:
            by_name[name] = IndexDescription(name=name, type_url=type_url, index_type=type_name, num_rows_indexed=rows,
                                             fields=list(field_ids), field_names=list(fields), segments=[seg])
        else:
            d.segments.append(seg)
            d.num_rows_indexed += rows
    if any(d.type_url.endswith("VectorIndexDetails") for d in by_name.values()):
        details = vector_details(ds)
        for d in by_name.values():
            if d.type_url.endswith("VectorIndexDetails") and d.segments and d.segments[0].uuid in details:
                d.details = details[d.segments[0].uuid]
    return sorted(by_name.values(), key=lambda d: d.name)


def drop_index(ds: "Dataset", name: str) -> None:
    """Remove the index ``name`` (all its segments);
    :class:`~lancelet.exceptions.NotFoundError` when there is none."""
    if not isinstance(name, str):
        raise InvalidInputError(f"index name must be a string, not {type(name).__name__}")
    ds._become(_native.dataset_drop_index(ds._native, name, _inputs.commit_args()))


def optimize_indices(ds: "Dataset", index_names: Optional[Sequence[str]] = None, num_indices_to_merge: Optional[int] = None,
                     retrain: bool = False, **kwargs: Any) -> None:
    """Make each scalar index (or those named) cover every fragment in one
    new segment, replacing the old; add the rows no segment of a vector
    index covers as a new delta segment, merged with the
    ``num_indices_to_merge`` newest segments (``retrain``: build it again
    with new centroids), as pylance 14 does. Nothing is committed when
    there is nothing to do."""
    if isinstance(index_names, str):
        index_names = [index_names]
    names = None if index_names is None else [str(n) for n in index_names]
    for k, v in kwargs.items():
        if v is not None:
            raise InvalidInputError(f"optimize_indices does not take {k!r}")
    if num_indices_to_merge is not None and (isinstance(num_indices_to_merge, bool) or not isinstance(num_indices_to_merge, int)
                                             or num_indices_to_merge < 0):
        raise InvalidInputError(f"num_indices_to_merge must be a non-negative int or None, got {num_indices_to_merge!r}")
    ds._become(_native.dataset_optimize_indices(ds._native, names, _inputs.commit_args(), num_indices_to_merge, bool(retrain)))


def scan_plan(ds: "Dataset", kw: Dict[str, Any], *, verbose: bool = False, analyze: bool = False) -> str:
    """The plan text of a scan (see ``Scanner.explain_plan``)."""
    return _native.scan_plan(ds._native, kw.get("columns"), kw.get("filter"), kw.get("limit"), kw.get("offset") or 0,
                             kw.get("with_row_id", False), kw.get("with_row_address", False), kw.get("fragments"),
                             kw.get("use_scalar_index", True), verbose, analyze)


def _segment_details(ds: "Dataset", type_name: str, uuid: str) -> Dict[str, Any]:
    """pylance's per-segment statistics of ZONEMAP, BLOOMFILTER, NGRAM and
    INVERTED indices (read off their files); other kinds give ``{}``."""
    from lancelet.file import LanceFileReader
    base = f"{ds.uri.rstrip('/')}/_indices/{uuid}"
    if type_name == "ZoneMap":
        r = LanceFileReader(f"{base}/zonemap.lance")
        md = r.schema.metadata or {}
        return {"num_zones": r.num_rows, "rows_per_zone": int(md.get(b"rows_per_zone", b"8192"))}
    if type_name == "BloomFilter":
        r = LanceFileReader(f"{base}/bloomfilter.lance")
        md = r.schema.metadata or {}
        return {"type": "BloomFilter", "num_blocks": r.num_rows,
                "number_of_items": int(md.get(b"bloomfilter_item", b"8192")),
                "probability": float(md.get(b"bloomfilter_probability", b"0.00057"))}
    if type_name == "NGram":
        return {"num_ngrams": LanceFileReader(f"{base}/ngram_postings.lance").num_rows}
    if type_name == "Inverted":
        import json
        md = LanceFileReader(f"{base}/metadata.lance").schema.metadata or {}
        parts = json.loads(md.get(b"partitions", b"[]"))
        num_tokens = sum(LanceFileReader(f"{base}/part_{p}_invert.lance").num_rows for p in parts)
        num_docs = sum(LanceFileReader(f"{base}/part_{p}_docs.lance").num_rows for p in parts)
        return {"params": json.loads(md.get(b"params", b"{}")), "num_tokens": num_tokens, "num_docs": num_docs}
    return {}


def _scalar_index_statistics(ds: "Dataset", name: str) -> Dict[str, Any]:
    """pylance's ``index_statistics(name)``: type, segments (with the
    per-segment details pylance shows for ZONEMAP and BLOOMFILTER), indexed
    and unindexed fragments and rows."""
    rows = [r for r in _rows(ds) if r[0] == name]
    type_name = rows[0][1]
    present = {f.fragment_id for f in ds.get_fragments()}
    covered = set()
    per_delta = []
    created = []
    segments = []
    for (_n, _t, uuid, _f, _ids, _v, frags, _b, _url, _iv, created_at, _files, nrows) in rows:
        covered |= set(frags) & present
        per_delta.append(nrows)
        if created_at is not None:
            created.append(created_at)
        segments.append(_segment_details(ds, type_name, uuid))
    indexed_rows = sum(per_delta)
    total_rows = ds.count_rows()
    return {
        "index_type": type_name, "name": name, "num_indices": len(rows), "num_segments": len(rows),
        "indices": segments, "segments": [dict(s) for s in segments],
        "num_indexed_fragments": len(covered), "num_indexed_rows": indexed_rows,
        "num_unindexed_fragments": len(present - covered), "num_unindexed_rows": total_rows - indexed_rows,
        "num_indexed_rows_per_delta": per_delta,
        "updated_at_timestamp_ms": max(created) if created else None,
    }


# -- vector indices (IVF_FLAT, IVF_PQ, IVF_SQ) --------------------------------

VECTOR_INDEX_TYPES = ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ", "IVF_RQ"]
_TENSOR_TYPES = {"float16": 1, "float32": 2, "float64": 3}


def _tensor(arr: Any, what: str):
    """``(bytes, tensor data type, shape)`` of a float numpy array or Arrow
    fixed-size-list array (row-major, little-endian)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(arr, (pa.FixedSizeListArray, pa.ChunkedArray)):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.flatten().to_numpy(zero_copy_only=False).reshape(len(arr), arr.type.list_size)
    arr = np.ascontiguousarray(arr)
    if arr.dtype.name not in _TENSOR_TYPES:
        raise TypeError(f"{what} must be floating number, got {arr.dtype}")
    return (arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(), _TENSOR_TYPES[arr.dtype.name],
            [int(d) for d in arr.shape])


def create_index(ds: "Dataset", column: Any, index_type: str, name: Optional[str] = None, metric: str = "L2",
                 replace: bool = False, num_partitions: Optional[int] = None, ivf_centroids: Any = None,
                 pq_codebook: Any = None, num_sub_vectors: Optional[int] = None, *,
                 target_partition_size: Optional[int] = None, progress: Any = None, **kwargs: Any) -> None:
    """Build a vector index (IVF_FLAT, IVF_PQ or IVF_SQ) on a fixed-size-list
    column of float16/32/64 vectors and commit it, as pylance 14's
    ``create_index`` does (same arguments, defaults, validation messages and
    files). Null vectors and vectors holding NaN are not indexed. Keyword
    arguments: ``num_bits`` (PQ 4|8, SQ; default 8), ``sample_rate`` (256),
    ``max_iters`` (50), ``seed`` (lancelet: the k-means / sampling seed;
    builds are reproducible)."""
    import numpy as np
    import pyarrow as pa

    from lancelet.exceptions import UnsupportedError

    columns = [column] if isinstance(column, str) else list(column)
    schema = ds.schema
    resolved = []
    for c in columns:
        match = [f for f in schema if f.name.lower() == str(c).lower()]
        if not match:
            raise KeyError(f"{c} not found in schema")
        field = match[0]
        if pa.types.is_fixed_size_list(field.type):
            dimension = field.type.list_size
        elif pa.types.is_list(field.type) and pa.types.is_fixed_size_list(field.type.value_type):
            dimension = field.type.value_type.list_size
        else:
            raise TypeError(f"Vector column {c} must be FixedSizeListArray "
                            f"1-dimensional FixedShapeTensorArray, got {field.type}")
        if num_sub_vectors is not None and dimension % num_sub_vectors != 0:
            raise ValueError(f"dimension ({dimension}) must be divisible by num_sub_vectors ({num_sub_vectors})")
        element_type = field.type.value_type
        if pa.types.is_list(field.type):
            element_type = field.type.value_type.value_type
        if not (pa.types.is_floating(element_type) or pa.types.is_uint8(element_type)):
            raise TypeError(f"Vector column {c} must have floating value type, got {field.type.value_type}")
        resolved.append(field)
    if not isinstance(metric, str) or metric.lower() not in ["l2", "cosine", "euclidean", "dot", "hamming"]:
        raise ValueError(f"Metric {metric} not supported.")
    index_type = index_type.upper()
    if index_type not in VECTOR_INDEX_TYPES:
        raise NotImplementedError(f"Only {VECTOR_INDEX_TYPES} index types supported. Got {index_type}")
    if len(resolved) != 1:
        raise UnsupportedError(f"vector indices cover one column, got {columns!r}")
    field = resolved[0]
    if pa.types.is_list(field.type):
        raise UnsupportedError(f"building vector indices on multivector column {field.name} is not supported yet")
    if index_type not in ("IVF_FLAT", "IVF_PQ", "IVF_SQ"):
        raise UnsupportedError(f"building {index_type} indices is not supported by lancelet yet "
                               "(IVF_FLAT, IVF_PQ and IVF_SQ are)")
    if isinstance(num_partitions, float):
        import warnings
        warnings.warn("num_partitions is float, converting to int", stacklevel=3)
        num_partitions = int(num_partitions)
    elif num_partitions is not None and not isinstance(num_partitions, int):
        raise TypeError(f"num_partitions must be int, got {type(num_partitions)}")
    if ivf_centroids is None and pq_codebook is not None:
        raise ValueError("ivf_centroids must be specified when pq_codebook is provided")
    centroids = None
    if ivf_centroids is not None:
        if isinstance(ivf_centroids, np.ndarray):
            if len(ivf_centroids.shape) != 2:
                raise ValueError(f"Ivf centroids must be 2D array: (clusters, dim), got {ivf_centroids.shape}")
            if ivf_centroids.shape[0] == 0:
                raise ValueError(f"Ivf centroids must have at least one cluster, got {ivf_centroids.shape}")
            if num_partitions is not None and ivf_centroids.shape[0] != num_partitions:
                raise ValueError(f"Ivf centroids has {ivf_centroids.shape[0]} clusters, "
                                 f"but num_partitions={num_partitions}")
            if ivf_centroids.dtype not in [np.float16, np.float32, np.float64]:
                raise TypeError("IVF centroids must be floating number" + f"got {ivf_centroids.dtype}")
        centroids = _tensor(ivf_centroids, "IVF centroids")
    num_bits = kwargs.pop("num_bits", None)
    codebook = None
    if "PQ" in index_type:
        if num_sub_vectors is None:
            raise ValueError("num_partitions and num_sub_vectors are required for IVF_PQ")
        if pq_codebook is not None:
            if isinstance(pq_codebook, np.ndarray):
                expected = 2 ** (8 if num_bits is None else num_bits)
                if (len(pq_codebook.shape) != 3 or pq_codebook.shape[0] != num_sub_vectors
                        or pq_codebook.shape[1] != expected):
                    raise ValueError("PQ codebook must be 3D array: "
                                     f"(sub_vectors, {expected}, dim) "
                                     f"for num_bits={8 if num_bits is None else num_bits}, "
                                     f"got {pq_codebook.shape}")
                if pq_codebook.dtype not in [np.float16, np.float32, np.float64]:
                    raise TypeError("PQ codebook must be floating number" + f"got {pq_codebook.dtype}")
            codebook = _tensor(pq_codebook, "PQ codebook")
    sample_rate = int(kwargs.pop("sample_rate", 256))
    max_iters = int(kwargs.pop("max_iters", 50))
    seed = kwargs.pop("seed", None)
    callback = kwargs.pop("progress_callback", None)
    for k, v in kwargs.items():
        if v is not None and k not in ("accelerator", "index_cache_size", "shuffle_partition_batches",
                                       "shuffle_partition_concurrency", "storage_options", "filter_nan", "train",
                                       "skip_transpose", "m", "ef_construction", "max_level"):
            raise UnsupportedError(f"create_index does not take {k!r} in lancelet")
    for k in ("ivf_centroids_file", "precomputed_partition_dataset", "fragment_ids", "index_uuid"):
        if kwargs.get(k) is not None:
            raise UnsupportedError(f"create_index({k}=...) is not supported by lancelet")
    native = _native.dataset_create_vector_index(
        ds._native, field.name, index_type, name, metric, bool(replace), num_partitions, target_partition_size,
        centroids, codebook, num_sub_vectors, num_bits, sample_rate, max_iters, seed,
        _inputs.commit_args(progress=progress_callback(progress if progress is not None else callback)))
    ds._become(native)


def vector_details(ds: "Dataset") -> Dict[str, Dict[str, Any]]:
    """``{uuid: details}`` of the vector index entries (``describe_indices``)."""
    import json
    return {u: json.loads(j) for u, j in _native.dataset_vector_index_details(ds._native)}


def index_statistics(ds: "Dataset", name: str) -> Dict[str, Any]:
    """pylance 14's ``stats.index_stats(name)`` dict for a vector index
    (keys in pylance's order); ``KeyError`` for an unknown name."""
    import json
    import os

    if not isinstance(name, str):
        raise InvalidInputError(f"index name must be a string, not {type(name).__name__}")
    segs = _native.dataset_vector_index_stats(ds._native, name)
    rows = [r for r in _rows(ds) if r[0] == name]
    if not rows:
        raise KeyError(f'Index "{name}" not found')
    if not segs:
        return _scalar_index_statistics(ds, name)
    indices = []
    for uuid, index_type, metric, centroids, lengths, loss, storage, _created in segs:
        sm = json.loads(storage) if storage else {}
        if index_type.endswith("PQ"):
            sub = {"metric_type": "l2" if metric == "cosine" else metric, "nbits": sm.get("nbits"),
                   "num_sub_vectors": sm.get("num_sub_vectors"), "dimension": sm.get("dimension"),
                   "index_type": "PQ", "transposed": sm.get("transposed")}
        elif index_type.endswith("SQ"):
            sub = {"dim": sm.get("dim"), "num_bits": sm.get("num_bits"), "bounds": sm.get("bounds"),
                   "index_type": "SQ", "metric_type": metric}
        else:
            sub = {"dim": sm.get("dim"), "index_type": "FLAT", "metric_type": metric}
        indices.append({"index_type": index_type, "uuid": uuid,
                        "uri": os.path.join(ds.uri, "_indices", uuid, "index.idx"), "metric_type": metric,
                        "num_partitions": len(lengths), "sub_index": sub,
                        "partitions": [{"size": n} for n in lengths], "centroids": [list(c) for c in centroids],
                        "loss": loss, "index_file_version": "V3"})
    covered = set()
    for r in rows:
        covered |= set(r[6])
    frags = ds.get_fragments()
    frag_rows = {f.fragment_id: f.count_rows() for f in frags}
    indexed_rows = sum(n for f, n in frag_rows.items() if f in covered)
    created = [r[10] for r in rows if r[10] is not None]
    return {
        "index_type": indices[0]["index_type"],
        "name": name,
        "num_indices": len(indices),
        "num_segments": len(indices),
        "indices": indices,
        "segments": indices,
        "num_indexed_fragments": sum(1 for f in frag_rows if f in covered),
        "num_indexed_rows": indexed_rows,
        "num_unindexed_fragments": sum(1 for f in frag_rows if f not in covered),
        "num_unindexed_rows": sum(frag_rows.values()) - indexed_rows,
        "num_indexed_rows_per_delta": [r[12] for r in rows],
        "updated_at_timestamp_ms": max(created) if created else None,
    }


class DatasetStats:
    """``ds.stats``: ``index_stats(name)`` as pylance 14's."""

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def index_stats(self, name: str) -> Dict[str, Any]:
        return index_statistics(self._ds, name)
