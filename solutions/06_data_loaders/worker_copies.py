"""Module copies of notebook cells, for DataLoader workers started with `spawn` or `forkserver`.

06_data_loaders.ipynb imports this file from its own folder. A worker that is not forked receives the dataset
pickled, and pickle names a class by module and name; a class defined in a notebook lives in `__main__`, which a
fresh interpreter does not have. `importable(obj)` writes the notebook's imports and the cell that defined `obj`
to a module file in a folder on `sys.path`, imports it, and returns the module's `obj`, which any worker can
import by name. `load_in_fresh_python(obj)` shows the difference: it unpickles `obj` in a new interpreter, as a
spawn worker does first.
"""

from __future__ import annotations

import hashlib
import importlib
import linecache
import os
import pickle
import subprocess
import sys
from typing import Any

# The notebook's imports cell: every module copy starts with it, so that the cell's code finds its names.
IMPORTS = """\
import glob
import io
import os
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterator

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info
"""

_folder: list[str] = []  # where the module copies go, once use_folder has run


def use_folder(folder: str) -> None:
    """Write module copies into `folder`, put first on sys.path (workers copy sys.path as they start, so call this
    before the first worker starts)."""
    os.makedirs(folder, exist_ok=True)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    _folder[:] = [folder]


def importable(obj: Any) -> Any:
    """The class or function `obj`, loaded from a module file made of the imports cell and the cell defining it.

    The module's name comes from a hash of its source, so a changed cell makes a new module. The copy runs the
    whole cell: keep cells that define dataset classes free of demos and loops."""
    if not _folder:
        raise RuntimeError("call use_folder(path) first")
    functions = [obj] if hasattr(obj, "__code__") else [f for f in vars(obj).values() if hasattr(f, "__code__")]
    lines = linecache.getlines(functions[0].__code__.co_filename) if functions else []
    if not lines:  # IPython keeps each executed cell's source in linecache
        raise TypeError(f"cannot find the cell that defined {obj.__name__}: define it in a cell")
    source = IMPORTS + "\n" + "".join(lines)
    name = "cell_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    path = os.path.join(_folder[0], name + ".py")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(source)
    return getattr(importlib.import_module(name), obj.__name__)


def load_in_fresh_python(obj: Any) -> str:
    """What a new interpreter with this process's sys.path makes of `obj` pickled: its type, or the error."""
    probe = "import pickle, sys; print('loaded a', type(pickle.loads(sys.stdin.buffer.read())))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", probe], input=pickle.dumps(obj), capture_output=True, env=env)
    return done.stdout.decode().strip() or done.stderr.decode().strip().splitlines()[-1]
