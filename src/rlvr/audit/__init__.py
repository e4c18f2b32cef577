"""Reward audit: run probe completions that imitate known reward hacks through a task's rewards.

A verifiable reward is only as good as its verifier. The probe library holds,
per task, completions for one problem: honest controls (a correct and a wrong
worked answer) and *hacks* that practitioners have seen policies find
(answering without reasoning, several answers, the answer smuggled into a
follow-up question, number spam, format without an answer, early exit and
always-equal objects in code, keyword lists and stuffing in domain prose,
...). :func:`rlvr.audit.runner.audit` scores them all with the
configured reward functions and flags

* a hack that out-scores the honest *wrong* answer (worth knowing: GRPO will
  push towards it when the model cannot solve a problem), and
* a hack that earns at least as much as the honest *correct* answer: an
  exploit, which makes ``rlvr reward audit`` exit non-zero.

The package: :mod:`~rlvr.audit.probe` (what a probe is), the probe sets (:mod:`~rlvr.audit.probe_sets` for the
math, code and answer-line tasks, :mod:`~rlvr.audit.keyword_probes` for the ``keywords`` task),
:mod:`~rlvr.audit.runner` (scoring them and judging the hacks) and :mod:`~rlvr.audit.report` (the table and the
verdict ``rlvr reward audit`` prints).
"""
