"""The labs of docs/ladder.md."""
