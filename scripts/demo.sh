#!/usr/bin/env bash
# `make demo`: what lifeboat does, in under a minute.
#
#   scripts/demo.sh BUILD_DIR
#
# 1. Four lifeboat-demo workers train under lifeboat-launch without
#    interruption: each prints a digest of its final state (the reference).
# 2. The same job again; at a random moment midway, one random worker gets a
#    SIGTERM (what a cloud or a scheduler sends before it takes a machine).
#    All four agree on one step, save a checkpoint at it, exit with the
#    restart code 42; the launcher restarts them; they resume from the
#    checkpoint and finish.
# 3. PASS when the preempted job's digests equal the reference's; exits 1
#    (and prints the whole log) otherwise.
set -euo pipefail

build=${1:-build}
launch="$build/apps/lifeboat-launch"
demo="$build/apps/lifeboat-demo"
nproc=4
steps=300
step_ms=10
state_mb=4
# Upper bounds, so a broken build fails the demo instead of hanging it.
join_timeout_s=30
run_timeout_s=60

for tool in "$launch" "$demo"; do
  if [[ ! -x $tool ]]; then
    echo "demo: $tool not found; build first (make build)" >&2
    exit 2
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lifeboat-demo-XXXXXX")
launcher=
cleanup() {
  # A launcher still running (the script was interrupted) takes its workers
  # with it: they die with their parent.
  if [[ -n $launcher ]] && kill -0 "$launcher" 2>/dev/null; then
    kill -KILL "$launcher" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
say() { printf '\n'; bold "== $*"; }
now_ms() { date +%s%3N; }
digests() { grep -o 'rank=[0-9]* step=[0-9]* digest=[0-9a-f]*' "$1" | sort || true; }
# Waits until FILE has at least N lines matching PATTERN; fails after S seconds.
wait_for_lines() {
  local file=$1 pattern=$2 n=$3 seconds=$4
  local deadline=$((SECONDS + seconds))
  until (($(grep -c -- "$pattern" "$file" || true) >= n)); do
    if ((SECONDS >= deadline)); then
      echo "demo: timed out waiting for $n line(s) '$pattern' in the log" >&2
      return 1
    fi
    sleep 0.05
  done
}
run_job() {  # run_job CHECKPOINT_DIR LOG: runs the job in the background
  "$launch" --nproc "$nproc" -- "$demo" --steps "$steps" --checkpoint-dir "$1" \
    --state-mb "$state_mb" --step-ms "$step_ms" >"$2" 2>&1 &
  launcher=$!
}
wait_job() {  # wait_job: the launcher's exit status, killed after run_timeout_s
  local deadline=$((SECONDS + run_timeout_s)) status=0
  while kill -0 "$launcher" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -KILL "$launcher" 2>/dev/null || true
  wait "$launcher" || status=$?
  launcher=
  return "$status"
}

say "1. reference: $nproc workers, $steps steps of ${step_ms} ms, ${state_mb} MiB of state each, no interruption"
run_job "$work/reference" "$work/reference.log"
wait_for_lines "$work/reference.log" ' joined (generation 0)' "$nproc" "$join_timeout_s"
started=$(now_ms)
ref_status=0
wait_job || ref_status=$?
train_ms=$(($(now_ms) - started))
digests "$work/reference.log"
echo "(launcher exit status $ref_status, training took ${train_ms} ms)"
if ((ref_status != 0)); then
  cat "$work/reference.log" >&2
  bold "FAIL: the uninterrupted run did not finish" >&2
  exit 1
fi

# Midway: somewhere between a quarter and three quarters of the training time.
delay_ms=$((train_ms / 4 + RANDOM % (train_ms / 2 + 1)))
victim_rank=$((RANDOM % nproc))
say "2. the same job; rank $victim_rank gets a SIGTERM after ${delay_ms} ms of training"
run_job "$work/preempted" "$work/preempted.log"
wait_for_lines "$work/preempted.log" ' joined (generation 0)' "$nproc" "$join_timeout_s"
victim_pid=$(sed -n "s/^lifeboat-launch: rank=$victim_rank pid=\([0-9]*\) restart=0$/\1/p" \
  "$work/preempted.log")
sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
echo "kill -TERM $victim_pid   # rank $victim_rank"
kill -TERM "$victim_pid"
status=0
wait_job || status=$?
# The story, in the order it happened: the notice, the agreed step, the
# commit and the exit, the restart, the resumption, the final digests.
grep -E 'notice from|agreed to save|exiting with restart code|exited with the restart code|restart=1|resumed at|digest=' \
  "$work/preempted.log" || true
echo "(launcher exit status $status)"

say "3. verdict"
failures=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    echo "  ok    $what"
  else
    echo "  FAIL  $what"
    failures=$((failures + 1))
  fi
}
count() { grep -c -- "$1" "$work/preempted.log" || true; }
agreed=$(grep -o 'agreed to save at step [0-9]*' "$work/preempted.log" | sort -u || true)
check "the launcher finished with status 0" test "$status" -eq 0
check "all $nproc workers agreed on one step (${agreed:-none})" \
  test "$(count 'agreed to save at step')" -eq "$nproc" -a "$(grep -c . <<<"$agreed")" -eq 1
check "all $nproc workers exited with the restart code after the commit" \
  test "$(count 'committed; exiting with restart code 42')" -eq "$nproc"
check "the launcher restarted all $nproc workers" \
  test "$(count '^lifeboat-launch: rank=[0-9]* pid=[0-9]* restart=1$')" -eq "$nproc"
check "all $nproc workers resumed from the checkpoint" \
  test "$(count 'resumed at step')" -eq "$nproc"
check "every final digest equals the uninterrupted run's" \
  diff <(digests "$work/reference.log") <(digests "$work/preempted.log")
if ((failures == 0)); then
  bold "PASS: preempted at ${agreed#agreed to save at }, restarted, resumed; all $nproc digests equal the uninterrupted run's"
else
  echo >&2
  cat "$work/preempted.log" >&2
  bold "FAIL: $failures check(s) failed; the preempted run's log is above" >&2
  exit 1
fi
