"""The labs of docs/strategy.md."""
