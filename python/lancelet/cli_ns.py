"""``lancelet ns``: directory namespaces from the command line.

    lancelet ns namespaces ROOT [ID]        child namespaces of ID (default: the root)
    lancelet ns tables ROOT [ID]            tables in namespace ID
    lancelet ns describe ROOT ID            a table: id, location, version, properties
    lancelet ns create-namespace ROOT ID [-p KEY=VALUE]...
    lancelet ns register ROOT ID LOCATION   add the table at LOCATION (relative to ROOT)
    lancelet ns rename ROOT ID NEW [--to NS_ID]
    lancelet ns deregister ROOT ID          forget a table, keep its data
    lancelet ns drop ROOT ID                forget a table and delete its data
    lancelet ns drop-namespace ROOT ID      drop an empty namespace

ID is ``a.b.c`` or a JSON list (``'["a", "b.c"]'``); an empty ID is the
root. Options: ``--manifest-enabled``/``--dir-listing-enabled`` (true or
false, as the namespace properties), ``-o KEY=VALUE`` (object store
options), ``--json``. Lists print a name per line (``--json``: a JSON
list). The namespace module is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional

__all__ = ["add_parser"]


def _pairs(items: List[str], what: str) -> Dict[str, str]:
    from lancelet.exceptions import InvalidInputError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def _namespace(args: argparse.Namespace) -> Any:
    from lancelet.namespace import DirectoryNamespace

    return DirectoryNamespace(root=args.root, manifest_enabled=args.manifest_enabled,
                              dir_listing_enabled=args.dir_listing_enabled,
                              storage_options=_pairs(args.storage_option, "--storage-option") or None)


def _id(text: Optional[str]) -> List[str]:
    from lancelet.namespace.resolve import parse_id

    return parse_id(text or "")


def _print_names(names: List[str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(names))
    else:
        for n in names:
            print(n)


def _cmd_namespaces(args: argparse.Namespace) -> int:
    ns = _namespace(args)
    _print_names(ns.list_namespaces(id=_id(args.id)).namespaces, args.json)
    return 0


def _cmd_tables(args: argparse.Namespace) -> int:
    ns = _namespace(args)
    _print_names(ns.list_tables(id=_id(args.id)).tables, args.json)
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    ns = _namespace(args)
    ident = _id(args.id)
    d = ns.describe_table(id=ident, load_detailed_metadata=True)
    info = {"id": ident, "location": d.location, "version": d.version, "properties": d.properties or {}}
    if args.json:
        print(json.dumps(info))
    else:
        print(f"id          {'.'.join(ident)}")
        print(f"location    {d.location}")
        print(f"version     {'-' if d.version is None else d.version}  " + ("" if d.version is not None else "(declared, no data yet)"))
        print(f"properties  {json.dumps(info['properties']) if info['properties'] else '-'}")
    return 0


def _cmd_create_namespace(args: argparse.Namespace) -> int:
    _namespace(args).create_namespace(id=_id(args.id), properties=_pairs(args.property, "--property") or None)
    return 0


def _cmd_register(args: argparse.Namespace) -> int:
    _namespace(args).register_table(id=_id(args.id), location=args.location)
    return 0


def _cmd_rename(args: argparse.Namespace) -> int:
    to = None if args.to is None else _id(args.to)
    _namespace(args).rename_table(id=_id(args.id), new_table_name=args.new, new_namespace_id=to)
    return 0


def _cmd_deregister(args: argparse.Namespace) -> int:
    _namespace(args).deregister_table(id=_id(args.id))
    return 0


def _cmd_drop(args: argparse.Namespace) -> int:
    _namespace(args).drop_table(id=_id(args.id))
    return 0


def _cmd_drop_namespace(args: argparse.Namespace) -> int:
    _namespace(args).drop_namespace(id=_id(args.id))
    return 0


def _bool(text: str) -> bool:
    v = text.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_parser(sub: Any, parser_class: Any) -> None:
    """Add ``ns`` and its commands to the ``lancelet`` subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--manifest-enabled", type=_bool, default=True, metavar="BOOL",
                        help="use the __manifest catalog (V2); default true")
    common.add_argument("--dir-listing-enabled", type=_bool, default=True, metavar="BOOL",
                        help="treat <name>.lance directories as root tables (V1); default true")
    common.add_argument("-o", "--storage-option", action="append", default=[], metavar="KEY=VALUE",
                        help="object store option (repeatable), as pylance's storage_options")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    p = sub.add_parser("ns", help="directory namespaces: list, describe, create, register, rename, drop")
    cmds = p.add_subparsers(dest="ns_command", metavar="COMMAND", parser_class=parser_class)
    cmds.required = True

    def cmd(name: str, func: Any, help: str, id_optional: bool = False) -> argparse.ArgumentParser:
        c = cmds.add_parser(name, parents=[common], help=help)
        c.add_argument("root", help="namespace root (path, file:// or s3:// URI)")
        if id_optional:
            c.add_argument("id", nargs="?", default="", help="namespace id: a.b.c or a JSON list (default: the root)")
        else:
            c.add_argument("id", help="id: a.b.c or a JSON list")
        c.set_defaults(func=func)
        return c

    cmd("namespaces", _cmd_namespaces, "child namespaces of a namespace", id_optional=True)
    cmd("tables", _cmd_tables, "tables of a namespace", id_optional=True)
    cmd("describe", _cmd_describe, "a table's location, version and properties")
    c = cmd("create-namespace", _cmd_create_namespace, "create a namespace")
    c.add_argument("-p", "--property", action="append", default=[], metavar="KEY=VALUE", help="namespace property")
    c = cmd("register", _cmd_register, "register the table at LOCATION (relative to the root)")
    c.add_argument("location", help="table directory relative to the root")
    c = cmd("rename", _cmd_rename, "rename a table (its data stays in place)")
    c.add_argument("new", help="the new table name")
    c.add_argument("--to", metavar="NS_ID", help="move it to this namespace (default: its own)")
    cmd("deregister", _cmd_deregister, "remove a table from the catalog, keep its data")
    cmd("drop", _cmd_drop, "remove a table and delete its data")
    cmd("drop-namespace", _cmd_drop_namespace, "drop an empty namespace")
