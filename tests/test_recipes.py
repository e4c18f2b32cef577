"""Recipe loading, overrides and errors."""

from pathlib import Path

import pytest
from conftest import BENCHMARK_RECIPES

from rlvr.config import builtin_recipes, load_recipe, recipe_from_dict, resolve_recipe
from rlvr.errors import RlvrError


def write(tmp_path, text):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return str(path)


def test_no_argument_loads_the_embedded_cpu_default():
    recipe = load_recipe(None)
    assert recipe.name == "cpu-default"
    assert recipe.model.name_or_path == "smollm2-135m-instruct"
    assert recipe.task_name == "arithmetic"


def test_every_builtin_recipe_loads():
    for name in builtin_recipes():
        assert load_recipe(name).task_name


def test_published_recipe_keeps_the_published_hyperparameters():
    recipe = load_recipe("gsm8k-qwen2.5-0.5b-qlora")
    g = recipe.grpo
    assert recipe.model.load_in_4bit and recipe.model.lora_r == 16 and recipe.model.lora_alpha == 16
    assert recipe.task["shots"] == 8
    assert (g["learning_rate"], g["num_train_epochs"], g["per_device_train_batch_size"]) == (1.84e-4, 2, 16)
    assert (g["gradient_accumulation_steps"], g["lr_scheduler_type"], g["warmup_steps"], g["seed"]) == (2, "cosine", 0.1, 42)
    assert g["logging_steps"] == 5 and "mlflow" in g["report_to"]


def test_set_overrides_any_field_with_yaml_values():
    recipe = load_recipe(None, ["grpo.max_steps=3", "task.shots=2", "model.lora_r=4", "run.output_dir=/tmp/x"])
    assert recipe.grpo["max_steps"] == 3 and recipe.task["shots"] == 2
    assert recipe.model.lora_r == 4 and str(recipe.output_dir) == "/tmp/x"


def test_unknown_section_names_the_closest(tmp_path):
    with pytest.raises(RlvrError, match="unknown key 'modle'.*Did you mean 'model'"):
        load_recipe(write(tmp_path, "modle: {}\ntask: {name: gsm8k}\n"))


def test_unknown_grpo_field_names_the_closest(tmp_path):
    with pytest.raises(RlvrError, match="unknown key 'learning_rte'.*Did you mean 'learning_rate'"):
        load_recipe(write(tmp_path, "task: {name: gsm8k}\ngrpo: {learning_rte: 1.0e-4}\n"))


def test_unknown_model_field_names_the_closest(tmp_path):
    with pytest.raises(RlvrError, match="Did you mean 'lora_r'"):
        load_recipe(write(tmp_path, "task: {name: gsm8k}\nmodel: {lora_rr: 8}\n"))


def test_wrongly_typed_field_says_what_it_needs(tmp_path):
    with pytest.raises(RlvrError, match="'lora_r' must be an integer"):
        load_recipe(write(tmp_path, "task: {name: gsm8k}\nmodel: {lora_r: many}\n"))


def test_malformed_yaml_names_the_line(tmp_path):
    with pytest.raises(RlvrError, match=r"invalid YAML at line \d+"):
        load_recipe(write(tmp_path, "task: {name: gsm8k}\ngrpo: [unclosed\n"))


def test_missing_recipe_lists_the_builtin_ones():
    with pytest.raises(RlvrError, match="recipe not found: nope.yaml.*Built-in recipes: .*cpu-default"):
        load_recipe("nope.yaml")


def test_recipe_without_task_is_refused(tmp_path):
    with pytest.raises(RlvrError, match="'task' needs a name"):
        load_recipe(write(tmp_path, "model: {lora: true}\n"))


def test_bad_override_is_explained():
    with pytest.raises(RlvrError, match="--set expects section.key=value"):
        load_recipe(None, ["grpo.max_steps"])


def test_wrongly_typed_grpo_field_is_refused_before_training():
    with pytest.raises(RlvrError, match="grpo 'learning_rate' must be a number"):
        load_recipe(None, ["grpo.learning_rate=abc"])


def test_reward_weights_set_in_both_places_are_an_error():
    with pytest.raises(RlvrError, match="set twice"):
        recipe_from_dict({"task": {"name": "gsm8k"}, "rewards": [{"name": "format", "weight": 0.5}, {"name": "correctness"}],
                          "grpo": {"reward_weights": [0.5, 1.0]}})


def test_grpo_reward_weights_must_match_the_rewards():
    with pytest.raises(RlvrError, match="2 values for 1 rewards"):
        recipe_from_dict({"task": {"name": "gsm8k"}, "rewards": [{"name": "correctness"}], "grpo": {"reward_weights": [0.5, 1.0]}})


def test_reward_weight_must_be_a_number():
    with pytest.raises(RlvrError, match="weight must be a number"):
        recipe_from_dict({"task": {"name": "gsm8k"}, "rewards": [{"name": "format", "weight": "high"}]})


