#!/bin/bash
# `prima plan` across machines with a Slurm job array: one array task per shard of the search
# space. Each task writes OUT/results.shard-i-of-N.jsonl on the shared file system; a requeued
# task resumes from what its shard already wrote. Afterwards, merge (no new simulation) and
# write plan.json and report.html:
#   sbatch --array=0-15 deploy/plan/plan-slurm-array.sh plans/my_plan.json /shared/plan-out
#   prima plan plans/my_plan.json --out /shared/plan-out
# The number of shards is the array size (SLURM_ARRAY_TASK_COUNT); ask for as many CPUs per
# task as simulations you want side by side.
#SBATCH --job-name=prima-plan
#SBATCH --cpus-per-task=8
#SBATCH --mem=8G
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --output=prima-plan-%A_%a.log
set -euo pipefail
PLAN=${1:?usage: sbatch --array=0-N-1 plan-slurm-array.sh PLAN.json OUT_DIR}
OUT=${2:?usage: sbatch --array=0-N-1 plan-slurm-array.sh PLAN.json OUT_DIR}
exec prima plan "$PLAN" --out "$OUT" \
  --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" \
  --jobs "${SLURM_CPUS_PER_TASK:-1}" -q
