"""A real (tiny) GRPO run with a tool, through TRL's own tool loop: the call is run, its reply is fed back and
masked out of the loss, the counts reach the log, and the verdict sets the base model without the tool beside it.

The tiny random model cannot write a tool call, so its rollouts are scripted: a first turn that calls the
calculator, and after the reply an answer line. Everything else (TRL's parsing, the tool run, the reply's tokens,
the mask, the loss, the evaluations) is the real path.
"""

import pytest

from rlvr.config import recipe_from_dict
from rlvr.testing import build_tiny_model
from rlvr.training import trainer as trainer_module
from rlvr.training.run import build_trainer, train

CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2 + 3"}}\n</tool_call>'
ANSWER = "#### The final answer is 5"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def recipe(model, out, **task):
    return recipe_from_dict({
        "name": "tiny-tools",
        "model": {"name_or_path": str(model), "lora": False, "chat_format": "chatml"},
        "task": {"name": "arithmetic", "chat": True, "shots": 1, "train_size": 4, "validation_size": 2,
                 "test_size": 2, "tools": ["calculator"], **task},
        "rewards": [{"name": "format"}, {"name": "correctness"}],
        "grpo": {"max_steps": 1, "per_device_train_batch_size": 4, "num_generations": 2, "max_completion_length": 300,
                 "logging_steps": 1, "save_strategy": "no", "seed": 3, "report_to": ["none"]},
        "run": {"output_dir": str(out / "run"), "tracking_uri": str(out / "mlruns"), "test_items": 2,
                "eval_items": 0, "keep_best": False, "eval_max_new_tokens": 4},
    })


def after_reply(text):
    """Whether the prompt's last turn is a tool's reply (the exemplar before it holds one too)."""
    return text.rsplit("<|im_start|>user\n", 1)[-1].startswith("<tool_response>")


@pytest.fixture
def scripted(monkeypatch):
    """Rollouts that call the calculator first and answer after its reply (the prompt ids decide which)."""
    seen = []

    def decode(trainer, prompt_ids):
        tokenizer = trainer.processing_class
        out = []
        for ids in prompt_ids:
            text = tokenizer.decode(ids)
            seen.append(text)
            reply = ANSWER if after_reply(text) else CALL
            out.append(tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id])
        return out

    monkeypatch.setattr(trainer_module, "decode_rollouts", decode)
    return seen


def test_the_tool_runs_and_its_reply_is_masked_out_of_the_loss(tiny_model, tmp_path, scripted):
    trainer = build_trainer(recipe(tiny_model, tmp_path), quiet=True)
    batch = trainer._generate_and_score_completions(trainer.train_dataset.select(range(2)).to_list() * 2)
    tokenizer = trainer.processing_class
    for ids, mask in zip(batch["completion_ids"], batch["tool_mask"], strict=True):
        ids, mask = ids.tolist(), mask.tolist()
        masked = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
        learned = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 1])
        assert masked == "\n<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        assert CALL in learned and ANSWER in learned and "<tool_response>" not in learned
    assert any(after_reply(text) and "<tool_response>\n5\n</tool_response>" in text for text in scripted)


def test_tool_counts_reach_the_log_and_the_verdict_sets_the_base_without_the_tool_beside_it(tiny_model, tmp_path, scripted):
    result = train(recipe(tiny_model, tmp_path), quiet=True)
    logged = next(entry for entry in result.log_history if "tools/call_frequency" in entry)
    assert logged["tools/call_frequency"] == 1.0 and logged["tools/failure_frequency"] == 0.0
    assert logged["tools/used_share"] == 1.0 and logged["tools/turns_per_completion"] == 1.0
    assert logged["tools/cut_by_turn_limit_share"] == 0.0
    test = result.test
    assert test["without_tool"]["items"] == 2 and "mcnemar_p" in test["without_tool"]
    assert set(test["after"]["tools"]) >= {"used_share", "calls_per_completion", "error_share", "cut_by_turn_limit_share"}


def test_required_opens_every_training_prompt_with_a_call(tiny_model, tmp_path, scripted):
    trainer = build_trainer(recipe(tiny_model, tmp_path, tool_choice="required"), quiet=True)
    trainer._generate_and_score_completions(trainer.train_dataset.select(range(2)).to_list() * 2)
    first_turns = [text for text in scripted if not after_reply(text)]
    assert first_turns and all(text.endswith("<|im_start|>assistant\n<tool_call>\n") for text in first_turns)


def test_a_model_that_keeps_calling_is_counted_as_cut_by_the_turn_limit(tiny_model, tmp_path, monkeypatch):
    def decode(trainer, prompt_ids):
        tokenizer = trainer.processing_class
        return [tokenizer.encode(CALL, add_special_tokens=False) + [tokenizer.eos_token_id] for _ in prompt_ids]

    monkeypatch.setattr(trainer_module, "decode_rollouts", decode)
    spec = recipe(tiny_model, tmp_path)
    spec.grpo.update(max_tool_calling_iterations=1, max_completion_length=400)
    result = train(spec, quiet=True)
    logged = next(entry for entry in result.log_history if "tools/cut_by_turn_limit_share" in entry)
    assert logged["tools/cut_by_turn_limit_share"] == 1.0 and logged["tools/turns_per_completion"] == 1.0
