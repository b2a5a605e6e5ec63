"""The labs of docs/ddp.md."""
