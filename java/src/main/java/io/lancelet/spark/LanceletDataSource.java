package io.lancelet.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("lancelet")} on the JVM: a DataSource V2 table provider over
 * lancelet's Rust core (through {@code liblancelet_jni}).
 *
 * <p>Registered under the short name {@code lancelet} (META-INF/services).
 * Spark 4 resolves a short name from the JVM's {@code DataSourceRegister}s
 * first and falls back to a Python data source of that name only when no JVM
 * one exists, so with this jar on the classpath (see
 * {@code lancelet.spark.configure}) {@code format("lancelet")} is this
 * connector, and the Python data source otherwise. The full class name
 * {@code io.lancelet.spark.LanceletDataSource} always names this one.
 */
public final class LanceletDataSource implements TableProvider, DataSourceRegister {

  @Override
  public String shortName() {
    return "lancelet";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    LanceletOptions opts = LanceletOptions.parse(options.asCaseSensitiveMap());
    try (NativeDataset ds = opts.open(-1)) {
      return LanceletTable.schemaOf(ds, opts);
    }
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new LanceletTable(LanceletOptions.parse(properties), schema);
  }
}
