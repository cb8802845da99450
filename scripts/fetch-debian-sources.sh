#!/usr/bin/env bash
# Fetches, into third_party/ (ignored by git), the sources of the Debian packages whose libraries
# Debian ships only as shared objects, at the versions installed here, for static binaries
# (scripts/build-board.sh) and 32-bit ARM builds:
#   highway-1.0.3      Highway's runtime (CPU detection and dispatch); the upstream tarball, as
#                      before: we compile four files of it against the installed headers
#   kissfft-131.1.0    the FFT of the audio front end (runtime/audio/log_mel.cc)
#   libsamplerate-0.2.2  the resampler of the audio front end
# kissfft and libsamplerate are unpacked with Debian's patches applied (dpkg-source), so a static
# binary runs the same code as the shared library. Uses a private apt source list: the machine's
# apt setup is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

installed_version() {  # package
  local v
  v=$(dpkg-query -W -f='${Version}' "$1:$(dpkg --print-architecture)" 2>/dev/null || true)
  if [ -z "$v" ]; then
    echo "fetch-debian-sources.sh: error: $1 is not installed (run scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "$v"
}

# source package, its -dev package, the directory it unpacks to, a file that proves it is there,
# and "orig" (upstream tarball only) or "patched" (dpkg-source -x)
wanted=(
  "highway libhwy-dev highway-1.0.3 hwy/targets.cc orig"
  "kissfft libkissfft-dev kissfft-131.1.0 kiss_fftr.c patched"
  "libsamplerate libsamplerate0-dev libsamplerate-0.2.2 src/src_sinc.c patched"
)
missing=()
for w in "${wanted[@]}"; do
  read -r _ _ dir proof _ <<< "$w"
  [ -f "third_party/$dir/$proof" ] || missing+=("$w")
done
[ ${#missing[@]} -eq 0 ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/parts" third_party
cat > "$work/sources.list" <<LIST
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
deb-src http://deb.debian.org/debian bookworm-updates main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
          -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
# One mirror index may be mid-sync; the downloads that follow still work.
apt-get "${apt_opts[@]}" update > /dev/null || echo "apt-get update exited non-zero; continuing" >&2
for w in "${missing[@]}"; do
  read -r source dev dir proof how <<< "$w"
  version=$(installed_version "$dev")
  mkdir -p "$work/$source"
  (cd "$work/$source" && apt-get "${apt_opts[@]}" source --download-only "$source=$version" > /dev/null)
  rm -rf "third_party/$dir"
  if [ "$how" = orig ]; then
    tar -xf "$(ls "$work/$source"/*.orig.tar.*)" -C third_party
  else
    # dpkg-source warns about patches that touch a file twice (kissfft's tools/): harmless.
    dpkg-source --no-check -x "$(ls "$work/$source"/*.dsc)" "third_party/$dir" > /dev/null 2>&1
    rm -f third_party/*.orig.tar.*  # dpkg-source leaves a copy beside the tree
  fi
  test -f "third_party/$dir/$proof"
  echo "$source $version sources in third_party/$dir"
done
