"""The labs of docs/accumulation.md."""
