"""Tables of a directory namespace as Spark data source options:

    spark.read.format("lancelet").option("namespace.root", "s3://b/catalog")
         .option("table_id", "prod.clicks").load()

``namespace.<property>`` options become the namespace's properties
(``namespace.manifest_enabled``, ``namespace.storage.aws_endpoint``, ...);
``table_id`` is ``a.b.c`` or a JSON list. The table is resolved once, where
the data source is planned (the driver); tasks only see its location.
Writing to an id that does not exist declares it (its location comes from
the namespace) and an aborted job takes the declaration back.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from lancelet.exceptions import InvalidInputError

__all__ = ["options", "locate", "missing", "undeclare"]


def options(opts: Dict[str, str], uri: Optional[str]) -> Tuple[Optional[Dict[str, str]], Optional[List[str]]]:
    """The namespace properties and table id in (lower-cased) options, or
    ``(None, None)`` when the table is given by URI."""
    props = {k[len("namespace."):]: v for k, v in opts.items() if k.startswith("namespace.")}
    table_id = opts.get("table_id")
    if not props and table_id is None:
        return None, None
    if uri:
        raise InvalidInputError("give the table either as a path/URI or as namespace.root + table_id, not both")
    if "root" not in props or table_id is None:
        raise InvalidInputError("the options namespace.root and table_id go together")
    from lancelet.namespace.resolve import parse_id

    ident = parse_id(table_id)
    if not ident:
        raise InvalidInputError("option table_id is empty")
    return props, ident


def _namespace(props: Dict[str, str]) -> Any:
    from lancelet.namespace import DirectoryNamespace

    return DirectoryNamespace(**props)


def locate(props: Dict[str, str], table_id: List[str], storage_options: Optional[Dict[str, str]],
           create: bool = False) -> Tuple[str, Optional[Dict[str, str]]]:
    """The table's location and storage options; ``""`` when it does not
    exist (``create``: declare it instead)."""
    from lancelet.namespace import TableNotFoundError
    from lancelet.namespace.resolve import table_location

    ns = _namespace(props)
    if create:
        return table_location(ns, table_id, "create", storage_options)
    try:
        return table_location(ns, table_id, "read", storage_options)
    except TableNotFoundError:
        return "", storage_options


def missing(props: Optional[Dict[str, str]], table_id: Optional[List[str]]) -> None:
    """Raise the namespace's error for a table that is not there (now)."""
    from lancelet.namespace.resolve import table_location

    table_location(_namespace(props or {}), table_id or [], "read")
    raise InvalidInputError(f"table {table_id} has no location")  # it appeared meanwhile: plan again


def undeclare(props: Optional[Dict[str, str]], table_id: Optional[List[str]]) -> None:
    """Take back a declaration made for a write job that was aborted."""
    from lancelet.namespace.resolve import undo_declare

    undo_declare(_namespace(props or {}), table_id or [])
