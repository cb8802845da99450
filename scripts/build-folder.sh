# shellcheck shell=bash
# Sourced by the scripts that build into a folder of their own and keep what they built there
# (scripts/build-llama-cpp.sh, build-ik-llama-cpp.sh, fetch-ggml-oracle.sh).

# Makes the folder DIR, sets root to its absolute path and holds root/.lock until the script
# exits, so that runs at the same time build once, the later ones finding the work done.
#   lock_build_folder DIR
lock_build_folder() {
  mkdir -p "$1"
  root=$(cd "$1" && pwd)
  exec 9> "$root/.lock"
  flock 9
}