def test_recipe_weights_become_trl_reward_weights_and_rewards_stay_raw(tmp_path):
    from rlvr.tasks import get_task
    from rlvr.training.grpo_args import grpo_config

    recipe = load_recipe("cpu-default", [f"run.output_dir={tmp_path}"])
    task = get_task(recipe.task_name, recipe.task_options)
    weights = task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights"))
    assert weights == [0.5, 1.0, 0.5]  # the published scale (format 0.5 + correctness 1.0) + closeness 0.5
    assert grpo_config(recipe, weights).reward_weights == [0.5, 1.0, 0.5]
    text = "3 + 4 = 7.\n#### The final answer is 7"
    assert [f([text], final_answer=["7"]) for f in task.reward_functions(recipe.rewards)] == [[1.0], [1.0], [1.0]]


@pytest.mark.parametrize("name", ["cpu-default", "gsm8k-qwen2.5-0.5b-qlora", "code-cpu-smollm2", "keywords-cpu-smollm2",
                                  "code-qwen2.5-coder-7b", "code-functions-cpu-smollm2",
                                  "gsm8k-qwen2.5-0.5b-published-as-run", "chain-sum-cpu-smollm2"])
def test_builtin_recipes_keep_their_reward_scale(name):
    from rlvr.tasks import get_task

    recipe = load_recipe(name)
    task = get_task(recipe.task_name, recipe.task_options)
    expected = {"gsm8k": [0.5, 1.0], "arithmetic": [0.5, 1.0, 0.5], "code": [1.0], "mbpp": [1.0], "pyfunc": [1.0],
                "keywords": [1.0], "reasoning-gym": [0.5, 1.0, 0.5]}
    assert task.reward_weights(recipe.rewards, recipe.grpo.get("reward_weights")) == expected[recipe.task_name]


def test_published_as_run_recipe_holds_trl_018s_effective_settings():
    recipe = load_recipe("gsm8k-qwen2.5-0.5b-published-as-run")
    g, run, model = recipe.grpo, recipe.run, recipe.model
    assert (run.max_prompt_tokens, g["max_completion_length"], g["temperature"]) == (512, 256, 1.0)
    assert run.stop_at_answer is False and model.chat_format == "chatml"
    assert (g["beta"], g["loss_type"], g["num_generations"]) == (0.04, "bnpo", 8)
    assert not model.load_in_4bit and model.lora_modules_to_save == ["lm_head", "embed_tokens"]
    assert (g["learning_rate"], g["num_train_epochs"], g["per_device_train_batch_size"]) == (1.84e-4, 2, 16)
    assert recipe.task["exemplar_order"] == "fixed" and run.sweep_shots == [0, 2, 4, 8]


def test_published_as_run_recipe_builds_a_grpo_config_on_cpu(tmp_path):
    from rlvr.training.grpo_args import grpo_config

    recipe = load_recipe("gsm8k-qwen2.5-0.5b-published-as-run", [f"run.output_dir={tmp_path}"])
    args = grpo_config(recipe, [0.5, 1.0])
    assert args.max_completion_length == 256 and args.temperature == 1.0 and args.beta == 0.04


def test_the_blog_recipe_uses_trl_018s_real_temperature_default():
    assert load_recipe("gsm8k-qwen2.5-0.5b-qlora").grpo["temperature"] == 1.0


def test_the_default_is_judged_on_at_least_200_held_out_test_items():
    recipe = load_recipe()
    assert recipe.run.test_items >= 200 and recipe.task["test_size"] >= recipe.run.test_items


def test_the_default_keeps_the_best_validation_weights_chosen_without_test_items():
    run = load_recipe().run
    assert run.keep_best and run.eval_items > 0 and run.eval_every_steps > 0 and run.eval_split == "validation"


def test_every_builtin_recipe_says_on_one_line_what_it_measured():
    # `rlvr list` shows it: a figure measured with the recipe, or that none was.
    for name in builtin_recipes():
        description = load_recipe(name).description
        assert description and "\n" not in description and len(description) <= 240, name
        assert "%" in description or "not run" in description or "no held-out verdict" in description, name


def test_benchmark_recipes_load_by_path_and_build_on_a_builtin_recipe():
    paths = sorted(BENCHMARK_RECIPES.glob("*.yaml"))
    assert paths and not {path.stem for path in paths} & set(builtin_recipes())
    for path in paths:
        recipe, resolved = resolve_recipe(str(path))
        assert recipe.name == path.stem and recipe.notes == []  # outputs/NAME as when it was measured
        assert resolved.bases[-1] in builtin_recipes()  # the chain's files lie beside it, down to a built-in one
        assert all(Path(base).resolve().parent == BENCHMARK_RECIPES for base in resolved.bases[:-1])


def test_the_name_first_recipe_is_the_keyword_search_s_last_step_written_out():
    search = load_recipe(str(BENCHMARK_RECIPES / "keywords-named-12-cited-cpu-smollm2.yaml"),
                         ["task.exemplars=name-first"]).to_dict()
    kept = load_recipe("keywords-named-12-cited-namefirst-cpu-smollm2").to_dict()
    for recipe in (search, kept):
        del recipe["name"], recipe["description"]
    assert kept == search
