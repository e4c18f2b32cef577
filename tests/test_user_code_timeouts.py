"""Time limits on the user's code (rlvr.timeouts): rewards, checkers and plug-in tasks' load that hang are stopped."""

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rlvr import timeouts
from rlvr.errors import RlvrError
from rlvr.rewards.base import build_reward
from rlvr.tasks import get_task

LIMIT = 0.5
#: A stopped call must end within the limit plus this (a loaded machine, the retry of a single item).
SLACK = 3.0

HANGING = textwrap.dedent("""
    import time

    def sleeps(completions, **columns):
        time.sleep(1e9)

    def spins(completions, **columns):
        while True:
            pass

    def swallows(completions, **columns):
        try:
            time.sleep(1e9)
        except Exception:  # the signal's exception is not an Exception: this does not keep the call alive
            return [0.0 for _ in completions]

    def raises_on_batch_hangs_alone(completions, **columns):
        if len(completions) > 1:
            raise ValueError("batch")
        time.sleep(1e9)

    def quick(completions, **columns):
        return [float(len(c)) for c in completions]

    def check(completion, row):
        if row["q"].startswith("What is 1 "):
            time.sleep(1e9)
        return row["a"] in completion

    def check_marked(completion, row):  # hangs on the completions marked HANG; counts its calls in a file
        with open(__file__ + ".calls", "a") as calls:
            calls.write(row["q"] + "\\n")
        if "HANG" in completion:
            time.sleep(1e9)
        return row["a"] in completion
""")


@pytest.fixture(autouse=True)
def limits():
    handler = signal.getsignal(signal.SIGALRM)
    timeouts.set_user_code_timeout(LIMIT)
    timeouts.set_task_load_timeout(LIMIT)
    yield
    timeouts.configure({})  # the defaults again, for the tests after these
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "the timer was left running"
    assert signal.getsignal(signal.SIGALRM) == handler, "the SIGALRM handler was not restored"


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "hangs.py"
    path.write_text(HANGING)
    return path


def timed(func, *args, **kwargs):
    start = time.monotonic()
    try:
        func(*args, **kwargs)
    finally:
        elapsed = time.monotonic() - start
        assert elapsed < LIMIT + SLACK, f"took {elapsed:.1f} s"


@pytest.mark.parametrize("name", ["sleeps", "spins", "swallows"])
def test_reward_that_never_returns_stops_with_one_line_naming_it_and_the_batch(user_file, name):
    reward = build_reward(f"{user_file}:{name}")
    with pytest.raises(RlvrError) as caught:
        timed(reward, ["a", "b", "c", "d"], id=["x1", "x2", "x3", "x4"])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"reward '{user_file}:{name}' did not return within 0.5 s (run.user_code_timeout)")
    assert "on a batch of 4 completions (ids x1, x2, x3, ...)" in message
    assert "Raise run.user_code_timeout" in message


def test_a_batch_of_one_names_its_item(user_file):
    with pytest.raises(RlvrError, match=r"within 0.5 s \(run.user_code_timeout\) on item 0 of 1 \(id q7\)"):
        timed(build_reward(f"{user_file}:sleeps"), ["a"], id=["q7"])


def test_an_item_that_hangs_when_retried_alone_is_named(user_file):
    """A batch that raises is retried item by item to name the item; an item that then hangs is stopped too."""
    with pytest.raises(RlvrError, match=r"did not return within 0.5 s .* on item 0 of 2 \(id a\) \(retried alone"):
        timed(build_reward(f"{user_file}:raises_on_batch_hangs_alone"), ["x", "y"], id=["a", "b"])


