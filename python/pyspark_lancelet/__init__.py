"""Makes ``format("lancelet")`` available in every PySpark 4 session
without ``lancelet.spark.register``: PySpark registers the ``DefaultSource``
of any importable top-level package whose name starts with ``pyspark_``."""

from lancelet.spark.source import LanceletDataSource as DefaultSource

__all__ = ["DefaultSource"]
