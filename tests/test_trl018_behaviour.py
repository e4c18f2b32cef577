"""Training settings that reproduce trl 0.18's effective behaviour: left prompt truncation, no answer-line stop."""

from rlvr.config import load_recipe
from rlvr.training.run import build_trainer, train


def tiny_recipe(model_dir, output_dir, *extra):
    return load_recipe(
        None,
        [
            f"model.name_or_path={model_dir}",
            "task.train_size=16",
            "task.shots=2",
            "grpo.max_steps=1",
            "grpo.per_device_train_batch_size=8",
            "grpo.num_generations=4",
            "grpo.max_completion_length=8",
            "grpo.save_strategy=no",
            "grpo.report_to=[]",
            "run.eval_items=0",
            "run.keep_best=false",
            "run.sample_steps=0",
            f"run.output_dir={output_dir}",
            *extra,
        ],
    )


def test_prompts_are_cut_to_their_last_tokens_from_the_left(tiny_model_dir, tmp_path):
    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out", "run.max_prompt_tokens=12"), quiet=True)
    prompt = "Question: a long few-shot prompt whose start the model never sees\nSolution: "
    full = trainer.processing_class(text=[prompt])["input_ids"][0]
    ids = trainer._tokenize_prompts([prompt])[0][0]
    assert len(full) > 12 and list(ids) == list(full)[-12:]


def test_prompts_are_whole_by_default(tiny_model_dir, tmp_path):
    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out"), quiet=True)
    prompt = "Question: a long few-shot prompt whose start the model never sees\nSolution: "
    assert list(trainer._tokenize_prompts([prompt])[0][0]) == list(trainer.processing_class(text=[prompt])["input_ids"][0])


def test_rollouts_stop_only_at_eos_or_the_length_limit_when_asked(tiny_model_dir, tmp_path):
    trainer = build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out", "run.stop_at_answer=false"), quiet=True)
    assert trainer.answer_stop is None
    assert build_trainer(tiny_recipe(tiny_model_dir, tmp_path / "out2"), quiet=True).answer_stop is not None


def test_a_run_trains_on_truncated_prompts(tiny_model_dir, tmp_path):
    result = train(tiny_recipe(tiny_model_dir, tmp_path / "out", "run.max_prompt_tokens=16", "run.stop_at_answer=false"),
                   quiet=True)
    assert result.steps == 1 and (result.adapter_dir / "adapter_config.json").is_file()
