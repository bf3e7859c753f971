"""Full-text query objects under pylance 14's names (``lance.query``).

Pass one as ``full_text_query=`` to :meth:`lancelet.Dataset.scanner` /
``to_table``. Arguments are checked when the object is made, with the
exception types pylance raises for the same mistakes; ``to_dict()`` is the
form the native search takes.
"""

from __future__ import annotations

import abc
from enum import Enum
from typing import Any, Dict, List, Optional, Tuple

from lancelet.exceptions import InvalidInputError

__all__ = ["FullTextQueryType", "FullTextOperator", "DocumentGranularity", "Occur", "FullTextQuery", "MatchQuery",
           "PhraseQuery", "BoostQuery", "MultiMatchQuery", "BooleanQuery"]


class FullTextQueryType(Enum):
    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    AND = "AND"
    OR = "OR"


class DocumentGranularity(str, Enum):
    """The unit treated as one full-text-search document."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


class Occur(Enum):
    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


def _str(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"argument '{name}': '{type(v).__name__}' object is not an instance of 'str'")
    return v


def _uint(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"argument '{name}': '{type(v).__name__}' object cannot be interpreted as an integer")
    if v < 0:
        raise OverflowError("out of range integral type conversion attempted")
    return v


def _float(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"argument '{name}': must be real number, not {type(v).__name__}")
    return float(v)


def _operator(v: Any) -> str:
    if not isinstance(v, FullTextOperator):
        v = getattr(v, "value", v)
        if v not in ("AND", "OR"):
            raise ValueError(f"Invalid operator: {v}")
        return v
    return v.value


def _granularity(v: Any) -> None:
    if v is not None and DocumentGranularity(v) is not DocumentGranularity.ROW:
        from lancelet.exceptions import UnsupportedError
        raise UnsupportedError("document_granularity=LIST_ELEMENT is not supported yet")


class FullTextQuery(abc.ABC):
    """A full-text query; ``a & b`` / ``a | b`` combine two as MUST / SHOULD."""

    @abc.abstractmethod
    def query_type(self) -> FullTextQueryType:
        """The kind of query."""

    @abc.abstractmethod
    def to_dict(self) -> Dict[str, Any]:
        """The query as the native search takes it."""

    def __and__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class MatchQuery(FullTextQuery):
    """Rows holding any (``operator=OR``) or every (``AND``) term of
    ``query`` in ``column``, scored by BM25 (× ``boost``). ``fuzziness``
    also matches index terms within that edit distance (``None``: pylance
    14's "auto", which it runs as exact matching)."""

    def __init__(self, query: str, column: str, *, boost: float = 1.0, fuzziness: Optional[int] = 0,
                 max_expansions: int = 50, operator: FullTextOperator = FullTextOperator.OR, prefix_length: int = 0,
                 document_granularity: Optional[DocumentGranularity] = None):
        self.query = _str(query, "query")
        self.column = _str(column, "column")
        self.boost = _float(boost, "boost")
        self.fuzziness = None if fuzziness is None else _uint(fuzziness, "fuzziness")
        self.max_expansions = _uint(max_expansions, "max_expansions")
        self.operator = _operator(operator)
        self.prefix_length = _uint(prefix_length, "prefix_length")
        _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "match", "query": self.query, "column": self.column, "boost": self.boost,
                "fuzziness": self.fuzziness, "max_expansions": self.max_expansions, "operator": self.operator,
                "prefix_length": self.prefix_length}


class PhraseQuery(FullTextQuery):
    """Rows holding the terms of ``query`` in order, at most ``slop``
    extra positions apart (the index must keep positions)."""

    def __init__(self, query: str, column: str, *, slop: int = 0,
                 document_granularity: Optional[DocumentGranularity] = None):
        self.query = _str(query, "query")
        self.column = _str(column, "column")
        self.slop = _uint(slop, "slop")
        _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH_PHRASE

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "phrase", "query": self.query, "column": self.column, "slop": self.slop}


def _query(v: Any, name: str) -> FullTextQuery:
    if not isinstance(v, FullTextQuery):
        raise TypeError(f"{name} must be a lancelet.query.FullTextQuery, got {type(v).__name__}")
    return v


class BoostQuery(FullTextQuery):
    """The rows of ``positive``; those also matching ``negative`` get their
    score × (1 − ``negative_boost``)."""

    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *, negative_boost: float = 0.5):
        self.positive = _query(positive, "positive")
        self.negative = _query(negative, "negative")
        self.negative_boost = _float(negative_boost, "negative_boost")

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOST

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "boost", "positive": self.positive.to_dict(), "negative": self.negative.to_dict(),
                "negative_boost": self.negative_boost}


class MultiMatchQuery(FullTextQuery):
    """A match of ``query`` in each of ``columns`` (× its boost); a row's
    score is the best column's."""

    def __init__(self, query: str, columns: List[str], *, boosts: Optional[List[float]] = None,
                 operator: FullTextOperator = FullTextOperator.OR):
        self.query = _str(query, "query")
        if isinstance(columns, str) or not isinstance(columns, (list, tuple)):
            raise TypeError(f"argument 'columns': expected a list of str, got {type(columns).__name__}")
        self.columns = [_str(c, "columns") for c in columns]
        if not self.columns:
            raise InvalidInputError("Invalid query: Cannot create MultiMatchQuery with no columns")
        self.boosts = None if boosts is None else [_float(b, "boosts") for b in boosts]
        if self.boosts is not None and len(self.boosts) != len(self.columns):
            raise InvalidInputError("Invalid boosts: The number of boosts must match the number of queries")
        self.operator = _operator(operator)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MULTI_MATCH

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "multi_match", "query": self.query, "columns": list(self.columns), "boosts": self.boosts,
                "operator": self.operator}


class BooleanQuery(FullTextQuery):
    """MUST clauses are required, SHOULD clauses add their scores (one is
    required when there is no MUST), MUST_NOT clauses exclude."""

    def __init__(self, queries: List[Tuple[Occur, FullTextQuery]]):
        self.queries: List[Tuple[Occur, FullTextQuery]] = []
        for item in queries:
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"BooleanQuery takes (Occur, FullTextQuery) pairs, got {item!r}")
            occur, q = item
            if not isinstance(occur, Occur):
                occur = Occur(getattr(occur, "value", occur))
            self.queries.append((occur, _query(q, "query")))

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOLEAN

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "boolean", "clauses": [(o.value, q.to_dict()) for o, q in self.queries]}
