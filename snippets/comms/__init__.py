"""The labs of docs/comms.md."""
