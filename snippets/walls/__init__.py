"""The labs of docs/walls.md."""
