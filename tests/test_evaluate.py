"""The evaluation library: items, pairing, scoring with the training rewards, summaries, adapters, outputs."""

import json

import pytest

from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation, HFBackend, Sampling, choose_backend
from rlvr.evaluation.evaluate import (
    EvalConfig,
    ModelSpec,
    check_split,
    evaluate,
    generate_and_score,
    load_for_eval,
    load_items,
    model_specs,
    recount,
    summarize,
    write_outputs,
)
from rlvr.tasks import get_task
from rlvr.testing import build_tiny_model

PROBLEMS = [
    ("A shelf holds 4 red cups and 3 blue cups. How many cups are on the shelf?", "4 + 3 = 7 cups.", "7"),
    ("Mia reads 6 pages a day for 2 days. How many pages does she read?", "6 * 2 = 12 pages.", "12"),
    ("A crate of 20 apples loses 5. How many apples are left?", "20 - 5 = 15 apples.", "15"),
    ("Sam splits 18 stickers among 3 friends. How many does each get?", "18 / 3 = 6 stickers.", "6"),
    ("A bus has 9 riders and 4 more get on. How many riders now?", "9 + 4 = 13 riders.", "13"),
]


def write_gsm8k(directory, problems=PROBLEMS):
    directory.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        with (directory / f"{split}.jsonl").open("w") as handle:
            for question, reasoning, answer in problems:
                handle.write(json.dumps({"question": question, "answer": f"{reasoning}\n#### {answer}"}) + "\n")
    return directory


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(write_gsm8k(tmp_path_factory.mktemp("gsm8k")))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


class CannedBackend:
    """Returns fixed completions per question (first words), standing in for a model."""

    tokenizer = None

    def __init__(self, answers):
        self.answers = answers

    def generate(self, prompts, sampling, progress=None):
        out = []
        for prompt in prompts:
            question = prompt.rsplit("Question: ", 1)[1]
            text = next(t for key, t in self.answers.items() if question.startswith(key))
            out.append([Generation(text, len(text.split()), True) for _ in range(sampling.n)])
        return out


def canned(records_for):
    return CannedBackend(records_for)


RIGHT = {
    "A shelf": "4 + 3 = 7.\n#### The final answer is 7\n",
    "Mia": "6 * 2 = 12.\n#### The final answer is 12\n",
    "A crate": "20 - 5 = 14.\n#### The final answer is 14\n",  # wrong
    "Sam": "The answer is 6.",  # right number, no answer line: wrong, no format
    "A bus": "9 + 4 = 13.\n#### The final answer is 13\n",
}


def score_canned(data, answers=RIGHT, label="m", shots=0, samples=0):
    task = get_task("gsm8k", {"data": data, "shots": shots})
    items = task.load("test")
    return generate_and_score(canned(answers), task, items, label, shots, Sampling(), samples=samples, progress=False)


def test_one_model_with_several_adapters_makes_one_configuration_per_adapter():
    specs = model_specs(["base"], ["none", "runs/a/adapter"])
    assert [(s.model, s.adapter) for s in specs] == [("base", None), ("base", "runs/a/adapter")]
    assert [s.label for s in specs] == ["base", "base+a"]


def test_models_and_adapters_pair_in_order():
    specs = model_specs(["m1", "m2"], ["none", "ad"])
    assert [(s.model, s.adapter) for s in specs] == [("m1", None), ("m2", "ad")]


def test_unpairable_models_and_adapters_are_refused():
    with pytest.raises(RlvrError, match="--adapter"):
        model_specs(["m1", "m2", "m3"], ["a", "b"])


def test_repeated_labels_are_made_unique():
    assert [s.label for s in model_specs(["m", "m"])] == ["m", "m#2"]


def test_train_split_is_refused_unless_allowed():
    with pytest.raises(RlvrError, match="allow-train-split"):
        check_split("train", allow_train_split=False)
    check_split("train", allow_train_split=True)


