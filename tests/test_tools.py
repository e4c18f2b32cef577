"""Tools the model calls during training (rlvr.tools): calculator, python, user tools, the recipe's list, one call."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from transformers.utils import get_json_schema

from rlvr.errors import RlvrError
from rlvr.sandbox import ALLOW_WEAKER_ENV, Limits, SandboxRefused, executor
from rlvr.tools import (
    ToolOutcome,
    ToolSpec,
    build_tools,
    calculator,
    load_user_tool,
    make_python_tool,
    parse_tool_specs,
    run_tool_call,
)
from rlvr.tools.python_tool import check_options, format_output

LOOKUP = '''
def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: The word.
    """
    return word.upper()
'''


def write_tool(tmp_path, source=LOOKUP, name="my_tools.py"):
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# ------------------------------------------------------------------ calculator

@pytest.mark.parametrize(("expression", "result"), [
    ("0.1 + 0.2", "0.3"), ("2/6", "1/3"), ("-1/3", "-1/3"), ("12 * 105.5", "1266"), ("-3/2", "-1.5"),
    ("2 ** -2", "0.25"), ("1.5e-3", "0.0015"), ("-7 // 2", "-4"), ("-7 % 3", "2"), ("+(2 + 3) * 4", "20"),
])
def test_calculator_is_exact_and_prints_integers_decimals_or_fractions(expression, result):
    assert calculator(expression) == result


@pytest.mark.parametrize(("expression", "message"), [
    (None, "must be a string"), ("", "empty"), ("   ", "empty"), ("1+" * 100 + "1", "longer than 200"),
    ("x", "only numbers"), ("abs(-1)", "only numbers"), ("(1).real", "only numbers"), ("'1'", "only numbers"),
    ("True", "only numbers"), ("1j", "only numbers"), ("2 ^ 3", "write \\*\\* for a power"), ("1 +", "not a valid"),
    ("1/0", "division by zero"), ("1 // 0", "division by zero"), ("1 % 0", "division by zero"),
    ("0 ** -1", "division by zero"), ("2 ** 0.5", "whole number"), ("2 ** 65", "between -64 and 64"),
    ("(10 ** 64) ** 16", "more than 1000 digits"), ("1e99999999", "more than 1000 digits"),
    ("-" * 150 + "1", "nested too deeply"),
])
def test_calculator_refuses_what_is_not_bounded_arithmetic_with_a_readable_message(expression, message):
    with pytest.raises(ValueError, match=message):
        calculator(expression)


@pytest.mark.parametrize("expression", ["9**9**9", "(10**60)**60", "1+" * 500_000 + "1"])
def test_hostile_expressions_are_refused_fast(expression):
    start = time.perf_counter()
    with pytest.raises(ValueError):
        calculator(expression)
    assert time.perf_counter() - start < 0.5


def test_calculator_schema_is_what_trl_offers_the_model():
    function = get_json_schema(calculator)["function"]
    assert function["name"] == "calculator" and function["parameters"]["required"] == ["expression"]
    assert function["parameters"]["properties"]["expression"]["type"] == "string"


# ------------------------------------------------------------------ python tool: text, without the sandbox

def test_empty_output_says_so():
    assert format_output("", "", False, 1000) == "(no output)"


def test_long_output_is_cut_with_a_marker():
    text = format_output("x" * 5000, "", True, 1000)
    assert text.startswith("x" * 1000) and "x" * 1001 not in text and "output cut" in text


def test_a_long_traceback_keeps_its_last_lines_within_the_limit():
    error = "".join(f"  line {i}\n" for i in range(500)) + "ValueError: bad"
    text = format_output("out\n", error, False, 200)
    assert text.startswith("out\n...") and text.endswith("ValueError: bad") and len(text) <= 200


def test_python_options_are_checked_in_one_line():
    with pytest.raises(RlvrError, match="timeout must be a number"):
        check_options(timeout=0)


def test_the_python_tool_refuses_at_build_time_without_full_isolation(monkeypatch):
    monkeypatch.setenv(executor.SIMULATE_NO_ROOT_ENV, "simulated: no root")
    monkeypatch.delenv(ALLOW_WEAKER_ENV, raising=False)
    with pytest.raises(SandboxRefused) as refused:
        make_python_tool()
    assert isinstance(refused.value, RlvrError) and "\n" not in str(refused.value)


# ------------------------------------------------------------------ python tool in the sandbox

@pytest.fixture(scope="module")
def python():
    try:
        tool = make_python_tool(Limits(timeout=3, memory_mb=512))
    except SandboxRefused as refused:
        pytest.skip(f"the code sandbox cannot run here: {refused}")
    missing = tool.sandbox.missing
    if missing:  # weaker isolation allowed by the environment: the isolation tests would not hold
        tool.close()
        pytest.skip(f"the code sandbox runs with weaker isolation here: {missing}")
    yield tool
    tool.close()


def test_python_returns_what_the_program_prints(python):
    assert python("print(6 * 7)") == "42"


def test_python_says_when_nothing_was_printed(python):
    assert python("x = 1") == "(no output)"


def test_python_shows_output_then_the_traceback_of_an_error(python):
    text = python("print('before')\n1 / 0\n")
    assert text.startswith("before\nTraceback") and text.endswith("ZeroDivisionError: division by zero")


def test_python_cuts_long_output_at_max_output_chars(python):
    text = python("print('x' * 5000)")
    assert text.startswith("x" * 1000) and "x" * 1001 not in text and "output cut" in text


def test_python_refuses_code_that_is_not_a_string(python):
    with pytest.raises(ValueError, match="must be a string"):
        python(42)


def test_python_schema_is_what_trl_offers_the_model(python):
    function = get_json_schema(python)["function"]
    assert function["name"] == "python" and function["parameters"]["properties"]["code"]["type"] == "string"
    assert "3 s limit" in function["description"]


@pytest.mark.usefixtures("host_untouched")
def test_python_cannot_read_a_host_file(python, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-4711")
    text = python(f"print(open({str(secret)!r}).read())")
    assert "host-secret-4711" not in text and "Error" in text


@pytest.mark.usefixtures("host_untouched")
def test_python_cannot_reach_a_socket_on_the_host(python):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        text = python(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                      "    print('connected')\nexcept OSError as error:\n    print('blocked', error)\n")
    assert text.startswith("blocked"), text


@pytest.mark.usefixtures("host_untouched")
def test_a_fork_loop_is_stopped_at_the_limit(python):
    start = time.monotonic()
    text = python("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert text.startswith("Error:") and time.monotonic() - start < 3 + executor.GRACE_SECONDS


@pytest.mark.usefixtures("host_untouched")
def test_an_infinite_loop_is_reported_as_a_timeout(python):
    assert python("while True:\n    pass\n") == "Error: the code ran past its 3 s limit"


def test_build_tools_names_each_tool_as_the_model_calls_it(python, tmp_path):
    specs = parse_tool_specs(["calculator", {"name": "python", "timeout": 2}, f"{write_tool(tmp_path)}:lookup"])
    tools = build_tools(specs)
    try:
        assert [t.__name__ for t in tools] == ["calculator", "python", "lookup"]
        assert tools[1].sandbox.limits.timeout == 2
    finally:
        tools[1].close()


# ------------------------------------------------------------------ user tools and the recipe's list

def test_a_user_tool_loads_from_a_file_path(tmp_path):
    assert load_user_tool(f"{write_tool(tmp_path)}:lookup")("ok") == "OK"


def test_a_user_tool_loads_from_a_module_path(tmp_path, monkeypatch):
    write_tool(tmp_path, name="rlvr_test_tool_module.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_user_tool("rlvr_test_tool_module:lookup").__name__ == "lookup"


@pytest.mark.parametrize(("source", "fix"), [
    ("def lookup(word):\n    '''Look.\n\n    Args:\n        word: The word.\n    '''\n", "type hint"),
    ("def lookup(word: str) -> str:\n    return word\n", "docstring"),
])
def test_a_user_tool_without_hints_or_args_docstring_is_refused_in_one_line(tmp_path, source, fix):
    with pytest.raises(RlvrError, match=fix) as refused:
        load_user_tool(f"{write_tool(tmp_path, source)}:lookup")
    assert "\n" not in str(refused.value) and ":lookup'" in str(refused.value)


def test_tool_specs_read_names_mappings_and_import_paths():
    specs = parse_tool_specs(["calculator", {"name": "python", "timeout": 5, "max_output_chars": 500}, "t.py:f"])
    assert specs == [ToolSpec("calculator"), ToolSpec("python", {"timeout": 5, "max_output_chars": 500}),
                     ToolSpec("t.py:f")]


@pytest.mark.parametrize("value", [
    "calculator", ["calcultor"], ["calculator", "calculator"], [{"name": "python", "timeot": 5}],
    [{"name": "calculator", "timeout": 5}], [{"timeout": 5}], [3], [{"name": "t.py:f", "timeout": 5}],
])
def test_bad_tool_specs_fail_in_one_line_listing_the_valid_names(value):
    with pytest.raises(RlvrError) as refused:
        parse_tool_specs(value)
    message = str(refused.value)
    assert "\n" not in message and "Valid tools: calculator, python, or an import path" in message


def test_two_tools_with_one_name_are_refused(tmp_path):
    clash = LOOKUP.replace("def lookup", "def calculator")
    with pytest.raises(RlvrError, match="two tools are named 'calculator'"):
        build_tools(parse_tool_specs(["calculator", f"{write_tool(tmp_path, clash)}:calculator"]))


# ------------------------------------------------------------------ one call, as TRL's tool loop runs it

def test_a_call_returns_the_tool_result_as_text():
    outcome = run_tool_call({"calculator": calculator}, call("calculator", {"expression": "1 + 2"}))
    assert outcome == ToolOutcome("calculator", "3", False)


def test_a_non_string_result_becomes_its_str():
    assert run_tool_call({"f": lambda: {"a": 1}}, call("f", {})).content == "{'a': 1}"


def test_an_unknown_tool_fails_as_trl_says_it():
    assert run_tool_call({}, call("nope", {})) == ToolOutcome("nope", "{'error': 'Tool nope not found.'}", True)


def test_an_exception_becomes_an_error_dict():
    outcome = run_tool_call({"calculator": calculator}, call("calculator", {"expression": "1/0"}))
    assert outcome == ToolOutcome("calculator", "{'error': 'division by zero'}", True)


@pytest.mark.parametrize("arguments", ['{"expression": "1"}', None, ["1"]])
def test_arguments_that_are_not_a_mapping_fail(arguments):
    assert run_tool_call({"calculator": calculator}, call("calculator", arguments)).failed


def test_another_call_type_is_unsupported():
    outcome = run_tool_call({}, {"type": "code", "name": "x"})
    assert outcome == ToolOutcome("x", "{'error': 'Unsupported tool call type: code'}", True)


@pytest.mark.parametrize("bad", [None, {}, {"type": "function"}, {"type": "function", "function": {"arguments": {}}},
                                 {"type": "function", "function": {"name": "calculator"}}])
def test_a_malformed_call_fails_without_raising(bad):
    assert run_tool_call({"calculator": calculator}, bad).failed


def test_an_async_tool_is_awaited():
    async def later(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    assert run_tool_call({"later": later}, call("later", {"x": 1})) == ToolOutcome("later", "2", False)
