#!/usr/bin/env bash
# GPU check for the scale-out paths, on a machine with one GPU and no network.
#
# Builds a small random Llama model and a byte-level BPE tokenizer locally (no hub), then runs a few GRPO
# steps of the arithmetic task (generated data) three ways through `rlvr launch` on one process:
#   1. ddp config, transformers generation
#   2. ddp config, vLLM colocate generation        (skipped with a note when vllm is not installed)
#   3. zero3 config (DeepSpeed ZeRO-3), transformers generation  (skipped when deepspeed is not installed)
# and prints seconds per step and peak GPU memory for each.
#
# Usage: bash benchmarks/gpu_check.sh [STEPS]        (from the repository root; default 5 steps)
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
echo "gpu_check: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); work dir $WORK"

python - "$WORK/model" <<'EOF'
"""A small random Llama (about 30M parameters) and a byte-level BPE tokenizer trained on task-like text."""
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
corpus = [f"Question: What is {a} + {b}? Answer: {a} + {b} = {a + b}.\n#### The final answer is {a + b}"
          for a in range(10) for b in range(10)]
tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
special = ["<pad>", "<s>", "</s>"]
tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=512, special_tokens=special,
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
fast.save_pretrained(out)
config = LlamaConfig(vocab_size=len(fast), hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                     num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=2048,
                     pad_token_id=fast.pad_token_id, bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                     torch_dtype="bfloat16")
torch.manual_seed(0)
model = LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out)
print(f"gpu_check: model {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters in {out}")
EOF

write_recipe() {  # $1 path, $2 output dir, $3 extra grpo lines
  cat > "$1" <<EOF
model:
  name_or_path: $WORK/model
  lora: {r: 16, alpha: 32}
task:
  name: arithmetic
  shots: 2
  train_size: 256
rewards:
  - {name: format, weight: 0.5}
  - {name: correctness, weight: 1.0}
grpo:
  max_steps: $STEPS
  per_device_train_batch_size: 8
  num_generations: 8
  max_completion_length: 64
  learning_rate: 1.0e-5
  logging_steps: 1
  save_strategy: "no"
  report_to: []
  bf16: true
$3
run:
  output_dir: $2
EOF
}

# Peak GPU memory of a whole run (vLLM's preallocated pool included), sampled by nvidia-smi every 200 ms.
run_case() {  # $1 label, $2 accelerate config, $3 extra grpo lines
  local label="$1" dir="$WORK/$1"
  mkdir -p "$dir"
  write_recipe "$dir/recipe.yaml" "$dir/out" "$3"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$dir/memory.csv" &
  local sampler=$!
  local start end
  start=$(date +%s.%N)
  python -m rlvr launch --config "$2" --num-processes 1 "$dir/recipe.yaml" > "$dir/log.txt" 2>&1
  local code=$?
  end=$(date +%s.%N)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  local peak runtime
  peak=$(sort -n "$dir/memory.csv" | tail -1)
  runtime=$(grep -o "'train_runtime': '\?[0-9.]*" "$dir/log.txt" | tail -1 | grep -o "[0-9.]*$")
  if [ "$code" -ne 0 ] || [ -z "$runtime" ]; then
    printf "%-22s FAILED (exit %s); last lines of %s:\n" "$label" "$code" "$dir/log.txt"
    tail -5 "$dir/log.txt"
    return
  fi
  awk -v l="$label" -v r="$runtime" -v n="$STEPS" -v p="$peak" -v s="$start" -v e="$end" 'BEGIN {
    printf "%-22s %8.3f s/step   peak GPU memory %6s MiB   (wall %.0f s incl. start-up)\n", l, r / n, p, e - s }'
}

echo "gpu_check: $STEPS GRPO steps per case, 1 process"
run_case "ddp-transformers" ddp ""
if python -c "import vllm" 2>/dev/null; then
  run_case "ddp-vllm-colocate" ddp "  use_vllm: true
  vllm_mode: colocate
  vllm_gpu_memory_utilization: 0.2"
else
  echo "ddp-vllm-colocate      skipped: vllm is not installed (pip install 'rlvr[vllm]')"
fi
if python -c "import deepspeed" 2>/dev/null; then
  run_case "zero3-transformers" zero3 ""
else
  echo "zero3-transformers     skipped: deepspeed is not installed (pip install 'rlvr[deepspeed]')"
fi
echo "gpu_check: logs in $WORK"
