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

# Runs a command as root (directly, or through sudo).
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs Debian packages that are missing (quietly).
apt_install() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing ${missing[*]}"
  as_root apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The aarch64 agent, cross-built with Debian's toolchain (ring compiles C and assembly
# with aarch64-linux-gnu-gcc, which also links), copied to levelrail-agent-aarch64 beside
# the host's binaries, where `levelrail serve` finds it and serves it to Arm nodes.
# $1: cargo profile (dev or release). $2: 1 to install the toolchain when it is missing;
# otherwise a machine without it skips the build (Arm sizes are then listed unavailable).
build_agent_aarch64() {
  local profile="$1" install="${2:-0}" dir=debug
  [ "$profile" = release ] && dir=release
  if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    if [ "$install" != 1 ]; then
      echo "== aarch64 agent: skipped (no aarch64-linux-gnu-gcc: apt-get install gcc-aarch64-linux-gnu)"
      return 0
    fi
    apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  fi
  rustup target list --installed 2>/dev/null | grep -q '^aarch64-unknown-linux-gnu$' \
    || rustup target add aarch64-unknown-linux-gnu
  echo "== aarch64 agent (cross-built)"
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
    cargo build --locked --profile "$profile" -p levelrail-agent --target aarch64-unknown-linux-gnu
  mkdir -p "$CARGO_TARGET_DIR/$dir"
  cp -f "$CARGO_TARGET_DIR/aarch64-unknown-linux-gnu/$dir/levelrail-agent" \
    "$CARGO_TARGET_DIR/$dir/levelrail-agent-aarch64.tmp"
  mv -f "$CARGO_TARGET_DIR/$dir/levelrail-agent-aarch64.tmp" "$CARGO_TARGET_DIR/$dir/levelrail-agent-aarch64"
}
