package io.lancelet.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One read task: physical rows {@code [start, end)} of one fragment of the pinned version. */
final class LanceletPartition implements InputPartition {
  private static final long serialVersionUID = 1L;

  final ScanSpec spec;
  final long fragment;
  final long start;
  final long end;

  LanceletPartition(ScanSpec spec, long fragment, long start, long end) {
    this.spec = spec;
    this.fragment = fragment;
    this.start = start;
    this.end = end;
  }
}
