"""What the course measures of its training script, from outside it."""
