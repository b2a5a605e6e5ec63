"""The labs of docs/experts.md."""
