"""`python -m autograder selftest [--device cpu|cuda]`: the kit checks itself on the machine it runs on.

On the chosen device it grades, as `grade` does:
- every chapter's reference solution: full marks (on CPU the CUDA-only checks are skipped);
- every untouched release notebook: 0, each check saying "not implemented";
- every named wrong implementation in each chapter's cases.py (autograder/chapters/ch<id>/cases.py): each
  fails the checks it names, with the phrase it names.
It reports the ratio each speed check (@check(speed=True)) measured on the reference (the verdict is the check's
own), and, on CUDA, the figures each chapter's optional CUDA self-test (its folder's selftest.py, found through the
registry: autograder/judging/figures.py) measures in this process on its reference solution, such as
batch_gather's achieved memory bandwidth (05) and the AMP recipe's float32 and AMP steps (08).
One table goes to stdout, the same rows to a JSON file. It needs torch, numpy and pytest only
(and OpenCV for chapter 06, as grading it does).

Exit codes: 0 every expectation met; 1 some failed (named under the table); 4 CUDA was asked for
but torch sees no CUDA GPU.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from autograder.course.cases import Mutant, mutants
from autograder.course.reference import solution_cells, with_answers
from autograder.judging.figures import CudaFigures, Figure, Solution
from autograder.judging.judge import Grade, GradeOptions, GraderError, grade
from autograder.judging.plugin import CheckResult, CheckSpec, declared_checks
from autograder.judging.registry import CHAPTERS, chapter_module
from autograder.judging.results import AMP_MEMORY_RATIO, CUDA_EVENTS_RATIO, NEEDED_RATIO, RATIO, Outcome
from autograder.sandbox import launcher

NO_CUDA = 4  # exit code: --device cuda on a machine where torch sees no CUDA GPU
SEED = 1234  # fixed, so that two machines' tables compare
# Points of each chapter's checks, as the notebook's check cells carry them; CUDA-only checks count on top.
POINTS = {c.id: sum(c.points.values()) for c in CHAPTERS.values()}
TEACHES = ("Expected", "Problem", "not", "raised")  # a failing check's message says what went wrong

# (notebook, device, pytest -k selection or None) -> the grading
Grader = Callable[[Path, str, str | None], Grade]


def default_grader(notebook: Path, device: str, only: str | None) -> Grade:
    """Grading as `grade` does it (its default limits), with the fixed seed; every grading of the self-test
    forks from the one zygote of this process."""
    return grade(notebook, options=GradeOptions(device, SEED, only=only), zygote=launcher.zygote())


def declared(chapter: str) -> dict[str, CheckSpec]:
    """The chapter's checks, as its checks module declares them."""
    module = chapter_module(CHAPTERS[chapter], "checks")
    assert module is not None  # the registry loads only chapters whose folder has its checks module
    return declared_checks(module)


def cuda_only(chapter: str) -> dict[str, float]:
    """The chapter's CUDA-only checks and their points."""
    return {name: spec.points for name, spec in declared(chapter).items() if spec.cuda_only}


def speed_checks(chapter: str) -> list[str]:
    """The chapter's speed checks (@check(speed=True)), in their order."""
    return [name for name, spec in declared(chapter).items() if spec.speed]


def expected_max(chapter: str, device: str) -> float:
    return POINTS[chapter] + (sum(cuda_only(chapter).values()) if device == "cuda" else 0)


def expected_skips(chapter: str, device: str) -> list[str]:
    return [] if device == "cuda" else sorted(cuda_only(chapter))


@dataclass
class Row:
    kind: str  # machine | solution | release | wrong | speed | cuda
    chapter: str
    case: str
    ok: bool | None  # None: a figure reported, with no expectation on it
    result: str  # the short figure shown in the table
    detail: str = ""  # what failed, or the full measurement
    values: dict[str, Any] = field(default_factory=dict)  # the numbers, for the JSON

    @property
    def id(self) -> str:
        return f"{self.chapter}/{self.case}"

    @property
    def verdict(self) -> str:
        return {True: "ok", False: "FAIL", None: "info"}[self.ok]


def _check(r: CheckResult) -> str:
    return r.nodeid.split("::")[-1]


def _brief(text: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[:lines])


def _graded(grader: Grader, chapter: str, cells: dict[str, str] | None, device: str,
            only: str | None = None) -> Grade | str:
    """The release notebook with `cells` replaced (None: untouched), graded; or why it could not be."""
    nb = with_answers(chapter, cells or {})
    with tempfile.TemporaryDirectory(prefix="selftest-") as tmp:
        path = Path(tmp) / f"{chapter}.ipynb"
        path.write_text(json.dumps(nb, indent=1))
        try:
            return grader(path, device, only)
        except GraderError as e:
            return f"grader error: {e}"


def _skip_problems(g: Grade, chapter: str, device: str) -> list[str]:
    skipped, want = sorted(_check(r) for r in g.results if r.status == "skipped"), expected_skips(chapter, device)
    return [] if skipped == want else [f"skipped {skipped or 'nothing'}, expected {want or 'nothing'}"]


