"""User-facing errors.

Anything a user can cause (a bad recipe, a missing file, an unknown name) raises
:class:`RlvrError` with a one-line message that says what to fix. The CLI prints
that line and exits non-zero; library callers catch it like any exception.
"""

from __future__ import annotations


class RlvrError(Exception):
    """An error the user can fix; its message is one line saying how."""

    exit_code = 2
