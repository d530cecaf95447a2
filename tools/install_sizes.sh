#!/bin/bash
# The size of a fresh venv holding the verifier with each extra (the README's install table).
#
#     tools/install_sizes.sh [WORK_DIR]      # default: a temporary folder, removed at the end
#
# Installs the committed tree (git archive HEAD) with pip into one fresh venv per install
# (none, core, physical, ray, records, test), one after another, and prints each venv's size on
# disk (du, MB; pip compiles the bytecode) and its apparent size. Needs python3.11 and network
# or a warm pip cache; a few minutes per extra.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d /tmp/usdgrade-install-sizes-XXXXXX)}
mkdir -p "$WORK/src"
git -C "$REPO" archive --format=tar HEAD | tar -x -C "$WORK/src"
printf '%-10s %10s %12s\n' install "disk MB" "apparent MB"
for extra in none core physical ray records test; do
  venv="$WORK/venv-$extra"
  rm -rf "$venv"
  python3.11 -m venv "$venv"
  case $extra in
    none) ;;
    core) "$venv/bin/pip" install -q "$WORK/src" ;;
    *) "$venv/bin/pip" install -q "$WORK/src[$extra]" ;;
  esac
  printf '%-10s %10s %12s\n' "$extra" "$(du -sm "$venv" | cut -f1)" "$(du -sm --apparent-size "$venv" | cut -f1)"
  rm -rf "$venv"
done
[ -z "${1:-}" ] && rm -rf "$WORK"
