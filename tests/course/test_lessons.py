"""The lessons' own promises: answer keys with no stderr and their figures inline, no cell that carries
the guide's code, and chapter 06's datasets loadable by spawn and forkserver workers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from autograder.judging.registry import CHAPTERS
from tests.kit import ROOT, solution_cells

BUILT = [c for c in CHAPTERS if (ROOT / "solutions" / c / f"{c}.ipynb").exists()]
COPYCHECK = ROOT.parent / "shared" / "tools" / "copycheck.py"
CH06 = "06_data_loaders"


def _code_cells(chapter: str) -> list[dict[str, Any]]:
    nb = json.loads((ROOT / "solutions" / chapter / f"{chapter}.ipynb").read_text())
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _text(output: dict[str, Any]) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else text


@pytest.mark.parametrize("chapter", BUILT)
def test_answer_key_writes_nothing_to_stderr(chapter: str) -> None:
    found = [(c.get("id"), _text(o)[:300]) for c in _code_cells(chapter) for o in c["outputs"]
             if o.get("name") == "stderr"]
    assert not found, f"solutions/{chapter} has stderr output (a warning to silence at its source): {found}"


def test_checkerboard_is_drawn_inline() -> None:
    drawn = [c["id"] for c in _code_cells("08_mixed_precision")
             if any("image/png" in o.get("data", {}) for o in c["outputs"])]
    assert drawn, "the 08 answer key shows no inline PNG: draw the checkerboard with matplotlib in the notebook"
    files = list((ROOT / "solutions" / "08_mixed_precision").glob("*.png"))
    assert not files, f"the figure belongs inline, not in a file: {files}"


def test_start_method_demo_ran_under_every_method() -> None:
    """The answer key's own run: every start method this machine offers read all items, in order."""
    cell = next(c for c in _code_cells(CH06) if c.get("id") == "start-methods-demo")
    text = "".join(_text(o) for o in cell["outputs"])
    for method in ("fork", "spawn", "forkserver"):
        line = next((x for x in text.splitlines() if x.startswith(method)), "")
        assert "all 8 items, in order: True" in line, f"{method}: {line or 'no line'}\n{text}"
    assert "Can't get attribute 'SolidColours'" in text, text


@pytest.mark.skipif(not COPYCHECK.exists(), reason="the guide and its copycheck live in ../shared")
def test_no_cell_carries_the_guides_code() -> None:
    done = subprocess.run([sys.executable, str(COPYCHECK), str(ROOT)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "copycheck: 0 cells carry the guide's code", done.stdout


# What a spawn or forkserver worker does: unpickle the dataset, importing its class by module and name.
# The notebook's importable() writes the imports and the answer cell to a module; so does this test.
# The same classes defined in __main__ (a notebook's cells) must fail there, or the test proves nothing.
_LOADER_SCRIPT = textwrap.dedent('''
    import io, os, sys, tarfile
    from collections import Counter
    import cv2, numpy as np
    from torch.utils.data import DataLoader

    folder = sys.argv[1]
    sys.path.insert(0, folder)
    import datasets_06 as m

    images = [np.full((2 + k, 3, 3), (10 * k, 20, 200 - k), np.uint8) for k in range(6)]
    want = Counter((3, *a.shape[:2], *a[0, 0].tolist()) for a in images)
    paths = [os.path.join(folder, f"part_{f}.tar") for f in range(2)]
    for f, path in enumerate(paths):
        with tarfile.open(path, "w") as tar:
            for k in range(f, 6, 2):
                png = cv2.imencode(".png", images[k][..., ::-1])[1].tobytes()
                info = tarfile.TarInfo(f"img_{k}.png")
                info.size = len(png)
                tar.addfile(info, io.BytesIO(png))
    for k, a in enumerate(images):
        cv2.imwrite(os.path.join(folder, f"img_{k}.png"), a[..., ::-1])

    def items(dataset, method):
        loader = DataLoader(dataset, batch_size=None, num_workers=2, timeout=120, multiprocessing_context=method)
        return Counter((*img.shape, *img[:, 0, 0].tolist()) for img in loader)

    print("spawn tar", items(m.TarImageDataset(paths), "spawn") == want)
    print("forkserver directory", items(m.ImageDirectoryDataset(folder), "forkserver") == want)
    exec(open(os.path.join(folder, "datasets_06.py")).read(), vars(sys.modules["__main__"]))
    try:
        items(TarImageDataset(paths), "spawn")
        print("spawn __main__ loaded")
    except Exception as e:
        print("spawn __main__ failed", type(e).__name__)
''')


def test_answer_cells_as_a_module_load_in_spawn_and_forkserver_workers(tmp_path: Path) -> None:
    module = CHAPTERS[CH06].preamble + "\n\n" + "\n\n".join(solution_cells(CH06).values())
    (tmp_path / "datasets_06.py").write_text(module)
    done = subprocess.run([sys.executable, "-c", _LOADER_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert "spawn tar True" in lines, done.stdout + done.stderr[-3000:]
    assert "forkserver directory True" in lines, done.stdout + done.stderr[-3000:]
    assert "spawn __main__ failed RuntimeError" in lines, done.stdout + done.stderr[-3000:]
