"""nbgrader's CSV export, with every text cell one no spreadsheet runs.

nbgrader's CsvExportPlugin writes grades.csv by formatting each row as text: a student's id or name from the
roster (a display name the student chose in the LMS, an id from a folder name) that starts with "=", "+", "-"
or "@" is a live formula in the spreadsheet the instructor opens, and one holding a comma or a quote shifts
every cell after it. This plugin writes the same columns and rows with the csv module, each text cell through
the kit's csv_cell (a leading apostrophe before a formula's first character, control characters shown as
escapes); numbers stay numbers. nbgrader_config.py sets it as `ExportApp.plugin_class`, and the kit's `export`
names it on nbgrader's command line.
"""

from __future__ import annotations

import csv
import os

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import CsvExportPlugin

from autograder.judging.report import csv_cell

COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
           "late_submission_penalty", "score", "max_score"]  # nbgrader's, in its order


class SafeCsvExport(CsvExportPlugin):
    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "grades.csv"
        students = {str(s) for s in self.student}
        assignments = {str(a) for a in self.assignment}
        self.log.info("Exporting grades to %s", dest)
        tmp = f"{dest}.{os.getpid()}.tmp"
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    try:
                        sub = gradebook.find_submission(assignment.name, student.id)
                        scores: list[object] = [sub.timestamp, sub.score, sub.late_submission_penalty,
                                                max(0.0, sub.score - sub.late_submission_penalty)]
                    except MissingEntry:  # nothing handed in: zero, as nbgrader's
                        scores = ["", 0.0, 0.0, 0.0]
                    row = [assignment.name, assignment.duedate, scores[0], student.id, student.last_name,
                           student.first_name, student.email, *scores[1:], assignment.max_score]
                    writer.writerow(["" if v is None else csv_cell(v if isinstance(v, str | float | int) else str(v))
                                     for v in row])
        os.replace(tmp, dest)
