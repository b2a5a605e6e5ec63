"""nbconvert's settings for the build's notebooks: mkdocs-jupyter runs
them with nbconvert, and course/build/hooks.py adds this folder to
JUPYTER_CONFIG_PATH. A cell still running after the blocks' time limit
(course/build/execute.py: SNIPPET_TIMEOUT or 60 s) stops the build with
the notebook and the cell, and nbclient shuts its kernel down.

The setting is NotebookClient's, which nbconvert's ExecutePreprocessor
inherits: mkdocs-jupyter sets that class's own section itself."""

import math
import os

c = get_config()  # noqa: F821 (traitlets runs this file with it)
limit_s = float(os.environ.get("SNIPPET_TIMEOUT", 60))
c.NotebookClient.timeout = math.ceil(limit_s)
