"""The labs of docs/context.md."""
