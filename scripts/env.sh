# Shared settings of the project's scripts (sourced, not run).
# A persistent target directory outside the clone: CI runs in a fresh clone on the same
# machine, so warm builds take seconds instead of the 6–7 minute cold build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/cache/levelrail/target}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
mkdir -p "$CARGO_TARGET_DIR"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT

need_wasm_target() {
  rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' \
    || rustup target add wasm32-unknown-unknown
}
