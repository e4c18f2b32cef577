"""Tools in a task and in evaluation: exemplars that call the tool, and conversations decoded turn by turn."""

import pytest

from rlvr.chat_format import apply_chat_format
from rlvr.config import recipe_from_dict
from rlvr.errors import RlvrError
from rlvr.evaluation.backends import Generation, Sampling
from rlvr.run_parts import build_parts
from rlvr.tasks.arithmetic import ArithmeticTask
from rlvr.testing import build_tokenizer
from rlvr.tool_template import fit_tool_template
from rlvr.tools import calculator
from rlvr.tools.exemplar_code import question_program
from rlvr.tools.stats import tool_use_stats
from rlvr.tools.task_tools import TaskWithTools
from rlvr.tools.turns import ToolBackend

SUMS = {"min_terms": 2, "max_terms": 2, "min_digits": 3, "max_digits": 3, "operators": ["+"],
        "allow_negation": False, "allow_parentheses": False}


def sums_task(**options):
    return ArithmeticTask(generator_config=SUMS, chat=True, shots=1, train_size=4, validation_size=2, test_size=3,
                          **options)


# ------------------------------------------------------------------ exemplars that call the tool


def test_an_exemplar_becomes_a_call_of_the_tool_its_reply_and_the_worked_answer():
    prompt = TaskWithTools(sums_task(), [calculator]).load("test")[0]["prompt"]
    question, call, reply, answer, last = prompt
    expression = call["tool_calls"][0]["function"]["arguments"]["expression"]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == "calculator"
    assert expression in question["content"]
    assert reply == {**reply, "role": "tool", "name": "calculator", "content": calculator(expression)}
    assert answer["content"].endswith(f"#### The final answer is {reply['content']}")
    assert last == {**last, "role": "user"} and "tool_calls" not in str(last["content"])


def test_the_question_turn_and_the_items_are_the_tasks_own():
    plain, with_tool = sums_task().load("test"), TaskWithTools(sums_task(), [calculator]).load("test")
    assert plain["final_answer"] == with_tool["final_answer"]
    assert [p[-1]["content"] for p in plain["prompt"]] == [p[-1]["content"] for p in with_tool["prompt"]]


def test_an_exemplar_the_tool_answers_differently_stays_plain():
    def calculator(expression: str) -> str:  # noqa: F811 - a broken calculator under the same name
        """Wrong sums.

        Args:
            expression: the sum
        """
        return "0"

    prompt = TaskWithTools(sums_task(), [calculator]).load("test")[0]["prompt"]
    assert not any(message.get("tool_calls") for message in prompt)
    assert len(prompt) == 3


def test_tools_need_chat_prompts():
    with pytest.raises(RlvrError, match="task.chat: true"):
        TaskWithTools(ArithmeticTask(chat=False, shots=1, train_size=2, validation_size=1, test_size=1),
                      [calculator]).load("test")


def test_a_call_turn_is_a_stop_and_required_opens_the_first_turn():
    task = TaskWithTools(sums_task(), [calculator], "required")
    assert task.stop_patterns[-1] == "</tool_call>" and task.opener == "<tool_call>\n"
    assert TaskWithTools(sums_task(), [calculator]).opener == ""


@pytest.mark.parametrize(("question", "program", "printed"), [
    ("Find the Least Common Multiple (LCM) of these numbers: 48, 36", "import math\nprint(math.lcm(48, 36))", "144"),
    ("Find the prime factorization of 84. Write the factors separated by ×", None, "2 × 2 × 3 × 7"),
    ("Solve the following multiplication: 12 * 34. Give only the result as your final answer.", "print(12 * 34)", "408"),
    ("Reply only with the final hexidecimal value.\n((0x3 << 0x2) - 0x20)", "print(hex(((0x3 << 0x2) - 0x20)))", "-0x14"),
])
def test_a_question_names_the_program_that_answers_it(question, program, printed, capsys):
    code = question_program(question, "python")["code"]
    if program is not None:
        assert code == program
    exec(code, {})  # the patterns' own programs, trusted here  # noqa: S102
    assert capsys.readouterr().out.strip() == printed


def test_the_calculator_gets_an_expression_only_where_the_question_is_arithmetic():
    assert question_program("Solve the following multiplication: 12 * 34. Give only", "calculator") == {"expression": "12 * 34"}
    assert question_program("Find the Least Common Multiple (LCM) of these numbers: 4, 6", "calculator") is None


# ------------------------------------------------------------------ the recipe


def recipe(**task):
    return recipe_from_dict({"name": "tools", "task": {"name": "arithmetic", "chat": True, **task},
                             "grpo": {"max_steps": 1}})


def test_tools_and_tool_choice_are_not_the_tasks_options():
    spec = recipe(tools=["calculator"], tool_choice="required")
    assert "tools" not in spec.task_options and "tool_choice" not in spec.task_options
    parts = build_parts(spec)
    assert parts.tool_names == ["calculator"] and parts.max_tool_turns == 2
    assert isinstance(parts.task(), TaskWithTools)
    assert "tools: calculator" in parts.line() and "tool_choice required" in parts.line()


