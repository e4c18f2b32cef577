"""The user's JSONL file as a task: splits, prompts, rewards and the verdict, and every bad input in one line."""

import json

import pytest

from rlvr.errors import RlvrError
from rlvr.tasks import get_task
from rlvr.tasks.splits import normalize_question


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def sums(count, start=0):
    return [{"q": f"What is {i} + {i + 1}?", "a": str(2 * i + 1)} for i in range(start, start + count)]


def task(path, **options):
    return get_task("jsonl", {"path": str(path), "question": "q", "answer": "a", **options})


def questions(dataset):
    return {normalize_question(q) for q in dataset["question"]}


def test_one_file_is_carved_into_disjoint_splits(tmp_path):
    t = task(write(tmp_path / "my.jsonl", sums(50)), verifier="math")
    train, validation, test = (t.load(s) for s in ("train", "validation", "test"))
    assert (len(train), len(validation), len(test)) == (35, 5, 10)
    assert not questions(train) & questions(test) and not questions(train) & questions(validation)
    assert questions(validation).isdisjoint(questions(test))


def test_directory_keeps_its_test_file_and_drops_its_questions_from_train(tmp_path):
    write(tmp_path / "train.jsonl", sums(30))
    write(tmp_path / "test.jsonl", sums(5, start=28))  # 28 and 29 are also in train
    t = task(tmp_path, verifier="math")
    assert len(t.load("test")) == 5
    assert not questions(t.load("train")) & questions(t.load("test"))
    assert t.overlap()["dropped"]["train"] + t.overlap()["dropped"]["validation"] == 2


def test_prompt_states_the_answer_line_and_uses_the_template_and_exemplars(tmp_path):
    rows = [{**r, "topic": "sums"} for r in sums(20)]
    t = task(write(tmp_path / "my.jsonl", rows), verifier="math", template="[{topic}] {question}", shots=2)
    prompt = t.load("test")[0]["prompt"]
    assert "#### The final answer is X', where X is a number" in prompt
    assert prompt.count("#### The final answer is ") == 3  # the instruction and two exemplars
    assert prompt.rstrip().endswith("Let's think step by step.") and "[sums] What is" in prompt


def test_exemplars_are_taken_out_of_train(tmp_path):
    t = task(write(tmp_path / "my.jsonl", sums(20)), shots=3)
    shown = t.load("test")[0]["prompt"]
    assert all(q not in shown for q in t.load("train")["question"])


def test_chat_prompt_is_messages_ending_with_the_item(tmp_path):
    t = task(write(tmp_path / "my.jsonl", sums(20)), chat=True, shots=1)
    prompt = t.load("test")[0]["prompt"]
    assert [m["role"] for m in prompt] == ["user", "assistant", "user"]
    assert "#### The final answer is X" in prompt[-1]["content"]


def test_choice_task_shows_lettered_options_and_reads_a_gold_option_text(tmp_path):
    rows = [{"q": f"Pick {i}", "options": [f"x{i}", f"y{i}", f"z{i}"], "a": f"y{i}"} for i in range(10)]
    t = task(write(tmp_path / "mc.jsonl", rows), verifier="choice", choices="options",
             template="{question}\n{choices}")
    row = t.load("test")[0]
    assert row["final_answer"] == "B" and "\nB. y" in row["prompt"]
    assert [o.correct for o in t.judge(["#### The final answer is (B)", "#### The final answer is A"], [row, row])] == [True, False]


def test_format_and_correctness_rewards_follow_the_verifier(tmp_path):
    t = task(write(tmp_path / "my.jsonl", [{"q": f"Capital {i}", "a": f"City {i}"} for i in range(10)]))
    row = t.load("test")[0]
    fmt, correct = t.reward_functions([{"name": "format"}, {"name": "correctness"}])
    completions = [f"Hm.\n#### The final answer is {row['final_answer'].lower()}", "#### elsewhere", "nothing"]
    columns = {k: [row[k]] * 3 for k in row}
    assert fmt(completions, **columns) == [1.0, 0.0, 0.0]
    assert correct(completions, **columns) == [1.0, 0.0, 0.0]


