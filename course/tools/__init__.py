"""What a contributor runs: make bench, make stress, make measure, and
the small server the browser tests and the bench use."""
