"""nbgrader settings for every folder: scripts/setup.sh installs this file as .venv/etc/jupyter/nbgrader_config.py.

nbgrader reads nbgrader_config.py from the folder it runs in only: run from a folder inside the course (release/,
submitted/ada/...), it made a stray gradebook.db there and, without alembic on PATH, stopped with a traceback. Here
the course's nbgrader_config.py, found in the nearest folder above, is read instead, so nbgrader works on the
course's own gradebook.db from any folder inside it. Outside a course nothing is set.
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader)

here = os.getcwd()
if not os.path.isfile(os.path.join(here, "nbgrader_config.py")):
    folder = os.path.dirname(here)
    while True:
        if os.path.isfile(os.path.join(folder, "nbgrader_config.py")):
            load_subconfig(os.path.join(folder, "nbgrader_config.py"))  # noqa: F821 (provided by traitlets)
            break
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