def test_the_turn_limit_is_trls_own_setting():
    spec = recipe_from_dict({"name": "t", "task": {"name": "arithmetic", "chat": True, "tools": ["calculator"]},
                             "grpo": {"max_tool_calling_iterations": 5}})
    assert build_parts(spec).max_tool_turns == 5


def test_required_without_tools_is_one_line():
    with pytest.raises(RlvrError, match="needs task.tools"):
        build_parts(recipe(tool_choice="required"))


def test_an_unknown_tool_choice_is_one_line():
    with pytest.raises(RlvrError, match="auto, required"):
        build_parts(recipe(tools=["calculator"], tool_choice="always"))


# ------------------------------------------------------------------ evaluation, turn by turn


class _Model:
    class config:  # noqa: N801
        pass

    generation_config = None

    def get_input_embeddings(self):
        import torch

        return torch.nn.Embedding(10_000, 2)


class Scripted:
    """An inner backend whose model writes, per call, the next reply of a script (given the prompt so far)."""

    name = "hf"

    def __init__(self, reply):
        self.tokenizer = build_tokenizer()
        apply_chat_format(_Model(), self.tokenizer, "chatml")
        fit_tool_template(self.tokenizer)
        self.reply = reply
        self.prompts = []

    def generate(self, prompts, sampling, progress=None):
        self.prompts.append(list(prompts))
        out = []
        for prompt in prompts:
            text = self.reply(prompt)[: sampling.max_new_tokens]
            out.append([Generation(text, len(text), True)] * sampling.n)
        return out


def call(expression):
    return f'<tool_call>\n{{"name": "calculator", "arguments": {{"expression": "{expression}"}}}}\n</tool_call>'


def run(reply, max_turns=2, budget=400, opener=""):
    inner = Scripted(reply)
    backend = ToolBackend(inner, [calculator], max_turns, opener)
    prompts = backend.render([[{"role": "user", "content": "What is 2 + 3?"}]])
    return backend.generate(prompts, Sampling(max_new_tokens=budget))[0][0], inner


def test_a_call_is_run_and_its_reply_shown_before_the_next_turn():
    final, inner = run(lambda p: "#### The final answer is 5" if "<tool_response>" in p else call("2 + 3"))
    assert final.text == "#### The final answer is 5"
    assert "<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n" in inner.prompts[1][0]
    assert final.extra["tool_calls"] == 1 and final.extra["tool_errors"] == 0 and not final.extra["cut_by_turn_limit"]


def test_an_unknown_tool_is_answered_as_text_and_counted_as_failed():
    bad = '<tool_call>\n{"name": "abacus", "arguments": {}}\n</tool_call>'
    final, inner = run(lambda p: "#### The final answer is 5" if "<tool_response>" in p else bad)
    assert "Tool abacus not found" in inner.prompts[1][0]
    assert final.extra["tool_errors"] == 1 and final.text == "#### The final answer is 5"


def test_a_model_that_keeps_calling_is_cut_by_the_turn_limit_with_no_answer():
    final, inner = run(lambda p: call("1 + 1"), max_turns=2)
    assert final.extra["tool_calls"] == 2 and final.extra["cut_by_turn_limit"]
    assert final.text == "" and len(inner.prompts) == 3


def test_an_answer_only_inside_a_call_is_no_answer():
    final, _ = run(lambda p: "done" if "<tool_response>" in p else call("#### The final answer is 5"))
    assert final.text == "done" and final.extra["tool_errors"] == 1


def test_the_budget_counts_every_turn_and_reply():
    final, inner = run(lambda p: call("2 + 3"), max_turns=5, budget=len(call("2 + 3")) + 10)
    assert len(inner.prompts) == 1 and final.extra["tool_calls"] == 1


def test_required_writes_the_opening_of_the_call_into_the_first_prompt_only():
    final, inner = run(lambda p: ("#### The final answer is 5" if "<tool_response>" in p
                                  else call("2 + 3").removeprefix("<tool_call>\n")), opener="<tool_call>\n")
    assert inner.prompts[0][0].endswith("<|im_start|>assistant\n<tool_call>\n")
    assert final.extra["tool_calls"] == 1 and final.text == "#### The final answer is 5"


def test_tool_use_stats_split_accuracy_by_whether_a_tool_was_called():
    records = [{"tool_calls": 1, "tool_errors": 0, "tool_turns": 1, "correct": True},
               {"tool_calls": 2, "tool_errors": 1, "tool_turns": 2, "correct": False, "cut_by_turn_limit": True},
               {"tool_calls": 0, "correct": False}, {"tool_calls": 0, "correct": True}]
    stats = tool_use_stats(records)
    assert stats["used_share"] == 0.5 and stats["calls_per_completion"] == 0.75
    assert stats["error_share"] == pytest.approx(1 / 3) and stats["cut_by_turn_limit_share"] == 0.25
    assert stats["accuracy_with_tool"] == 0.5 and stats["accuracy_without_tool"] == 0.5


