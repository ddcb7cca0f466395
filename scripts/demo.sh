#!/usr/bin/env bash
# The README's main command: four workers of lifeboat-demo under lifeboat-launch;
# one worker gets a SIGTERM midway; the cluster saves at one agreed step, exits
# with the restart code, is restarted, resumes, and finishes with the same
# digests as an uninterrupted run.
set -euo pipefail
build=${1:-build}
launch="$build/apps/lifeboat-launch"
demo="$build/apps/lifeboat-demo"
nproc=4
steps=400
step_ms=10
state_mb=16
# The SIGTERM goes out after this many seconds of training (about step 100).
sigterm_after=1.5

work=$(mktemp -d /tmp/lifeboat-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
digests() { grep -o 'rank=[0-9]* step=[0-9]* digest=[0-9a-f]*' "$1" | sort; }

say "1. reference: $nproc workers, $steps steps, no interruption"
"$launch" --nproc "$nproc" -- "$demo" --steps "$steps" --checkpoint-dir "$work/reference" \
  --state-mb "$state_mb" --step-ms "$step_ms" >"$work/reference.log" 2>&1
digests "$work/reference.log"

say "2. the same job; one worker gets a SIGTERM after ${sigterm_after}s"
"$launch" --nproc "$nproc" -- "$demo" --steps "$steps" --checkpoint-dir "$work/preempted" \
  --state-mb "$state_mb" --step-ms "$step_ms" >"$work/preempted.log" 2>&1 &
launcher=$!
sleep "$sigterm_after"
victim_rank=$((RANDOM % nproc))
victim_pid=$(grep -o "rank=$victim_rank pid=[0-9]* restart=0" "$work/preempted.log" |
  sed 's/.*pid=\([0-9]*\).*/\1/')
echo "sending SIGTERM to rank $victim_rank (pid $victim_pid)"
kill -TERM "$victim_pid"
status=0
wait "$launcher" || status=$?
grep -E 'notice from|agreed to save|committed;|restarted|restart=1|resumed at|digest=' \
  "$work/preempted.log" | grep -v 'checkpoint_writer' || true
echo "launcher exit status: $status"

say "3. verdict"
if [[ $status -eq 0 ]] && diff <(digests "$work/reference.log") <(digests "$work/preempted.log"); then
  echo "PASS: after the preemption and restart every worker's digest equals the uninterrupted run"
else
  echo "FAIL: see the logs above" >&2
  cat "$work/preempted.log" >&2
  exit 1
fi
