"""TRL's GRPOTrainer plus the one thing it lacks for verifiable-answer tasks: stopping at the answer."""

from __future__ import annotations

from typing import Any

from trl import GRPOTrainer

from rlvr.generation import AnswerStop


class RlvrGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose transformers-generate rollouts stop at the task's answer line.

    Stopped completions are cut after the answer line and end with EOS, so TRL
    counts them as finished (not clipped) and the policy learns to stop there.
    vLLM rollouts are left to vLLM (pass ``stop`` through ``generation_kwargs``).
    """

    def __init__(self, *args: Any, stop_patterns: list[str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.answer_stop = AnswerStop(self.processing_class, stop_patterns) if stop_patterns else None
        if self.answer_stop is not None:
            self.answer_stop.eos_token_id = self.eos_token_ids[0]
        self.stopped_ratio: list[float] = []

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs):  # noqa: ANN001
        if self.answer_stop is None or self.use_vllm:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs)
        model = self.accelerator.unwrap_model(self.model)
        with self.answer_stop.installed(model):
            completion_ids, logprobs = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, *args, **kwargs
            )
        cuts = [self.answer_stop.cut(ids) for ids in completion_ids]
        self.stopped_ratio.append(sum(stopped for _, stopped in cuts) / max(1, len(cuts)))
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["completions/stopped_at_answer_ratio"].append(self.stopped_ratio[-1])
        return [ids for ids, _ in cuts], logprobs
