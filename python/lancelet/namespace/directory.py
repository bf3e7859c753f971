"""``DirectoryNamespace``: a ``lance_namespace.LanceNamespace`` over a
directory (local, ``file://``, ``s3://``), backed by lancelet's Rust core
(``lancelet::namespace``). This class only turns request models into calls
and results into response models; every check and all I/O happen in Rust.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pydantic
from lance_namespace import (
    CountTableRowsRequest,
    CountTableRowsResponse,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)

from lancelet import _native
from lancelet.exceptions import CorruptFileError
from lancelet.namespace.errors import InvalidInputError, UnsupportedError

__all__ = ["DirectoryNamespace", "parse_bool"]


def parse_bool(value: Any, name: str) -> bool:
    """A boolean property: a bool, or ``true``/``false`` in any case."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidInputError(f"property {name} must be true or false, got {value!r}")


def _request(cls: type, request: Any, fields: Dict[str, Any]) -> Any:
    """The request model from a model, a dict or keyword fields."""
    try:
        if request is None:
            return cls(**fields)
        if fields:
            raise InvalidInputError(f"pass either a {cls.__name__} or its fields as keywords, not both")
        if isinstance(request, cls):
            return request
        if isinstance(request, dict):
            return cls(**request)
        if hasattr(request, "model_dump"):  # the same request from another copy of the models
            return cls(**request.model_dump(exclude_unset=True))
    except pydantic.ValidationError as e:
        raise InvalidInputError(f"bad {cls.__name__}: {e}") from None
    raise InvalidInputError(f"expected a {cls.__name__}, got {type(request).__name__}")


def _id(value: Optional[Sequence[str]], what: str = "id") -> List[str]:
    if value is None:
        raise InvalidInputError(f"the request has no {what} (use [] for the root namespace)")
    if isinstance(value, str):
        raise InvalidInputError(f"{what} must be a list of names, e.g. ['prod', 'clicks'], not a string")
    return [str(v) for v in value]


def _table_id(value: Optional[Sequence[str]]) -> List[str]:
    ident = _id(value)
    if not ident:
        raise InvalidInputError("a table id needs at least one level (the table name)")
    return ident


def _properties_json(props: Optional[Dict[str, str]]) -> Optional[str]:
    if not props:
        return None
    return json.dumps({str(k): str(v) for k, v in props.items()}, separators=(",", ":"), ensure_ascii=False)


