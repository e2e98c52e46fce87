"""Command line: `python -m autograder COMMAND`, COMMAND one of grade, grade-all, merge, class-report, similarity,
bundle, build, selftest, export, demo."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.course.batch import default_workers, merge, score_table
from autograder.course.run import ClassOptions, ClassRun, Reports, grade_class, write_reports
from autograder.course.shards import ShardError
from autograder.course.shards import resolve as resolve_shard
from autograder.judging import results as fmt
from autograder.judging.registry import CHAPTERS
from autograder.sandbox.limits import Limits

GRADING = ("torch", "numpy", "pytest")  # what the grading engine imports (docs/operations.md: all a GPU runner needs)


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]  # what add_subparsers returns


def _grade(args: argparse.Namespace) -> int:
    from autograder.judging.notebook import NotebookError, load_submission
    from autograder.sandbox.launcher import Zygote

    notebook = Path(args.notebook)
    try:
        sub = load_submission(notebook, args.assignment)  # the one read of the notebook: grading takes it
    except NotebookError as e:
        sub, unknown = None, e  # its grade is this note
    warm = sub is not None and sub.chapter.loads_dynamo
    with Zygote(warm) as zygote:  # this command's; it imports torch now, while the judge imports its own below
        import torch  # here, not for merge

        from autograder.judging.judge import Grade, GradeOptions, GraderError, grade_loaded
        from autograder.judging.seeds import student_from_gradescope

        # The whole process, which only judges: one torch thread, as the sandbox's children have. The judge's
        # oracles are small; its idle threads would spin on the cores that timed children need.
        torch.set_num_threads(1)
        # The judge's gradient oracles import it on their first autograd.grad with an output gradient (0.3 s); the
        # zygote imports it too before it answers (runtime/zygote.warm_up), so now it costs no wait of its own.
        import torch.fx.experimental.symbolic_shapes
        if sub is not None and sub.chapter.config.judge_loads_dynamo:  # and its oracles' (1 s and more)
            import torch._dynamo
        from autograder.judging.report import clean, gradescope, text

        limits = Limits(call_seconds=args.timeout)
        try:
            student = args.student or (student_from_gradescope(args.gradescope_metadata)
                                       if args.gradescope_metadata else None)
            if sub is None:
                g = Grade(notebook, args.assignment, args.device, notes=[str(unknown)])
            else:
                options = GradeOptions(args.device, args.seed, limits, args.junit, only=args.only, student=student)
                g = grade_loaded(sub, options, zygote=zygote)
        except GraderError as e:
            print(clean(f"grader error: {e}"), file=sys.stderr)
            return 2
    result = gradescope(g)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(fmt.dumps(result))
    print(text(g))
    return 0


def _grade_all(args: argparse.Namespace) -> int:
    workers = args.workers if args.workers is not None else default_workers()
    try:
        chosen = resolve_shard(args.shard, os.environ, args.shard_count)
    except ShardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if chosen is not None and args.shard == "auto":
        print(f"shard {chosen.spec}: {chosen.source}", file=sys.stderr)
    run = grade_class(ClassOptions(args.root, args.out, workers, args.device, chosen.spec if chosen else None,
                                   args.junit, args.gradebook, args.feedback, args.manual_grades, args.regrade))
    if run.reports is None:  # refused (2) or interrupted (130): nothing after grading ran
        return run.grading
    out = run.options.out
    print(score_table(out))
    print(f"results: {out}/results/<student>/<assignment>.json; summaries: {out}/summary.csv, {out}/summary.json")
    _print_reports(run.reports)
    if run.unregistered is not None:  # nothing recorded: the message names the command to run
        print(run.unregistered, file=sys.stderr)
        return 1
    failed = _print_gradebook(run)
    return 3 if run.grading == 3 or failed else 0


def _print_gradebook(run: ClassRun) -> bool:
    """grade-all's lines on the gradebook and feedback steps; True when some submission was not recorded."""
    from autograder.judging.report import clean

    done, pages, root = run.recorded, run.feedback, run.options.root
    if done is not None:
        print(f"gradebook: {done.recorded} submissions recorded by nbgrader autograde, {done.unchanged} "
              f"already recorded, {len(done.failed)} failed, in {root / 'gradebook.db'}")
        if done.failed:
            print("not recorded (no score in the gradebook; rerun the same command after fixing):\n  "
                  + "\n  ".join(clean(line) for line in done.failed), file=sys.stderr)
        if done.held:
            print(f"gradebook: {len(done.held)} changed notebooks not recorded: each replaces a notebook you graded "
                  "by hand, and nbgrader would carry those grades and comments over to the new one. Rerun with "
                  "--manual-grades keep (record it, keep them) or --manual-grades clear (record it, remove them):\n  "
                  + "\n  ".join(clean(line) for line in done.held), file=sys.stderr)
        if done.kept:
            print(f"gradebook: manual grades and comments kept for {len(done.kept)} changed notebooks (review them "
                  "in Formgrader):\n  " + "\n  ".join(clean(line) for line in done.kept))
        if done.cleared:
            print(f"gradebook: manual grades and comments of the notebook handed in before cleared for "
                  f"{len(done.cleared)} changed notebooks:\n  " + "\n  ".join(clean(line) for line in done.cleared))
        if done.above_max:
            print(f"warning: {len(done.above_max)} scores in the gradebook are above the maximum, raised by manual "
                  "grading in Formgrader (check they are meant):\n  "
                  + "\n  ".join(clean(line) for line in done.above_max), file=sys.stderr)
        if done.by_hand:
            print(f"gradebook: {len(done.by_hand)} submissions were copied into submitted/ by hand (no timestamp.txt "
                  "and submission_secret.txt, which `nbgrader submit` writes and `nbgrader collect` copies): "
                  "Formgrader's Release Feedback stops on them with a FileNotFoundError traceback (nbgrader's), and "
                  "`nbgrader fetch_feedback` would not find them. Hand those students their page, "
                  "feedback/<student>/<assignment>/<assignment>.html, after Generate Feedback; or have them submit "
                  "through the exchange and run `nbgrader collect --update`:\n  " + "\n  ".join(done.by_hand))
        if done.unnamed:
            print(f"gradebook: {len(done.unnamed)} students have no name there, so Formgrader lists them as "
                  "'None, None': add them with `nbgrader db student import roster.csv` in the course "
                  "directory (a CSV with the columns id,first_name,last_name,email)")
    if pages is not None:
        print(f"feedback: {pages.written} pages in {root / 'feedback'}")
        if pages.kept:
            print(f"feedback: {len(pages.kept)} pages left as they are, written by nbgrader generate_feedback "
                  "(with your manual grades and comments; rerun it after regrading to update them):\n  "
                  + "\n  ".join(clean(p) for p in pages.kept))
        if pages.refused:
            print(f"feedback: {len(pages.refused)} files of submissions not copied beside their pages (a link, a "
                  "special file or too large, not the student's own file):\n  " + "\n  ".join(pages.refused),
                  file=sys.stderr)
        if pages.by_hand:
            print(f"feedback: {len(pages.by_hand)} pages are for submissions copied in by hand (no timestamp.txt): "
                  "nbgrader release_feedback stops on them; hand them to the students yourself:\n  "
                  + "\n  ".join(clean(p) for p in pages.by_hand))
    return done is not None and bool(done.failed or done.held)


