#!/usr/bin/env bash
# A real SLURM cluster of one node, this machine: Debian's munged, slurmctld
# and slurmd started here as daemons with a slurm.conf of the test's own (its
# own ports, key and state under a scratch directory in the build tree). It
# submits a batch script like the README's (2 tasks, srun of lifeboat-demo,
# which reads SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_NODELIST, SLURM_JOB_ID and
# SLURM_RESTART_COUNT, and requeues itself on exit 42), preempts it with
# `scancel --signal=TERM`, then its requeued run with `--signal=USR1`, and
# checks that each time both workers save at one agreed step and exit 42 and
# the job runs again from that checkpoint, and that it finishes with the
# digests of an uninterrupted run. Every daemon it started is stopped.
# Exits 77 (skipped) where SLURM or munge is absent, not root, or a daemon
# does not come up.
#
# usage: slurm_test.sh LIFEBOAT_LAUNCH LIFEBOAT_DEMO SCRATCH_PARENT
set -euo pipefail

launch=$1
demo=$2
parent=$3
# Long enough (2000 steps of 5 ms) that the notice lands in training.
steps=2000
# Bounds on what a loaded 2-core machine takes: a daemon's start, a line of
# the job's output, the job's whole run.
start_bound=60
line_bound=120

skip() {
  echo "slurm_test: SKIPPED: $*"
  exit 77
}
fail() {
  echo "slurm_test: FAILED: $*" >&2
  for f in "$dir"/job.out "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [[ -f $f ]] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }
  done
  exit 1
}

for tool in munged mungekey slurmctld slurmd sbatch scontrol scancel squeue; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install slurm-wlm munge)"
done
[[ $(id -u) -eq 0 ]] || skip "the daemons run as root here (SlurmUser=root); not root"
node=$(hostname -s)
getent hosts "$node" >/dev/null || skip "this host's name $node does not resolve"

mkdir -p "$parent"
dir=$(mktemp -d "$parent/slurm-test.XXXXXX")
# munged refuses a socket in a directory others cannot traverse.
chmod 711 "$dir"
daemons=()
job=""
cleanup() {
  # The job first: its steps run under slurmstepd, which outlives slurmd.
  if [[ -n $job ]]; then
    scancel "$job" 2>/dev/null || true
    timeout "$start_bound" bash -c "while squeue -h -j $job 2>/dev/null | grep -q .; do sleep 0.2; done" || true
  fi
  for pid in "${daemons[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${daemons[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

# Three ports nothing listens on (slurmctld, slurmd, the coordination
# service), below the ephemeral range: SLURM's default for the service, 40000
# + job id mod 20000, lies in it, where another test's outgoing connection
# may hold the port, so the job sets LIFEBOAT_COORDINATOR_PORT.
free_ports() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 10000))
    if ! ss -Hltn "sport >= :$p and sport <= :$((p + 2))" | grep -q .; then
      echo "$p"
      return
    fi
  done
  skip "no three free ports found"
}
port=$(free_ports)

mungekey -c -k "$dir/munge.key"
cat >"$dir/slurm.conf" <<EOF
ClusterName=lifeboat-test
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=30
JobRequeue=1
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=lifeboat Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p "$dir/state" "$dir/spool"
export SLURM_CONF=$dir/slurm.conf

munged --foreground --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" \
  >"$dir/munged.out" 2>&1 &
daemons+=($!)
timeout "$start_bound" bash -c "until [[ -S $dir/munge.socket ]]; do sleep 0.2; done" ||
  skip "munged did not start: $(tail -n 3 "$dir/munged.log" 2>/dev/null)"
slurmctld -D -i >"$dir/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D >"$dir/slurmd.out" 2>&1 &
daemons+=($!)
timeout "$start_bound" bash -c "until scontrol show node $node 2>/dev/null | grep -q 'State=IDLE'; do sleep 0.2; done" ||
  skip "slurmctld and slurmd did not bring node $node up: $(tail -n 3 "$dir/slurmctld.log" "$dir/slurmd.log" 2>/dev/null)"

demo_args=(--checkpoint-dir "$dir/ckpt" --steps "$steps" --state-mb 1 --step-ms 5)
# The uninterrupted run: the same two ranks under lifeboat-launch.
LIFEBOAT_PLATFORM=generic "$launch" --nproc 2 -- "$demo" --checkpoint-dir "$dir/reference" \
  --steps "$steps" --state-mb 1 --step-ms 5 >"$dir/reference.out" 2>&1 || fail "the reference run failed"