def _properties(text: Optional[str], where: str) -> Optional[Dict[str, str]]:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise CorruptFileError(f"corrupt namespace catalog: the metadata of {where} is not JSON ({e}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise CorruptFileError(f"corrupt namespace catalog: the metadata of {where} is not a JSON object: {text[:200]!r}")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _page(names: List[str], token: Optional[str], limit: Optional[int]) -> Tuple[List[str], Optional[str]]:
    """One page of sorted names: those after ``token`` (the last name of the
    previous page, as pylance's tokens are), at most ``limit``."""
    if token:
        names = [n for n in names if n > token]
    if limit is None:
        return names, None
    if limit <= 0:
        raise InvalidInputError(f"limit must be positive, got {limit}")
    page = names[:limit]
    return page, (page[-1] if len(names) > limit else None)


def _mode(value: Optional[str], allowed: Sequence[str], what: str) -> Optional[str]:
    if value is None:
        return None
    norm = value.replace("_", "").lower()
    for a in allowed:
        if norm == a.replace("_", ""):
            return a
    raise InvalidInputError(f"unknown {what} {value!r} (expected one of {', '.join(allowed)})")


def _reader(data: Any) -> Any:
    """Arrow IPC stream bytes, or any Arrow table/stream (pandas too)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return pa.ipc.open_stream(pa.BufferReader(bytes(data)))
        except pa.ArrowInvalid as e:
            raise InvalidInputError(f"request_data is not an Arrow IPC stream: {e}") from None
    from lancelet import _inputs

    return _inputs.stream(data)


class DirectoryNamespace(LanceNamespace):
    """A Lance directory namespace, interchangeable with pylance's
    ``lance.namespace.DirectoryNamespace`` (same properties, methods,
    request/response models and on-disk layout).

    Properties: ``root`` (required: a path, ``file://`` or ``s3://`` URI),
    ``manifest_enabled`` and ``dir_listing_enabled`` (default ``true``:
    compatibility mode; bools or strings), ``storage.<key>`` (object store
    options); ``storage_options={...}`` may be passed too. Other keys
    (pylance's ``inline_optimization_enabled``, ``session``, ...) are
    ignored.

    Every method takes its request model, a dict, or the request's fields
    as keywords: ``ns.list_tables(id=["prod"])``.
    """

    def __init__(self, storage_options: Optional[Dict[str, str]] = None, **properties: Any) -> None:
        root = properties.get("root")
        if root is None or not str(root).strip():
            raise InvalidInputError("DirectoryNamespace needs the property root (a directory path or URI)")
        manifest = parse_bool(properties.get("manifest_enabled", True), "manifest_enabled")
        listing = parse_bool(properties.get("dir_listing_enabled", True), "dir_listing_enabled")
        options = {k[len("storage."):]: str(v) for k, v in properties.items() if str(k).startswith("storage.")}
        if storage_options:
            options.update({str(k): str(v) for k, v in storage_options.items()})
        self._storage_options: Optional[Dict[str, str]] = options or None
        self._manifest_enabled = manifest
        self._dir_listing_enabled = listing
        self._native = _native.NativeDirNamespace(str(root), self._storage_options, manifest, listing)

    # -- identity ------------------------------------------------------------
    @property
    def root(self) -> str:
        """The root directory (local roots as an absolute path)."""
        return self._native.root_uri

    @property
    def storage_options(self) -> Optional[Dict[str, str]]:
        """The object store options of this namespace (also returned in
        describe/declare/create responses)."""
        return dict(self._storage_options) if self._storage_options else None

    def namespace_id(self) -> str:
        return (f"lancelet.DirectoryNamespace {{ root: {self.root!r}, manifest_enabled: {self._manifest_enabled}, "
                f"dir_listing_enabled: {self._dir_listing_enabled} }}")

    def __repr__(self) -> str:
        return f"DirectoryNamespace(root={self.root!r})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DirectoryNamespace) and other.namespace_id() == self.namespace_id()

    def __hash__(self) -> int:
        return hash(self.namespace_id())

    # -- namespaces ----------------------------------------------------------
    def list_namespaces(self, request: Optional[ListNamespacesRequest] = None, **fields: Any) -> ListNamespacesResponse:
        req = _request(ListNamespacesRequest, request, fields)
        names, token = _page(self._native.list_namespaces(_id(req.id)), req.page_token, req.limit)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    def describe_namespace(self, request: Optional[DescribeNamespaceRequest] = None,
                           **fields: Any) -> DescribeNamespaceResponse:
        req = _request(DescribeNamespaceRequest, request, fields)
        ident = _id(req.id)
        root_props, meta = self._native.describe_namespace(ident)
        props = dict(root_props) if root_props is not None else _properties(meta, f"namespace {ident}")
        return DescribeNamespaceResponse(properties=props)

    def create_namespace(self, request: Optional[CreateNamespaceRequest] = None,
                         **fields: Any) -> CreateNamespaceResponse:
        req = _request(CreateNamespaceRequest, request, fields)
        ident = _id(req.id)
        mode = _mode(req.mode, ("create", "exist_ok", "overwrite"), "create mode")
        root_props, meta = self._native.create_namespace(ident, _properties_json(req.properties), mode)
        props = dict(root_props) if root_props is not None else _properties(meta, f"namespace {ident}")
        return CreateNamespaceResponse(properties=props)

    def drop_namespace(self, request: Optional[DropNamespaceRequest] = None, **fields: Any) -> DropNamespaceResponse:
        req = _request(DropNamespaceRequest, request, fields)
        ident = _id(req.id)
        mode = _mode(req.mode, ("fail", "skip"), "drop mode")
        behavior = _mode(req.behavior, ("restrict", "cascade"), "drop behavior")
        self._native.drop_namespace(ident, mode == "skip", behavior == "cascade")
        return DropNamespaceResponse()

    def namespace_exists(self, request: Optional[NamespaceExistsRequest] = None,
                         **fields: Any) -> NamespaceExistsResponse:
        req = _request(NamespaceExistsRequest, request, fields)
        self._native.namespace_exists(_id(req.id))
        return NamespaceExistsResponse()

    # -- tables --------------------------------------------------------------
    def list_tables(self, request: Optional[ListTablesRequest] = None, **fields: Any) -> ListTablesResponse:
        req = _request(ListTablesRequest, request, fields)
        include_declared = True if req.include_declared is None else bool(req.include_declared)
        names, token = _page(self._native.list_tables(_id(req.id), include_declared), req.page_token, req.limit)
        return ListTablesResponse(tables=names, page_token=token)

    def describe_table(self, request: Optional[DescribeTableRequest] = None, **fields: Any) -> DescribeTableResponse:
        req = _request(DescribeTableRequest, request, fields)
        ident = _table_id(req.id)
        _, location, uri, meta, only_declared = self._native.describe_table(ident, bool(req.check_declared))
        version = None
        if req.load_detailed_metadata:
            version = self._latest_version(uri)
        return DescribeTableResponse(
            table=ident[-1],
            namespace=ident[:-1],
            location=uri,
            table_uri=uri,
            version=version,
            storage_options=self.storage_options,
            properties=_properties(meta, f"table {ident}"),
            is_only_declared=only_declared if req.check_declared else None,
        )

    def table_exists(self, request: Optional[TableExistsRequest] = None, **fields: Any) -> TableExistsResponse:
        req = _request(TableExistsRequest, request, fields)
        self._native.table_exists(_table_id(req.id))
        return TableExistsResponse()

    def declare_table(self, request: Optional[DeclareTableRequest] = None, **fields: Any) -> DeclareTableResponse:
        req = _request(DeclareTableRequest, request, fields)
        ident = _table_id(req.id)
        if req.location is not None:
            raise UnsupportedError("declare_table chooses the table's location itself; "
                                   "use register_table to add a table at a location of your choice")
        _, _, uri, meta, _ = self._native.declare_table(ident, _properties_json(req.properties))
        return DeclareTableResponse(location=uri, storage_options=self.storage_options,
                                    properties=_properties(meta, f"table {ident}"))

    def create_table(self, request: Optional[CreateTableRequest] = None, request_data: Any = None,
                     **fields: Any) -> CreateTableResponse:
        req = _request(CreateTableRequest, request, fields)
        ident = _table_id(req.id)
        if request_data is None:
            raise InvalidInputError("create_table needs request_data (Arrow IPC stream bytes or an Arrow table/stream)")
        mode = _mode(req.mode, ("create", "exist_ok", "overwrite"), "create mode")
        (_, _, uri, meta, _), version = self._native.create_table(ident, _reader(request_data),
                                                                   _properties_json(req.properties), mode)
        return CreateTableResponse(location=uri, version=version, storage_options=self.storage_options,
                                   properties=_properties(meta, f"table {ident}"))

    def register_table(self, request: Optional[RegisterTableRequest] = None, **fields: Any) -> RegisterTableResponse:
        req = _request(RegisterTableRequest, request, fields)
        ident = _table_id(req.id)
        mode = _mode(req.mode, ("create", "overwrite"), "register mode")
        _, location, _, meta, _ = self._native.register_table(ident, req.location, _properties_json(req.properties),
                                                              mode == "overwrite")
        return RegisterTableResponse(location=location, properties=_properties(meta, f"table {ident}"))

    def deregister_table(self, request: Optional[DeregisterTableRequest] = None,
                         **fields: Any) -> DeregisterTableResponse:
        req = _request(DeregisterTableRequest, request, fields)
        ident = _table_id(req.id)
        _, _, uri, meta, _ = self._native.deregister_table(ident)
        return DeregisterTableResponse(id=ident, location=uri, properties=_properties(meta, f"table {ident}"))

    def drop_table(self, request: Optional[DropTableRequest] = None, **fields: Any) -> DropTableResponse:
        req = _request(DropTableRequest, request, fields)
        ident = _table_id(req.id)
        _, _, uri, meta, _ = self._native.drop_table(ident)
        return DropTableResponse(id=ident, location=uri, properties=_properties(meta, f"table {ident}"))

    def rename_table(self, request: Optional[RenameTableRequest] = None, **fields: Any) -> RenameTableResponse:
        req = _request(RenameTableRequest, request, fields)
        ident = _table_id(req.id)
        new_ns = None if req.new_namespace_id is None else _id(req.new_namespace_id, "new_namespace_id")
        self._native.rename_table(ident, str(req.new_table_name), new_ns)
        return RenameTableResponse()

    def count_table_rows(self, request: Optional[CountTableRowsRequest] = None,
                         **fields: Any) -> CountTableRowsResponse:
        req = _request(CountTableRowsRequest, request, fields)
        ident = _table_id(req.id)
        _, _, uri, _, _ = self._native.describe_table(ident, False)
        import lancelet

        ds = lancelet.dataset(uri, version=req.version, storage_options=self.storage_options)
        return CountTableRowsResponse(count=ds.count_rows(filter=req.predicate))

    # -- helpers -------------------------------------------------------------
    def _latest_version(self, uri: str) -> Optional[int]:
        import lancelet
        from lancelet.exceptions import NotFoundError

        try:
            return lancelet.dataset(uri, storage_options=self.storage_options).version
        except NotFoundError:
            return None  # declared only
