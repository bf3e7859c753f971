"""Makes ``format("lancelet_tiledb")`` available in every PySpark 4 session
without ``lancelet.spark.register``: PySpark registers the ``DefaultSource``
of any importable top-level package whose name starts with ``pyspark_``."""

from lancelet.spark.tiledb_source import LanceletTileDBDataSource as DefaultSource

__all__ = ["DefaultSource"]
