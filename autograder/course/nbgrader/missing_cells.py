"""nbgrader's OverwriteCells, with graded cells put back wherever the student's notebook has lost them.

With `add_missing_cells`, nbgrader puts a deleted grade cell back after the release's cell just before it,
and raises KeyError when that cell is missing too: a student who deleted a task's answer and its check cell,
or a notebook from an earlier release of the chapter (one task fewer), stopped the whole autograde of that
submission with a traceback. Here a missing grade cell goes after the nearest earlier cell of the release
that the notebook still has (at the top if none), so every graded cell is back, with its points, before
KitAutograde writes the verdicts. nbgrader_config.py names this class in `Autograde.sanitize_preprocessors`
in place of OverwriteCells; its settings (`OverwriteCells.add_missing_cells`) apply to it unchanged.
"""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import OverwriteCells


class MissingCells(OverwriteCells):
    def add_missing_grade_cells(self, nb: NotebookNode, resources: ResourcesDict
                                ) -> tuple[NotebookNode, ResourcesDict]:
        source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        release = [cell.name for cell in source.source_cells]  # the release's order (nbgrader relies on it too)
        by_name = {cell.name: cell for cell in source.source_cells}
        solutions = {cell.name for cell in source.solution_cells}
        for grade_cell in sorted(source.grade_cells, key=lambda c: release.index(c.name)):
            # an added cell's metadata is a plain dict, hence the item access
            ids = {c["metadata"]["nbgrader"]["grade_id"]: i for i, c in enumerate(nb.cells)
                   if "grade_id" in c["metadata"].get("nbgrader", {})}
            graded = {c["metadata"]["nbgrader"].get("grade_id") for c in nb.cells
                      if utils.is_grade(c) or utils.is_solution(c)}
            if grade_cell.name in graded:  # nbgrader's test: a cell of that id that is no longer graded is missing
                continue
            self.log.warning(f"Missing grade cell {grade_cell.name} encountered, adding to notebook")
            earlier = release[:release.index(grade_cell.name)]
            at = next((ids[name] + 1 for name in reversed(earlier) if name in ids), 0)
            nb.cells.insert(at, self.missing_cell_transform(by_name[grade_cell.name], grade_cell.max_score,
                                                            is_solution=grade_cell.name in solutions))
        return nb, resources

