package io.lancelet.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The options of {@code format("lancelet")}, parsed once; the same names and
 * meanings as the Python data source ({@code lancelet.spark.source}):
 * {@code path} (or {@code uri}), {@code version} (a number or a tag),
 * {@code columns} (comma-separated), {@code filter} (lancelet SQL),
 * {@code batch_size}, {@code rows_per_partition},
 * {@code storage_options.<key>}. {@code pushdown} is accepted and ignored:
 * this connector always pushes the filters lancelet evaluates exactly as
 * Spark does.
 */
final class LanceletOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Physical rows per Spark partition (a larger fragment is split), as in Python. */
  static final long DEFAULT_ROWS_PER_PARTITION = 1L << 20;

  final String uri;
  /** A pinned version number, or -1. */
  final long version;
  /** A tag, or null. */
  final String tag;
  /** The columns option, or null. */
  final List<String> columns;
  final String filter;
  /** Rows per batch, or 0 for lancelet's default. */
  final int batchSize;
  final long rowsPerPartition;
  final TreeMap<String, String> storage;

  private LanceletOptions(String uri, long version, String tag, List<String> columns, String filter,
      int batchSize, long rowsPerPartition, TreeMap<String, String> storage) {
    this.uri = uri;
    this.version = version;
    this.tag = tag;
    this.columns = columns;
    this.filter = filter;
    this.batchSize = batchSize;
    this.rowsPerPartition = rowsPerPartition;
    this.storage = storage;
  }

  /** Parse (option names are case-insensitive); bad values are IllegalArgumentExceptions. */
  static LanceletOptions parse(Map<String, String> options) {
    TreeMap<String, String> opts = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      opts.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    String uri = opts.get("path");
    if (uri == null || uri.isEmpty()) {
      uri = opts.get("uri");
    }
    if (opts.containsKey("table_id") || opts.keySet().stream().anyMatch(k -> k.startsWith("namespace."))) {
      throw new IllegalArgumentException("the JVM lancelet connector reads tables by URI; namespace.* / "
          + "table_id options are served by the Python data source (do not call lancelet.spark.configure)");
    }
    if (uri == null || uri.isEmpty()) {
      throw new IllegalArgumentException(
          "the lancelet data source needs a dataset URI (.load(uri) or the option path)");
    }
    long version = -1;
    String tag = null;
    String v = opts.get("version");
    if (v != null && !v.isEmpty()) {
      if (v.chars().allMatch(Character::isDigit)) {
        try {
          version = Long.parseLong(v);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("option version: " + v + " is too large");
        }
      } else {
        tag = v;
      }
    }
    List<String> columns = null;
    String cols = opts.get("columns");
    if (cols != null && !cols.trim().isEmpty()) {
      columns = new ArrayList<>();
      for (String c : cols.split(",")) {
        if (!c.trim().isEmpty()) {
          columns.add(c.trim());
        }
      }
      columns = Collections.unmodifiableList(columns);
    }
    String filter = opts.get("filter");
    if (filter != null && filter.trim().isEmpty()) {
      filter = null;
    }
    long batch = positive(opts, "batch_size", 0);
    if (batch > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("option batch_size must be at most " + Integer.MAX_VALUE + ", got " + batch);
    }
    long rpp = positive(opts, "rows_per_partition", DEFAULT_ROWS_PER_PARTITION);
    flag(opts, "pushdown");
    TreeMap<String, String> storage = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      String k = e.getKey();
      if (k.toLowerCase(Locale.ROOT).startsWith("storage_options.")) {
        storage.put(k.substring("storage_options.".length()), e.getValue());
      }
    }
    return new LanceletOptions(uri, version, tag, columns, filter, (int) batch, rpp, storage);
  }

  private static long positive(Map<String, String> opts, String key, long dflt) {
    String v = opts.get(key);
    if (v == null) {
      return dflt;
    }
    long n;
    try {
      n = Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("option " + key + " must be an integer, got '" + v + "'");
    }
    if (n <= 0) {
      throw new IllegalArgumentException("option " + key + " must be positive, got " + n);
    }
    return n;
  }

  private static boolean flag(Map<String, String> opts, String key) {
    String v = opts.getOrDefault(key, "false").trim().toLowerCase(Locale.ROOT);
    if (!v.equals("true") && !v.equals("false")) {
      throw new IllegalArgumentException("option " + key + " must be true or false, got '" + v + "'");
    }
    return v.equals("true");
  }

  /** Open the dataset at the option's version (or at {@code pinned} when >= 0). */
  NativeDataset open(long pinned) {
    long v = pinned >= 0 ? pinned : version;
    return NativeDataset.open(uri, v, v >= 0 ? null : tag, storage);
  }
}
