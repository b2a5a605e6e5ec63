"""The labs of docs/zero.md."""
