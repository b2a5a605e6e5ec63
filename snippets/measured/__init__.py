"""The lesson's models held against what the training script measured:
the records of its runs (`report.Run`), and what the labs' formulas say
the same runs should have held, sent and idled."""
