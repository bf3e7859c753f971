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
           "describe_indices", "drop_index", "optimize_indices", "index_statistics"]

INDEX_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "ZONEMAP", "BLOOMFILTER")

#: Parameters each index type takes (pylance's names).
INDEX_PARAMS = {"ZONEMAP": ("rows_per_zone",), "BLOOMFILTER": ("number_of_items", "probability")}


@dataclasses.dataclass
class IndexConfig:
    """pylance's ``lance.indices.IndexConfig``: an index type with its
    parameters, e.g. ``IndexConfig("zonemap", {"rows_per_zone": 1024})``."""
    index_type: str
    parameters: dict


def _index_spec(index_type: Any, kwargs: Dict[str, Any]) -> str:
    """The native ``index_type`` argument: ``TYPE`` or ``TYPE:{json}``."""
    import json
    params: Dict[str, Any] = {}
    if not isinstance(index_type, str) and hasattr(index_type, "index_type") and hasattr(index_type, "parameters"):
        params = dict(index_type.parameters or {})
        index_type = index_type.index_type
    if not isinstance(index_type, str):
        raise InvalidInputError(f"index_type must be a string like 'BTREE' or an IndexConfig, not {type(index_type).__name__}")
    if ":" in index_type:
        raise InvalidInputError(f"unknown index type {index_type!r}")
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
    known = {k: params[k] for k in allowed if params.get(k) is not None}
    return f"{index_type}:{json.dumps(known)}" if known else index_type


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
    spec = _index_spec(index_type, kwargs)
    if name is not None and not isinstance(name, str):
        raise InvalidInputError(f"name must be a string, not {type(name).__name__}")
    native = _native.dataset_create_scalar_index(ds._native, column, spec, name, bool(replace),
                                                  _inputs.commit_args(progress=progress_callback(progress)))
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
    return sorted(by_name.values(), key=lambda d: d.name)


def drop_index(ds: "Dataset", name: str) -> None:
    """Remove the index ``name`` (all its segments);
    :class:`~lancelet.exceptions.NotFoundError` when there is none."""
    if not isinstance(name, str):
        raise InvalidInputError(f"index name must be a string, not {type(name).__name__}")
    ds._become(_native.dataset_drop_index(ds._native, name, _inputs.commit_args()))


def optimize_indices(ds: "Dataset", index_names: Optional[Sequence[str]] = None, **kwargs: Any) -> None:
    """Make each index (or those named) cover every fragment in one new
    segment, replacing the old; nothing is committed when all do already."""
    if isinstance(index_names, str):
        index_names = [index_names]
    names = None if index_names is None else [str(n) for n in index_names]
    for k, v in kwargs.items():
        if v is not None and k not in ("num_indices_to_merge", "retrain"):
            raise InvalidInputError(f"optimize_indices does not take {k!r}")
    ds._become(_native.dataset_optimize_indices(ds._native, names, _inputs.commit_args()))


def scan_plan(ds: "Dataset", kw: Dict[str, Any], *, verbose: bool = False, analyze: bool = False) -> str:
    """The plan text of a scan (see ``Scanner.explain_plan``)."""
    return _native.scan_plan(ds._native, kw.get("columns"), kw.get("filter"), kw.get("limit"), kw.get("offset") or 0,
                             kw.get("with_row_id", False), kw.get("with_row_address", False), kw.get("fragments"),
                             kw.get("use_scalar_index", True), verbose, analyze)


def _segment_details(ds: "Dataset", type_name: str, uuid: str) -> Dict[str, Any]:
    """pylance's per-segment statistics of ZONEMAP and BLOOMFILTER indices
    (read off their files); other kinds give ``{}``."""
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
    return {}


def index_statistics(ds: "Dataset", name: str) -> Dict[str, Any]:
    """pylance's ``index_statistics(name)``: type, segments (with the
    per-segment details pylance shows for ZONEMAP and BLOOMFILTER), indexed
    and unindexed fragments and rows."""
    if not isinstance(name, str):
        raise InvalidInputError(f"index name must be a string, not {type(name).__name__}")
    rows = [r for r in _rows(ds) if r[0] == name]
    if not rows:
        from lancelet.exceptions import NotFoundError
        raise NotFoundError(f"index {name!r} in dataset {ds.uri} (version {ds.version})")
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
