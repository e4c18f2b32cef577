"""rlvr probe: figures from known completions, the verdict from hand-made figures, chance, bad input, probe.json."""

import dataclasses
import json
from types import SimpleNamespace

import pytest

from rlvr.cli import main
from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation
from rlvr.tasks import get_task
from rlvr.tasks.base import Outcome
from rlvr.training import probe as probing
from rlvr.training.probe_figures import (
    answer_in_prompt,
    choice_chance,
    is_choice_task,
    item_records,
    judge_generations,
    option_counts,
    pass_at_g,
    zero_variance_shares,
)
from rlvr.training.probe_render import table
from rlvr.training.probe_verdict import Chance, Figures, Probe, verdict

RIGHT, WRONG = "2 + 2 = 4.\n#### The final answer is 4\n", "2 + 2 = 5.\n#### The final answer is 5\n"
RAMBLE = "2 + 2 is a sum of two"


def figures(**changes):
    """Learnable figures, changed where a test says."""
    base = Figures(items=64, group_size=8, max_tokens=32, greedy_accuracy=0.5, greedy_format_rate=0.9,
                   pass_at_1=0.4, pass_at_g=0.9, format_rate=0.9, truncated=0.05, stopped_at_answer=0.9,
                   ended_eos=0.05, mean_tokens=20.0, groups_all_right=0.1, groups_all_wrong=0.1, zero_variance=0.3,
                   zero_variance_all_right=0.1, zero_variance_all_wrong=0.1, zero_variance_other=0.1)
    return dataclasses.replace(base, **changes)


def chance(**changes):
    base = Chance(options=4, options_from="the choices field", chance=0.25, majority_letter="B",
                  majority_accuracy=0.3, random_pass_at_g=1 - 0.75 ** 8)
    return dataclasses.replace(base, **changes)


# ----------------------------------------------------------------------------- the verdict


@pytest.mark.parametrize(("changes", "name", "suggests"), [
    ({}, "learnable", "70% of groups carry signal"),
    ({"truncated": 0.6, "format_rate": 0.0}, "too long", "grpo.max_completion_length"),  # before format-bound
    ({"truncated": 0.6, "groups_all_wrong": 0.9, "pass_at_g": 0.1}, "too long", "grpo.max_completion_length"),
    ({"truncated": 0.6}, "learnable", "train as is"),  # cut, but the finished ones leave signal in most groups
    ({"format_rate": 0.1}, "format-bound", "task.shots"),
    ({"format_rate": 0.1, "groups_all_wrong": 1.0}, "format-bound", "task.chat: true"),  # before too hard
    ({"chance": chance(), "pass_at_1": 0.3}, "at chance", "larger model"),  # 0.25 + 2 * sqrt(.25 * .75 / 64) = 0.36
    ({"chance": chance(majority_accuracy=0.5), "pass_at_1": 0.45}, "at chance", "always answering B"),
    ({"chance": chance(), "pass_at_1": 0.45}, "learnable", "train as is"),
    ({"groups_all_wrong": 0.8, "pass_at_g": 0.2}, "too hard", "rlvr filter"),
    ({"groups_all_right": 0.85, "groups_all_wrong": 0.0}, "too easy", "harder items"),
    ({"format_rate": None}, "learnable", "train as is"),  # a task without an answer form is never format-bound
    ({"constant": {"answer": "son", "accuracy": 0.27, "n": 64}, "pass_at_1": 0.13}, "constant-prone",
     "always answering 'son' is right on 27%"),
    ({"constant": {"answer": "3", "accuracy": 0.2, "n": 64}, "pass_at_1": 0.4}, "constant-prone",
     "halve grpo.learning_rate"),
    ({"constant": {"answer": "24", "accuracy": 0.05, "n": 64}, "pass_at_1": 0.2}, "learnable", "train as is"),
    ({"constant": {"answer": "7", "accuracy": 0.0, "n": 64}, "pass_at_1": 0.0, "groups_all_wrong": 1.0}, "too hard",
     "rlvr filter"),  # too hard is said first
    ({"answer_in_prompt": 0.1, "groups_all_wrong": 0.5}, "computed", "expect little gain"),  # to compute, form there
    # most groups already mix right and wrong answers (the walk-through's sums): sharpening them is learnable
    ({"answer_in_prompt": 0.1, "groups_all_wrong": 0.35, "groups_all_right": 0.0}, "learnable", "train as is"),
    # groups that differ in form alone are not mixed
    ({"answer_in_prompt": 0.1, "groups_all_wrong": 0.45, "groups_all_right": 0.0, "zero_variance": 0.0}, "computed",
     "55% of groups mix"),
    ({"answer_in_prompt": 0.1, "format_rate": 0.5}, "learnable", "train as is"),  # the form still to gain
    ({"answer_in_prompt": 0.1, "format_rate": None}, "learnable", "train as is"),  # no form to judge it by
    ({"answer_in_prompt": 0.9}, "learnable", "train as is"),  # an answer to pick from the question
    ({"answer_in_prompt": 0.1, "groups_all_wrong": 0.9, "pass_at_g": 0.1}, "too hard", "rlvr filter"),
])
def test_verdict_from_hand_made_figures(changes, name, suggests):
    found = verdict(figures(**changes))
    assert found.name == name
    assert suggests in found.line()