def test_limit_keeps_the_first_items_and_the_same_items_for_every_shot_count(data):
    items = load_items("gsm8k", {"data": data}, "test", [0, 2], 3)
    assert items[0]["id"] == items[2]["id"] == ["gsm8k-test-0", "gsm8k-test-1", "gsm8k-test-2"]
    assert items[2]["prompt"][0].count("Question:") == 3


def test_shots_outside_zero_to_eight_are_refused(data):
    with pytest.raises(RlvrError, match="0 to 8"):
        load_items("gsm8k", {"data": data}, "test", [9], None)


def test_empty_data_is_refused(tmp_path):
    (tmp_path / "test.jsonl").write_text("")
    (tmp_path / "train.jsonl").write_text("")
    with pytest.raises(RlvrError, match="empty"):
        load_items("gsm8k", {"data": str(tmp_path)}, "test", [0], None)


def test_records_carry_every_reward_component_and_the_verdict(data):
    records = score_canned(data)
    by_id = {r["id"]: r for r in records}
    assert by_id["gsm8k-test-0"]["rewards"] == {"format": 1.0, "correctness": 1.0}  # raw components
    assert by_id["gsm8k-test-0"]["reward"] == 1.5  # weighted total: format 0.5 + correctness 1.0
    assert by_id["gsm8k-test-0"]["correct"] is True
    assert by_id["gsm8k-test-0"]["extracted_answer"] == "7"
    assert by_id["gsm8k-test-2"]["correct"] is False
    assert by_id["gsm8k-test-3"]["rewards"] == {"format": 0.0, "correctness": 0.0}
    assert by_id["gsm8k-test-0"]["ground_truth"] == "7"
    assert by_id["gsm8k-test-0"]["question"] == PROBLEMS[0][0]
    assert (by_id["gsm8k-test-0"]["score"], by_id["gsm8k-test-3"]["well_formed"]) == (1.0, False)
    assert len(by_id["gsm8k-test-0"]["prompt_hash"]) == 12


def test_only_the_completion_is_scored_not_the_prompt(data):
    # The 2-shot prompt contains answer lines; an empty completion must still score zero.
    records = score_canned(data, {key: "" for key in RIGHT}, shots=2)
    assert not any(r["correct"] or r["reward"] for r in records)


def test_summary_counts_accuracy_format_and_wilson_interval(data):
    summary = summarize(score_canned(data))
    (result,) = summary["results"]
    assert (result["n"], result["correct"], result["accuracy"]) == (5, 3, 0.6)
    assert result["format_rate"] == 0.8
    assert result["ci95"][0] < 0.6 < result["ci95"][1]


def test_paired_comparison_counts_discordant_items(data):
    better = dict(RIGHT, **{"A crate": "20 - 5 = 15.\n#### The final answer is 15\n"})
    records = score_canned(data, RIGHT, label="base") + score_canned(data, better, label="tuned")
    (comparison,) = summarize(records)["comparisons"]
    assert (comparison["first"], comparison["second"]) == ("base", "tuned")
    assert (comparison["only_first"], comparison["only_second"], comparison["both_correct"]) == (0, 1, 3)
    assert comparison["p_value"] == 1.0


def test_samples_add_pass_at_k_next_to_greedy_accuracy(data):
    records = score_canned(data, samples=4)
    (result,) = summarize(records, samples=4)["results"]
    assert result["n"] == 5
    assert result["pass_at_k"] == {"1": pytest.approx(0.6), "2": pytest.approx(0.6), "4": pytest.approx(0.6)}
    assert sum(r["sample"] is not None for r in records) == 20


def test_outputs_recount_to_the_summary_and_the_report_embeds_the_figure(data, tmp_path):
    records = score_canned(data, RIGHT, label="a") + score_canned(data, RIGHT, label="b")
    from rlvr.evaluation.evaluate import EvalResult

    summary = summarize(records, [ModelSpec("a", label="a"), ModelSpec("b", label="b")])
    summary.update(task="gsm8k", split="train", train_split=True, warnings=["Evaluated on the TRAIN split"])
    paths = write_outputs(EvalResult(records, summary), tmp_path)
    assert recount(paths["samples"])["results"] == json.loads(paths["summary"].read_text())["results"]
    html = paths["report"].read_text()
    assert "data:image/png;base64," in html
    assert "class='warning'" in html
    assert paths["figure"].read_bytes()[:4] == b"\x89PNG"


