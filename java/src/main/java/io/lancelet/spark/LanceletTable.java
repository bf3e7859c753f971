package io.lancelet.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A Lance dataset read through lancelet, with metadata columns {@code _rowid, _rowaddr, _fragid}. */
final class LanceletTable implements SupportsRead, SupportsMetadataColumns {
  private final LanceletOptions opts;
  private final StructType schema;

  LanceletTable(LanceletOptions opts, StructType schema) {
    this.opts = opts;
    this.schema = schema;
  }

  /** The Spark schema of the dataset (projected to the columns option). */
  static StructType schemaOf(NativeDataset ds, LanceletOptions opts) {
    Schema arrow = ds.sparkSchema();
    if (opts.columns != null) {
      arrow = Schemas.project(arrow, opts.columns, opts.uri);
    }
    return Schemas.toSpark(arrow);
  }

  @Override
  public String name() {
    return "lancelet:" + opts.uri;
  }

  @Override
  @SuppressWarnings("deprecation") // columns() is derived from it by Spark
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new LanceletScanBuilder(opts, schema);
  }

  @Override
  public MetadataColumn[] metadataColumns() {
    MetadataColumn[] out = new MetadataColumn[Schemas.METADATA.length];
    for (int i = 0; i < out.length; i++) {
      String n = Schemas.METADATA[i];
      out[i] = new MetadataColumn() {
        @Override
        public String name() {
          return n;
        }

        @Override
        public DataType dataType() {
          return n.equals(Schemas.FRAG_ID) ? DataTypes.IntegerType : DataTypes.LongType;
        }

        @Override
        public boolean isNullable() {
          return false;
        }
      };
    }
    return out;
  }
}
