"""The head revision of nbgrader's gradebook migrations, read in this process.

nbgrader stamps every gradebook.db it makes with that revision, which it finds by starting `alembic heads` in a new
interpreter (nbgrader.api.get_alembic_version): 2 to 3 s of each first `nbgrader generate_assignment`, each
course's first Formgrader visit and each gradebook the kit makes, most of it importing nbgrader again in the
alembic process. alembic's own ScriptDirectory reads the same migration scripts here (tests/course/
test_nbgrader_workflow.py compares it with `alembic heads`). nbgrader_config.py installs it for every nbgrader
process of the course.
"""

from __future__ import annotations

import functools


@functools.cache
def head_revision() -> str:
    """What `alembic heads` prints first for nbgrader's migrations: the revision a new gradebook is stamped with."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    (head,) = ScriptDirectory.from_config(config).get_heads()  # nbgrader's migrations have one head
    return str(head)


def install() -> None:
    """nbgrader's Gradebook reads the head revision here instead of starting `alembic heads`."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = head_revision
