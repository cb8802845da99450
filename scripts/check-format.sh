#!/usr/bin/env bash
# Checks that every C and C++ file git tracks is laid out as .clang-format says, with clang-format
# 14 (Debian bookworm's clang-format-14; scripts/install-deps.sh installs it). Lists the files that
# are not and exits 1; --fix rewrites them in place instead.
#   scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "check-format.sh: error: unknown argument '$1' (expected --fix or nothing)" >&2; exit 2 ;;
esac
tool=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" > /dev/null &&
     "$candidate" --version | grep -q 'clang-format version 14\.'; then
    tool=$candidate
    break
  fi
done
if [ -z "$tool" ]; then
  echo "check-format.sh: error: clang-format 14 not found (expected clang-format-14 on PATH," \
       "as scripts/install-deps.sh installs it; other versions format some lines differently)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' '*.cpp')
if [ $fix = 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$tool" -i --style=file
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$tool" --style=file --dry-run --Werror "$f" > /dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format.sh: ${#bad[@]} of ${#files[@]} files are not laid out as .clang-format says" \
       "(scripts/check-format.sh --fix rewrites them; $tool --style=file FILE | diff FILE - shows" \
       "how):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files laid out as .clang-format says ($tool)"
