#!/usr/bin/env bash
# Builds lancelet's Spark DataSource V2 connector (issue 36) into the Python
# package: python/lancelet/jars/lancelet-spark.jar (java/, compiled with javac
# against the jars the pyspark wheel ships: no Maven repository) and
# python/lancelet/jars/liblancelet_jni.so (crate rust/lancelet-jni).
# Skipped, with a note, when pyspark is not installed.
# LANCELET_PROFILE: cargo profile (default release).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
PY="${PYTHON:-python3}"
PROFILE="${LANCELET_PROFILE:-release}"
SPARK_JARS="$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null || true)"
if [ -z "$SPARK_JARS" ] || [ ! -d "$SPARK_JARS" ]; then
  echo "build_jvm: pyspark is not installed; the JVM connector is not built" >&2
  exit 0
fi
if ! command -v javac >/dev/null; then
  echo "build_jvm: no javac found; installing openjdk-17-jdk-headless" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
OUT=python/lancelet/jars
mkdir -p "$OUT"
# The JNI library.
cargo build -q -p lancelet-jni --profile "$PROFILE"
DIR="$PROFILE"; [ "$PROFILE" = dev ] && DIR=debug
cp "target/$DIR/liblancelet_jni.so" "$OUT/liblancelet_jni.so.tmp"
# Debug sections make a dev build ~600 MB; symbols stay (for perf).
if command -v strip >/dev/null; then strip --strip-debug "$OUT/liblancelet_jni.so.tmp"; fi
mv "$OUT/liblancelet_jni.so.tmp" "$OUT/liblancelet_jni.so"
# The jar: javac against the pyspark jars only (-Xlint: warnings are shown).
CLASSES="$(mktemp -d)"
trap 'rm -rf "$CLASSES"' EXIT
javac --release 17 -Xlint:all,-path,-processing,-serial,-classfile -encoding UTF-8 -d "$CLASSES" -cp "$SPARK_JARS/*" \
  $(find java/src/main/java -name '*.java' | sort)
cp -r java/src/main/resources/. "$CLASSES/"
jar --create --file "$OUT/lancelet-spark.jar.tmp" -C "$CLASSES" . && mv "$OUT/lancelet-spark.jar.tmp" "$OUT/lancelet-spark.jar"
echo "build_jvm: built $OUT/lancelet-spark.jar and $OUT/liblancelet_jni.so ($PROFILE)" >&2
