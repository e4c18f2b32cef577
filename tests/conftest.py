"""Shared fixtures: small GSM8K-format data written for these tests, and a tiny model."""

import json
import os

import pytest

# Tests never reach a hub; make sure libraries do not try.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Problems written for rlvr's tests (not GSM8K items), in GSM8K's format.
FIXTURE_PROBLEMS = [
    ("A farmer has 4 pens with 6 goats in each. How many goats are there?", "There are 4*6=<<4*6=24>>24 goats.\n#### 24"),
    ("Ana saves $5 a week for 9 weeks. How much does she save?", "She saves 5*9=<<5*9=45>>45 dollars.\n#### 45"),
    ("A rope is 30 m long and is cut into 5 equal parts. How long is each part?", "Each part is 30/5=<<30/5=6>>6 m.\n#### 6"),
    ("A shop sold 1,200 pens on Monday and 300 on Tuesday. How many in total?", "1200+300=<<1200+300=1500>>1500\n#### 1,500"),
    ("The temperature was 4 degrees and fell by 9 degrees. What is it now?", "4-9=<<4-9=-5>>-5\n#### -5"),
    ("Leo reads 12 pages a day for 7 days. How many pages does he read?", "12*7=<<12*7=84>>84\n#### 84"),
    ("A bus carries 40 people; 15 get off and 8 get on. How many are on the bus?", "40-15+8=<<40-15+8=33>>33\n#### 33"),
    ("Half of 18 children wear hats. How many do not?", "18/2=<<18/2=9>>9\n#### 9"),
    ("A box holds 3 rows of 7 eggs. How many eggs?", "3*7=<<3*7=21>>21\n#### 21"),
    ("Mia has 50 stickers and gives away 20%. How many are left?", "50*0.2=<<50*0.2=10>>10 given, 50-10=<<50-10=40>>40\n#### 40"),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def gsm8k_dir(tmp_path):
    """A GSM8K-format directory: train.jsonl (10 rows) and test.jsonl (4 rows)."""
    rows = [{"question": q, "answer": a} for q, a in FIXTURE_PROBLEMS]
    write_jsonl(tmp_path / "train.jsonl", rows)
    write_jsonl(tmp_path / "test.jsonl", rows[:4])
    return tmp_path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from rlvr.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
