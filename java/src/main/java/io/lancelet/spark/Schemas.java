package io.lancelet.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/** Arrow schemas from the JNI library as Spark schemas, and the metadata columns. */
final class Schemas {
  private Schemas() {}

  /** Field metadata key carrying a fixed-size list's dimension (as lance-spark and the Python source). */
  static final String FSL_SIZE_KEY = "arrow.fixed-size-list.size";

  static final String ROW_ID = "_rowid";
  static final String ROW_ADDR = "_rowaddr";
  static final String FRAG_ID = "_fragid";

  /** The metadata columns, in the order a scan appends them. */
  static final String[] METADATA = {ROW_ID, ROW_ADDR, FRAG_ID};

  /** The Arrow field of metadata column {@code name}. */
  static Field metadataArrowField(String name) {
    ArrowType t = name.equals(FRAG_ID) ? new ArrowType.Int(32, true) : new ArrowType.Int(64, true);
    return new Field(name, FieldType.notNullable(t), null);
  }

  /** The Spark field of metadata column {@code name}. */
  static StructField metadataField(String name) {
    return new StructField(name, name.equals(FRAG_ID) ? DataTypes.IntegerType : DataTypes.LongType, false,
        Metadata.empty());
  }

  /** The Spark schema of a Spark-readable Arrow schema (vector dimensions kept as metadata). */
  static StructType toSpark(Schema arrow) {
    List<StructField> out = new ArrayList<>();
    for (Field f : arrow.getFields()) {
      Metadata meta = Metadata.empty();
      String dim = f.getMetadata().get(FSL_SIZE_KEY);
      if (dim != null) {
        meta = new MetadataBuilder().putLong(FSL_SIZE_KEY, Long.parseLong(dim)).build();
      }
      out.add(new StructField(f.getName(), ArrowUtils.fromArrowField(f), f.isNullable(), meta));
    }
    return new StructType(out.toArray(new StructField[0]));
  }

  /** The fields of {@code arrow} named {@code names}, in that order; unknown names are errors. */
  static Schema project(Schema arrow, List<String> names, String uri) {
    List<Field> out = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (String n : names) {
      Field f = find(arrow, n);
      if (f == null) {
        missing.add(n);
      } else {
        out.add(f);
      }
    }
    if (!missing.isEmpty()) {
      List<String> has = new ArrayList<>();
      arrow.getFields().forEach(f -> has.add(f.getName()));
      throw new IllegalArgumentException("columns " + missing + " are not in " + uri + " (has " + has + ")");
    }
    return new Schema(out);
  }

  static Field find(Schema arrow, String name) {
    for (Field f : arrow.getFields()) {
      if (f.getName().equals(name)) {
        return f;
      }
    }
    return null;
  }
}
