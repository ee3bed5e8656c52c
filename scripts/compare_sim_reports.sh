#!/usr/bin/env bash
# Runs `prima simulate` on every scenario file under scenarios/ with two binaries and diffs the
# reports minus their wall-clock key `run` (they must be byte-identical).
#   scripts/compare_sim_reports.sh OLD_PRIMA NEW_PRIMA [scenario...]
# Exit 0 when every report matches (a scenario both binaries reject counts as matching when
# their exit codes and messages agree), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
old=${1:?old prima binary}
new=${2:?new prima binary}
shift 2
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(find scenarios -name '*.json' | sort)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for f in "${files[@]}"; do
  "$old" simulate "$f" --no-files -q --json >"$tmp/old.json" 2>"$tmp/old.err"
  orc=$?
  "$new" simulate "$f" --no-files -q --json >"$tmp/new.json" 2>"$tmp/new.err"
  nrc=$?
  if [ $orc -ne 0 ] || [ $nrc -ne 0 ]; then
    if [ $orc -eq $nrc ] && cmp -s "$tmp/old.err" "$tmp/new.err"; then
      echo "same   $f (both exit $orc)"
    else
      echo "DIFF   $f (exit $orc vs $nrc)"
      bad=1
    fi
    continue
  fi
  jq 'del(.run)' "$tmp/old.json" >"$tmp/old.norun"
  jq 'del(.run)' "$tmp/new.json" >"$tmp/new.norun"
  if cmp -s "$tmp/old.norun" "$tmp/new.norun"; then
    echo "same   $f ($(jq -c '.requests.submitted' "$tmp/new.json") requests)"
  else
    echo "DIFF   $f"
    diff "$tmp/old.norun" "$tmp/new.norun" | head -5
    bad=1
  fi
done
exit $bad
