package io.lancelet.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;

/** One open version of a dataset (a native handle), closed after use. */
final class NativeDataset implements AutoCloseable {
  private long handle;

  private NativeDataset(long handle) {
    this.handle = handle;
  }

  /** Open {@code uri} at a version number ({@code >= 0}), a tag, or the latest. */
  static NativeDataset open(String uri, long version, String tag, Map<String, String> storage) {
    String[] kv = new String[storage.size() * 2];
    int i = 0;
    for (Map.Entry<String, String> e : storage.entrySet()) {
      kv[i++] = e.getKey();
      kv[i++] = e.getValue();
    }
    return new NativeDataset(NativeLib.open(uri, version, tag, kv));
  }

  long handle() {
    return handle;
  }

  long version() {
    return NativeLib.version(handle);
  }

  /** The Spark-readable Arrow schema of all columns. */
  Schema sparkSchema() {
    byte[] ipc = NativeLib.sparkSchema(handle);
    try {
      return MessageSerializer.deserializeSchema(
          new ReadChannel(Channels.newChannel(new ByteArrayInputStream(ipc))));
    } catch (IOException e) {
      throw new LanceletException("internal error: unreadable schema from the JNI library: " + e);
    }
  }

  /** Filter kind of every column path (see {@link FilterSql}). */
  Map<List<String>, String> columnKinds() {
    Map<List<String>, String> out = new HashMap<>();
    for (String line : NativeLib.columnKinds(handle).split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] parts = line.split("\u0001", -1);
      List<String> path = new ArrayList<>();
      for (int i = 1; i < parts.length; i++) {
        path.add(parts[i]);
      }
      out.put(path, parts[0]);
    }
    return out;
  }

  long[] plan(long rowsPerPartition, boolean exact) {
    return NativeLib.plan(handle, rowsPerPartition, exact);
  }

  long countRows(String filter) {
    return NativeLib.countRows(handle, filter);
  }

  @Override
  public void close() {
    if (handle != 0) {
      NativeLib.close(handle);
      handle = 0;
    }
  }
}