expected=$(grep "^lifeboat-demo: rank=.* step=$steps digest=" "$dir/reference.out" | sort)
[[ $(wc -l <<<"$expected") -eq 2 ]] || fail "the reference run printed no two digests"

# The batch script of the README, with this build's demo as the trainer.
cat >"$dir/job.sh" <<EOF
#!/bin/bash
#SBATCH --ntasks=2 --requeue --open-mode=append --output=$dir/job.out
echo "job-script: start restart=\${SLURM_RESTART_COUNT:-0}"
export LIFEBOAT_COORDINATOR_PORT=$((port + 2))
srun $demo ${demo_args[*]}
code=\$?
echo "job-script: srun exited \$code restart=\${SLURM_RESTART_COUNT:-0}"
if [ "\$code" -eq 42 ]; then scontrol requeue "\$SLURM_JOB_ID"; fi
exit "\$code"
EOF
job=$(sbatch --parsable "$dir/job.sh") || fail "sbatch refused the job"
touch "$dir/job.out"

# Waits until the job's output holds `count` lines matching `pattern`.
wait_lines() {
  local pattern=$1 count=$2
  timeout "$line_bound" bash -c "until [[ \$(grep -c -e '$pattern' $dir/job.out) -ge $count ]]; do sleep 0.2; done" ||
    fail "no $count line(s) '$pattern' in the job's output"
}
# Waits until `scontrol show job` says `what`.
wait_job() {
  local what=$1
  timeout "$line_bound" bash -c "until scontrol show job $job | grep -q '$what'; do sleep 0.2; done" ||
    fail "job $job never showed '$what': $(scontrol show job "$job" | head -n 5)"
}

# Run `run` of the job (SLURM_RESTART_COUNT=run) gets `signal` from scancel
# once both workers joined: both save at one agreed step, exit 42, and the
# script requeues the job. Sets `step` to the agreed step.
preempt() {
  local signal=$1 run=$2
  wait_lines "runtime: joined the coordination service" $((2 * (run + 1)))
  scancel --signal="$signal" "$job"
  wait_lines "job-script: srun exited" $((run + 1))
  grep -q "job-script: srun exited 42 restart=$run" "$dir/job.out" ||
    fail "srun did not exit 42 after SIG$signal"
  local agreed
  agreed=$(grep -o "agreed to save at step [0-9]*" "$dir/job.out" | tail -n 2 | sort -u)
  [[ $(grep -c "agreed to save at step" "$dir/job.out") -eq $((2 * (run + 1))) &&
    $(wc -l <<<"$agreed") -eq 1 ]] || fail "the two workers did not agree on one step: $agreed"
  step=${agreed##* }
  [[ $(grep -c "committed; exiting with restart code 42" "$dir/job.out") -eq $((2 * (run + 1))) ]] ||
    fail "not both workers exited with the restart code after SIG$signal"
  [[ -f $dir/ckpt/$(printf 'step-%012d' "$step")/MANIFEST ]] ||
    fail "no committed checkpoint of step $step"
  # `scontrol requeue` holds the job for a while (its BeginTime); this test
  # starts it at once instead of waiting that out.
  wait_job "Restarts=$((run + 1))"
  wait_job "JobState=PENDING"
  scontrol update jobid="$job" StartTime=now
}

# scancel's default signal, then SLURM's usual notice before a time limit
# (--signal=USR1@N sends it the same way, to every task).
preempt TERM 0
first_step=$step
preempt USR1 1
wait_lines "job-script: srun exited" 3
grep -q "job-script: srun exited 0 restart=2" "$dir/job.out" || fail "the requeued job did not finish"
for resumed in "$first_step" "$step"; do
  [[ $(grep -c "lifeboat-demo: rank=[01] resumed at step $resumed" "$dir/job.out") -eq 2 ]] ||
    fail "the requeued workers did not resume at step $resumed"
done
digests=$(grep "^lifeboat-demo: rank=.* step=$steps digest=" "$dir/job.out" | sort)
[[ $digests == "$expected" ]] || fail "digests differ: got '$digests', want '$expected'"
wait_job "JobState=COMPLETED"
job=""
echo "slurm_test: passed (saved at step $first_step after SIGTERM and $step after SIGUSR1," \
  "requeued twice, digests equal)"
