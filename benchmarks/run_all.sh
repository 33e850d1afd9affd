#!/usr/bin/env bash
# Run every benchmark (pass --quick for the under-a-minute versions) and collect their figures.
# Each script writes its own table to benchmarks/results/local/<name>.md (benchmarks/results/<name>.md
# with MTAGENT_BENCH_RECORD=1); this prints every RESULT line and writes them, per script, to summary.md
# there.
set -uo pipefail
cd "$(dirname "$0")/.."
folder=benchmarks/results/local
[ "${MTAGENT_BENCH_RECORD:-}" = "1" ] && folder=benchmarks/results
out=$folder/summary.md
mkdir -p "$folder"
{ echo "# Benchmark figures"; echo; echo "Produced by \`bash benchmarks/run_all.sh $*\` on $(date -u +%Y-%m-%d)."; } > "$out"
status=0
for script in benchmarks/*_bench.py; do
  name=$(basename "$script" .py)
  echo "== $name"
  log=$(mktemp)
  if python "$script" "$@" > "$log" 2>&1; then
    { echo; echo "## $name"; echo; echo '```'; grep '^RESULT ' "$log"; echo '```'; } >> "$out"
    grep '^RESULT ' "$log"
  else
    status=1
    echo "$name failed; its output:" >&2
    tail -20 "$log" >&2
  fi
  rm -f "$log"
done
echo "figures written to $out"
exit $status