def _print_reports(reports: Reports) -> None:
    """The lines of the steps after grade-all and merge: similar answers, then the class report (or why not)."""
    print(reports.similarity)
    if reports.page is not None:
        print(f"class report: {reports.page} (CSV files beside it)")
    else:
        print(f"warning: the class report could not be written: {reports.failure}", file=sys.stderr)


def _class_report(args: argparse.Namespace) -> int:
    from autograder.course.report import write_report  # matplotlib, if installed, is imported in there only
    from autograder.judging.report import clean

    if not args.graded.is_dir():
        print(clean(f"error: {args.graded} is not a folder: give the --out folder of grade-all or merge"),
              file=sys.stderr)
        return 2
    if not ((args.graded / "results").is_dir() or (args.graded / "summary.json").is_file()):
        # e.g. nbgrader's autograded/: a folder the kit did not write is never written into
        print(clean(f"error: {args.graded} holds no results/ or summary.json, so grade-all or merge did not write "
                    "it: give their --out folder (default: graded); nothing was written"), file=sys.stderr)
        return 2
    print(f"class report: {write_report(args.graded, args.out, getattr(args, 'gradebook', None))} "
          "(CSV files beside it)")
    return 0


def _merge(args: argparse.Namespace) -> int:
    code = merge(args.parts, args.out)
    if code == 0:
        from autograder.course.similarity import merge_answers

        merge_answers(args.parts, args.out)
        _print_reports(write_reports(args.out))
    return code


def _similarity(args: argparse.Namespace) -> int:
    from autograder.course.similarity import MissingTool, summary, write
    from autograder.judging.report import clean

    if not (args.graded / "answers").is_dir():
        print(clean(f"error: {args.graded} holds no answers/ folder: give the --out folder of grade-all or merge "
                    "(grade it again with this version of the kit to keep the answers)"), file=sys.stderr)
        return 2
    try:
        found = write(args.graded)
    except MissingTool as e:
        print(clean(f"error: {e}"), file=sys.stderr)
        return 2
    print(summary(found, args.graded))
    return _class_report(argparse.Namespace(graded=args.graded, out=args.out))


def _bundle(args: argparse.Namespace) -> int:
    from autograder.course.bundle import build_bundle

    out = build_bundle(args.assignment, args.out or Path("dist") / f"gradescope-{args.assignment}.zip")
    print(f"{out}: upload it as the Gradescope autograder (setup.sh, run_autograder, kit/)")
    return 0


def _build(args: argparse.Namespace) -> int:
    from autograder.course.build import main  # needs the dev extras: imported only here

    return main(args.chapters)


def _export(args: argparse.Namespace) -> int:
    from autograder.course.nbgrader.gradebook import export

    return export(args.course)


def _demo(args: argparse.Namespace) -> int:
    from autograder.course.demo import main

    return main()


def _selftest(args: argparse.Namespace) -> int:
    from autograder.course.selftest import main  # imports torch

    return main(args.device, args.out, chapters=args.chapter)


def _grade_command(sub: Subparsers) -> None:
    """`grade`: one notebook."""
    g = sub.add_parser("grade", help="grade one notebook; exits 0 whenever grading completed")
    g.add_argument("notebook")
    g.add_argument("--assignment", choices=sorted(CHAPTERS), help="default: read from the notebook")
    g.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    g.add_argument("--out", help="write Gradescope results.json here")
    g.add_argument("--junit", type=Path, help="write a JUnit XML report here (for CI)")
    g.add_argument("--seed", type=int, help="fix the input seed (default: HMAC with the course secret of the student "
                   "and assignment, else of the answer cells' code)")
    g.add_argument("--student", help="who submitted (name, id or email): their inputs stay the same whatever they edit")
    g.add_argument("--gradescope-metadata", type=Path, metavar="PATH",
                   help="read the student from Gradescope's submission_metadata.json (first user's sid or email)")
    g.add_argument("--timeout", type=float, default=Limits.call_seconds,
                   help="seconds allowed for one call into student code (default: %(default)s)")
    g.add_argument("--only", help="run only the checks matching this pytest -k expression (e.g. speed)")
    g.set_defaults(run=_grade)
    g.set_defaults(needs=GRADING)


def _grade_all_command(sub: Subparsers) -> None:
    """`grade-all`: a course, on one machine or as one shard of many."""
    a = sub.add_parser("grade-all", help="grade every submission of a course (or of a submitted/ folder); exits 3 "
                       "if a submission could not be graded (a grader error, graded again on the next run)")
    a.add_argument("root", type=Path, help="course directory with submitted/, or the submitted/ folder")
    a.add_argument("--out", type=Path, default=Path("graded"), help="results folder (default: %(default)s)")
    a.add_argument("--workers", type=int,
                   help="parallel judges, each pinned to its own core (default: one per core)")
    a.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a.add_argument("--shard", help="grade only shard i of n, as i/n (for a CI matrix); join with `merge`. auto: "
                   "from a Slurm job array (SLURM_ARRAY_TASK_ID and the array's bounds) or a Kubernetes Indexed Job "
                   "(JOB_COMPLETION_INDEX, with --shard-count)")
    a.add_argument("--shard-count", type=int, metavar="N", help="with --shard auto in a Kubernetes Indexed Job: the "
                   "Job's completions (default: the AUTOGRADER_SHARD_COUNT variable)")
    a.add_argument("--junit", action="store_true", help="also write OUT/junit/<student>__<assignment>.xml")
    a.add_argument("--gradebook", action="store_true",
                   help="also write the scores into ROOT/gradebook.db with nbgrader's API (ROOT: a course dir)")
    a.add_argument("--feedback", action="store_true", help="also write ROOT/feedback/<student>/<assignment>/*.html")
    a.add_argument("--regrade", action="store_true", help="grade again the submissions whose result was graded "
                   "with another release or grader (grade-all names them); without it their results stand")
    a.add_argument("--manual-grades", choices=["keep", "clear"], help="with --gradebook: when a changed notebook "
                   "replaces one you graded by hand in Formgrader (manual scores, extra credit, comments), keep them "
                   "for the new notebook or clear them; without it such a notebook is not recorded, and listed")
    a.set_defaults(run=_grade_all)
    a.set_defaults(needs=GRADING)


