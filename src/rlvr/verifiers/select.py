"""The verifier a file task's ``verifier`` option names (:mod:`rlvr.verifiers.answers`, :mod:`rlvr.verifiers.checker`)."""

from __future__ import annotations

from typing import Any

from rlvr.errors import RlvrError
from rlvr.plugins import is_reference
from rlvr.registry import closest
from rlvr.verifiers.answers import ChoiceVerifier, ExactVerifier, MathVerifier, RegexVerifier
from rlvr.verifiers.checker import CheckerVerifier

#: The built-in verifier kinds, for errors and docs.
KINDS = ("math", "exact", "choice", "regex:PATTERN", "module:function", "path/to/file.py:function")


def build_verifier(spec: Any) -> Any:
    """The verifier a file task's ``verifier`` option names."""
    if not isinstance(spec, str) or not spec.strip():
        raise RlvrError(f"verifier must be one of {', '.join(KINDS)}; got {spec!r}.")
    spec = spec.strip()
    if spec == "math":
        return MathVerifier()
    if spec == "exact":
        return ExactVerifier()
    if spec == "choice":
        return ChoiceVerifier()
    if spec.startswith("regex:"):
        return RegexVerifier(spec[len("regex:"):])
    if is_reference(spec):
        return CheckerVerifier(spec)
    hint = closest(spec, ["math", "exact", "choice"])
    suggestion = f" Did you mean '{hint}'?" if hint else ""
    raise RlvrError(f"unknown verifier '{spec}'.{suggestion} Valid verifiers: {', '.join(KINDS)}.")
