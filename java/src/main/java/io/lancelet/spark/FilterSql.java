package io.lancelet.spark;

import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's V2 predicates as lancelet SQL, the rules of the Python source's
 * {@code lancelet.spark.filters}: a predicate is pushed only when lancelet
 * evaluates it exactly as Spark does (it then leaves Spark's plan), so
 * anything doubtful is handed back: floats (Spark's -0.0 = 0.0 and NaN
 * ordering), timestamps, binary, decimals, widened Lance types (unsigned
 * integers), LIKE patterns that would need escaping, IN lists holding NULL.
 * Unlike the Python API, V2 predicates also bring OR (pushed when both sides
 * are) and literal-first comparisons.
 *
 * <p>Column kinds come from the dataset's Lance schema
 * ({@link NativeDataset#columnKinds}): {@code int8..int64}, {@code bool},
 * {@code string}, {@code date32} or {@code other}.
 */
final class FilterSql {
  private FilterSql() {}

  private static final List<String> CMP = Arrays.asList("=", "<>", "<", "<=", ">", ">=");

  /** The SQL of {@code p}, or null when it must be left to Spark. */
  static String toSql(Predicate p, Map<List<String>, String> kinds) {
    Expression[] c = p.children();
    switch (p.name()) {
      case "AND":
      case "OR": {
        String l = sub(c[0], kinds);
        String r = sub(c[1], kinds);
        return l == null || r == null ? null : "(" + l + ") " + p.name() + " (" + r + ")";
      }
      case "NOT": {
        String inner = sub(c[0], kinds);
        return inner == null ? null : "NOT (" + inner + ")";
      }
      case "ALWAYS_TRUE":
        return "TRUE";
      case "ALWAYS_FALSE":
        return "FALSE";
      case "IS_NULL":
      case "IS_NOT_NULL": {
        Col col = column(c[0], kinds);
        return col == null ? null : col.ref + (p.name().equals("IS_NULL") ? " IS NULL" : " IS NOT NULL");
      }
      case "<=>": {
        Col col = column(c[0], kinds);
        Expression other = c[1];
        if (col == null) {
          col = column(c[1], kinds);
          other = c[0];
        }
        if (col == null || !(other instanceof Literal)) {
          return null;
        }
        if (((Literal<?>) other).value() == null) {
          return col.ref + " IS NULL";
        }
        String lit = literal((Literal<?>) other, col.kind);
        return lit == null ? null : "(" + col.ref + " IS NOT NULL AND " + col.ref + " = " + lit + ")";
      }
      case "IN": {
        Col col = column(c[0], kinds);
        if (col == null || c.length < 2) {
          return null;
        }
        List<String> lits = new ArrayList<>();
        for (int i = 1; i < c.length; i++) {
          if (!(c[i] instanceof Literal) || ((Literal<?>) c[i]).value() == null) {
            return null; // a NULL in the list makes NOT IN null for every row
          }
          String lit = literal((Literal<?>) c[i], col.kind);
          if (lit == null) {
            return null;
          }
          lits.add(lit);
        }
        return col.ref + " IN (" + String.join(", ", lits) + ")";
      }
      case "STARTS_WITH":
        return like(c, kinds, "", "%");
      case "ENDS_WITH":
        return like(c, kinds, "%", "");
      case "CONTAINS":
        return like(c, kinds, "%", "%");
      default:
        if (CMP.contains(p.name()) && c.length == 2) {
          return comparison(p.name(), c[0], c[1], kinds);
        }
        return null;
    }
  }

  private static String sub(Expression e, Map<List<String>, String> kinds) {
    return e instanceof Predicate ? toSql((Predicate) e, kinds) : null;
  }

  private static String comparison(String op, Expression a, Expression b, Map<List<String>, String> kinds) {
    Col col = column(a, kinds);
    Expression other = b;
    if (col == null) {
      // literal first: 5 < x is x > 5
      col = column(b, kinds);
      other = a;
      switch (op) {
        case "<": op = ">"; break;
        case "<=": op = ">="; break;
        case ">": op = "<"; break;
        case ">=": op = "<="; break;
        default: break;
      }
    }
    if (col == null || !(other instanceof Literal)) {
      return null;
    }
    String lit = literal((Literal<?>) other, col.kind);
    return lit == null ? null : col.ref + " " + op + " " + lit;
  }

  private static String like(Expression[] c, Map<List<String>, String> kinds, String pre, String post) {
    Col col = column(c[0], kinds);
    if (col == null || !col.kind.equals("string") || !(c[1] instanceof Literal)) {
      return null;
    }
    Object v = ((Literal<?>) c[1]).value();
    if (!(v instanceof UTF8String)) {
      return null;
    }
    String s = v.toString();
    if (s.contains("%") || s.contains("_") || s.contains("\\")) {
      return null;
    }
    return col.ref + " LIKE '" + pre + s.replace("'", "''") + post + "'";
  }

  private static final class Col {
    final String ref;
    final String kind;

    Col(String ref, String kind) {
      this.ref = ref;
      this.kind = kind;
    }
  }

  /** A column reference of a pushable kind (null tests take any kind but "missing"). */
  private static Col column(Expression e, Map<List<String>, String> kinds) {
    if (!(e instanceof NamedReference)) {
      return null;
    }
    List<String> path = Arrays.asList(((NamedReference) e).fieldNames());
    String kind = kinds.get(path);
    if (kind == null) {
      return null; // a metadata column or an unknown name: Spark evaluates it
    }
    StringBuilder ref = new StringBuilder();
    for (String n : path) {
      if (ref.length() > 0) {
        ref.append('.');
      }
      ref.append('`').append(n.replace("`", "``")).append('`');
    }
    return new Col(ref.toString(), kind);
  }

  private static boolean fits(long v, String kind) {
    switch (kind) {
      case "int8": return v >= Byte.MIN_VALUE && v <= Byte.MAX_VALUE;
      case "int16": return v >= Short.MIN_VALUE && v <= Short.MAX_VALUE;
      case "int32": return v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
      default: return true;
    }
  }

  /** The SQL literal of {@code lit} compared with a column of {@code kind}, or null. */
  static String literal(Literal<?> lit, String kind) {
    Object v = lit.value();
    DataType t = lit.dataType();
    if (v == null) {
      return null;
    }
    switch (kind) {
      case "int8":
      case "int16":
      case "int32":
      case "int64":
        if ((v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long)
            && !(t instanceof DateType)) {
          long n = ((Number) v).longValue();
          return fits(n, kind) ? Long.toString(n) : null;
        }
        return null;
      case "bool":
        return v instanceof Boolean ? (((Boolean) v) ? "TRUE" : "FALSE") : null;
      case "string":
        return v instanceof UTF8String ? "'" + v.toString().replace("'", "''") + "'" : null;
      case "date32":
        return t.equals(DataTypes.DateType) && v instanceof Integer
            ? "DATE '" + LocalDate.ofEpochDay((Integer) v) + "'" : null;
      default:
        return null;
    }
  }
}
