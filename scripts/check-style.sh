#!/usr/bin/env bash
# check-style.sh: the checks of the house style that a machine can make, run by `make test`.
#   1. formatting: every C file is as clang-format makes it (the project's .clang-format);
#      `make format` fixes it.
#   2. banned functions: none of atoi/atol/atoll (no error report), sprintf/vsprintf,
#      strcpy/strcat/strncpy/strncat (no bound, or a bound that truncates silently),
#      gets, strtok (hidden state), tmpnam/mktemp (races) in our code; use the parse.h,
#      buf.h and alloc.h helpers, snprintf, memcpy or mkstemp instead.
#   3. no sleep in the libraries: the event loop never waits in a sleep (src/lib, src/util's
#      loop users); SQLite's own busy wait (sqlite3_sleep) in the store is not the loop's.
# Exit 0 when clean, 1 with one line per finding.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'tests/*.h' 'fuzz/*.c' \
  'bench/*.c' 'examples/*.c' 'examples/*.h')

if command -v clang-format >/dev/null 2>&1; then
  if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
    echo "$out" | grep -E '^[^ ].*: (error|warning):' | sed 's/^/format: /' | sort -u | head -40
    echo "format: run 'make format' (clang-format -i) on the files above"
    status=1
  fi
else
  echo "format: clang-format is missing (scripts/install-deps.sh installs it)"
  status=1
fi

banned_out=$(mktemp)
trap 'rm -f "$banned_out"' EXIT
# Strip comments and strings before looking for calls, so that prose may name them.
banned='atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|strncpy|strncat|gets|strtok|tmpnam|mktemp'
for f in "${files[@]}"; do
  perl -0777 -ne '
    s{/\*.*?\*/}{ my $c = $&; $c =~ s/[^\n]//g; $c }gse;  # block comments (keep lines)
    s{//[^\n]*}{}g;
    s{"(?:\\.|[^"\\\n])*"}{""}g;                        # strings
    my $n = 0;
    for my $line (split /\n/, $_, -1) {
      $n++;
      while ($line =~ /(?<![\w.>])('"$banned"')\s*\(/g) {
        print "'"$f"':$n: $1() is banned (see scripts/check-style.sh)\n";
      }
    }' "$f"
done >"$banned_out"
if [ -s "$banned_out" ]; then cat "$banned_out"; status=1; fi

if grep -rnE '(^|[^_a-z])(u|nano)?sleep\s*\(' src/lib --include='*.c' | grep -v 'sqlite3_sleep'; then
  echo "sleep: the lines above sleep in src/lib; wait on the loop (a timer or an fd) instead"
  status=1
fi
exit $status
