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
"$PY" -m pip install -q --disable-pip-version-check \
  "maturin>=1.7,<2" "pyarrow>=14" "pylance==14.0.2" "pytest>=8" "hypothesis>=6" numpy "pandas<3"
# Build + install the package (incremental: reuses ./target between runs).
# LANCELET_PROFILE=dev (used by the test command) shares compiled
# dependencies with `cargo test` and builds much faster; the default
# release profile is what the main job and benchmarks use.
MATURIN_PEP517_ARGS="--profile ${LANCELET_PROFILE:-release}" \
  "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps .
