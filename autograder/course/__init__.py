"""The course layer: many submissions and the outside tools.

grade-all (batch), the class report (report/), nbgrader's gradebook and Autograde preprocessor
(nbgrader/), the Gradescope bundle, the release build, the demo and the self-test.
"""
