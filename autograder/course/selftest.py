"""`python -m autograder selftest [--device cpu|cuda]`: the kit checks itself on the machine it runs on.

On the chosen device it grades, as `grade` does:
- every chapter's reference solution: full marks (on CPU the CUDA-only checks are skipped);
- every untouched release notebook: 0, each check saying "not implemented";
- every named wrong implementation in each chapter's cases.py (autograder/chapters/ch<id>/cases.py): each
  fails the checks it names, with the phrase it names.
It reports the ratio each speed check measured on the reference (the verdict is the check's own), and,
on CUDA, two figures measured in this process: batch_gather's achieved memory bandwidth against the
GPU's, and chapter 08's float32 and AMP steps on the AMP recipe's MLP (the recipe measured 2.3x).
One table goes to stdout, the same rows to a JSON file. It needs torch, numpy and pytest only
(and OpenCV for chapter 06, as grading it does).

Exit codes: 0 every expectation met; 1 some failed (named under the table); 4 CUDA was asked for
but torch sees no CUDA GPU.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.course.cases import Mutant, mutants
from autograder.course.reference import solution_cells, with_answers
from autograder.judging.judge import Grade, GradeOptions, GraderError, grade
from autograder.judging.plugin import CheckResult, declared_checks
from autograder.judging.registry import CHAPTERS
from autograder.judging.results import AMP_MEMORY_RATIO, CUDA_EVENTS_RATIO, NEEDED_RATIO, RATIO, Outcome
from autograder.sandbox import launcher

NO_CUDA = 4  # exit code: --device cuda on a machine where torch sees no CUDA GPU
SEED = 1234  # fixed, so that two machines' tables compare
# Points of each chapter's checks, as the notebook's check cells carry them; CUDA-only checks count on top.
POINTS = {c.id: sum(c.points.values()) for c in CHAPTERS.values()}
TEACHES = ("Expected", "Problem", "not", "raised")  # a failing check's message says what went wrong
RECIPE_AMP_SPEEDUP = 2.3  # the PyTorch AMP recipe's MLP: 7.7 s in float32, 3.3 s with AMP

# (notebook, device, pytest -k selection or None) -> the grading
Grader = Callable[[Path, str, str | None], Grade]


def default_grader(notebook: Path, device: str, only: str | None) -> Grade:
    """Grading as `grade` does it (its default limits), with the fixed seed; every grading of the self-test
    forks from the one zygote of this process."""
    return grade(notebook, options=GradeOptions(device, SEED, only=only), zygote=launcher.zygote())


def cuda_only(chapter: str) -> dict[str, float]:
    """The chapter's CUDA-only checks and their points, as its checks module declares them."""
    module = importlib.import_module(f"autograder.chapters.{CHAPTERS[chapter].folder.name}.checks")
    return {name: spec.points for name, spec in declared_checks(module).items() if spec.cuda_only}


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
    return [row, *(speed_row(chapter, r) for r in g.results if "speed" in _check(r))]


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


# -- figures measured in this process (also used by benchmarks/) -----------------------------


def load_solution(chapter: str, name: str) -> Callable[..., Any]:
    """A name defined by the chapter's reference solution (kit code), run here after the chapter's imports."""
    namespace: dict[str, Any] = {"__name__": f"selftest_{chapter}"}
    exec(CHAPTERS[chapter].preamble, namespace)
    for code in solution_cells(chapter).values():
        exec(code, namespace)
    return namespace[name]


def cuda_ms(fn: Callable[[], object], calls: int = 50) -> float:
    """Median milliseconds per call from CUDA events, after a warm-up call and a synchronize."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def peak_bandwidth(props: Any) -> float | None:
    """Bytes per second the GPU's memory can move, from its properties; None where torch does not report them."""
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if not (clock_khz and bus_bits):
        return None
    return 2.0 * clock_khz * 1e3 * bus_bits / 8  # DDR and HBM transfer twice per clock


# [B, N, D] float32 tensor (256 MiB) and [B, K] indices, each row's a permutation: every element read once
GATHER_SHAPE = (256, 1024, 256, 1024)


def gather_bandwidth(batch_gather: Callable[..., torch.Tensor], shape: tuple[int, int, int, int] = GATHER_SHAPE
                     ) -> tuple[float, float]:
    """(bytes per second, ms per call) of batch_gather on CUDA, counting the least traffic it needs:
    the gathered rows read, the output written and the indices read once."""
    b, n, d, k = shape
    tensor = torch.randn(b, n, d, device="cuda")
    indices = torch.rand(b, n, device="cuda").argsort(dim=1)[:, :k]
    moved = 2 * b * k * d * tensor.element_size() + indices.numel() * indices.element_size()
    ms = cuda_ms(lambda: batch_gather(tensor, indices))
    return moved / (ms / 1e3), ms


class AmpRig:
    """The AMP recipe's MLP (3 Linear layers, ReLU between), SGD, a GradScaler and one batch, from a fixed seed."""

    def __init__(self, width: int, batch: int, device: str) -> None:
        torch.manual_seed(0)
        layers = [nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)]
        self.model = nn.Sequential(*layers).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.scaler = torch.amp.GradScaler(device)
        self.inputs = torch.randn(batch, width, device=device)
        self.targets = torch.randn(batch, width, device=device)


