"""The labs of docs/fp8.md."""
