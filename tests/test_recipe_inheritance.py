"""Recipe inheritance (``base:``), the no-grpo rule, provenance and ``rlvr recipe show`` (rlvr.recipe_base)."""

from pathlib import Path

import pytest
import yaml

from rlvr.cli import main
from rlvr.config import builtin_recipes, load_recipe, resolve_recipe
from rlvr.errors import RlvrError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "your-task" / "recipe.yaml"


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@pytest.fixture
def default():
    return load_recipe("cpu-default")


def test_sections_merge_key_by_key_over_the_base(tmp_path, default):
    recipe, resolved = resolve_recipe(write(tmp_path / "r.yaml", (
        "base: cpu-default\n"
        "model: {lora_r: 8}\n"
        "grpo: {learning_rate: 1.0e-4, gradient_checkpointing_kwargs: {use_reentrant: false}}\n"
        "run: {test_items: 50}\n")))
    assert recipe.model.lora_r == 8 and recipe.model.dtype == "auto"  # dtype: the base's
    assert recipe.grpo["learning_rate"] == 1.0e-4 and recipe.grpo["max_steps"] == default.grpo["max_steps"]
    assert recipe.run.test_items == 50 and recipe.run.keep_best and recipe.run.eval_items == default.run.eval_items
    assert recipe.task == default.task and recipe.rewards == default.rewards  # not given: the base's
    assert resolved.origin(("grpo", "learning_rate")) == "file"
    assert resolved.origin(("grpo", "max_steps")) == "base cpu-default"
    assert recipe.notes == []


def test_nested_mappings_merge_recursively(tmp_path, default):
    recipe = load_recipe(write(tmp_path / "r.yaml", "base: cpu-default\ntask: {generator_config: {max_digits: 3}}\n"))
    config = recipe.task["generator_config"]
    assert config["max_digits"] == 3 and config["operators"] == ["+"] and config["min_digits"] == 1
    assert recipe.task["shots_mix"] == default.task["shots_mix"]  # same task (no name): merged key by key


def test_lists_replace_the_bases_whole(tmp_path):
    recipe, resolved = resolve_recipe(write(tmp_path / "r.yaml", (
        "base: cpu-default\nrewards: [{name: correctness}]\ngrpo: {report_to: []}\nrun: {sweep_shots: [4]}\n")))
    assert recipe.rewards == [{"name": "correctness"}]
    assert recipe.grpo["report_to"] == [] and recipe.run.sweep_shots == [4]
    assert resolved.origin(("rewards",)) == "file" and resolved.origin(("rewards", 0, "name")) == "file"


def test_a_task_of_another_name_replaces_the_bases_whole_with_what_belongs_to_it(tmp_path, default):
    recipe, resolved = resolve_recipe(write(tmp_path / "r.yaml", "base: cpu-default\ntask: {name: gsm8k, shots: 2}\n"))
    assert recipe.task == {"name": "gsm8k", "shots": 2}  # none of arithmetic's options
    assert recipe.rewards == []  # the base's rewards were arithmetic's: the task's defaults apply
    assert recipe.run.sweep_variants == [] and default.run.sweep_variants  # the 3-digit variant was arithmetic's
    assert recipe.run.sweep_shots == default.run.sweep_shots  # not the task's: kept
    assert resolved.origin(("run", "sweep_variants")) == "default"


def test_a_task_of_the_same_name_merges_key_by_key(tmp_path, default):
    recipe = load_recipe(write(tmp_path / "r.yaml", "base: cpu-default\ntask: {name: arithmetic, shots: 2}\n"))
    assert recipe.task["shots"] == 2 and recipe.task["shots_mix"] == default.task["shots_mix"]
    assert recipe.rewards == default.rewards and recipe.run.sweep_variants == default.run.sweep_variants
    assert load_recipe(write(tmp_path / "s.yaml", "base: cpu-default\ntask: arithmetic\n")).task == default.task


def test_name_is_the_files_own_or_its_stem_and_description_is_not_inherited(tmp_path):
    recipe, resolved = resolve_recipe(write(tmp_path / "my-run.yaml", "base: cpu-default\n"))
    assert recipe.name == "my-run" and recipe.output_dir == Path("outputs/my-run") and recipe.description == ""
    assert resolved.origin(("name",)) == "default (the file's name)"
    named = load_recipe(write(tmp_path / "other.yaml", "base: cpu-default\nname: mine\ndescription: d\n"))
    assert (named.name, named.description) == ("mine", "d")