def test_judge_marks_correct_and_well_formed(tmp_path):
    t = task(write(tmp_path / "my.jsonl", sums(20)), verifier="math")
    row = t.load("test")[0]
    good, bad = t.judge([f"So.\n#### The final answer is {row['final_answer']}", "I don't know"], [row, row])
    assert (good.correct, good.well_formed, good.gold) == (True, True, row["final_answer"])
    assert (bad.correct, bad.well_formed) == (False, False)


def test_scalar_fields_become_columns_and_the_checker_sees_the_whole_line(tmp_path):
    rows = [{"q": f"Twice {i}", "a": str(2 * i), "n": i, "tags": ["x"]} for i in range(10)]
    path = write(tmp_path / "my.jsonl", rows)
    (tmp_path / "check.py").write_text("def check(completion, row):\n    return str(2 * row['n']) in completion "
                                       "and row['tags'] == ['x']\n")
    t = task(path, verifier=f"{tmp_path / 'check.py'}:check")
    row = t.load("test")[0]
    assert "n" in row and "tags" not in row
    assert t.judge([f"#### The final answer is {2 * row['n']}"], [row])[0].correct


# ------------------------------------------------------------------------------------ bad input: one line


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(RlvrError, match="jsonl path not found"):
        task(tmp_path / "nope.jsonl").load("train")


def test_missing_field_names_the_field_and_first_line_lacking_it(tmp_path):
    rows = sums(5) + [{"q": "What is 9 + 9?"}] + sums(3, start=10) + [{"q": "x"}]
    path = write(tmp_path / "my.jsonl", rows)
    with pytest.raises(RlvrError, match=r"my.jsonl:6: no field 'a' \(the first of 2 line"):
        task(path).load("train")


def test_wrong_question_field_name_is_named(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(5))
    with pytest.raises(RlvrError, match="no field 'question'.*task.question"):
        get_task("jsonl", {"path": str(path), "answer": "a"}).load("train")


def test_empty_split_is_one_line(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(1))
    with pytest.raises(RlvrError, match="split 'test' is empty"):
        task(path).load("test")


def test_directory_without_train_file_is_one_line(tmp_path):
    write(tmp_path / "test.jsonl", sums(3))
    with pytest.raises(RlvrError, match="no train.jsonl"):
        task(tmp_path).load("test")


def test_duplicate_questions_are_counted_dropped_and_said(tmp_path, capsys):
    path = write(tmp_path / "dups.jsonl", sums(20) + sums(4) + [{"q": "WHAT is 0 +  1?", "a": "1"}])
    t = task(path)
    total = sum(len(t.load(s)) for s in ("train", "validation", "test"))
    assert total == 20
    assert t.overlap()["dropped"]["duplicates within files"] == 5
    assert "5 line(s) repeat an earlier question (first at line 21)" in capsys.readouterr().err


def test_gold_the_verifier_cannot_read_names_the_line(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(3) + [{"q": "Which?", "a": "many"}])
    with pytest.raises(RlvrError, match="my.jsonl:4: answer 'many' is not a number"):
        task(path, verifier="math").load("train")


def test_template_naming_a_missing_field_is_one_line(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(10))
    with pytest.raises(RlvrError, match="names field 'topic'"):
        task(path, template="{topic}: {question}").load("test")


