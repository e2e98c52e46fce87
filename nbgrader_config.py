"""nbgrader settings for the course. The repository root is the course directory."""

import os

c = get_config()  # noqa: F821 (provided by nbgrader)

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

# torch writes deprecation warnings to stderr, and nbgrader scores any test cell
# with stderr output as 0. Those warnings are not failures.
c.ClearOutput.enabled = True
c.Execute.timeout = 300
c.IgnorePattern.pattern = r".*(UserWarning|DeprecationWarning|FutureWarning).*"
c.IgnorePattern.enabled = True
