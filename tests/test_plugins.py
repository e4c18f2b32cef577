"""The user's rewards and tasks by import path, and plug-ins installed as packages (entry points)."""

import math
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlvr.errors import RlvrError
from rlvr.rewards.base import build_reward, reward_weights
from rlvr.tasks import get_task, task_class

EXAMPLE_PLUGIN = Path(__file__).resolve().parents[1] / "examples" / "rlvr-plugin-example"

REWARDS_SOURCE = textwrap.dedent("""
    def brevity(completions, max_words=5, **columns):
        return [1.0 if len(c.split()) <= max_words else 0.0 for c in completions]
    brevity.default_weight = 0.3

    def raises_on_two(completions, **columns):
        return [1.0 / (len(c) != 2) for c in completions]

    def too_short(completions, **columns):
        return [1.0]

    def gives_nan(completions, **columns):
        return [float("nan") if c == "x" else 0.0 for c in completions]

    def gives_text(completions, **columns):
        return ["1.0" for _ in completions]

    def gives_none(completions, **columns):
        return [None for _ in completions]

    def gives_scalar(completions, **columns):
        return 1.0

    not_callable = [1, 2]
""")


@pytest.fixture
def rewards_file(tmp_path):
    path = tmp_path / "my_rewards.py"
    path.write_text(REWARDS_SOURCE)
    return path


def test_reward_from_a_file_path_scores_with_trl_signature(rewards_file):
    reward = build_reward(f"{rewards_file}:brevity")
    assert reward(["a b", "a b c d e f g"], id=["x", "y"]) == [1.0, 0.0]
    assert reward.__name__ == "brevity"


def test_reward_from_a_module_path_takes_recipe_params(tmp_path, monkeypatch, rewards_file):
    monkeypatch.syspath_prepend(str(tmp_path))
    reward = build_reward("my_rewards:brevity", {"max_words": 1})
    assert reward(["a", "a b"]) == [1.0, 0.0]


def test_user_reward_weight_defaults_to_its_declared_weight_and_mixes_with_built_ins(rewards_file):
    specs = [{"name": "format"}, {"name": f"{rewards_file}:brevity"}, {"name": f"{rewards_file}:brevity", "weight": 2}]
    assert reward_weights(specs) == [0.5, 0.3, 2.0]


def test_file_task_mixes_user_and_built_in_rewards(tmp_path, rewards_file):
    (tmp_path / "d.jsonl").write_text("".join(f'{{"question": "q{i}", "answer": "a{i}"}}\n' for i in range(10)))
    t = get_task("jsonl", {"path": str(tmp_path / "d.jsonl")})
    funcs = t.reward_functions([{"name": "correctness"}, {"name": f"{rewards_file}:brevity", "weight": 0.2}])
    assert [f.__name__ for f in funcs] == ["correctness", "brevity"]


@pytest.mark.parametrize("name, message", [
    ("raises_on_two", r"raised ZeroDivisionError \(float division by zero\) on item 1 of 3 \(id b\)"),
    ("too_short", "returned 1 values for 3 completions"),
    ("gives_nan", r"returned nan for item 2 of 3 \(id c\)"),
    ("gives_text", r"returned '1.0' \(str\) for item 0 of 3"),
    ("gives_none", r"returned None \(NoneType\) for item 0"),
    ("gives_scalar", "returned a float; it must return a list of 3 numbers"),
])
def test_broken_user_reward_stops_with_one_line_naming_reward_and_item(rewards_file, name, message):
    reward = build_reward(f"{rewards_file}:{name}")
    with pytest.raises(RlvrError, match=message) as caught:
        reward(["abc", "ab", "x"], id=["a", "b", "c"])
    assert f"reward '{rewards_file}:{name}'" in str(caught.value) and "\n" not in str(caught.value)


def test_reward_import_errors_are_one_line(tmp_path, rewards_file):
    with pytest.raises(RlvrError, match="no such file"):
        build_reward(f"{tmp_path / 'absent.py'}:brevity")
    with pytest.raises(RlvrError, match="module 'no_such_module_xyz' does not import: ModuleNotFoundError"):
        build_reward("no_such_module_xyz:brevity")
    with pytest.raises(RlvrError, match="names a list, not a function"):
        build_reward(f"{rewards_file}:not_callable")
    with pytest.raises(RlvrError, match="has no attribute 'brevety'. Did you mean 'brevity'"):
        build_reward(f"{rewards_file}:brevety")


def test_unknown_reward_name_says_how_to_name_your_own():
    with pytest.raises(RlvrError, match="unknown reward 'brevityy'.*'path/to/file.py:function'"):
        build_reward("brevityy")


def test_task_by_import_path(tmp_path):
    (tmp_path / "my_task.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass
        from rlvr.tasks.jsonl_task import JsonlTask

        @dataclass
        class Fixed(JsonlTask):
            verifier: str = "math"
    """))
    (tmp_path / "d.jsonl").write_text("".join(f'{{"question": "{i}+1?", "answer": "{i + 1}"}}\n' for i in range(10)))
    t = get_task(f"{tmp_path / 'my_task.py'}:Fixed", {"path": str(tmp_path / "d.jsonl")})
    assert t.verifier == "math" and len(t.load("test")) == 2


def test_task_import_path_that_is_not_a_task_is_one_line(tmp_path):
    (tmp_path / "nt.py").write_text("class NotATask:\n    pass\n")
    with pytest.raises(RlvrError, match="not a subclass of rlvr.tasks.Task"):
        task_class(f"{tmp_path / 'nt.py'}:NotATask")


def test_unknown_task_name_says_how_to_name_your_own():
    with pytest.raises(RlvrError, match="unknown task 'jsnl'. Did you mean 'jsonl'.*'module:Class'"):
        task_class("jsnl")


# ------------------------------------------------------------------------------ an installed plug-in package


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """examples/rlvr-plugin-example, pip-installed (no deps, no index) into a directory put on sys.path."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE_PLUGIN, root / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check", "--target", str(target), str(source)],
                   check=True, capture_output=True)
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))
    for name in [m for m in sys.modules if m.startswith("rlvr_plugin_example")]:
        del sys.modules[name]


def test_installed_plugin_task_is_found_by_its_entry_point_name(installed_plugin):
    t = get_task("letter-sort", {"test_size": 5})
    row = t.load("test")[0]
    assert t.judge([f"#### The final answer is {row['final_answer']}"], [row])[0].correct


def test_installed_plugin_reward_is_found_by_its_entry_point_name(installed_plugin):
    reward = build_reward("brevity", {"max_words": 2})
    assert reward(["one two", "one two three four five"]) == [1.0, 0.0]
    assert math.isclose(reward_weights([{"name": "brevity"}])[0], 0.2)


def test_rlvr_list_shows_built_ins_and_the_installed_plugin_with_its_origin(installed_plugin, capsys):
    from rlvr.cli import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "jsonl       built in" in out or "jsonl" in out.split("rewards:")[0]
    assert "letter-sort" in out and "plug-in rlvr-plugin-example 0.1.0" in out
    assert "brevity" in out.split("rewards:")[1]