def test_the_timer_is_cleared_after_a_timeout_and_normal_calls_run_undisturbed(user_file):
    with pytest.raises(RlvrError):
        build_reward(f"{user_file}:spins")(["a"])
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    start = time.monotonic()
    time.sleep(LIMIT + 0.3)  # no alarm left behind to interrupt it
    assert time.monotonic() - start >= LIMIT + 0.3
    quick = build_reward(f"{user_file}:quick")
    assert quick(["ab", "c"]) == [2.0, 1.0]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_zero_or_none_means_no_limit(user_file):
    timeouts.set_user_code_timeout(0)
    assert timeouts.user_code_timeout() is None
    timeouts.set_user_code_timeout(None)
    assert build_reward(f"{user_file}:quick")(["abc"]) == [3.0]
    with pytest.raises(RlvrError, match=r"run.user_code_timeout must be a number of seconds >= 0"):
        timeouts.set_user_code_timeout(-1)


def test_limits_nest_and_the_outer_timer_resumes():
    def inner_hangs():
        with pytest.raises(timeouts.UserCodeTimeout):
            timeouts.call_with_limit(0.2, "inner", time.sleep, (1e9,))
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < remaining <= 5.0  # the outer call's timer, resumed
        return "outer finished"

    assert timeouts.call_with_limit(5.0, "outer", inner_hangs) == "outer finished"
    with pytest.raises(timeouts.UserCodeTimeout):  # an outer limit that runs out first unwinds the inner call
        timed(timeouts.call_with_limit, 0.3, "outer", timeouts.call_with_limit, (30.0, "inner", time.sleep, (1e9,)))


def write_sums(path, count=20):
    path.write_text("".join(json.dumps({"q": f"What is {i} + {i + 1}?", "a": str(2 * i + 1)}) + "\n"
                            for i in range(count)))
    return path


def test_checker_that_hangs_judges_that_item_wrong_counts_it_and_goes_on(tmp_path, user_file, capsys):
    data = write_sums(tmp_path / "my.jsonl")
    t = get_task("jsonl", {"path": str(data), "question": "q", "answer": "a", "verifier": f"{user_file}:check",
                           "test_fraction": 0.5})
    rows = list(t.load("test")) + list(t.load("train"))
    bad = next(r for r in rows if r["q"].startswith("What is 1 "))
    good = next(r for r in rows if not r["q"].startswith("What is 1 "))
    start = time.monotonic()
    outcomes = t.judge([f"#### The final answer is {bad['a']}", f"#### The final answer is {good['a']}"], [bad, good])
    assert time.monotonic() - start < LIMIT + SLACK
    assert [o.correct for o in outcomes] == [False, True]
    assert outcomes[0].details["checker_error"] == "timed out after 0.5 s (run.user_code_timeout) and was stopped"
    assert t.breakdown([o.details for o in outcomes]) == {"verifier": {"checker failed (judged wrong)": 0.5}}
    assert "the verifier timed out after 0.5 s" in capsys.readouterr().err
    correctness = t.reward_functions([{"name": "correctness"}])[0]  # training's reward follows the same verdicts
    columns = {k: [bad[k], good[k]] for k in bad}
    assert correctness([f"#### The final answer is {bad['a']}", f"#### The final answer is {good['a']}"],
                       **columns) == [0.0, 1.0]


PLUGIN_TASK = textwrap.dedent("""
    import time
    from dataclasses import dataclass
    from rlvr.tasks.jsonl_task import JsonlTask

    @dataclass
    class HangsOnLoad(JsonlTask):
        def load(self, split):
            time.sleep(1e9)
""")


def test_plugin_task_whose_load_hangs_stops_with_one_line(tmp_path):
    (tmp_path / "my_task.py").write_text(PLUGIN_TASK)
    name = f"{tmp_path / 'my_task.py'}:HangsOnLoad"
    t = get_task(name, {"path": str(write_sums(tmp_path / "d.jsonl"))})
    with pytest.raises(RlvrError) as caught:
        timed(t.load, "train")
    assert str(caught.value).startswith(f"task '{name}': load('train') did not return within 0.5 s "
                                        "(run.task_load_timeout); it was stopped.")
    assert "\n" not in str(caught.value)


