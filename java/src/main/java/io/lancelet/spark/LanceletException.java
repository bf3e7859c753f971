package io.lancelet.spark;

/**
 * An error reported by lancelet's Rust core (thrown from the JNI library):
 * its message is lancelet's, e.g. {@code "not found: ..."} or
 * {@code "invalid input: ..."}.
 */
public class LanceletException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error with lancelet's message. */
  public LanceletException(String message) {
    super(message);
  }
}
