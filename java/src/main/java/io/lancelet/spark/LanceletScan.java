package io.lancelet.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;

/**
 * A columnar batch scan of one pinned version: one partition per fragment,
 * or per slice of {@code rows_per_partition} physical rows of a larger one.
 */
final class LanceletScan implements Scan, Batch, SupportsReportStatistics {
  /** Per-slice values of the plan. */
  private static final int SLICE = 5;
  private final ScanSpec spec;
  private final StructType schema;
  private final List<Predicate> pushed;

  LanceletScan(ScanSpec spec, StructType schema, List<Predicate> pushed) {
    this.spec = spec;
    this.schema = schema;
    this.pushed = pushed;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "LanceletScan " + spec.uri + " version=" + spec.version + " columns=" + String.join(",", spec.columns)
        + (spec.filter == null ? "" : " filter=" + spec.filter) + (spec.limit < 0 ? "" : " limit=" + spec.limit)
        + " pushed=" + pushed;
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return ColumnarSupportMode.SUPPORTED;
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    // With a limit and no filter, live row counts say how many slices hold
    // enough rows; the rest are never read.
    boolean byLimit = spec.limit >= 0 && spec.filter == null;
    long[] q;
    try (NativeDataset ds = spec.open()) {
      q = ds.plan(spec.rowsPerPartition, byLimit);
    }
    List<InputPartition> out = new ArrayList<>();
    long rows = 0;
    for (int i = 0; i + SLICE - 1 < q.length; i += SLICE) {
      if (byLimit) {
        if (rows >= spec.limit) {
          break;
        }
        if (q[i + 3] == 0) {
          continue;
        }
        rows += q[i + 3];
      }
      out.add(new LanceletPartition(spec, q[i], q[i + 1], q[i + 2]));
    }
    return out.toArray(new InputPartition[0]);
  }

  /**
   * Rows and bytes of the version read (before filters), the bytes scaled to
   * the share of columns read: what Spark's planner weighs joins with.
   */
  @Override
  public Statistics estimateStatistics() {
    long[] q;
    try (NativeDataset ds = spec.open()) {
      q = ds.plan(spec.rowsPerPartition, false);
    }
    long rows = 0;
    long bytes = 0;
    for (int i = 0; i + SLICE - 1 < q.length; i += SLICE) {
      rows += q[i + 3];
      bytes += q[i + 4];
    }
    double share = spec.totalColumns == 0 ? 1.0 : Math.max(1, spec.columns.length) / (double) spec.totalColumns;
    long size = Math.max(1, (long) (bytes * Math.min(1.0, share)));
    long n = rows;
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(size);
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.of(n);
      }
    };
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new LanceletReaderFactory();
  }
}
