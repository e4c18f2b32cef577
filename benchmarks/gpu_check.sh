#!/usr/bin/env bash
# GPU check for the scale-out paths, on a machine with one GPU and no network.
#
# Builds a small random Llama model (about 75M parameters) with rlvr's offline character-level tokenizer
# (rlvr.testing; no hub), then runs a few GRPO steps of the arithmetic task (generated data) three ways
# through `rlvr launch` on one process (two, NCCL, where the machine has two GPUs or more):
#   1. ddp config, transformers generation
#   2. ddp config, vLLM colocate generation                 (skipped, with a note, without vllm)
#   3. zero3 config (DeepSpeed ZeRO-3), transformers generation  (skipped, with a note, without deepspeed)
#   4. ddp and zero3 configs with 4-bit NF4 base weights (QLoRA)  (skipped, with a note, without bitsandbytes)
# and prints seconds per step (training time from the run's summary.json / steps), peak GPU memory (nvidia-smi, sampled every
# 200 ms, so vLLM's preallocated pool counts) and the loss path that ran (summary.json's shared_prompt: rlvr's
# piecewise loss under DDP and ZeRO-3, docs/scale-out.md) for each. Then it runs `rlvr experiment` at a reduced size (the same
# model and steps, shots 0,1,2 on the first 50 test items, transformers evaluation) and prints its wall time, the
# sweep and where the report is; a second run of the same command must skip every stage.
#
# Usage: bash benchmarks/gpu_check.sh [STEPS]        (default 5 steps; run from anywhere)
# Without a GPU it says so and exits 0.
set -u

if ! python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: no CUDA GPU visible; nothing to check (exit 0)."
  exit 0
fi

STEPS="${1:-5}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d -t rlvr-gpu-check-XXXX)"
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
NPROC=$(python -c "import torch; print(min(2, torch.cuda.device_count()))")
echo "gpu_check: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); work dir $WORK"

python -c "
import sys
from rlvr.testing import build_tiny_model
print('gpu_check: small random Llama model in', build_tiny_model(sys.argv[1], hidden_size=1024, layers=8))
" "$WORK/model" || exit 1

write_recipe() {  # $1 recipe path, $2 output dir, $3 extra grpo lines, $4 extra model lines
  cat > "$1" <<EOF
name: gpu-check
model:
  name_or_path: $WORK/model
  dtype: bfloat16
  lora: true
  lora_r: 16
  lora_alpha: 32
  lora_target_modules: all-linear
$4
task:
  name: arithmetic
  shots: 2
  train_size: 256
rewards:
  - {name: format, weight: 0.5}
  - {name: correctness, weight: 1.0}
grpo:
  max_steps: $STEPS
  per_device_train_batch_size: 16
  num_generations: 8
  max_completion_length: 64
  learning_rate: 1.0e-5
  beta: 0.0
  logging_steps: 1
  save_strategy: "no"
  report_to: []
  bf16: true
$3
run:
  output_dir: $2
EOF
}

run_case() {  # $1 label, $2 accelerate config, $3 extra grpo lines, $4 extra model lines
  local label="$1" dir="$WORK/$1"
  mkdir -p "$dir"
  write_recipe "$dir/recipe.yaml" "$dir/out" "$3" "${4:-}"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$dir/memory.csv" &
  local sampler=$!
  local start end code peak runtime
  start=$(date +%s.%N)
  python -m rlvr launch --config "$2" --num-processes "$NPROC" "$dir/recipe.yaml" > "$dir/log.txt" 2>&1
  code=$?
  end=$(date +%s.%N)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  peak=$(sort -n "$dir/memory.csv" | tail -1)
  runtime=$(python -c "import json, sys; s = json.load(open(sys.argv[1])); print(s['seconds'] / s['steps'])" \
    "$dir/out/summary.json" 2>/dev/null)
  if [ "$code" -ne 0 ] || [ -z "$runtime" ]; then
    printf "%-20s FAILED (exit %s); last lines of %s:\n" "$label" "$code" "$dir/log.txt"
    tail -5 "$dir/log.txt"
    return
  fi
  awk -v l="$label" -v r="$runtime" -v p="$peak" -v s="$start" -v e="$end" 'BEGIN {
    printf "%-20s %8.3f s/step   peak GPU memory %7s MiB   (wall %.0f s with start-up)\n", l, r, p, e - s }'
  python -c "