def solution_rows(chapter: str, device: str, grader: Grader = default_grader) -> list[Row]:
    """The reference solution at full marks, then one row per speed check it went through."""
    g = _graded(grader, chapter, solution_cells(chapter), device)
    if isinstance(g, str):
        return [Row("solution", chapter, "reference solution", False, "not graded", g)]
    problems = [f"{_check(r)} failed: {_brief(r.output)}" for r in g.results if r.status == "failed"]
    problems += g.notes + _skip_problems(g, chapter, device)
    if g.max_score != expected_max(chapter, device):
        problems.append(f"out of {g.max_score:g} points, expected {expected_max(chapter, device):g}")
    row = Row("solution", chapter, "reference solution", not problems, f"{g.score:g}/{g.max_score:g}",
              "; ".join(problems), {"score": g.score, "max_score": g.max_score, "sandbox": g.protections,
                                    "seconds": round(g.execution_time, 1)})
    speed = speed_checks(chapter)
    return [row, *(speed_row(chapter, r) for r in g.results if _check(r) in speed)]


def release_row(chapter: str, device: str, grader: Grader = default_grader) -> Row:
    """The untouched release: 0 points, every graded check saying "not implemented"."""
    g = _graded(grader, chapter, None, device)
    if isinstance(g, str):
        return Row("release", chapter, "untouched release", False, "not graded", g)
    problems = [f"{_check(r)} did not say 'not implemented': {_brief(r.output)}"
                for r in g.results if r.status != "skipped" and "not implemented" not in r.output]
    problems += [f"{_check(r)} said 'not implemented', but its outcome is {r.outcome.value}" for r in g.results
                 if "not implemented" in r.output and r.outcome not in (Outcome.SKIPPED, Outcome.NOT_IMPLEMENTED)]
    problems += _skip_problems(g, chapter, device)
    if g.score != 0 or g.bonus != 0:
        problems.append(f"scored {g.score:g} (bonus {g.bonus:g}), expected 0")
    if g.max_score != expected_max(chapter, device):
        problems.append(f"out of {g.max_score:g} points, expected {expected_max(chapter, device):g}")
    return Row("release", chapter, "untouched release", not problems, f"{g.score:g}/{g.max_score:g}",
               "; ".join(problems), {"score": g.score, "max_score": g.max_score})


def mutant_row(mutant: Mutant, device: str, grader: Grader = default_grader) -> Row:
    """A named wrong implementation fails each check it names, with its phrase; only those checks run."""
    cells = {**solution_cells(mutant.chapter), **mutant.cells}
    g = _graded(grader, mutant.chapter, cells, device, " or ".join(mutant.fails))
    if isinstance(g, str):
        return Row("wrong", mutant.chapter, mutant.name, False, "not graded", g)
    results = {_check(r): r for r in g.results}
    problems = []
    for check, phrase in mutant.fails.items():
        r = results.get(check)
        if r is None:
            problems.append(f"{check} did not run")
        elif r.status != "failed":
            problems.append(f"{check} {r.status}" + (f": {_brief(r.output)}" if r.output else ""))
        elif phrase not in r.output:
            problems.append(f"{check} failed without {phrase!r} in its message: {_brief(r.output, 6)}")
        elif not any(word in r.output for word in TEACHES):
            problems.append(f"{check}'s message does not say what went wrong: {_brief(r.output)}")
    result = f"fails {', '.join(mutant.fails)}" if not problems else f"{len(problems)} check(s) missed it"
    return Row("wrong", mutant.chapter, mutant.name, not problems, result, "; ".join(problems),
               {"fails": mutant.fails, "score": g.score, "max_score": g.max_score})


def speed_row(chapter: str, r: CheckResult) -> Row:
    """A speed check's ratio on the reference, as the check measured it (CheckResult.measured); its verdict is the
    check's own."""
    if r.status == "skipped":
        return Row("speed", chapter, _check(r), None, "skipped", r.output)
    values: dict[str, Any] = {"ratio": r.measured.get(RATIO), "needs": r.measured.get(NEEDED_RATIO),
                              "cuda_events_ratio": r.measured.get(CUDA_EVENTS_RATIO),
                              "amp_memory_ratio": r.measured.get(AMP_MEMORY_RATIO), "measured": r.measured}
    parts = [f"{values['ratio']:.3g}x" if values["ratio"] is not None else "ratio not reported"]
    if values["needs"] is not None:
        parts.append(f"needs {values['needs']:g}x")
    if values["cuda_events_ratio"] is not None:
        parts.append(f"CUDA events {values['cuda_events_ratio']:.1f}x")
    if values["amp_memory_ratio"] is not None:
        parts.append(f"AMP peak memory {values['amp_memory_ratio']:.2f}x")
    return Row("speed", chapter, _check(r), r.status == "passed", ", ".join(parts), r.output.strip(), values)


# -- figures measured in this process: each chapter's optional CUDA self-test (judging/figures.py) ----------


