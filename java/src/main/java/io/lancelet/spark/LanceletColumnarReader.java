package io.lancelet.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one partition as {@link ColumnarBatch}es of {@link ArrowColumnVector}s
 * whose buffers are lancelet's own (see {@code rust/lancelet-jni/src/export.rs}):
 * each buffer is wrapped in place with {@code wrapForeignAllocation} and
 * loaded with arrow-vector's {@link VectorLoader}; nothing is copied except
 * an all-valid bitmap arrow-vector makes itself.
 *
 * <p>A batch stays valid until the next {@link #next()} (Spark's contract for
 * columnar readers): the native scan frees a batch when it hands out the next.
 */
final class LanceletColumnarReader implements PartitionReader<ColumnarBatch> {
  private static final BufferAllocator ROOT = new RootAllocator(Long.MAX_VALUE);

  /** Memory owned by the native scan: nothing to free when arrow-vector lets go of it. */
  private static final class Borrowed extends ForeignAllocation {
    Borrowed(long size, long address) {
      super(size, address);
    }

    @Override
    protected void release0() {}
  }

  private final BufferAllocator allocator;
  private final Schema schema;
  /** The vectors of the current batch (fresh per batch: Spark may close a batch's vectors). */
  private VectorSchemaRoot root;
  private NativeDataset ds;
  private long scan;
  private ColumnarBatch batch;

  LanceletColumnarReader(LanceletPartition p) {
    ScanSpec s = p.spec;
    try {
      schema = Schema.fromJSON(s.arrowSchemaJson);
    } catch (IOException e) {
      throw new LanceletException("internal error: unreadable scan schema: " + e);
    }
    allocator = ROOT.newChildAllocator("lancelet-" + p.fragment + "-" + p.start, 0, Long.MAX_VALUE);
    try {
      ds = s.open();
      scan = NativeLib.openScan(ds.handle(), s.columns, s.filter, p.fragment, p.start, p.end, s.batchSize, s.limit,
          s.rowId, s.rowAddr, s.fragId);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  @Override
  public boolean next() {
    if (root != null) {
      root.close(); // before the native scan frees the buffers it points at
      root = null;
    }
    long[] d = NativeLib.nextBatch(scan);
    if (d == null) {
      return false;
    }
    root = VectorSchemaRoot.create(schema, allocator);
    int rows = (int) d[0];
    int nodes = (int) d[1];
    int bufs = (int) d[2];
    List<ArrowFieldNode> fieldNodes = new ArrayList<>(nodes);
    int at = 3;
    for (int i = 0; i < nodes; i++, at += 2) {
      fieldNodes.add(new ArrowFieldNode(d[at], d[at + 1]));
    }
    List<ArrowBuf> buffers = new ArrayList<>(bufs);
    try {
      for (int i = 0; i < bufs; i++, at += 2) {
        long addr = d[at];
        long len = d[at + 1];
        buffers.add(len == 0 ? allocator.getEmpty() : allocator.wrapForeignAllocation(new Borrowed(len, addr)));
      }
      if (!root.getFieldVectors().isEmpty()) {
        try (ArrowRecordBatch rb = new ArrowRecordBatch(rows, fieldNodes, buffers)) {
          new VectorLoader(root).load(rb);
        }
      }
    } finally {
      for (ArrowBuf b : buffers) {
        b.close(); // the vectors hold their own references
      }
    }
    List<FieldVector> vectors = root.getFieldVectors();
    ColumnVector[] cols = new ColumnVector[vectors.size()];
    for (int i = 0; i < cols.length; i++) {
      cols[i] = new ArrowColumnVector(vectors.get(i));
    }
    batch = new ColumnarBatch(cols, rows);
    return true;
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  @Override
  public void close() {
    if (root != null) {
      root.close();
      root = null;
    }
    if (scan != 0) {
      NativeLib.closeScan(scan);
      scan = 0;
    }
    if (ds != null) {
      ds.close();
      ds = null;
    }
    allocator.close();
  }
}
