"""`python -m course.charts FOLDER NAME...`: draw charts into FOLDER
(the build's second process, course/charts/__init__.py `ahead`)."""

import sys

from course.charts import main

sys.exit(main(sys.argv[1:]))