def test_task_load_limit_is_its_own(tmp_path):
    """A plug-in task's load is not held to the (shorter) limit on rewards and checkers."""
    (tmp_path / "slow_task.py").write_text(textwrap.dedent("""
        import time
        from dataclasses import dataclass
        from rlvr.tasks.jsonl_task import JsonlTask

        @dataclass
        class SlowLoad(JsonlTask):
            def load(self, split):
                time.sleep(0.4)
                return super().load(split)
    """))
    timeouts.set_user_code_timeout(0.1)
    t = get_task(f"{tmp_path / 'slow_task.py'}:SlowLoad", {"path": str(write_sums(tmp_path / "d.jsonl")),
                                                          "question": "q", "answer": "a"})
    assert len(t.load("test")) == 4


def test_recipe_field_defaults_validation_and_configure():
    from rlvr.config import RunConfig

    run = RunConfig()
    assert (run.user_code_timeout, run.task_load_timeout) == (60.0, 600.0)
    with pytest.raises(RlvrError, match="run.user_code_timeout must be a number of seconds >= 0"):
        RunConfig(user_code_timeout=-5)
    timeouts.configure(RunConfig(user_code_timeout=2, task_load_timeout=0))
    assert (timeouts.user_code_timeout(), timeouts.task_load_timeout()) == (2.0, None)
    timeouts.configure({})
    assert (timeouts.user_code_timeout(), timeouts.task_load_timeout()) == (60.0, 600.0)


def test_eval_reads_the_limits_from_the_runs_recipe(tmp_path):
    from rlvr.evaluation.from_run import read_settings

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("task: {name: gsm8k}\nrun: {user_code_timeout: 5, task_load_timeout: null}\n")
    assert read_settings(recipe).limits == {"user_code_timeout": 5, "task_load_timeout": None}


SCORE_TASK = textwrap.dedent("""
    from dataclasses import dataclass
    from rlvr.tasks.base import Task

    @dataclass
    class HangingReward(Task):
        default_rewards = [{"name": "REWARDS:sleeps"}]

        def load(self, split):
            raise NotImplementedError

        def judge(self, completions, rows):
            return []
""")


def test_rlvr_reward_score_prints_one_line_and_exits_2(tmp_path, user_file, capsys):
    from rlvr.cli import main

    (tmp_path / "score_task.py").write_text(SCORE_TASK.replace("REWARDS", str(user_file)))
    (tmp_path / "in.jsonl").write_text('{"completion": "a", "id": "c1"}\n{"completion": "b", "id": "c2"}\n')
    start = time.monotonic()
    code = main(["reward", "score", "--task", f"{tmp_path / 'score_task.py'}:HangingReward",
                 "--input", str(tmp_path / "in.jsonl"), "--user-code-timeout", "0.5"])
    assert time.monotonic() - start < LIMIT + SLACK
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"rlvr: error: reward '{user_file}:sleeps' did not return within 0.5 s "
                          "(--user-code-timeout) on a batch of 2 completions (ids c1, c2)")


