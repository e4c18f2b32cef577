"""Read a keyword rubric (:mod:`rlvr.verifiers.keyword_rubric`) from YAML, checking every field.

Each error is one line that names the field and the fix; the loaded rubric is cached per file and
modification time, so a rubric edited between runs is read again.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from rlvr.config_utils import check_keys
from rlvr.errors import RlvrError
from rlvr.verifiers.keyword_rubric import (
    Group,
    Pattern,
    Penalties,
    Rubric,
    SentenceRules,
    build_index,
    surface_forms,
    words_of,
)

#: The built-in medical rubric, used when no rubric is named.
BUILTIN_RUBRIC = Path(__file__).resolve().parent.parent / "data" / "keywords" / "medical_rubric.yaml"

_TOP_KEYS = ["name", "description", "instructions", "groups", "patterns", "forbidden", "length", "sentences", "penalties", "scoring", "semantic"]
_GROUP_KEYS = ["description", "terms", "variants", "inflect", "count_negated"]
_PATTERN_KEYS = ["name", "description", "groups", "same_sentence", "in_order", "within_words"]
_LENGTH_KEYS = ["min_words", "max_words"]
_SENTENCE_KEYS = ["min_words", "max_words", "max_keyword_share"]
_PENALTY_KEYS = ["outside_sentence", "repeat_cap", "repeat_penalty", "density_threshold", "repeated_text_threshold", "forbidden"]
_SCORING_KEYS = ["pattern_weight"]
_SEMANTIC_KEYS = ["enabled", "threshold"]


def load_rubric(path: str | Path | None = None) -> Rubric:
    """The rubric in ``path`` (the built-in medical rubric when None); errors are one line naming the fix."""
    path = Path(path).expanduser() if path else BUILTIN_RUBRIC
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        raise RlvrError(f"rubric file not found: {path}") from None
    return _load_cached(str(path.resolve()), stamp)


@lru_cache(maxsize=32)
def _load_cached(path: str, _stamp: int) -> Rubric:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise RlvrError(f"cannot read rubric {path}: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise RlvrError(f"rubric {path} is not valid YAML{where}: {getattr(error, 'problem', error)}") from None
    return parse_rubric(data, source=path)


def parse_rubric(data: Any, source: str = "rubric") -> Rubric:
    """Build a :class:`Rubric` from plain data (a parsed YAML mapping)."""
    where = f"rubric {source}"
    _mapping(data, where)
    check_keys(data, _TOP_KEYS, where)
    groups = _parse_groups(data.get("groups"), where)
    names = [g.name for g in groups]
    patterns = tuple(_parse_pattern(i, p, names, where) for i, p in enumerate(_list(data.get("patterns", []), f"{where}: 'patterns'")))
    forbidden: dict[tuple[str, ...], str] = {}
    for term in _terms(data.get("forbidden", []), f"{where}: 'forbidden'"):
        forbidden.update({form: term for form in surface_forms(term, inflect=True)})
    for group in groups:
        clash = next((form for form in forbidden if form in group.forms), None)
        if clash:
            raise RlvrError(f"{where}: forbidden term '{forbidden[clash]}' is also a term of group '{group.name}'.")
    length = _section(data, "length", _LENGTH_KEYS, where)
    min_words = _number(length, "min_words", None, where + ": length", int, minimum=0)
    max_words = _number(length, "max_words", None, where + ": length", int, minimum=1)
    if min_words is not None and max_words is not None and min_words > max_words:
        raise RlvrError(f"{where}: length min_words ({min_words}) is larger than max_words ({max_words}).")
    scoring = _section(data, "scoring", _SCORING_KEYS, where)
    semantic = _section(data, "semantic", _SEMANTIC_KEYS, where)
    return Rubric(
        name=str(data.get("name") or Path(source).stem),
        description=_text(data, "description", where),
        instructions=_text(data, "instructions", where),
        groups=groups,
        patterns=patterns,
        forbidden=forbidden,
        min_words=min_words,
        max_words=max_words,
        sentences=_sentence_rules(_section(data, "sentences", _SENTENCE_KEYS, where), where + ": sentences"),
        penalties=_penalties(_section(data, "penalties", _PENALTY_KEYS, where), where + ": penalties"),
        pattern_weight=_number(scoring, "pattern_weight", 0.25, where + ": scoring", float, 0.0, 1.0),
        semantic_enabled=_flag(semantic, "enabled", False, where + ": semantic"),
        semantic_threshold=_number(semantic, "threshold", 0.2, where + ": semantic", float, -1.0, 1.0),
        source=source,
        index=build_index(groups, forbidden),
    )


def _parse_groups(raw: Any, where: str) -> tuple[Group, ...]:
    if not isinstance(raw, dict) or not raw:
        raise RlvrError(f"{where} needs 'groups': a mapping of group name to its terms, e.g. diagnosis: {{terms: [diagnosis]}}.")
    groups = []
    claimed: dict[tuple[str, ...], str] = {}
    for name, spec in raw.items():
        at = f"{where}: group '{name}'"
        if isinstance(spec, list):  # shorthand: group: [term, term]
            spec = {"terms": spec}
        _mapping(spec, at)
        check_keys(spec, _GROUP_KEYS, at)
        if "terms" not in spec:
            raise RlvrError(f"{at} needs 'terms': a list of words or phrases.")
        terms = _terms(spec["terms"], f"{at}: 'terms'")
        if not terms:
            raise RlvrError(f"{at} has no terms; list at least one.")
        inflect = _flag(spec, "inflect", True, at)
        forms: dict[tuple[str, ...], str] = {}
        for term in terms:
            forms.update({form: term for form in surface_forms(term, inflect)})
        for variant in _terms(spec.get("variants", []), f"{at}: 'variants'"):
            forms.update({form: variant for form in surface_forms(variant, inflect=False)})
        for form in forms:
            if claimed.get(form, name) != name:
                raise RlvrError(f"{at}: '{' '.join(form)}' is also a term of group '{claimed[form]}'; a word may belong to one group.")
            claimed[form] = name
        groups.append(
            Group(str(name), tuple(terms), _text(spec, "description", at), forms, _flag(spec, "count_negated", False, at))
        )
    return tuple(groups)


def _parse_pattern(index: int, spec: Any, names: list[str], where: str) -> Pattern:
    at = f"{where}: patterns[{index}]"
    _mapping(spec, at)
    check_keys(spec, _PATTERN_KEYS, at)
    groups = spec.get("groups")
    if not isinstance(groups, list) or len(groups) < 2:
        raise RlvrError(f"{at} needs 'groups': a list of two or more group names.")
    from rlvr.registry import unknown_name_message

    for group in groups:
        if group not in names:
            raise RlvrError(f"{at}: {unknown_name_message('group', str(group), names)}")
    if spec.get("same_sentence", True) is not True:
        raise RlvrError(f"{at}: same_sentence can only be true (patterns are checked within one sentence).")
    within = _number(spec, "within_words", None, at, int, minimum=1)
    return Pattern(
        name=str(spec.get("name") or "-".join(map(str, groups))),
        groups=tuple(str(g) for g in groups),
        description=_text(spec, "description", at),
        in_order=_flag(spec, "in_order", True, at),
        within_words=within,
    )


def _sentence_rules(spec: dict[str, Any], where: str) -> SentenceRules:
    default = SentenceRules()
    rules = SentenceRules(
        min_words=_number(spec, "min_words", default.min_words, where, int, minimum=1),
        max_words=_number(spec, "max_words", default.max_words, where, int, minimum=1),
        max_keyword_share=_number(spec, "max_keyword_share", default.max_keyword_share, where, float, 0.0, 1.0),
    )
    if rules.min_words > rules.max_words:
        raise RlvrError(f"{where}: min_words ({rules.min_words}) is larger than max_words ({rules.max_words}).")
    return rules


def _penalties(spec: dict[str, Any], where: str) -> Penalties:
    default = Penalties()
    return Penalties(
        outside_sentence=_number(spec, "outside_sentence", default.outside_sentence, where, float, 0.0, 1.0),
        repeat_cap=_number(spec, "repeat_cap", default.repeat_cap, where, int, minimum=1),
        repeat_penalty=_number(spec, "repeat_penalty", default.repeat_penalty, where, float, 0.0, 1.0),
        density_threshold=_number(spec, "density_threshold", default.density_threshold, where, float, 0.01, 1.0),
        repeated_text_threshold=_number(spec, "repeated_text_threshold", default.repeated_text_threshold, where, float,
                                        0.01, 1.0),
        forbidden=_number(spec, "forbidden", default.forbidden, where, float, 0.0, 1.0),
    )


def _section(data: dict[str, Any], key: str, valid: list[str], where: str) -> dict[str, Any]:
    spec = data.get(key) or {}
    _mapping(spec, f"{where}: '{key}'")
    check_keys(spec, valid, f"{where}: '{key}'")
    return spec


def _mapping(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise RlvrError(f"{where} must be a mapping (key: value lines), got {type(value).__name__}.")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise RlvrError(f"{where} must be a list, got {type(value).__name__}.")
    return value


def _terms(value: Any, where: str) -> list[str]:
    terms = []
    for item in _list(value, where):
        if not isinstance(item, (str, int, float)) or isinstance(item, bool) or not words_of(str(item)):
            raise RlvrError(f"{where}: {item!r} is not a word or phrase.")
        terms.append(str(item))
    return terms


def _text(spec: dict[str, Any], key: str, where: str) -> str:
    value = spec.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RlvrError(f"{where}: '{key}' must be text, got {type(value).__name__}.")
    return value.strip()


def _flag(spec: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise RlvrError(f"{where}: '{key}' must be true or false, got {value!r}.")
    return value


def _number(spec: dict[str, Any], key: str, default: Any, where: str, kind: type, minimum: float | None = None, maximum: float | None = None) -> Any:
    value = spec.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not float(value).is_integer()):
        raise RlvrError(f"{where}: '{key}' must be {'an integer' if kind is int else 'a number'}, got {value!r}.")
    value = kind(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise RlvrError(f"{where}: '{key}' must be {bounds}, got {value!r}.")
    return value
