"""``full_text_query=`` searches: the query as pylance 14 accepts it (a
string, a ``{"columns": [...], "query": ...}`` dict or a
:mod:`lancelet.query` object) turned into the parameter dict the native
search takes."""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["scan_params"]


def query_dict(ftq: Any) -> Dict[str, Any]:
    """The native form of a ``full_text_query`` argument."""
    from lancelet.query import FullTextQuery

    if isinstance(ftq, FullTextQuery):
        return ftq.to_dict()
    if isinstance(ftq, str):
        return {"type": "multi_match", "query": ftq, "columns": []}
    if isinstance(ftq, dict):
        unknown = [k for k in ftq if k not in ("query", "columns")]
        if unknown:
            raise TypeError(f"full_text_search() got an unexpected keyword argument '{unknown[0]}'")
        if "query" not in ftq:
            raise TypeError("full_text_search() missing 1 required positional argument: 'query'")
        q, cols = ftq["query"], ftq.get("columns")
        if isinstance(q, FullTextQuery):
            return q.to_dict()
        if not isinstance(q, str):
            raise TypeError(f"the full_text_query 'query' must be a string or a query object, got {type(q).__name__}")
        if cols is None:
            cols = []
        if isinstance(cols, str) or not all(isinstance(c, str) for c in cols):
            raise TypeError("the full_text_query 'columns' must be a list of column names")
        cols = list(cols)
        if len(cols) == 1:
            return {"type": "match", "query": q, "column": cols[0], "boost": 1.0, "fuzziness": 0, "max_expansions": 50,
                    "operator": "OR", "prefix_length": 0}
        return {"type": "multi_match", "query": q, "columns": cols}
    if type(ftq).__module__.startswith("lance"):
        raise TypeError("pylance query objects cannot be read; use the same class from lancelet.query")
    raise TypeError(f"full_text_query must be a str, a dict or a lancelet.query.FullTextQuery, got {type(ftq).__name__}")


def scan_params(ftq: Any, kw: Dict[str, Any], *, prefilter: bool) -> Dict[str, Any]:
    """The native parameters of a scanner with ``full_text_query=``."""
    from lancelet.exceptions import UnsupportedError
    if kw.get("with_row_address"):
        raise UnsupportedError("with_row_address is not supported with full_text_query= yet")
    if kw.get("fragments") is not None or kw.get("row_range") is not None:
        raise UnsupportedError("fragments= and row_range= are not supported with full_text_query= yet")
    return {"query": query_dict(ftq), "columns": kw.get("columns"), "filter": kw.get("filter"), "prefilter": prefilter,
            "with_row_id": kw.get("with_row_id", False), "limit": kw.get("limit"), "offset": kw.get("offset") or 0}