def test_checker_that_does_not_import_is_one_line(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(10))
    (tmp_path / "broken.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(RlvrError, match="does not import: ModuleNotFoundError"):
        task(path, verifier=f"{tmp_path / 'broken.py'}:check")


def test_checker_name_that_is_not_callable_is_one_line(tmp_path):
    path = write(tmp_path / "my.jsonl", sums(10))
    (tmp_path / "check.py").write_text("check = 3\ndef checker(c, r):\n    return True\n")
    with pytest.raises(RlvrError, match="names a int, not a function"):
        task(path, verifier=f"{tmp_path / 'check.py'}:check")
    with pytest.raises(RlvrError, match="no attribute 'chekcer'. Did you mean 'checker'"):
        task(path, verifier=f"{tmp_path / 'check.py'}:chekcer")


def test_checker_raising_on_one_item_judges_it_wrong_counts_it_and_goes_on(tmp_path, capsys):
    path = write(tmp_path / "my.jsonl", sums(20))
    (tmp_path / "check.py").write_text(
        "def check(completion, row):\n"
        "    if row['q'].startswith('What is 1 '):\n        raise KeyError('oops')\n"
        "    return row['a'] in completion\n")
    t = task(path, verifier=f"{tmp_path / 'check.py'}:check", test_fraction=0.5)
    rows = list(t.load("test")) + list(t.load("train"))
    bad = next(r for r in rows if r["q"].startswith("What is 1 "))
    good = next(r for r in rows if not r["q"].startswith("What is 1 "))
    outcomes = t.judge([f"#### The final answer is {bad['a']}", f"#### The final answer is {good['a']}"], [bad, good])
    assert [o.correct for o in outcomes] == [False, True]
    assert "KeyError" in outcomes[0].details["checker_error"]
    assert t.breakdown([o.details for o in outcomes]) == {"verifier": {"checker failed (judged wrong)": 0.5}}
    assert "judged wrong" in capsys.readouterr().err


def test_reward_audit_probes_a_file_task_through_its_verifier(tmp_path, capsys):
    from rlvr.cli import main

    write(tmp_path / "my.jsonl", sums(20))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"task: {{name: jsonl, path: {tmp_path / 'my.jsonl'}, question: q, answer: a, verifier: math}}\n")
    assert main(["reward", "audit", "--recipe", str(recipe)]) == 0
    out = capsys.readouterr().out
    assert "several_answers_one_line" in out and "PASS" in out


def test_reward_audit_flags_a_checker_that_accepts_hedged_answers(tmp_path, capsys):
    from rlvr.cli import main

    write(tmp_path / "my.jsonl", sums(20))
    (tmp_path / "lax.py").write_text("def check(completion, row):\n    return row['a'] in completion\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"task: {{name: jsonl, path: {tmp_path / 'my.jsonl'}, question: q, answer: a, "
                      f"verifier: '{tmp_path / 'lax.py'}:check'}}\n")
    assert main(["reward", "audit", "--recipe", str(recipe)]) == 1
    assert "EXPLOIT" in capsys.readouterr().out


def test_eval_data_flag_is_the_file_tasks_path(tmp_path):
    import argparse

    from rlvr.commands.eval import build_config

    path = write(tmp_path / "my.jsonl", sums(10))
    args = argparse.Namespace(option=["question=q", "answer=a"], data=str(path), exemplars=None, adapter=[],
                              task="jsonl", model=["m"], limit=None, max_new_tokens=None, batch_size=None,
                              decoding="strict", label=[], shots=None, split="test", allow_train_split=False,
                              samples=0, temperature=0.8, scoring="strict", backend="hf", dtype="auto", seed=0,
                              no_progress=True)
    assert build_config(args).task_options == {"question": "q", "answer": "a", "path": str(path)}


def test_reward_score_reads_the_gold_from_the_files_answer_field(tmp_path, capsys):
    import json as _json

    from rlvr.cli import main

    write(tmp_path / "my.jsonl", sums(10))
    write(tmp_path / "done.jsonl", [{"completion": "So.\n#### The final answer is 7", "a": "7"},
                                    {"completion": "So.\n#### The final answer is 8", "a": "7"}])
    assert main(["reward", "score", "--task", "jsonl", "--option", f"path={tmp_path / 'my.jsonl'}",
                 "--option", "answer=a", "--option", "question=q", "--input", str(tmp_path / "done.jsonl")]) == 0
    lines = [_json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["correctness"] for line in lines] == [1.0, 0.0]
