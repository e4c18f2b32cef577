"""An example rlvr plug-in: a task (``letter-sort``) and a reward (``brevity``), registered as entry points."""
