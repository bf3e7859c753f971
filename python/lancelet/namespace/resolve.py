"""Turning ``(namespace_client, table_id)`` into a dataset location, as
pylance's ``lance.dataset`` / ``lance.write_dataset`` do, for any
``LanceNamespace`` (lancelet's, pylance's, REST ...): reads and
appends/overwrites ask ``describe_table``, creates ask ``declare_table``
and then write at the location it returns. The namespace's storage options
win over the caller's (pylance's rule).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from lancelet.exceptions import InvalidInputError

__all__ = ["table_location", "undo_declare", "parse_id"]


def parse_id(value: Any) -> List[str]:
    """A table id: a list of names (pylance's form), or, for the CLI and
    Spark options, a string ``a.b.c`` or a JSON list; ``""`` is the root."""
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise InvalidInputError(f"an id is a list of strings, got {value!r}")
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            try:
                parsed = json.loads(text)
            except ValueError as e:
                raise InvalidInputError(f"bad JSON id {value!r}: {e}") from None
            return parse_id(parsed)
        return text.split(".") if text else []
    raise InvalidInputError(f"an id is a list of names or a dotted string, got {type(value).__name__}")


def _merge(storage_options: Optional[Dict[str, str]], from_namespace: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
    if not from_namespace:
        return storage_options
    merged = dict(storage_options or {})
    merged.update(from_namespace)
    return merged


def table_location(namespace_client: Any, table_id: Sequence[str], mode: str = "read",
                   storage_options: Optional[Dict[str, str]] = None) -> Tuple[str, Optional[Dict[str, str]]]:
    """The location and storage options of table ``table_id`` for ``mode``
    (``read``, ``append``, ``overwrite``: ``describe_table``; ``create``:
    ``declare_table``)."""
    from lance_namespace import DeclareTableRequest, DescribeTableRequest

    if isinstance(table_id, str):
        raise InvalidInputError("table_id must be a list of names, e.g. ['prod', 'clicks'], not a string")
    ident = list(table_id)
    if mode == "create":
        response = namespace_client.declare_table(DeclareTableRequest(id=ident, location=None))
    elif mode in ("read", "append", "overwrite"):
        response = namespace_client.describe_table(DescribeTableRequest(id=ident, version=None))
    else:
        raise InvalidInputError(f"unknown mode {mode!r} (expected create, append or overwrite)")
    location = getattr(response, "location", None)
    if not location:
        raise InvalidInputError(f"the namespace returned no location for table {ident}")
    return location, _merge(storage_options, getattr(response, "storage_options", None))


def undo_declare(namespace_client: Any, table_id: Sequence[str]) -> None:
    """Take back a declaration whose first write failed (best effort: the
    write's error is what the caller reports)."""
    from lance_namespace import DropTableRequest

    try:
        namespace_client.drop_table(DropTableRequest(id=list(table_id)))
    except Exception:
        pass