def test_hf_backend_returns_one_cut_completion_per_prompt_in_input_order(tiny):
    model, tokenizer, _ = load_for_eval(ModelSpec(tiny))
    backend = HFBackend(model, tokenizer, ["^#### [^\n]*\n"], batch_size=2)
    prompts = ["Question: a\n", "Question: a much longer prompt\n", "Q"]
    out = backend.generate(prompts, Sampling(max_new_tokens=5))
    assert [len(o) for o in out] == [1, 1, 1]
    assert all(o[0].tokens <= 5 for o in out)
    single = HFBackend(model, tokenizer, ["^#### [^\n]*\n"], batch_size=1).generate(prompts[2:], Sampling(max_new_tokens=5))
    assert single[0][0].tokens == out[2][0].tokens


def test_hf_backend_draws_n_samples_per_prompt(tiny):
    model, tokenizer, _ = load_for_eval(ModelSpec(tiny))
    out = HFBackend(model, tokenizer, [], batch_size=4).generate(["ab", "cd"], Sampling(n=3, temperature=1.0, max_new_tokens=3))
    assert [len(o) for o in out] == [3, 3]


def test_evaluate_runs_every_configuration_on_the_same_items(tiny, data):
    config = EvalConfig(models=model_specs([tiny, tiny], labels=["x", "y"]), task_options={"data": data}, shots=[0, 1],
                        limit=2, max_new_tokens=4, backend="hf", progress=False)
    result = evaluate(config)
    assert {(r["model"], r["shots"]) for r in result.records} == {("x", 0), ("x", 1), ("y", 0), ("y", 1)}
    assert [c["shots"] for c in result.summary["comparisons"]] == [0, 1]
    assert result.summary["items"] == 2 and not result.summary["train_split"]


def test_missing_adapter_directory_is_one_clear_error(tiny):
    with pytest.raises(RlvrError, match="adapter directory not found"):
        load_for_eval(ModelSpec(tiny, "no/such/adapter"))


def test_directory_without_adapter_config_is_refused(tiny, tmp_path):
    with pytest.raises(RlvrError, match="not a LoRA adapter"):
        load_for_eval(ModelSpec(tiny, str(tmp_path)))


def save_adapter(model_dir, target):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM")).save_pretrained(target)
    return str(target)


def test_adapter_for_its_base_model_loads(tiny, tmp_path):
    adapter = save_adapter(tiny, tmp_path / "adapter")
    model, _, _ = load_for_eval(ModelSpec(tiny, adapter))
    assert not hasattr(model, "peft_config")  # merged into the base weights


def test_adapter_for_a_differently_shaped_model_is_one_clear_error(tiny, tmp_path):
    other = build_tiny_model(tmp_path / "wider", hidden_size=48)
    adapter = save_adapter(str(other), tmp_path / "adapter")
    with pytest.raises(RlvrError, match="does not fit model"):
        load_for_eval(ModelSpec(tiny, adapter))


def test_vllm_backend_without_vllm_or_gpu_is_one_clear_error():
    from rlvr.evaluation.backends import vllm_available

    if vllm_available():
        pytest.skip("vLLM and a GPU are present")
    with pytest.raises(RlvrError, match="vllm package and a CUDA GPU"):
        choose_backend("vllm")
    assert choose_backend("auto") == "hf"


def test_adapter_recorded_for_another_base_model_is_flagged(tiny, tmp_path):
    twin = build_tiny_model(tmp_path / "twin", seed=1)  # same shapes, another model
    adapter = save_adapter(str(twin), tmp_path / "adapter")
    spec = ModelSpec(tiny, adapter)
    load_for_eval(spec)
    assert "trained on" in spec.note and str(twin) in spec.note
