"""``rlvr experiment``: train a recipe, sweep shot counts for base and trained on the same test items, report.

Library entry point: :func:`rlvr.experiment.run.run_experiment`.
"""
