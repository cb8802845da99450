#!/usr/bin/env bash
# The commands the documentation shows are commands the programs take: every `kestrel ...`,
# `kestrel-convert ...` and `build/release/kestrel...` line in the sh code blocks of the given
# Markdown files names a subcommand `kestrel --help` lists, and every option it uses (`--xyz`,
# `-x`) appears in that subcommand's own `--help`. A README that drifts from the programs fails
# here, naming the file, line, command and option.
#
# usage: docs_commands_test.sh KESTREL KESTREL_CONVERT FILE.md [FILE.md ...]
# Each FILE must show at least one command: a check that finds nothing would pass vacuously.
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 KESTREL KESTREL_CONVERT FILE.md [FILE.md ...]" >&2
  exit 2
fi
kestrel=$1
convert=$2
shift 2

fail() {
  echo "docs_commands_test: FAIL: $*" >&2
  failures=$((failures + 1))
}

# Prints "LINE<TAB>COMMAND" for each command of a fenced sh/bash/shell/console block of $1 that
# starts with a program named kestrel or kestrel-convert (any path before it; after `&&`, `;` or
# `|` too). Lines ending in a backslash are joined. Quoted strings become the word Q (a prompt's
# text is not an option) and comments are dropped. A `|` inside ( ) or [ ] separates the
# alternatives of a usage line (`run MODEL.kes (-p PROMPT | -f FILE)`), not two commands.
extract_commands() {
  awk '
    function flush(   i, c, q, out, segs, n, s, w, nw, k, depth) {
      if (cmd == "") return
      out = ""; q = ""; depth = 0
      for (i = 1; i <= length(cmd); i++) {
        c = substr(cmd, i, 1)
        if (q != "") {                       # inside quotes: drop until the closing quote
          if (c == "\\" && q == "\"") { i++; continue }
          if (c == q) { q = ""; out = out "Q" }
          continue
        }
        if (c == "\"" || c == "\x27") { q = c; continue }
        if (c == "#" && (i == 1 || substr(cmd, i - 1, 1) ~ /[ \t]/)) break   # a comment
        if (c == "(" || c == "[") depth++
        if ((c == ")" || c == "]") && depth > 0) depth--
        if (c == "|" && depth > 0) c = " "
        out = out c
      }
      gsub(/&&|\|\||;|\|/, "\n", out)
      n = split(out, segs, "\n")
      for (s = 1; s <= n; s++) {
        nw = split(segs[s], w, /[ \t]+/)
        k = 1
        while (k <= nw && (w[k] == "" || w[k] == "$" || w[k] ~ /^[A-Za-z_][A-Za-z0-9_]*=/ || w[k] == "time")) k++
        if (k > nw) continue
        prog = w[k]; sub(/.*\//, "", prog)
        if (prog == "kestrel" || prog == "kestrel-convert") {
          line = w[k]
          for (k++; k <= nw; k++) if (w[k] != "") line = line " " w[k]
          print start "\t" line
        }
      }
      cmd = ""
    }
    /^[ \t]*```/ {
      if (!inblock && $0 ~ /^[ \t]*```(sh|bash|shell|console)[ \t]*$/) { inblock = 1; next }
      if (inblock) { flush(); inblock = 0 }
      next
    }
    inblock {
      text = $0
      if (cmd == "") start = NR
      if (text ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, " ", text); cmd = cmd text; next }
      cmd = cmd text
      flush()
    }
  ' "$1"
}

# The --help text of "kestrel SUB" (or of the program itself), cached per subcommand.
declare -A help_cache=()
help_of() {  # $1: program path, $2: subcommand or ""; sets $help, returns 1 when --help fails
  local key="$1 $2"
  if [ -z "${help_cache[$key]+set}" ]; then
    local text
    if [ -n "$2" ]; then
      text=$("$1" "$2" --help 2>&1) || return 1
    else
      text=$("$1" --help 2>&1) || return 1
    fi
    help_cache[$key]=$text
  fi
  help=${help_cache[$key]}
}

# The subcommands `kestrel --help` lists under "commands:".
help_of "$kestrel" "" || { echo "docs_commands_test: '$kestrel --help' failed" >&2; exit 1; }
subcommands=$(printf '%s\n' "$help" | awk '/^commands:/ { on = 1; next }
                                          on && /^  [a-z]/ { print $1; next }
                                          on && !/^   / { on = 0 }')
if [ -z "$subcommands" ]; then
  echo "docs_commands_test: found no commands in '$kestrel --help'" >&2
  exit 1
fi

failures=0
commands=0
options=0
for file in "$@"; do
  name=${file##*/}
  in_file=0
  while IFS=$'\t' read -r line command; do
    read -r -a words <<< "$command"
    program=${words[0]##*/}
    first=1
    if [ "$program" = kestrel-convert ]; then
      path=$convert
      sub=""
      shown="kestrel-convert"
    else
      path=$kestrel
      sub=""
      if [ ${#words[@]} -gt 1 ] && [[ ${words[1]} != -* ]]; then
        sub=${words[1]}
        first=2
        if ! grep -qx -- "$sub" <<< "$subcommands"; then
          fail "$name:$line: '$command': 'kestrel $sub' is not a command (kestrel --help lists: $(echo $subcommands))"
          continue
        fi
      fi
      shown="kestrel${sub:+ $sub}"
    fi
    if ! help_of "$path" "$sub"; then
      fail "$name:$line: '$shown --help' exits non-zero"
      continue
    fi
    commands=$((commands + 1))
    in_file=$((in_file + 1))
    for ((i = first; i < ${#words[@]}; i++)); do
      word=${words[$i]}
      word=${word#[\[(]}    # [--ctx N] and (-p TEXT | -f FILE) in usage lines
      word=${word%[\])]}
      [[ $word =~ ^--?[A-Za-z][A-Za-z0-9_-]*(=.*)?$ ]] || continue
      flag=${word%%=*}
      options=$((options + 1))
      if ! grep -qE -- "(^|[^A-Za-z0-9_-])${flag}([^A-Za-z0-9_-]|\$)" <<< "$help"; then
        fail "$name:$line: '$shown' has no option '$flag' (not in '$shown --help'): $command"
      fi
    done
  done < <(extract_commands "$file")
  if [ "$in_file" -eq 0 ]; then
    fail "$name: no kestrel or kestrel-convert command found in its sh code blocks"
  fi
done

if [ "$commands" -eq 0 ]; then
  fail "no command was checked"
fi
if [ "$failures" -gt 0 ]; then
  echo "docs_commands_test: $failures failure(s); $commands commands, $options options checked" >&2
  exit 1
fi
echo "docs_commands_test: $commands commands, $options options checked in $# files: all exist"
