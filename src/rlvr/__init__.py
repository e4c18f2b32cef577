"""rlvr: reinforcement learning with verifiable rewards on TRL's GRPOTrainer."""

__version__ = "0.1.0"