import json, sys
path = json.load(open(sys.argv[1])).get('shared_prompt', {})
print('                     loss:', path.get('loss', '?'), '|', path.get('loss_batch', '?'))
" "$dir/out/summary.json"
}

echo "gpu_check: $STEPS GRPO steps per case, $NPROC process(es), 16 completions per step and process"
run_case "ddp-transformers" ddp ""
if python -c "import vllm" >/dev/null 2>&1; then
  run_case "ddp-vllm-colocate" ddp "  use_vllm: true
  vllm_mode: colocate
  vllm_gpu_memory_utilization: 0.2"
else
  echo "ddp-vllm-colocate    skipped: vllm is not installed (pip install 'rlvr[vllm]')"
fi
if python -c "import deepspeed" >/dev/null 2>&1; then
  run_case "zero3-transformers" zero3 ""
else
  echo "zero3-transformers   skipped: deepspeed is not installed (pip install 'rlvr[deepspeed]')"
fi
# QLoRA: the paths run on CPU by tests/test_qlora_cpu.py and tests/test_launch_zero3.py, now on the GPU.
QLORA="  load_in_4bit: true
  quantization_fallback: error"
if python -c "import bitsandbytes" >/dev/null 2>&1; then
  run_case "ddp-qlora" ddp "" "$QLORA"
  if python -c "import deepspeed" >/dev/null 2>&1; then
    run_case "zero3-qlora" zero3 "" "$QLORA"
  fi
else
  echo "qlora                skipped: bitsandbytes is not installed (pip install 'rlvr[qlora]')"
fi
run_experiment() {  # rlvr experiment at a reduced size: train, base vs trained at 3 shot counts, report
  local dir="$WORK/experiment" code start end
  mkdir -p "$dir"
  write_recipe "$dir/recipe.yaml" "$dir/unused" ""
  start=$(date +%s.%N)
  python -m rlvr experiment "$dir/recipe.yaml" --output "$dir/out" --shots 0,1,2 --items 50 --backend hf \
    --no-progress > "$dir/log.txt" 2>&1
  code=$?
  end=$(date +%s.%N)
  if [ "$code" -ne 0 ] || [ ! -f "$dir/out/report.html" ]; then
    printf "%-20s FAILED (exit %s); last lines of %s:\n" "experiment" "$code" "$dir/log.txt"
    tail -5 "$dir/log.txt"
    return
  fi
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%-20s wall %.0f s (train + 2 x 3 evaluations of 50 items + report)\n", "experiment", e - s }'
  python -c "
import json, sys
for row in json.load(open(sys.argv[1]))['sweep']:
    print(f\"  {row['shots']}-shot  base {row['base']['accuracy']:.0%}  trained {row['trained']['accuracy']:.0%}  p={row['paired']['p_value']:.2g}\")
" "$dir/out/summary.json"
  python -m rlvr experiment "$dir/recipe.yaml" --output "$dir/out" --shots 0,1,2 --items 50 --backend hf \
    --no-progress > "$dir/rerun.txt" 2>&1
  if [ "$(grep -c 'skipped' "$dir/rerun.txt")" -eq 3 ]; then
    echo "  rerun skipped train and both evaluations; report: $dir/out/report.html"
  else
    echo "  rerun did NOT skip every stage; see $dir/rerun.txt"
  fi
}

run_experiment
echo "gpu_check: logs in $WORK"