def test_chains_resolve_each_value_to_the_recipe_that_set_it(tmp_path):
    write(tmp_path / "common" / "base.yaml", "base: cpu-default\ngrpo: {max_steps: 10}\nrun: {test_items: 20}\n")
    write(tmp_path / "common" / "middle.yaml", "base: base.yaml\ngrpo: {learning_rate: 1.0e-4}\n")
    recipe, resolved = resolve_recipe(write(tmp_path / "top.yaml", "base: common/middle.yaml\nrun: {test_items: 30}\n"))
    assert (recipe.grpo["max_steps"], recipe.grpo["learning_rate"], recipe.run.test_items) == (10, 1.0e-4, 30)
    assert resolved.bases[-1] == "cpu-default" and len(resolved.bases) == 3
    assert resolved.origin(("grpo", "max_steps")).endswith("common/base.yaml")
    assert resolved.origin(("grpo", "learning_rate")).endswith("common/middle.yaml")
    assert resolved.origin(("grpo", "temperature")) == "base cpu-default"
    assert resolved.origin(("run", "test_items")) == "file"


def test_a_file_base_is_read_from_the_recipes_directory(tmp_path, monkeypatch):
    write(tmp_path / "recipes" / "shared.yaml", "base: cpu-default\ngrpo: {max_steps: 7}\n")
    path = write(tmp_path / "recipes" / "r.yaml", "base: ./shared.yaml\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_recipe(path).grpo["max_steps"] == 7
    absolute = write(tmp_path / "abs.yaml", f"base: {tmp_path / 'recipes' / 'shared.yaml'}\n")
    assert load_recipe(absolute).grpo["max_steps"] == 7


def test_provenance_of_each_origin(tmp_path):
    recipe, resolved = resolve_recipe(
        write(tmp_path / "r.yaml", "base: cpu-default\nmodel: {lora_r: 8}\n"),
        ["grpo.max_steps=3", "task={name: gsm8k, shots: 4}"])
    assert recipe.grpo["max_steps"] == 3
    assert resolved.origin(("model", "lora_r")) == "file"
    assert resolved.origin(("model", "lora_alpha")) == "base cpu-default"
    assert resolved.origin(("model", "attn_implementation")) == "default"  # the dataclass default
    assert resolved.origin(("grpo", "max_steps")) == "--set"
    assert resolved.origin(("task", "name")) == resolved.origin(("task", "shots")) == "--set"
    assert resolved.origin(("run", "threads")) == "default"


def test_a_recipe_without_grpo_takes_the_cpu_defaults_and_says_so(tmp_path, default):
    recipe, resolved = resolve_recipe(write(tmp_path / "short.yaml", (
        "model: {name_or_path: Qwen/Qwen2.5-0.5B}\ntask: {name: gsm8k, shots: 2}\nrun: {test_items: 40}\n")))
    assert recipe.grpo == default.grpo  # never TRL's 3 epochs, lr 1e-6, 256 tokens
    assert recipe.model.name_or_path == "Qwen/Qwen2.5-0.5B" and recipe.model.dtype == "auto"  # its own model
    assert recipe.task == {"name": "gsm8k", "shots": 2} and recipe.rewards == []  # its own task, the task's rewards
    assert recipe.run.test_items == 40  # its own
    assert (recipe.run.eval_items, recipe.run.keep_best, recipe.run.loss_chunk_rows) == (
        default.run.eval_items, default.run.keep_best, default.run.loss_chunk_rows)
    assert recipe.run.sweep_variants == [] and recipe.run.sweep_shots == [0, 2, 4, 8]  # not the default's task's
    assert resolved.origin(("grpo", "learning_rate")) == resolved.origin(("run", "eval_items")) == "default (cpu-default)"
    assert resolved.origin(("run", "test_items")) == "file"
    [note] = recipe.notes
    assert "\n" not in note and "short.yaml has no grpo section: using cpu-default's" in note
    assert "max_steps 30" in note and "set base: or grpo: to choose" in note


def test_the_no_grpo_line_is_printed_when_training(tmp_path, monkeypatch, capsys):
    import rlvr.training.run

    def stop(recipe, **kwargs):
        raise RlvrError("stopped before training")

    monkeypatch.setattr(rlvr.training.run, "train", stop)
    path = write(tmp_path / "short.yaml", "task: {name: gsm8k}\n")
    assert main(["train", path]) == 2
    err = capsys.readouterr().err
    assert "rlvr: recipe" in err and "has no grpo section: using cpu-default's" in err
    assert main(["train", write(tmp_path / "full.yaml", "task: {name: gsm8k}\ngrpo: {max_steps: 2}\n")]) == 2
    assert "no grpo section" not in capsys.readouterr().err


def test_an_explicit_grpo_section_or_a_base_is_a_choice(tmp_path):
    assert load_recipe(write(tmp_path / "a.yaml", "task: {name: gsm8k}\ngrpo: {}\n")).grpo == {}  # TRL's, asked for
    assert load_recipe(write(tmp_path / "b.yaml", "task: {name: gsm8k}\ngrpo: {max_steps: 5}\n")).run.test_items == 0
    assert load_recipe(write(tmp_path / "c.yaml", "base: cpu-default\n")).notes == []


@pytest.mark.parametrize("name", builtin_recipes())
def test_builtin_recipes_are_unaffected(name):
    # Self-contained, or built on other built-in recipes (code-functions-unseen-cpu-smollm2): never on a file.
    recipe, resolved = resolve_recipe(name)
    assert recipe.notes == [] and set(resolved.bases) <= set(builtin_recipes())
    origins = {"file"} | {f"base {base}" for base in resolved.bases}
    assert {resolved.origin(("grpo", key)) for key in recipe.grpo} <= origins


def test_the_walkthrough_recipe_is_the_default_with_its_own_task_and_rewards(monkeypatch):
    monkeypatch.chdir(EXAMPLE.parent)
    recipe, resolved = resolve_recipe("recipe.yaml")
    default = load_recipe("cpu-default")
    assert resolved.bases == ["cpu-default"] and recipe.name == "your-task" and recipe.notes == []
    assert recipe.task["name"] == "jsonl" and len(recipe.rewards) == 3
    assert recipe.grpo["max_completion_length"] == recipe.run.eval_max_new_tokens == 48
    assert recipe.grpo["learning_rate"] == default.grpo["learning_rate"] / 2
    own = ("max_completion_length", "learning_rate")
    assert {k: v for k, v in recipe.grpo.items() if k not in own} == {
        k: v for k, v in default.grpo.items() if k not in own}
    assert recipe.run.sweep_variants == [] and recipe.run.keep_best


def test_an_unknown_base_names_the_closest_builtin(tmp_path):
    with pytest.raises(RlvrError, match="base 'cpu-defualt' is not a built-in recipe. Did you mean 'cpu-default'.*"
                                        "Built-in recipes: .*code-cpu-smollm2"):
        load_recipe(write(tmp_path / "r.yaml", "base: cpu-defualt\n"))


def test_a_missing_base_file_is_one_line(tmp_path):
    with pytest.raises(RlvrError, match=r"base file not found: \./nope\.yaml .*recipe's own directory") as error:
        load_recipe(write(tmp_path / "r.yaml", "base: ./nope.yaml\n"))
    assert "\n" not in str(error.value)


def test_a_cycle_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a.yaml", "base: b.yaml\n")
    write(tmp_path / "b.yaml", "base: a.yaml\n")
    with pytest.raises(RlvrError, match="cycle: a.yaml -> b.yaml -> a.yaml"):
        load_recipe("a.yaml")
    write(tmp_path / "self.yaml", "base: ./self.yaml\n")
    with pytest.raises(RlvrError, match="cycle: self.yaml -> self.yaml"):
        load_recipe("self.yaml")


def test_a_base_that_is_not_a_mapping_is_one_line(tmp_path):
    write(tmp_path / "list.yaml", "- task\n- grpo\n")
    with pytest.raises(RlvrError, match="list.yaml is not a recipe: it holds a list, not a mapping"):
        load_recipe(write(tmp_path / "r.yaml", "base: list.yaml\n"))
    with pytest.raises(RlvrError, match="base must name a built-in recipe"):
        load_recipe(write(tmp_path / "s.yaml", "base: {name: cpu-default}\n"))


def test_base_is_a_known_key_and_not_a_set_target(tmp_path):
    with pytest.raises(RlvrError, match="unknown key 'bsae'.*Did you mean 'base'"):
        load_recipe(write(tmp_path / "r.yaml", "bsae: cpu-default\n"))
    with pytest.raises(RlvrError, match="--set cannot change base"):
        load_recipe(None, ["base=cpu-default"])


def test_recipe_show_prints_yaml_with_each_values_origin(tmp_path, capsys):
    path = write(tmp_path / "r.yaml", "base: cpu-default\nname: shown\nmodel: {lora_r: 8}\n")
    assert main(["recipe", "show", path, "--set", "grpo.max_steps=3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("# ") and "cpu-default" in lines[0]

    def line(prefix):
        return next(text for text in lines if text.startswith(prefix))

    assert line("  lora_r: 8").endswith("# file")
    assert line("  lora_alpha: 32").endswith("# base cpu-default")
    assert line("  max_steps: 3").endswith("# --set")
    assert line("  learning_rate: 0.0005").endswith("# base cpu-default")
    assert line("  attn_implementation: null").endswith("# default")
    assert line("  - {name: format, weight: 0.5}").endswith("# base cpu-default")
    assert yaml.safe_load(out) == load_recipe(path, ["grpo.max_steps=3"]).to_dict()  # valid YAML, the same recipe


def test_recipe_show_aligns_the_comments_after_values_written_over_several_lines(tmp_path, capsys):
    path = write(tmp_path / "r.yaml", "base: cpu-default\nname: wide\n"
                 "description: a description long enough that it cannot end before the column of comments\n"
                 "task:\n  shots_mix: [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2,\n              0, 1, 2, 0, 1, 2, 0, 1, 2]\n"
                 "rewards:\n  - {name: format, weight: 0.5}\n"
                 "  - {name: correctness, weight: 1.0, answer_column: final_answer, tolerance: 0.001}\n")
    assert main(["recipe", "show", path]) == 0
    out = capsys.readouterr().out
    body = [line for line in out.splitlines() if not line.lstrip().startswith("#")]
    columns = {line.index("   # ") for line in body if "   # " in line}
    assert len(columns) == 1
    column = columns.pop()
    assert all(len(line) <= column for line in body if "   # " not in line)
    first = {line.split(":")[0].strip(): line for line in body if ":" in line}
    assert "#" not in first["description"] and "#" not in first["shots_mix"]  # folded, the comment on the last line
    assert any(line.startswith("  - name: correctness   ") for line in body)  # a long list item: a line per field
    assert yaml.safe_load(out) == load_recipe(path).to_dict()


def test_recipe_show_plain_is_a_standalone_recipe(tmp_path, capsys):
    path = write(tmp_path / "r.yaml", "base: cpu-default\nname: plain\n")
    assert main(["recipe", "show", path, "--plain"]) == 0
    plain = write(tmp_path / "plain.yaml", capsys.readouterr().out)
    assert "#" not in Path(plain).read_text().split("description")[0]
    assert load_recipe(plain).to_dict() == load_recipe(path).to_dict()


def test_recipe_show_of_a_bad_base_is_one_line_error(tmp_path, capsys):
    assert main(["recipe", "show", write(tmp_path / "r.yaml", "base: nope\n")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlvr: error: ") and "base 'nope' is not a built-in recipe" in err and err.count("\n") == 1


def test_launch_checks_the_generation_engine_a_base_asks_for(tmp_path, monkeypatch):
    from rlvr.launch import accelerate, engines
    from rlvr.launch.cluster import ClusterEnv

    seen = []
    monkeypatch.setattr(engines, "check_generation_engine", seen.append)
    write(tmp_path / "common.yaml", "base: cpu-default\ngrpo: {use_vllm: true}\n")
    plan = accelerate.plan_launch(accelerate.LaunchOptions(write(tmp_path / "r.yaml", "base: common.yaml\n")),
                                  ClusterEnv(), gpus=0)
    accelerate.check_runnable(plan)
    assert seen and seen[0]["use_vllm"] is True and seen[0]["max_steps"] == 30


def test_sagemaker_refuses_a_file_base_the_job_would_not_receive(tmp_path):
    from rlvr.launch.sagemaker import SubmitOptions, build_job_request

    def request(path):
        return build_job_request(SubmitOptions(recipe=path, instance_type="ml.g6.48xlarge"), {})

    assert request(write(tmp_path / "builtin.yaml", "base: cpu-default\nrun: {tracking_uri: mlflow.db}\n"))
    write(tmp_path / "common.yaml", "base: cpu-default\n")
    with pytest.raises(RlvrError, match="builds on the file .*common.yaml.*rlvr recipe show .* --plain"):
        request(write(tmp_path / "r.yaml", "base: common.yaml\n"))
