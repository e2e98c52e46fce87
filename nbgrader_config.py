"""nbgrader settings for the course. The repository root is the course directory."""

import os
import sys
import warnings

c = get_config()  # noqa: F821 (provided by nbgrader)

# nbgrader runs `alembic` from PATH (`nbgrader db upgrade`; a new gradebook.db where the line below is not
# installed): use the one beside this interpreter (.venv/bin), so `.venv/bin/nbgrader ...` works without
# activating the environment.
# (Formgrader reads this file on every request: prepend once.)
if os.environ.get("PATH", "").split(os.pathsep)[0] != os.path.dirname(sys.executable):
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
# A new gradebook.db is stamped with the head of nbgrader's migrations, which nbgrader finds by starting `alembic
# heads` (2-3 s); the kit reads the same head in this process (autograder/course/nbgrader/migrations.py).
from autograder.course.nbgrader import migrations  # noqa: E402

migrations.install()

# nbgrader's Gradebook.add_submission (nbgrader/api.py) links a new SubmittedAssignment to its student and
# assignment before adding it to the session, so SQLAlchemy's autoflush warns twice per submission that the
# object is "not in session". nbgrader adds it right after: nothing is lost. Silenced by that message only.
SESSION_WARNING = r"Object of type <\w+> not in session, add operation along '[\w.]+' will not proceed"
warnings.filterwarnings("ignore", message=SESSION_WARNING)

c.CourseDirectory.course_id = "effective-pytorch"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"

# The stub set once for every answer cell of every chapter. The autograder
# reports a cell that still raises it as "not implemented".
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE\nraise NotImplementedError(\"not implemented yet: replace this line\")"
}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# `nbgrader autograde` and Formgrader's Autograde button grade with the kit's sandboxed grader
# (autograder/course/nbgrader/autograde.py) instead of running the notebook: it writes each task's checks,
# messages and points (partial credit) into its check cell. Nothing else is executed.
c.Autograde.autograde_preprocessors = [
    "autograder.course.nbgrader.autograde.KitAutograde",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.KitAutograde.device = "cpu"
# `nbgrader export` writes grades.csv with the csv module, no student's id or name a spreadsheet formula.
c.ExportApp.plugin_class = "autograder.course.nbgrader.export.SafeCsvExport"
c.Autograde.sanitize_preprocessors = [  # nbgrader's, with OverwriteCells replaced (see the module's docstring)
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "autograder.course.nbgrader.missing_cells.MissingCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# A deleted check cell is put back, so the kit's verdict for its task is still recorded.
c.OverwriteCells.add_missing_cells = True

# `nbgrader validate` still runs the notebook. torch writes deprecation warnings to stderr, and
# nbgrader scores any test cell with stderr output as 0. Those warnings are not failures.
c.ClearOutput.enabled = True
c.Execute.timeout = 300
c.IgnorePattern.pattern = r".*(UserWarning|DeprecationWarning|FutureWarning).*"
c.IgnorePattern.enabled = True
