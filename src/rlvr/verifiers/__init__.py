"""Verifiers parse model output and judge it; rewards turn verdicts into numbers."""