def load_solution(chapter: str, name: str) -> Callable[..., Any]:
    """A name defined by the chapter's reference solution (kit code), run here after the chapter's imports."""
    namespace: dict[str, Any] = {"__name__": f"selftest_{chapter}"}
    exec(CHAPTERS[chapter].preamble, namespace)
    for code in solution_cells(chapter).values():
        exec(code, namespace)
    return namespace[name]


def cuda_figures(chapter: str) -> CudaFigures:
    """The figures the chapter's optional CUDA self-test (its folder's selftest.py) measures: name -> measurement."""
    module = chapter_module(CHAPTERS[chapter], "selftest")
    figures = getattr(module, "CUDA_FIGURES", {})
    if not isinstance(figures, dict):
        raise TypeError(f"{CHAPTERS[chapter].folder.name}/selftest.py: CUDA_FIGURES maps names to measurements")
    return figures


def figure_row(chapter: str, case: str, measure: Callable[[Solution], Figure]) -> Row:
    """A figure the chapter's CUDA self-test measures on its reference solution, in this process."""
    f = measure(lambda name: load_solution(chapter, name))
    return Row("cuda", chapter, case, f.ok, f.result, f.detail, f.values)


def _measured(kind: str, chapter: str, case: str, measure: Callable[[], Row]) -> Row:
    try:
        return measure()
    except Exception as e:  # a figure that cannot be measured here is a failure to report, not a crash
        return Row(kind, chapter, case, False, "not measured", f"{type(e).__name__}: {e}")


def machine_row(device: str) -> Row:
    text = f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    values: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version()}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        text += f"; {p.name}, compute {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda}"
        values.update(gpu=p.name, capability=f"{p.major}.{p.minor}", gpu_bytes=p.total_memory, cuda=torch.version.cuda)
    return Row("machine", "-", device, None, text, values=values)


def _sandbox_row(solutions: list[Row]) -> Row:
    sandbox: dict[str, list[str]] = next((r.values["sandbox"] for r in solutions if r.values.get("sandbox")), {})
    active, off = sandbox.get("active", []), sandbox.get("off", [])
    return Row("machine", "-", "sandbox", None, f"{len(active)} protections active; off: {', '.join(off) or 'none'}",
               f"active: {', '.join(active)}", sandbox)


def rows(device: str, grader: Grader = default_grader, chapters: list[str] | None = None) -> Iterator[Row]:
    """Every row of the self-test, as each is done."""
    yield machine_row(device)
    solutions = []
    chosen = chapters or list(CHAPTERS)
    for chapter in chosen:
        found = solution_rows(chapter, device, grader)
        solutions.append(found[0])
        yield from found
        yield release_row(chapter, device, grader)
        for m in mutants(chapter):
            if device in m.devices:
                yield mutant_row(m, device, grader)
    yield _sandbox_row(solutions)
    if device == "cuda":
        for chapter in chosen:
            for case, measure in cuda_figures(chapter).items():
                yield _measured("cuda", chapter, case, functools.partial(figure_row, chapter, case, measure))


def render(found: list[Row]) -> str:
    """One table, then what each failure was; last, the count."""
    head = ("verdict", "kind", "chapter", "case", "result")
    body = [(r.verdict, r.kind, r.chapter, r.case, r.result) for r in found]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head) - 1)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    lines = [fmt.format(*head), "  ".join("-" * w for w in [*widths, len(head[-1])]), *(fmt.format(*b) for b in body)]
    failed = [r for r in found if r.ok is False]
    if failed:
        lines += ["", "failed:"] + [f"  {r.id}: {r.detail or r.result}" for r in failed]
    met = sum(r.ok is True for r in found)
    lines += ["", f"{met} expectations met, {len(failed)} failed, {sum(r.ok is None for r in found)} figures reported"]
    return "\n".join(lines)


def as_json(device: str, found: list[Row], seconds: float) -> dict[str, Any]:
    return {"device": device, "seed": SEED, "seconds": round(seconds, 1), "ok": all(r.ok is not False for r in found),
            "failed": [r.id for r in found if r.ok is False],
            "rows": [{**asdict(r), "verdict": r.verdict} for r in found]}


def main(device: str, out: Path, grader: Grader = default_grader, chapters: list[str] | None = None) -> int:
    # The whole process, which judges as `grade` does: one torch thread (see autograder.cli), set before the
    # gradings and the figures measured here.
    torch.set_num_threads(1)
    if device == "cuda" and not torch.cuda.is_available():
        why = (f"torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False"
               + ("; this torch is a CPU-only build)" if torch.version.cuda is None else ")"))
        print(f"selftest: --device cuda was asked for, but {why}. Nothing was graded.", file=sys.stderr)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"device": device, "ok": False, "error": why}, indent=2) + "\n")
        return NO_CUDA
    started, found = time.perf_counter(), []
    for row in rows(device, grader, chapters):
        found.append(row)
        print(f"selftest: {row.verdict:<4} {row.id} ({time.perf_counter() - started:.0f} s)", file=sys.stderr,
              flush=True)
    print(render(found))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(as_json(device, found, time.perf_counter() - started), indent=2) + "\n")
    print(f"written: {out}")
    return 0 if all(r.ok is not False for r in found) else 1
