"""The training script of docs/torchrun.md and what it imports."""
