package io.lancelet.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Plans one read: the columns Spark needs (top level; metadata columns
 * appended), the predicates lancelet evaluates exactly as Spark
 * ({@link FilterSql}), a limit per partition (and, without filters, only as
 * many partitions as the limit needs), and {@code COUNT(*)} answered on the
 * driver (from metadata without a filter, else by lancelet's counting scan,
 * which uses scalar indices). The version is pinned when the builder first
 * opens the dataset; every partition reads that version.
 */
final class LanceletScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns,
    SupportsPushDownV2Filters, SupportsPushDownLimit, SupportsPushDownAggregates {
  private final LanceletOptions opts;
  private final StructType tableSchema;
  private StructType required;
  private final List<Predicate> pushed = new ArrayList<>();
  private final List<String> pushedSql = new ArrayList<>();
  private int limit = -1;
  private boolean countStar;
  /** The version read, once the dataset was opened. */
  private long pinned = -1;
  private Schema arrowSchema;
  private Map<List<String>, String> kinds;

  LanceletScanBuilder(LanceletOptions opts, StructType tableSchema) {
    this.opts = opts;
    this.tableSchema = tableSchema;
    this.required = tableSchema;
  }

  /** Open the pinned version (pinning it on first use) and read what planning needs. */
  private NativeDataset open() {
    NativeDataset ds = opts.open(pinned);
    if (pinned < 0) {
      pinned = ds.version();
      arrowSchema = ds.sparkSchema();
      kinds = ds.columnKinds();
    }
    return ds;
  }

  private void ensureOpen() {
    if (pinned < 0) {
      open().close();
    }
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    ensureOpen();
    List<Predicate> rest = new ArrayList<>();
    for (Predicate p : predicates) {
      String sql = FilterSql.toSql(p, kinds);
      if (sql == null) {
        rest.add(p);
      } else {
        pushed.add(p);
        pushedSql.add("(" + sql + ")");
      }
    }
    return rest.toArray(new Predicate[0]);
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed.toArray(new Predicate[0]);
  }

  @Override
  public boolean pushLimit(int n) {
    this.limit = n;
    return true;
  }

  @Override
  public boolean isPartiallyPushed() {
    return true; // each partition stops at the limit; Spark applies the global one
  }

  private static boolean onlyCountStar(Aggregation a) {
    AggregateFunc[] fs = a.aggregateExpressions();
    return a.groupByExpressions().length == 0 && fs.length == 1 && fs[0] instanceof CountStar;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return onlyCountStar(aggregation);
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    countStar = onlyCountStar(aggregation);
    return countStar;
  }

  /** The user's filter option and the pushed predicates, as one lancelet SQL filter (or null). */
  private String filter() {
    List<String> parts = new ArrayList<>();
    if (opts.filter != null) {
      parts.add("(" + opts.filter + ")");
    }
    parts.addAll(pushedSql);
    return parts.isEmpty() ? null : String.join(" AND ", parts);
  }

  @Override
  public Scan build() {
    String filter = filter();
    if (countStar) {
      try (NativeDataset ds = open()) {
        return new LanceletCountScan(ds.countRows(filter), opts.uri, pinned, filter);
      }
    }
    ensureOpen();
    List<String> data = new ArrayList<>();
    List<Field> arrowFields = new ArrayList<>();
    List<StructField> sparkFields = new ArrayList<>();
    boolean[] meta = new boolean[Schemas.METADATA.length];
    for (StructField f : required.fields()) {
      int m = Arrays.asList(Schemas.METADATA).indexOf(f.name());
      if (m >= 0 && tableSchema.getFieldIndex(f.name()).isEmpty()) {
        meta[m] = true;
      } else {
        // Top-level columns are read whole: Spark prunes nested fields itself.
        data.add(f.name());
        arrowFields.add(Schemas.find(arrowSchema, f.name()));
        sparkFields.add(tableSchema.apply(f.name()));
      }
    }
    for (int m = 0; m < meta.length; m++) {
      if (meta[m]) {
        arrowFields.add(Schemas.metadataArrowField(Schemas.METADATA[m]));
        sparkFields.add(Schemas.metadataField(Schemas.METADATA[m]));
      }
    }
    ScanSpec spec = new ScanSpec(opts, pinned, data.toArray(new String[0]), filter, limit, meta[0], meta[1],
        meta[2], new Schema(arrowFields).toJson(), tableSchema.fields().length);
    return new LanceletScan(spec, new StructType(sparkFields.toArray(new StructField[0])), pushed);
  }
}
