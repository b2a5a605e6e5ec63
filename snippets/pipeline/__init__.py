"""The labs of docs/pipeline.md."""