def test_a_chat_prompt_is_not_suggested_when_the_task_already_uses_it():
    found = verdict(figures(format_rate=0.06), chat=True)
    assert found.name == "format-bound" and "task.shots" in found.suggestion and "chat" not in found.suggestion


# ----------------------------------------------------------------------------- figures


def test_pass_at_g_is_the_share_of_groups_with_a_right_completion():
    assert pass_at_g([[False, True], [False, False], [True, True], [False, False]]) == 0.5


def test_zero_variance_shares_split_equal_groups_by_the_judge():
    totals = [[1.5, 1.5, 1.5], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1.5, 0.5, 0.0], [0.0, None, 0.0]]
    correct = [[True] * 3, [False] * 3, [False, True, False], [True, False, False], [False] * 3]
    shares = zero_variance_shares(totals, correct)
    assert shares == {"zero_variance": 0.8, "all_right": 0.2, "all_wrong": 0.4, "other": pytest.approx(0.2)}


def test_choice_chance_from_option_counts_and_from_gold_letters():
    found = choice_chance(["B", "B", "A", "C"], ["B", "B", "A", "D"], [4, 4, 2, 2], 3)
    assert found.chance == pytest.approx((0.25 + 0.25 + 0.5 + 0.5) / 4)
    assert (found.majority_letter, found.majority_accuracy) == ("B", 0.5)
    assert found.random_pass_at_g == pytest.approx((2 * (1 - 0.75 ** 3) + 2 * (1 - 0.5 ** 3)) / 4)
    inferred = choice_chance(["B"], ["A", "C", "(D)", "b"], None, 8)
    assert inferred.options == 4 and "A-D" in inferred.options_from
    assert inferred.random_pass_at_g == pytest.approx(1 - 0.75 ** 8)


def test_figures_from_known_completions():
    task = get_task("gsm8k")
    recipe = SimpleNamespace(grpo={"max_completion_length": 8}, run=SimpleNamespace(stop_at_answer=True))
    rows = [{"prompt": "p", "final_answer": "4"}, {"prompt": "q", "final_answer": "4"}]
    greedy = [Generation(RIGHT, 6, True), Generation(RAMBLE, 8, False)]
    sampled = [[Generation(RIGHT, 6, True), Generation(WRONG, 6, True)],
               [Generation(RAMBLE, 8, False), Generation("2 + 2", 4, True)]]  # the last ended by EOS
    totals = [[1.5, 0.5], [0.0, 0.0]]
    f = probing.figures_from(task, recipe, rows, greedy, sampled, totals)
    assert (f.items, f.group_size, f.max_tokens) == (2, 2, 8)
    assert (f.greedy_accuracy, f.greedy_format_rate) == (0.5, 0.5)
    assert (f.pass_at_1, f.pass_at_g, f.format_rate) == (0.25, 0.5, 0.5)
    assert (f.truncated, f.stopped_at_answer, f.ended_eos, f.mean_tokens) == (0.25, 0.5, 0.25, 6.0)
    assert (f.groups_all_right, f.groups_all_wrong) == (0.0, 0.5)
    assert (f.zero_variance, f.zero_variance_all_wrong, f.chance) == (0.5, 0.5, None)


