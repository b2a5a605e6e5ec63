"""The labs of docs/index.md."""
