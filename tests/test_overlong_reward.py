"""The ``overlong`` reward: TRL's soft overlong punishment, its token limit taken from the recipe's generation limit."""

import pytest
from conftest import BENCHMARK_RECIPES

from rlvr.config import load_recipe, recipe_from_dict
from rlvr.errors import RlvrError
from rlvr.rewards import build_reward


def overlong(**params):
    return build_reward("overlong", {"max_tokens": 160, **params})


def test_a_completion_that_ends_before_the_window_costs_nothing():
    assert overlong()(["a note"], completion_ids=[[7] * 128]) == [0.0]


def test_the_cost_falls_linearly_to_minus_one_at_the_limit():
    assert overlong()(["a", "b"], completion_ids=[[7] * 144, [7] * 160]) == [-0.5, -1.0]


def test_the_window_is_a_fifth_of_the_limit_unless_set():
    assert overlong()(["a"], completion_ids=[[7] * 129]) == [pytest.approx(-1 / 32)]
    assert overlong(cache=10)(["a", "b"], completion_ids=[[7] * 145, [7] * 155]) == [0.0, -0.5]


def test_chat_completions_are_judged_by_their_token_ids():
    chat = [[{"role": "assistant", "content": "x"}]]
    assert overlong()(chat, completion_ids=[[7] * 160]) == [-1.0]


def test_without_token_ids_it_returns_none_so_the_sum_leaves_it_out():
    assert overlong()(["a", "b"]) == [None, None]
    assert overlong()(["a", "b"], completion_ids=[[7]]) == [None, None]  # ids that do not match the completions
    assert overlong()(["a"], completion_ids=[None]) == [None]


@pytest.mark.parametrize("params, message", [
    ({"max_tokens": 0}, "max_tokens must be a positive whole number"),
    ({"max_tokens": "160"}, "max_tokens must be a positive whole number"),
    ({"cache": 200}, "cache .200. must not exceed max_tokens .160."),
    ({"cache": True}, "cache must be a positive whole number"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    with pytest.raises(RlvrError, match=message):
        overlong(**params)


def recipe_with(grpo, **spec):
    return recipe_from_dict({"task": {"name": "gsm8k"}, "grpo": grpo, "rewards": [{"name": "overlong", **spec}]})


def test_a_recipe_gives_it_the_generation_limit():
    assert recipe_with({"max_completion_length": 96}).rewards == [{"name": "overlong", "max_tokens": 96}]


def test_a_recipes_own_limit_for_it_is_kept():
    assert recipe_with({"max_completion_length": 96}, max_tokens=64).rewards[0]["max_tokens"] == 64


def test_without_a_generation_limit_it_takes_trls_default():
    from trl import GRPOConfig

    default = GRPOConfig.__dataclass_fields__["max_completion_length"].default
    assert recipe_with({}).rewards[0]["max_tokens"] == default


def test_a_set_generation_limit_reaches_it():
    recipe = load_recipe(str(BENCHMARK_RECIPES / "keywords-named-12-ended-cpu-smollm2.yaml"), ["grpo.max_completion_length=200"])
    assert {"name": "overlong", "weight": 1.0, "max_tokens": 200} in recipe.rewards


def test_grpo_training_passes_it_the_completion_token_ids(tiny_model_dir, tmp_path):
    from rlvr.training.run import train

    recipe = load_recipe(None, [
        f"model.name_or_path={tiny_model_dir}", "task.train_size=8", "grpo.max_steps=1",
        "grpo.per_device_train_batch_size=4", "grpo.num_generations=4", "grpo.max_completion_length=6",
        "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0", "run.keep_best=false",
        f"run.output_dir={tmp_path / 'out'}",
    ])
    recipe.rewards = [{"name": "correctness"}, {"name": "overlong", "max_tokens": 6, "cache": 2}]
    logs = next(entry for entry in train(recipe, quiet=True).log_history if "rewards/overlong/mean" in entry)
    assert -1.0 <= logs["rewards/overlong/mean"] <= 0.0  # a number: NaN would mean no token ids arrived


def test_the_reward_audit_says_it_cannot_judge_it_and_leaves_it_out():
    from rlvr.audit.keyword_probes import keyword_item_probes
    from rlvr.audit.report import render_table, verdict
    from rlvr.audit.runner import audit
    from rlvr.tasks import get_task

    task = get_task("keywords", {"per_item": True})
    specs = [{"name": "keywords"}, {"name": "diagnosis"}, {"name": "overlong", "max_tokens": 160}]
    result = audit(keyword_item_probes(), task.reward_functions(specs), task.reward_weights(specs))
    assert result.unjudged == ["overlong"] and result.passed
    assert "n/a" in render_table(result) and "overlong scored no probe" in verdict(result)
