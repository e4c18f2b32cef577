"""The command line: exit codes and one-line errors (never a traceback)."""

import json
import logging
import subprocess
import sys

import pytest

from rlvr.cli import main


def run_cli(*args):
    result = subprocess.run([sys.executable, "-m", "rlvr", *args], capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout, result.stderr


def one_line_error(stderr):
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr
    assert lines and lines[-1].startswith("rlvr: error: ")
    return lines[-1]


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "train" in capsys.readouterr().out


def test_missing_recipe_is_one_line(tmp_path):
    code, _, err = run_cli("train", str(tmp_path / "missing.yaml"))
    assert code == 2 and "recipe not found" in one_line_error(err)


def test_unknown_recipe_key_is_one_line(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("task: {name: gsm8k}\ngrpo: {max_step: 3}\n")
    code, _, err = run_cli("train", str(recipe))
    assert code == 2 and "Did you mean 'max_steps'" in one_line_error(err)


def test_unknown_task_is_one_line(tmp_path):
    code, _, err = run_cli("train", "--set", "task.name=gsm9k")
    assert code == 2 and "unknown task 'gsm9k'" in one_line_error(err)


def test_unknown_reward_is_one_line():
    code, _, err = run_cli("train", "--set", "rewards=[{name: corectness}]")
    assert code == 2 and "Valid rewards:" in one_line_error(err)


def test_model_not_found_is_one_line(tmp_path):
    code, _, err = run_cli("train", "--set", f"model.name_or_path={tmp_path}/no-model")
    assert code == 2 and "model path not found" in one_line_error(err)


def test_missing_data_file_is_one_line(tmp_path):
    code, _, err = run_cli("train", "--set", "task={name: gsm8k, data: ./missing/train.jsonl}")
    assert code == 2 and "data path not found" in one_line_error(err)


def test_malformed_jsonl_data_names_the_line(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"question": "q", "answer": "x\\n#### 1"}\nnot json\n')
    code, _, err = run_cli("train", "--set", f"task={{name: gsm8k, data: {data}}}")
    assert code == 2 and "data.jsonl:2: malformed JSON" in one_line_error(err)


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_reward_score_writes_one_line_per_input_in_order(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl",
        [
            json.dumps({"completion": "3 + 4 = 7\n#### The final answer is 7", "final_answer": "7"}),
            json.dumps({"completion": "#### 7", "final_answer": "7"}),
            json.dumps({"completion": "I think 8.\n#### The final answer is 8", "final_answer": "7"}),
        ],
    )
    code, out, err = run_cli("reward", "score", "--task", "gsm8k", "--input", str(source))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [
        {"format": 1.0, "correctness": 1.0, "total": 1.5},
        {"format": 0.0, "correctness": 1.0, "total": 1.0},
        {"format": 1.0, "correctness": 0.0, "total": 0.5},
    ]


def test_reward_score_reports_and_skips_malformed_lines(tmp_path):
    source = write_lines(
        tmp_path / "in.jsonl",
        [json.dumps({"completion": "x\n#### The final answer is 1", "final_answer": "1"}), "{broken", json.dumps({"final_answer": "1"})],
    )
    output = tmp_path / "out.jsonl"
    code, _, err = run_cli("reward", "score", "--task", "gsm8k", "--input", str(source), "--output", str(output))
    assert code == 1
    assert "in.jsonl:2: malformed JSON" in err and "in.jsonl:3: no 'completion'" in err
    assert len(output.read_text().splitlines()) == 1


def test_reward_score_accepts_chat_completions(tmp_path):
    chat = [{"role": "assistant", "content": "1 + 1 = 2\n#### The final answer is 2"}]
    source = write_lines(tmp_path / "in.jsonl", [json.dumps({"completion": chat, "final_answer": "2"})])
    code, out, _ = run_cli("reward", "score", "--task", "gsm8k", "--input", str(source))
    assert code == 0 and json.loads(out)["total"] == 1.5


def test_reward_score_missing_input_is_one_line(tmp_path):
    code, _, err = run_cli("reward", "score", "--task", "gsm8k", "--input", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "not found" in one_line_error(err)


def test_the_cli_hides_the_bitsandbytes_hub_kernel_warning_but_not_its_errors():
    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    logger.setLevel(logging.NOTSET)
    main(["recipe", "show", "cpu-default"])
    assert not logger.isEnabledFor(logging.WARNING)
    assert logger.isEnabledFor(logging.ERROR)


def test_plain_text_turns_rest_markup_into_its_words():
    from rlvr.commands.list import plain_text

    assert plain_text(":func:`closeness_score` in [0, 1]") == "closeness_score in [0, 1]"
    assert plain_text("see :mod:`~rlvr.verifiers.keywords` and :class:`the task <rlvr.tasks.Task>`") == (
        "see keywords and the task")
    assert plain_text("within ``tolerance`` of\n   the `answer_column` **value**, *else* 0") == (
        "within tolerance of the answer_column value, else 0")


def test_rlvr_list_is_plain_text_one_line_per_entry(capsys):
    from rlvr.config import builtin_recipes

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "`" not in out and ":func:" not in out and ":mod:" not in out
    recipes = out.split("recipes:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in recipes[:-1]] == builtin_recipes()
    assert "31.5% -> 77.0% on 200 held-out test items" in next(line for line in recipes if "cpu-default" in line)
    rewards = out.split("rewards:\n")[1].splitlines()
    assert next(line for line in rewards if line.split()[:1] == ["closeness"]).endswith("(default weight 0.5).")


def test_rlvr_list_tools_names_the_built_in_tools_without_starting_a_sandbox(capsys, monkeypatch):
    from rlvr.tools import python_tool

    monkeypatch.setattr(python_tool, "make_python_tool", lambda *a, **k: pytest.fail("python tool built"))
    assert main(["list", "tools"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tools:\n  calculator  built in  Exact arithmetic") and "\n  python      built in  Run" in out