def float32_step(rig: AmpRig) -> float:
    loss = F.mse_loss(rig.model(rig.inputs), rig.targets)
    loss.backward()
    rig.optimizer.step()
    rig.optimizer.zero_grad(set_to_none=True)
    return loss.item()


@dataclass
class AmpFigures:
    float32: float  # median seconds per step
    amp: float
    float32_bytes: int  # peak bytes allocated during the steps above those allocated before (CUDA; 0 on CPU)
    amp_bytes: int

    @property
    def speedup(self) -> float:
        return self.float32 / self.amp


def measure_amp(width: int, batch: int, device: str, dtype: torch.dtype, steps: int, rounds: int) -> AmpFigures:
    """Float32 steps against chapter 08's reference amp_train_step, alternating each round (order swapped
    every round, round 0 a warm-up); medians over rounds."""
    amp_train_step = load_solution("08_mixed_precision", "amp_train_step")
    fp32, amp = AmpRig(width, batch, device), AmpRig(width, batch, device)
    runs: list[tuple[str, Callable[[], float]]] = [
        ("float32", lambda: float32_step(fp32)),
        ("amp", lambda: amp_train_step(amp.model, amp.optimizer, amp.scaler, amp.inputs, amp.targets, F.mse_loss,
                                       device_type=device, dtype=dtype))]
    times: dict[str, list[float]] = {"float32": [], "amp": []}
    peaks = {"float32": 0, "amp": 0}
    cuda, resident = device == "cuda", 0
    for r in range(rounds + 1):
        for name, step in runs if r % 2 == 0 else runs[::-1]:
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                resident = torch.cuda.memory_allocated()
            started = time.perf_counter()
            for _ in range(steps):
                step()
            if cuda:
                torch.cuda.synchronize()
                peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated() - resident)
            if r > 0:
                times[name].append((time.perf_counter() - started) / steps)
    return AmpFigures(statistics.median(times["float32"]), statistics.median(times["amp"]), peaks["float32"],
                      peaks["amp"])


def _measured(kind: str, chapter: str, case: str, measure: Callable[[], Row]) -> Row:
    try:
        return measure()
    except Exception as e:  # a figure that cannot be measured here is a failure to report, not a crash
        return Row(kind, chapter, case, False, "not measured", f"{type(e).__name__}: {e}")


def _bandwidth_row() -> Row:
    achieved, ms = gather_bandwidth(load_solution("05_batch_gather", "batch_gather"))
    peak = peak_bandwidth(torch.cuda.get_device_properties(0))
    values = {"bytes_per_second": achieved, "ms_per_call": ms, "peak_bytes_per_second": peak,
              "shape": list(GATHER_SHAPE)}
    if peak is None:
        return Row("cuda", "05_batch_gather", "batch_gather bandwidth", None,
                   f"{achieved / 1e9:.0f} GB/s; the GPU's peak is unknown (torch reports no memory clock)",
                   values=values)
    # A figure above the memory's peak would mean the CUDA-event timing is wrong.
    return Row("cuda", "05_batch_gather", "batch_gather bandwidth", achieved <= 1.1 * peak,
               f"{achieved / 1e9:.0f} GB/s of {peak / 1e9:.0f} GB/s peak ({achieved / peak:.0%})",
               "" if achieved <= 1.1 * peak else "more than the memory's peak: the CUDA-event timing is wrong",
               values)


def _amp_row() -> Row:
    from autograder.chapters.ch08_mixed_precision.checks import MIN_SPEEDUP, SPEED_BATCH, SPEED_WIDTH

    f = measure_amp(SPEED_WIDTH, SPEED_BATCH, "cuda", torch.float16, steps=10, rounds=5)
    gib = 2**30
    result = (f"float32 {f.float32 * 1e3:.1f} ms, AMP {f.amp * 1e3:.1f} ms per step: {f.speedup:.2f}x "
              f"(recipe {RECIPE_AMP_SPEEDUP:g}x, grading needs {MIN_SPEEDUP:g}x); step memory "
              f"{f.float32_bytes / gib:.2f} GiB -> {f.amp_bytes / gib:.2f} GiB")
    return Row("cuda", "08_mixed_precision", "AMP float16 step", f.speedup >= MIN_SPEEDUP, result,
               "" if f.speedup >= MIN_SPEEDUP else f"AMP is not {MIN_SPEEDUP:g}x faster than float32 on this GPU",
               {**asdict(f), "speedup": f.speedup, "recipe_speedup": RECIPE_AMP_SPEEDUP, "needs": MIN_SPEEDUP})


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
    for chapter in chapters or list(CHAPTERS):
        found = solution_rows(chapter, device, grader)
        solutions.append(found[0])
        yield from found
        yield release_row(chapter, device, grader)
        for m in mutants(chapter):
            if device in m.devices:
                yield mutant_row(m, device, grader)
    yield _sandbox_row(solutions)
    if device == "cuda":
        yield _measured("cuda", "05_batch_gather", "batch_gather bandwidth", _bandwidth_row)
        yield _measured("cuda", "08_mixed_precision", "AMP float16 step", _amp_row)


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