def test_the_constant_answer_is_the_train_splits_most_common_on_the_probed_items():
    task = get_task("gsm8k")
    recipe = SimpleNamespace(grpo={"max_completion_length": 8}, run=SimpleNamespace(stop_at_answer=True))
    rows = [{"prompt": "p", "final_answer": "4"}, {"prompt": "q", "final_answer": "1,000"}]
    sampled = [[Generation(WRONG, 6, True)], [Generation(WRONG, 6, True)]]
    greedy = [group[0] for group in sampled]
    f = probing.figures_from(task, recipe, rows, greedy, sampled, [[0.5], [0.5]], ["1000", "3", "1,000"])
    assert f.constant == {"answer": "1000", "accuracy": 0.5, "n": 2}
    assert "always answering '1000'" in table(Probe(f, verdict(f)))
    assert probing.figures_from(task, recipe, rows, greedy, sampled, [[0.5], [0.5]]).constant is None


def rows_of(*pairs):
    return [{"question": question, "final_answer": answer} for question, answer in pairs]


def test_answers_picked_from_their_own_question_score_near_one():
    rows = rows_of(("Which name is said last: Ann, Bo, Cy?", "Cy"), ("Reverse: red blue", "blue red"),
                   ("Which is larger, 17 or 23?", "23"), ("Who spoke: Zaak said hi.", "Zaak"))
    assert answer_in_prompt(get_task("gsm8k"), rows) == 1.0


def test_computed_answers_score_zero():
    rows = rows_of(("What is 2 + 2?", "4"), ("What is 3 + 5?", "8"), ("What is 6 * 7?", "42"))
    assert answer_in_prompt(get_task("gsm8k"), rows) == 0.0


def test_an_answer_set_every_question_spells_out_is_chance_not_grounding():
    names = "Ann, Bo and Cy sit in a row. Who sits in the middle"
    rows = rows_of((f"{names}, left to right?", "Bo"), (f"{names}, right to left?", "Bo"),
                   (f"{names}, Cy first?", "Ann"), (f"{names}, Ann last?", "Cy"))
    assert answer_in_prompt(get_task("gsm8k"), rows) == 0.0


def test_answer_in_prompt_is_none_without_one_gold_answer_a_question_or_for_a_choice_task():
    rows = rows_of(("Pick: A) red B) blue", "B"), ("Pick: A) one B) two", "A"))
    assert answer_in_prompt(SimpleNamespace(single_gold_answer=True, verifier="choice"), rows) is None
    assert answer_in_prompt(SimpleNamespace(single_gold_answer=False), rows) is None
    assert answer_in_prompt(get_task("gsm8k"), [{"prompt": "p", "final_answer": "4"}] * 2) is None


def test_the_table_shows_answers_in_the_question_and_the_computed_verdict():
    f = figures(answer_in_prompt=0.05, groups_all_wrong=0.5)
    shown = table(Probe(f, verdict(f)))
    assert "answers in the question   5.0% beyond chance" in shown
    assert "computed: the gold answers are words of their own question on 5%" in shown


class FactTask:
    """A task judging "4" right, with one yes/no fact per item: the completion shows its working ("2 + 2")."""

    stop_patterns: list = []

    def judge(self, completions, rows):
        return [Outcome(correct="4" in text, score=float("4" in text), details={"working": "2 + 2" in text})
                for text in completions]

    def item_flags(self, details):
        return {"shows its working": details["working"]} if "working" in details else {}


def fact_probe():
    """Two rows (the first with an id), greedy and two samples each, judged by :class:`FactTask`."""
    recipe = SimpleNamespace(grpo={"max_completion_length": 8}, run=SimpleNamespace(stop_at_answer=False))
    rows = [{"prompt": "p", "id": "a"}, {"prompt": "q"}]
    greedy = [Generation("2 + 2 = 4", 5, True), Generation("4", 1, True)]
    sampled = [[Generation("2 + 2 = 5", 5, True), Generation("5", 1, True)],
               [Generation("4", 1, True), Generation("5", 1, True)]]
    return FactTask(), recipe, rows, greedy, sampled, [[0.0, 0.0], [1.0, 0.0]]