# ------------------------------------------------------------------ rlvr eval on a run with tools


def test_eval_takes_a_runs_tools_from_its_recipe_and_no_tools_leaves_them_out(tmp_path):
    from rlvr.evaluation.from_run import merge, read_settings

    path = tmp_path / "recipe.yaml"
    path.write_text("name: run\ntask: {name: arithmetic, chat: true, tools: [calculator], tool_choice: required}\n"
                    "grpo: {max_steps: 1, max_tool_calling_iterations: 3}\n", encoding="utf-8")
    settings = read_settings(path)
    values, taken = merge(settings, {"task": None, "task_options": {}, "no_tools": False})
    assert values["tools"] == ["calculator"] and values["tool_choice"] == "required" and values["tool_turns"] == 3
    assert "tools" not in values["task_options"] and any("--no-tools" in line for line in taken)
    values, _ = merge(settings, {"task": None, "task_options": {}, "no_tools": True})
    assert "tools" not in values


def test_an_evaluation_with_tools_loads_items_whose_exemplars_call_them():
    from rlvr.evaluation.evaluate import EvalConfig
    from rlvr.evaluation.items import load_items

    config = EvalConfig(models=[], task="arithmetic", task_options={"chat": True, "generator_config": SUMS},
                        tools=["calculator"], tool_choice="required")
    items = load_items(config.task, config.task_options, "test", [1], 2, config.with_tools)
    assert any(message.get("tool_calls") for message in items[1][0]["prompt"])
    assert config.with_tools(ArithmeticTask()).opener == "<tool_call>\n"


def test_the_probe_counts_calls_and_right_answers_after_a_call():
    from types import SimpleNamespace

    from rlvr.tools.stats import probe_tool_use

    sampled = [[Generation("a", 1, True, {"tool_calls": 1}), Generation("b", 1, True, {"tool_calls": 0})]]
    stats = probe_tool_use(sampled, [[SimpleNamespace(correct=True), SimpleNamespace(correct=True)]])
    assert stats["used_share"] == 0.5 and stats["right_after_a_call"] == 1 and stats["completions"] == 2


def test_rlvr_experiment_evaluates_both_models_with_the_runs_tools(tmp_path):
    from rlvr.experiment.run import ExperimentConfig, sweep_settings

    spec = recipe(tools=["calculator"], tool_choice="required")
    sweep = sweep_settings(ExperimentConfig(spec, tmp_path, shots=[1], items=2), spec)
    assert sweep["tools"] == {"tools": ["calculator"], "tool_choice": "required", "tool_turns": 2,
                              "tool_template": "auto"}
    assert "tools" not in sweep_settings(ExperimentConfig(recipe(), tmp_path, shots=[1], items=2), recipe())


def test_the_probe_says_required_opens_the_call_when_the_base_never_calls():
    from types import SimpleNamespace

    from rlvr.training.probe_render import table

    figures = SimpleNamespace(group_size=8, items=1, greedy_accuracy=0.0, greedy_format_rate=0.0, pass_at_1=0.0,
                              pass_at_g=0.0, format_rate=0.0, mean_tokens=9.0, max_tokens=96, truncated=0.0,
                              stopped_at_answer=0.0, ended_eos=1.0, groups_all_right=0.0, groups_all_wrong=1.0,
                              zero_variance=1.0, zero_variance_all_right=0.0, zero_variance_all_wrong=1.0,
                              zero_variance_other=0.0, flags={}, constant=None, answer_in_prompt=None, chance=None)
    tools = {"used_share": 0.0, "right_after_a_call": 0, "completions": 8, "tool_choice": "auto"}
    result = SimpleNamespace(figures=figures, info={"tools": tools}, verdict=SimpleNamespace(line=lambda: "too hard"))
    assert "task.tool_choice: required opens the call for it" in table(result)
    tools["tool_choice"] = "required"
    assert "tool_choice: required" not in table(result)


def test_the_run_report_states_the_base_model_without_the_tool():
    from rlvr.training.report_evaluations import _verdict_table

    test = {"items": 2, "before": {"n": 2, "accuracy": 0.5, "ci95": [0.1, 0.9]},
            "after": {"n": 2, "accuracy": 1.0, "ci95": [0.3, 1.0]}, "gain": 0.5, "now_right": 1, "now_wrong": 0,
            "without_tool": {"base": {"accuracy": 0.0}, "gain": 1.0, "now_right": 2, "now_wrong": 0, "mcnemar_p": 0.5}}
    html = _verdict_table(test)
    assert "without the tool the base model scored 0.0%" in html and "2 now right, 0 now wrong" in html
