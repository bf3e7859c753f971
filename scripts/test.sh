#!/usr/bin/env bash
# The test command: set-up, Rust unit/property tests, then pytest.
# Extra arguments go to pytest (e.g. `-m slow`, `-m "slow or not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# Tests build the extension in the dev profile (dependencies optimised,
# see Cargo.toml) so that it and `cargo test` share one set of artifacts.
LANCELET_PROFILE="${LANCELET_PROFILE:-dev}" bash scripts/setup.sh
# Gates: formatting and lints (rustfmt.toml, the workspace's clippy lints,
# pyproject.toml's ruff rules) fail the run before any test does.
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
python3 -m ruff check --quiet .
cargo test -p lancelet --quiet
cargo test -p lancelet-python --quiet  # the bindings (allocator choice, argument conversion)
cargo test -p lancelet-jni --quiet     # the JVM connector's type mapping and batch export
# Run pytest from outside the source tree so it imports the installed package.
cd tests && python3 -m pytest -q -p no:cacheprovider --rootdir=.. -c ../pyproject.toml . "$@"
