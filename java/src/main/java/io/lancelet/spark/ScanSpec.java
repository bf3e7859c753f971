package io.lancelet.spark;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;

/** What every partition of one scan reads (sent to the executors with each partition). */
final class ScanSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  final String uri;
  final long version;
  final TreeMap<String, String> storage;
  final String[] columns;
  final String filter;
  final int batchSize;
  final long rowsPerPartition;
  /** Rows per partition at most, or -1. */
  final long limit;
  final boolean rowId;
  final boolean rowAddr;
  final boolean fragId;
  /** Data columns of the table (for statistics). */
  final int totalColumns;
  /** The Arrow schema of the batches (data columns in Spark's layouts, then metadata columns). */
  final String arrowSchemaJson;

  ScanSpec(LanceletOptions opts, long version, String[] columns, String filter, long limit, boolean rowId,
      boolean rowAddr, boolean fragId, String arrowSchemaJson, int totalColumns) {
    this.uri = opts.uri;
    this.version = version;
    this.storage = new TreeMap<>(opts.storage);
    this.columns = columns;
    this.filter = filter;
    this.batchSize = opts.batchSize;
    this.rowsPerPartition = opts.rowsPerPartition;
    this.limit = limit;
    this.rowId = rowId;
    this.rowAddr = rowAddr;
    this.fragId = fragId;
    this.arrowSchemaJson = arrowSchemaJson;
    this.totalColumns = totalColumns;
  }

  NativeDataset open() {
    Map<String, String> s = storage;
    return NativeDataset.open(uri, version, null, s);
  }
}
