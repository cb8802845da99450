#!/usr/bin/env bash
# Prints the tests/*_test.cc executables that a ctest selection runs, ;-separated, for a build's
# KESTREL_TEST_EXECUTABLES (tests/CMakeLists.txt): a CI stage that runs part of the suite
# (scripts/test.sh's ASan stage, scripts/test-cross.sh's aarch64 one) compiles only those.
#   scripts/test-executables.sh REFERENCE_BUILD [ctest selection: -R, -E, -L, -LE ...]
# REFERENCE_BUILD is a native build whose tests have been discovered (build/release): it knows
# every test's name, and a cross or sanitizer tree does not before it has built them.
set -euo pipefail
reference=${1:?usage: scripts/test-executables.sh REFERENCE_BUILD [ctest selection...]}
shift
[ -f "$reference/CTestTestfile.cmake" ] || {
  echo "test-executables.sh: error: $reference has no tests (build it first)" >&2
  exit 1
}
sources=$(cd "$(dirname "$0")/../tests" && ls ./*_test.cc | sed 's#^\./##; s#\.cc$##')
(cd "$reference" && ctest --show-only=json-v1 "$@") | python3 -c '
import json, os, sys
names = set(sys.argv[1].split())
found = set()
for test in json.load(sys.stdin)["tests"]:
    for part in test.get("command") or []:
        base = os.path.basename(part)
        if base in names:
            found.add(base)
if not found:
    sys.exit("test-executables.sh: error: the selection runs no tests/*_test.cc executable")
print(";".join(sorted(found)))
' "$sources"
