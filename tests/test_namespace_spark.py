"""The Spark data source on catalog tables: ``namespace.root`` +
``table_id`` instead of a path, ``namespace.<property>`` passed on,
writing to a missing id creates it; pylance reads what Spark wrote."""

from __future__ import annotations

import lance_namespace as ln
import pytest
from nshelp import both, ipc, table

import lancelet
import lancelet.namespace as lns

pytestmark = pytest.mark.spark
lance = pytest.importorskip("lance")


def test_read_and_write_catalog_tables(spark, tmp_path):
    root = str(tmp_path)
    ours, theirs = both(root)
    theirs.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    theirs.create_table(ln.CreateTableRequest(id=["prod", "clicks"]), ipc(table(0, 20)))
    df = spark.read.format("lancelet").option("namespace.root", root).option("table_id", "prod.clicks").load()
    assert sorted(r.x for r in df.collect()) == list(range(20))
    # append to it, and create a new table by writing to a missing id
    (spark.range(20, 25).selectExpr("id as x", "concat('v', cast(id as string)) as s")
     .write.format("lancelet").mode("append").option("namespace.root", root).option("table_id", "prod.clicks").save())
    assert lance.dataset(namespace_client=theirs, table_id=["prod", "clicks"]).count_rows() == 25
    (spark.range(3).selectExpr("id").write.format("lancelet").mode("append")
     .option("namespace.root", root).option("table_id", '["prod", "new.one"]').save())
    assert theirs.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["clicks", "new.one"]
    assert sorted(lance.dataset(namespace_client=theirs, table_id=["prod", "new.one"]).to_table()["id"].to_pylist()) \
        == [0, 1, 2]
    # namespace properties pass through (V1 mode: root tables only)
    (spark.range(2).selectExpr("id").write.format("lancelet").mode("overwrite")
     .option("namespace.root", str(tmp_path / "v1")).option("namespace.manifest_enabled", "false")
     .option("table_id", "flat").save())
    assert sorted(p.name for p in (tmp_path / "v1").iterdir()) == ["flat.lance"]


def test_missing_table_and_bad_options(spark, tmp_path):
    root = str(tmp_path)
    lns.DirectoryNamespace(root=root).create_namespace(id=["p"])
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format("lancelet").option("namespace.root", root).option("table_id", "p.nope").load().collect()
    with pytest.raises(Exception, match="go together"):
        spark.read.format("lancelet").option("table_id", "p.nope").load().collect()
    with pytest.raises(Exception, match="not both"):
        spark.read.format("lancelet").option("namespace.root", root).option("table_id", "p.t").load(root).collect()
    # a failed write to a new id takes the declaration back
    lancelet.write_dataset(table(), namespace_client=lns.DirectoryNamespace(root=root), table_id=["p", "ok"])
    with pytest.raises(Exception):  # noqa: B017 (Spark's own exception class)
        (spark.createDataFrame([(1,)], "x int").selectExpr("raise_error('boom') as x").write.format("lancelet")
         .mode("append").option("namespace.root", root).option("table_id", "p.fails").save())
    assert lns.DirectoryNamespace(root=root).list_tables(id=["p"]).tables == ["ok"]