def test_rlvr_reward_score_with_a_hanging_checker_scores_that_line_zero(tmp_path, user_file, capsys):
    from rlvr.cli import main

    data = write_sums(tmp_path / "my.jsonl")
    lines = [{"completion": "#### The final answer is 3", "q": "What is 1 + 2?", "a": "3"},
             {"completion": "#### The final answer is 5", "q": "What is 2 + 3?", "a": "5"}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    code = main(["reward", "score", "--task", "jsonl", "--option", f"path={data}", "--option", "question=q",
                 "--option", "answer=a", "--option", f"verifier={user_file}:check", "--input",
                 str(tmp_path / "in.jsonl"), "--user-code-timeout", "0.5"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [json.loads(line)["correctness"] for line in out.splitlines()] == [0.0, 1.0]
    assert "timed out after 0.5 s (--user-code-timeout)" in err


def run_python(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_outside_the_main_thread_the_process_ends_with_the_one_line():
    """A thread cannot be interrupted: the watchdog says which call and ends the process (exit 2)."""
    result = run_python("""
        import threading, time
        from rlvr.timeouts import call_with_limit
        thread = threading.Thread(target=call_with_limit, args=(0.5, "reward 'r.py:f' on a batch of 2 completions",
                                                                  time.sleep, (1e9,)))
        thread.start()
        thread.join()
        print("not reached")
    """)
    assert result.returncode == 2 and "not reached" not in result.stdout
    assert result.stderr.startswith("rlvr: error: reward 'r.py:f' on a batch of 2 completions did not return within "
                                    "0.5 s (run.user_code_timeout) and could not be stopped: it ran outside the main")
    assert result.stderr.count("\n") == 1


def test_code_that_catches_every_interruption_ends_the_process_after_the_grace():
    result = run_python("""
        import time
        from rlvr import timeouts
        timeouts.HARD_EXIT_GRACE = 0.5

        def stubborn():
            while True:
                try:
                    time.sleep(1e9)
                except BaseException:
                    pass

        timeouts.call_with_limit(0.5, "verifier 'c.py:check' on item 3", stubborn)
    """)
    assert result.returncode == 2
    assert result.stderr.startswith("rlvr: error: verifier 'c.py:check' on item 3 did not return within 0.5 s")
    assert "could not be stopped 0.5 s later" in result.stderr and result.stderr.count("\n") == 1


def test_training_applies_the_recipes_limits_before_building_task_and_rewards(monkeypatch):
    import rlvr.tasks
    from rlvr.config import load_recipe
    from rlvr.training.run import build_trainer

    class Built(Exception):
        pass

    def get_task(name, options):
        raise Built((timeouts.user_code_timeout(), timeouts.task_load_timeout()))

    monkeypatch.setattr(rlvr.tasks, "get_task", get_task)
    recipe = load_recipe("cpu-default", ["run.user_code_timeout=7", "run.task_load_timeout=0"])
    with pytest.raises(Built) as built:
        build_trainer(recipe)
    assert built.value.args[0] == (7.0, None)
    with pytest.raises(RlvrError, match="run.task_load_timeout must be a number of seconds >= 0"):
        load_recipe("cpu-default", ["run.task_load_timeout=-1"])


# ----------------------------------------------------------------------------- a checker that keeps timing out


def calls_of(user_file):
    path = user_file.parent / (user_file.name + ".calls")
    return len(path.read_text().splitlines()) if path.exists() else 0


def marked_task(tmp_path, user_file, count=80):
    data = write_sums(tmp_path / "my.jsonl", count)
    options = {"path": str(data), "question": "q", "answer": "a", "verifier": f"{user_file}:check_marked",
               "test_fraction": 0.5}
    return options, get_task("jsonl", options)


def score_only(tmp_path, options, rows, hangs):
    """``rlvr eval --score-only`` on completions for ``rows``: those where ``hangs(i)`` make the checker hang."""
    from rlvr.cli import main

    lines = [{"id": row["id"], "completion": f"#### The final answer is {row['final_answer']}" + (" HANG" if hangs(i) else "")}
             for i, row in enumerate(rows)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = ["eval", "--task", "jsonl", "--score-only", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"),
            "--user-code-timeout", "0.2", "--no-progress"]
    for key, value in options.items():
        argv += ["--option", f"{key}={value}"]
    return main(argv)


def test_a_checker_hanging_on_every_other_item_stops_the_evaluation_early_with_one_line(tmp_path, user_file, capsys):
    from rlvr.timeout_breaker import MIN_ITEMS

    options, task = marked_task(tmp_path, user_file)
    rows = task.load("test").to_list()
    assert len(rows) == 40
    start = time.monotonic()
    code = score_only(tmp_path, options, rows, lambda i: i % 2 == 1)
    assert time.monotonic() - start < MIN_ITEMS * 0.2 + SLACK
    err = capsys.readouterr().err
    line = err.splitlines()[-1]
    assert code == 2 and "Traceback" not in err
    assert line.startswith(f"rlvr: error: verifier '{user_file}:check_marked' timed out on 5 of its 10 calls so far "
                           "(5 of 10 items), ")
    assert "each stopped after 0.2 s (--user-code-timeout)" in line
    assert f"Fix the checker function {user_file}:check_marked so it returns" in line
    assert "raise --user-code-timeout if it is only slow" in line
    assert calls_of(user_file) == 10  # of 40 items: 5 limits spent, not 20


def test_one_timeout_does_not_stop_the_evaluation(tmp_path, user_file, capsys):
    options, task = marked_task(tmp_path, user_file, count=20)
    rows = task.load("test").to_list()
    assert score_only(tmp_path, options, rows, lambda i: i == 3) == 0
    assert "rlvr: error" not in capsys.readouterr().err
    assert calls_of(user_file) == 2 * len(rows)  # judged, then scored by the correctness reward: all of them


def correctness_on(task, rows, completions):
    columns = {k: [row[k] for row in rows] for k in rows[0]}
    return task.reward_functions([{"name": "correctness"}])[0](completions, **columns)


def test_a_group_of_completions_of_one_item_hanging_is_one_unlucky_item(tmp_path, user_file):
    """Training asks about several completions of an item in a row: they time out together, and still score 0."""
    options, task = marked_task(tmp_path, user_file, count=20)
    rows = task.load("train").to_list()[:3]
    group = [rows[0]] * 4 + [rows[1]] * 4 + [rows[2]] * 4
    completions = [f"#### The final answer is {row['final_answer']}" + (" HANG" if row is rows[0] else "")
                   for row in group]
    assert correctness_on(task, group, completions) == [0.0] * 4 + [1.0] * 8


def test_a_reward_that_keeps_timing_out_stops_trainings_reward_computation(tmp_path, user_file):
    options, task = marked_task(tmp_path, user_file, count=20)
    rows = task.load("train").to_list()[:6]
    group = [row for row in rows for _ in range(2)]  # GRPO's groups: 2 completions of each item in a row
    completions = [f"#### The final answer is {row['final_answer']} HANG" for row in group]
    with pytest.raises(RlvrError) as caught:
        correctness_on(task, group, completions)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"verifier '{user_file}:check_marked' timed out on 5 of its 5 calls so far (3 of 3 items")
    assert "each stopped after 0.5 s (run.user_code_timeout)" in message and "raise run.user_code_timeout" in message
    assert calls_of(user_file) == 5  # three different items in a row, of six


def test_the_rule_trips_on_a_streak_or_on_many_items_never_on_one():
    from rlvr.timeout_breaker import TimeoutBreaker, broken

    assert not broken(1, 1, 1) and not broken(2, 2, 2) and broken(3, 3, 3)
    assert not broken(1, 4, 4) and broken(1, 5, 10) and not broken(1, 5, 11)
    breaker = TimeoutBreaker("verifier 'c.py:f'", "the checker function c.py:f")
    for _ in range(20):  # one item, again and again (a group of completions, or every evaluation)
        breaker.record({"id": "q1"}, True, 0.2, "run.user_code_timeout")
        breaker.record({"id": "q2"}, False)
    assert (breaker.calls, breaker.timeouts) == (40, 20)
    breaker.record({"id": "q3"}, True, 0.2, "run.user_code_timeout")
    breaker.record({"id": "q4"}, True, 0.2, "run.user_code_timeout")
    with pytest.raises(RlvrError, match=r"^verifier 'c.py:f' timed out on 23 of its 43 calls so far \(4 of 5 items: "
                                        r"ids q1, q3, q4, \.\.\.\), each stopped after 0.2 s \(run.user_code_timeout\)"):
        breaker.record({"id": "q5"}, True, 0.2, "run.user_code_timeout")  # the third different item in a row
