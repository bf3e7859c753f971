package io.lancelet.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** {@code COUNT(*)} answered on the driver: one row, no task. */
final class LanceletCountScan implements LocalScan {
  private final long count;
  private final String what;

  LanceletCountScan(long count, String uri, long version, String filter) {
    this.count = count;
    this.what = "LanceletCount " + uri + " version=" + version + (filter == null ? "" : " filter=" + filter);
  }

  @Override
  public StructType readSchema() {
    return new StructType().add("count(*)", DataTypes.LongType, false);
  }

  @Override
  public InternalRow[] rows() {
    return new InternalRow[] {new GenericInternalRow(new Object[] {count})};
  }

  @Override
  public String description() {
    return what + " = " + count;
  }
}
