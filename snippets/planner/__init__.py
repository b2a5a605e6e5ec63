"""Plan a training job: from a model config to a ranked layout and a
launch command. `python -m snippets.planner --help` lists the options."""
