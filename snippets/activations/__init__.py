"""The labs of docs/activations.md."""
