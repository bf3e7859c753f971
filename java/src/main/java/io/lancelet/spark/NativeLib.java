package io.lancelet.spark;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The JNI library {@code liblancelet_jni.so} (crate {@code rust/lancelet-jni}).
 *
 * <p>Where it is loaded from, first found: the system property
 * {@code lancelet.jni.library} (a file), the environment variable
 * {@code LANCELET_JNI_LIBRARY}, the directory of the jar this class was loaded
 * from (the Python package ships both in {@code lancelet/jars/}), then
 * {@code java.library.path}.
 *
 * <p>Handles are pointers to Rust values; every {@code open}/{@code openScan}
 * is closed exactly once by its owner.
 */
final class NativeLib {
  private NativeLib() {}

  static final String LIBRARY = "lancelet_jni";

  static {
    load();
  }

  private static void load() {
    String explicit = System.getProperty("lancelet.jni.library");
    if (explicit == null || explicit.isEmpty()) {
      explicit = System.getenv("LANCELET_JNI_LIBRARY");
    }
    if (explicit != null && !explicit.isEmpty()) {
      System.load(new File(explicit).getAbsolutePath());
      return;
    }
    Path beside = besideJar();
    if (beside != null && Files.isRegularFile(beside)) {
      System.load(beside.toAbsolutePath().toString());
      return;
    }
    System.loadLibrary(LIBRARY);
  }

  private static Path besideJar() {
    try {
      java.security.CodeSource src = NativeLib.class.getProtectionDomain().getCodeSource();
      if (src == null) {
        return null;
      }
      Path jar = Path.of(src.getLocation().toURI());
      Path dir = Files.isDirectory(jar) ? jar : jar.getParent();
      return dir == null ? null : dir.resolve(System.mapLibraryName(LIBRARY));
    } catch (URISyntaxException | RuntimeException e) {
      return null;
    }
  }

  /** Open a dataset: {@code version >= 0} pins it, else {@code tag} (may be null), else latest. */
  static native long open(String uri, long version, String tag, String[] storageKeyValues);

  static native void close(long dataset);

  static native long version(long dataset);

  /** The Spark-readable Arrow schema, as an IPC stream holding the schema message. */
  static native byte[] sparkSchema(long dataset);

  /** Lines of kind \u0001 name \u0001 name ... for every column path. */
  static native String columnKinds(long dataset);

  /** Per slice: fragment id, first row, end row, rows (exact live rows when {@code exact}), file bytes. */
  static native long[] plan(long dataset, long rowsPerPartition, boolean exact);

  /** Rows matching a lancelet SQL filter (null: all, from metadata). */
  static native long countRows(long dataset, String filter);

  static native long openScan(long dataset, String[] columns, String filter, long fragment, long start,
      long end, int batchSize, long limit, boolean rowId, boolean rowAddr, boolean fragId);

  /** rows, nodes, buffers, then (length, nulls) pairs, then (address, bytes) pairs; null at the end. */
  static native long[] nextBatch(long scan);

  static native void closeScan(long scan);
}
