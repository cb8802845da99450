#!/usr/bin/env bash
# Fetches the Highway sources of the Debian package we build against (highway 1.0.3 from
# bookworm) into third_party/highway-1.0.3, for static binaries: Debian ships libhwy only as a
# shared library. Uses a private apt source list, so the machine's apt setup is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/highway-1.0.3
if [ -f "$dest/hwy/targets.cc" ]; then exit 0; fi
version=$(dpkg-query -W -f='${Version}' "libhwy-dev:$(dpkg --print-architecture)" 2>/dev/null || true)
if [ -z "$version" ]; then
  echo "fetch-hwy-source.sh: error: libhwy-dev is not installed (run scripts/install-deps.sh)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/parts"
cat > "$work/sources.list" <<LIST
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
deb-src http://deb.debian.org/debian bookworm-updates main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
          -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
# One mirror index may be mid-sync; the download that follows still works.
apt-get "${apt_opts[@]}" update > /dev/null || echo "apt-get update exited non-zero; continuing" >&2
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "highway=$version" > /dev/null)
orig=$(ls "$work"/highway_*.orig.tar.gz)
mkdir -p third_party
tar -xzf "$orig" -C third_party
test -f "$dest/hwy/targets.cc"
echo "Highway $version sources in $dest"
