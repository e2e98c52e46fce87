"""The kit's adapters to nbgrader: its Autograde preprocessor (autograde, with missing_cells), recording
grade-all's results into the gradebook (gradebook), and reading Formgrader's grades back (formgrader)."""