def test_figures_per_fact_are_greedy_pass_at_1_and_pass_at_g():
    f = probing.figures_from(*fact_probe())
    assert (f.greedy_accuracy, f.pass_at_1, f.pass_at_g) == (1.0, 0.25, 0.5)
    assert f.flags == {"shows its working": {"greedy": 0.5, "pass_at_1": 0.25, "pass_at_g": 0.5}}


def test_the_table_has_a_line_per_fact():
    f = probing.figures_from(*fact_probe())
    lines = table(Probe(f, verdict(f))).splitlines()
    line = "  shows its working         greedy 50.0%   pass@1 25.0%   pass@2 50.0%"
    assert line in lines and lines[lines.index(line) - 1].startswith("  zero-variance groups")


def test_item_records_keep_each_rows_verdicts_and_facts():
    task, _, rows, greedy, sampled, _ = fact_probe()
    records = item_records(task, rows, judge_generations(task, rows, greedy, sampled))
    assert records == [
        {"id": "a", "greedy_correct": True, "sampled_correct": 0,
         "flags": {"shows its working": {"greedy": True, "sampled": 1}}},
        {"id": 1, "greedy_correct": True, "sampled_correct": 1,
         "flags": {"shows its working": {"greedy": False, "sampled": 0}}},
    ]
    f = probing.figures_from(*fact_probe())
    assert Probe(f, verdict(f), {"rows": "two"}, records).to_json()["items"] == records


def test_a_task_without_facts_has_no_flag_figures():
    task = get_task("gsm8k")
    recipe = SimpleNamespace(grpo={"max_completion_length": 8}, run=SimpleNamespace(stop_at_answer=True))
    rows = [{"prompt": "p", "final_answer": "4"}]
    greedy, sampled = [Generation(RIGHT, 6, True)], [[Generation(WRONG, 6, True)]]
    f = probing.figures_from(task, recipe, rows, greedy, sampled, [[0.0]])
    assert f.flags == {} and f.to_json()["flags"] == {}
    assert "greedy" not in table(Probe(f, verdict(f))).splitlines()[-2]


def test_reward_totals_apply_the_recipe_weights_as_trl_does():
    task = get_task("gsm8k")
    rewards = [{"name": "format", "weight": 0.5}, {"name": "correctness", "weight": 1.0}]
    recipe = SimpleNamespace(rewards=rewards, grpo={})
    rows = [{"prompt": "Question: 2 + 2?", "final_answer": "4", "id": "a"}]
    tokenizer = lambda text, add_special_tokens=False: {"input_ids": list(range(len(text)))}  # noqa: E731
    assert probing.reward_totals(task, recipe, rows, [[RIGHT, WRONG, RAMBLE]], tokenizer) == [[1.5, 0.5, 0.0]]


def test_gold_the_verifier_cannot_read_is_one_line():
    task = get_task("gsm8k")
    good = [{"id": str(i), "final_answer": str(i)} for i in range(4)]
    assert probing.check_gold(task, good) == 4
    bad = [{"id": str(i), "final_answer": "many"} for i in range(3)] + good[:1]
    with pytest.raises(RlvrError, match="only 1 of 4 gold answers"):
        probing.check_gold(task, bad)
    assert probing.check_gold(get_task("mbpp"), bad) is None  # no answer line: nothing to check


def test_a_reward_the_task_cannot_serve_fails_before_any_generation():
    recipe = SimpleNamespace(rewards=[{"name": "diagnosis"}], grpo={}, run=SimpleNamespace(difficulty_filter=None))
    with pytest.raises(RlvrError, match="task.per_item: true"):
        probing.prepare(get_task("keywords"), recipe, 4)