def _reports_command(sub: Subparsers) -> None:
    """`merge`, `class-report` and `similarity`: what comes after grading."""
    m = sub.add_parser("merge", help="join the results folders of several shards")
    m.add_argument("parts", nargs="+", type=Path)
    m.add_argument("--out", type=Path, required=True)
    m.set_defaults(run=_merge)

    r = sub.add_parser("class-report", help="write the class report (HTML page with plots, CSV files) from the "
                       "folder grade-all wrote; grade-all and merge write it too")
    r.add_argument("graded", type=Path, help="the --out folder of grade-all or merge (with results/)")
    r.add_argument("--out", type=Path, help="where to write report.html and the CSV files (default: GRADED/report)")
    r.add_argument("--gradebook", type=Path, help="nbgrader's gradebook.db, for Formgrader's manual grades (default: "
                   "GRADED/gradebook.db, else one in the folder above GRADED)")
    r.set_defaults(run=_class_report)

    s = sub.add_parser("similarity", help="find pairs of students whose answer cells are unusually alike (copydetect, "
                       "on this machine) and rewrite the class report with them; never changes a score")
    s.add_argument("graded", type=Path, help="the --out folder of grade-all or merge (with answers/)")
    s.add_argument("--out", type=Path, help="where the class report goes (default: GRADED/report)")
    s.set_defaults(run=_similarity)


def _course_command(sub: Subparsers) -> None:
    """`bundle`, `build`, `selftest`, `export` and `demo`: the course's files, and the kit checked on this machine."""
    z = sub.add_parser("bundle", help="build a Gradescope autograder zip for one assignment")
    z.add_argument("assignment", choices=sorted(CHAPTERS))
    z.add_argument("--out", type=Path, help="default: dist/gradescope-ASSIGNMENT.zip")
    z.set_defaults(run=_bundle)

    b = sub.add_parser("build", help="generate release/ with nbgrader and the executed solutions/")
    b.add_argument("chapters", nargs="*", help="default: all")
    b.set_defaults(run=_build, needs=("nbgrader", "nbclient"))

    t = sub.add_parser("selftest", help="grade every reference solution, release and named wrong implementation "
                       "on this machine and report what works; exits 1 if an expectation fails, 4 if CUDA is absent")
    t.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    t.add_argument("--out", type=Path, default=Path("selftest.json"), help="write the table as JSON here "
                   "(default: %(default)s)")
    t.add_argument("--chapter", action="append", choices=sorted(CHAPTERS),
                   help="only this chapter (repeat for more; default: all), e.g. to run chapters side by side")
    t.set_defaults(run=_selftest)
    t.set_defaults(needs=GRADING)

    e = sub.add_parser("export", help="nbgrader export run in the course directory (found upward from here): "
                       "grades.csv there; exits 2 if there is no course or no gradebook.db")
    e.add_argument("course", type=Path, nargs="?", default=Path.cwd(),
                   help="the course directory or a folder inside it (default: here)")
    e.set_defaults(run=_export, needs=("nbgrader",))

    d = sub.add_parser("demo", help="build, then grade the bundled example submissions")
    d.set_defaults(run=_demo, needs=(*GRADING, "nbgrader", "nbclient"))


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand each, each with the modules it needs (`needs`)."""
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_grade_command, _grade_all_command, _reports_command, _course_command):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    needs = [*getattr(args, "needs", ()), *(["nbgrader"] if getattr(args, "gradebook", False) else [])]
    missing = [name for name in needs if importlib.util.find_spec(name) is None]
    if missing:  # e.g. the system Python instead of the kit's .venv: say so, not a traceback from deep inside
        print(f"error: {', '.join(missing)} not installed for {sys.executable}, which `{args.command}` needs: run "
              f"`make setup` in the kit's folder, then `.venv/bin/python -m autograder {args.command} ...`",
              file=sys.stderr)
        return 2
    return int(args.run(args))
