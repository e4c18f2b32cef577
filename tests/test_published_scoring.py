"""Published scoring (last integer of prompt + completion, compared as a string) beside the strict verdict."""

import json

import pytest

from rlvr.cli import main
from rlvr.evaluation.published import (
    add_published,
    add_published_summary,
    published_answer,
    published_stats,
    published_verdict,
)
from rlvr.rewards.base import build_reward
from rlvr.testing import build_tiny_model

PROMPT = "Question: Sam has 3 bags of 4 apples. How many apples?\nSolution: Let's think step by step. "


def strict(completion, gold):
    return build_reward("correctness")([completion], final_answer=[gold])[0] > 0


def test_the_last_integer_is_taken_with_commas_removed():
    assert published_answer("3 * 4 = 12, then 1,200 + 5 = 1,205") == "1205"


def test_negative_integers_keep_their_sign():
    assert published_answer("4 - 9 = -5") == "-5"


def test_a_rambling_completion_that_ends_on_the_gold_counts_published_but_not_strict():
    completion = "3 + 4 = 7.\n#### The final answer is 7\n\nQuestion: Tom has 6 pens and buys 6 more. How many? 12"
    assert published_verdict(PROMPT, completion, "12") == ("12", True)
    assert not strict(completion, "12")


def test_a_right_answer_followed_by_another_number_counts_strict_but_not_published():
    completion = "3 * 4 = 12.\n#### The final answer is 12\n\nQuestion: Ann has 5 cats"
    assert published_verdict(PROMPT, completion, "12") == ("5", False)
    assert strict(completion, "12")


def test_without_a_number_in_the_completion_the_prompt_supplies_the_last_integer():
    assert published_verdict(PROMPT, "I do not know.", "4") == ("4", True)


def test_a_gold_written_with_a_thousands_separator_never_matches():
    assert published_verdict(PROMPT, "#### The final answer is 1,500", "1,500") == ("1500", False)
    assert strict("1000 + 500 = 1500.\n#### The final answer is 1,500", "1,500")


def test_a_decimal_answer_is_read_as_its_last_digits():
    assert published_verdict(PROMPT, "#### The final answer is 2.5", "2.5") == ("5", False)


def test_chat_prompts_contribute_their_contents():
    prompt = [{"role": "user", "content": "What is 6 times 7?"}]
    assert published_verdict(prompt, "I cannot say.", "7") == ("7", True)


def test_chat_completions_are_read():
    completion = [{"role": "assistant", "content": "#### The final answer is 12"}]
    assert published_verdict(PROMPT, completion, "12") == ("12", True)


def test_records_get_published_fields_and_the_summary_both_accuracies():
    records = [
        {"id": "a", "model": "m", "shots": 0, "sample": None, "completion": "12", "ground_truth": "12", "correct": False},
        {"id": "b", "model": "m", "shots": 0, "sample": None, "completion": "7", "ground_truth": "12", "correct": False},
    ]
    add_published(records, [PROMPT, PROMPT])
    assert [r["published_correct"] for r in records] == [True, False]
    assert published_stats(records)["published_accuracy"] == 0.5
    summary = {"results": [{"model": "m", "shots": 0}], "comparisons": []}
    add_published_summary(summary, records)
    assert summary["results"][0]["published_correct"] == 1 and "last integer" in summary["published_scoring"]


def test_paired_comparisons_get_a_published_mcnemar_test():
    records = []
    for i in range(6):
        records.append({"id": str(i), "model": "base", "shots": 8, "sample": None, "published_correct": False})
        records.append({"id": str(i), "model": "tuned", "shots": 8, "sample": None, "published_correct": True})
    summary = {"results": [], "comparisons": [{"first": "base", "second": "tuned", "shots": 8}]}
    add_published_summary(summary, records)
    published = summary["comparisons"][0]["published"]
    assert (published["only_first"], published["only_second"]) == (0, 6)
    assert published["p_value"] == pytest.approx(2 / 64)


# ----------------------------------------------------------------------------- rlvr eval


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gsm8k")
    rows = [("Nora packs 5 boxes with 2 toys each. How many toys?", "5 * 2 = 10.\n#### 10"),
            ("A pond has 8 ducks; 3 fly away. How many remain?", "8 - 3 = 5.\n#### 5")]
    for split in ("train", "test"):
        (directory / f"{split}.jsonl").write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows))
    return str(directory)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


def test_eval_with_published_scoring_reports_both_accuracies(tiny, data, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["eval", "--no-progress", "--model", tiny, "--data", data, "--shots", "0", "--max-new-tokens", "4",
            "--scoring", "published", "--output", str(out)]
    assert main(args) == 0
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for record in records:
        assert record["published_correct"] == (record["published_answer"] == record["ground_truth"])
    (result,) = json.loads((out / "summary.json").read_text())["results"]
    assert result["published_correct"] == sum(r["published_correct"] for r in records)
    assert "published accuracy" in (out / "report.html").read_text()
    assert "published" in capsys.readouterr().out


def test_eval_without_published_scoring_adds_no_published_fields(tiny, data, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--no-progress", "--model", tiny, "--data", data, "--shots", "0", "--max-new-tokens", "4",
                 "--output", str(out)]) == 0
    assert "published_correct" not in (out / "samples.jsonl").read_text()


def test_published_decoding_does_not_stop_at_the_answer_line(tiny, data, tmp_path, monkeypatch):
    from rlvr.evaluation import backends

    seen = []
    original = backends.HFBackend.__init__

    def spy(self, model, tokenizer, stop_patterns, *args, **kwargs):
        seen.append(list(stop_patterns))
        original(self, model, tokenizer, stop_patterns, *args, **kwargs)

    monkeypatch.setattr(backends.HFBackend, "__init__", spy)
    out = tmp_path / "out"
    assert main(["eval", "--no-progress", "--model", tiny, "--data", data, "--shots", "0", "--max-new-tokens", "4",
                 "--decoding", "published", "--output", str(out)]) == 0
    assert seen == [[]]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decoding"]["stop_at_answer"] is False and summary["decoding"]["max_new_tokens"] == 4
