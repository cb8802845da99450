#!/usr/bin/env bash
# Prints the tests/*_test.cc executables that a selection of tests runs, ;-separated, for a
# build's KESTREL_TEST_EXECUTABLES (tests/CMakeLists.txt): a CI stage that runs part of the
# suite (scripts/test.sh's ASan stage, scripts/test-cross.sh's aarch64 and armv7 ones) compiles
# only those.
#   scripts/test-executables.sh REFERENCE_BUILD [--run REGEX]... [--skip REGEX]... [--skip-label L]...
# A test is selected when its name matches a --run (any test, with none) and no --skip, and it
# has no --skip-label label: as ctest's -R, -E and --label-exclude, the regexes searched for in
# the name (Python's re here: ctest's own take no more than 9 groups, fewer than CI's patterns).
# REFERENCE_BUILD is a native build whose tests have been discovered (build/release): it knows
# every test's name, and a cross or sanitizer tree does not before it has built them.
set -euo pipefail
reference=${1:?usage: scripts/test-executables.sh REFERENCE_BUILD [--run R]... [--skip R]... [--skip-label L]...}
shift
[ -f "$reference/CTestTestfile.cmake" ] || {
  echo "test-executables.sh: error: $reference has no tests (build it first)" >&2
  exit 1
}
sources=$(cd "$(dirname "$0")/../tests" && ls ./*_test.cc | sed 's#^\./##; s#\.cc$##')
(cd "$reference" && ctest --show-only=json-v1) | python3 -c '
import json, os, re, sys
names = set(sys.argv[1].split())
run, skip, skip_labels = [], [], set()
args = sys.argv[2:]
if len(args) % 2:
    sys.exit(f"test-executables.sh: error: {args[-1]!r} needs a value")
for flag, value in zip(args[::2], args[1::2]):
    if flag == "--run":
        run.append(re.compile(value))
    elif flag == "--skip":
        skip.append(re.compile(value))
    elif flag == "--skip-label":
        skip_labels.add(value)
    else:
        sys.exit(f"test-executables.sh: error: unknown option {flag!r}")
found = set()
for test in json.load(sys.stdin)["tests"]:
    name = test["name"]
    labels = set()
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            labels.update(prop["value"])
    if run and not any(r.search(name) for r in run):
        continue
    if any(r.search(name) for r in skip) or labels & skip_labels:
        continue
    for part in test.get("command") or []:
        if os.path.basename(part) in names:
            found.add(os.path.basename(part))
if not found:
    sys.exit("test-executables.sh: error: the selection runs no tests/*_test.cc executable")
print(";".join(sorted(found)))
' "$sources" "$@"