def test_choice_options_come_from_the_choices_field(tmp_path):
    path = tmp_path / "mc.jsonl"
    lines = [{"q": f"pick {i}", "options": ["x", "y", "z"], "a": "B"} for i in range(20)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    task = get_task("jsonl", {"path": str(path), "question": "q", "answer": "a", "verifier": "choice",
                              "choices": "options", "template": "{question}\n{choices}"})
    rows = [dict(r) for r in task.load("train")]
    assert is_choice_task(task) and option_counts(task, rows) == [3] * len(rows)


# ----------------------------------------------------------------------------- the command


def probe_args(model_dir, tmp_path, *extra):
    return ["probe", "--items", "4", "--batch-size", "8", "--set", f"model.name_or_path={model_dir}",
            "--set", "task.train_size=16", "--set", "task.shots=1", "--set", "grpo.num_generations=4",
            "--set", "grpo.max_completion_length=8", "--set", f"run.output_dir={tmp_path / 'out'}", *extra]


def test_probe_writes_probe_json_and_a_table(tiny_model_dir, tmp_path, capsys):
    assert main(probe_args(tiny_model_dir, tmp_path)) == 0
    written = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert written["figures"]["items"] == 4 and written["figures"]["group_size"] == 4
    assert written["verdict"]["name"] in ("format-bound", "too long", "too hard", "too easy", "constant-prone", "learnable")
    assert written["rows"] == "the first 4 training rows, in the order training draws them"
    assert written["gold_readable"] == 4
    out = capsys.readouterr().out
    assert "sampled pass@1" in out and "zero-variance groups" in out and "verdict  " in out


@pytest.mark.parametrize(("items", "message"), [
    ("0", "--items must be at least 1, got 0."),
    ("500", "--items 500: the task has 16 training rows in its train split; ask for at most 16."),
])
def test_bad_item_counts_are_one_line(tiny_model_dir, tmp_path, capsys, items, message):
    args = probe_args(tiny_model_dir, tmp_path)
    args[2] = items
    assert main(args) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"rlvr: error: {message}"


def test_a_checker_that_never_accepts_the_gold_is_one_line(tmp_path, capsys):
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps({"question": f"q{i}", "answer": f"a{i}"}) + "\n" for i in range(20)))
    checker = tmp_path / "check.py"
    checker.write_text("def check(completion, row):\n    return row.get('other') == completion\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"base: cpu-default\nname: qa\ntask: {{name: jsonl, path: {data}, verifier: '{checker}:check'}}\n"
                      "rewards: [{name: format}, {name: correctness}]\n")
    assert main(["probe", str(recipe), "--items", "4", "--set", f"run.output_dir={tmp_path / 'out'}"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("rlvr: error: task jsonl: the verifier judges only 0 of 4 gold answers correct")
    assert not (tmp_path / "out" / "probe.json").exists()


def test_train_probes_first_when_asked_and_records_it(tiny_model_dir, tmp_path, capsys):
    from rlvr.config import load_recipe
    from rlvr.training.run import train

    recipe = load_recipe(None, [  # tests/test_train.py's tiny recipe, one step
        f"model.name_or_path={tiny_model_dir}", "task.train_size=16", "task.shots=1", "grpo.max_steps=1",
        "grpo.per_device_train_batch_size=8", "grpo.num_generations=4", "grpo.max_completion_length=8",
        "grpo.save_strategy=no", "grpo.report_to=[]", "run.eval_items=0", "run.keep_best=false",
        f"run.output_dir={tmp_path / 'out'}", "run.probe_items=4",
    ])
    train(recipe, quiet=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("rlvr probe (4 items): ")]
    assert len(lines) == 1 and "pass@4" in lines[0]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["probe"]["figures"]["items"] == 4 and summary["probe"]["verdict"]["name"]


@pytest.mark.parametrize("seed", [42, 7])
def test_the_probed_rows_are_the_ones_trls_sampler_draws_first(seed):
    from trl.trainer.utils import RepeatSampler

    sampler = RepeatSampler(list(range(50)), mini_repeat_count=4, batch_size=5, repeat_count=1, shuffle=True,
                            seed=seed)
    drawn = list(dict.fromkeys(sampler))  # each prompt index repeated for its group, first draws first

    assert probing.training_order(50, {"seed": seed}) == drawn
    assert probing.training_order(50, {"seed": seed, "shuffle_dataset": False}) == list(range(50))
