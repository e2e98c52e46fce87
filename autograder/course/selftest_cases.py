"""The kit's named wrong implementations, declared once for its tests and `python -m autograder selftest`.

Each replaces some answer cells of a chapter's reference solution and names the checks that must fail
on it, each with a phrase its message must contain. Chapters 06 and 08 build some from the reference
solution itself, read from source/ (the kit's checkout). Needs nothing beyond the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder import CHECKOUT
from autograder.judging.notebook import read_notebook

ROOT = CHECKOUT
_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def source_path(chapter: str) -> Path:
    return ROOT / "source" / chapter / f"{chapter}.ipynb"


def release_path(chapter: str) -> Path:
    return ROOT / "release" / chapter / f"{chapter}.ipynb"


def solution_cells(chapter: str) -> dict[str, str]:
    """The reference code of each answer cell, from the instructor's source notebook."""
    cells = {}
    for cell in read_notebook(source_path(chapter))["cells"]:
        nbgrader = cell["metadata"].get("nbgrader", {})
        if nbgrader.get("solution"):
            src = cell["source"]
            cells[nbgrader["grade_id"]] = _MARKER.sub("", "".join(src) if isinstance(src, list) else src)
    return cells


@dataclass(frozen=True)
class Mutant:
    chapter: str
    name: str
    cells: dict[str, str]  # answer cell (grade_id) -> the code replacing the reference
    fails: dict[str, str]  # check that must fail -> a phrase its message must contain

    @property
    def id(self) -> str:
        return f"{self.chapter}/{self.name}"


def _single(chapter: str, table: dict[str, tuple[str, str, str, str]]) -> list[Mutant]:
    """From {name: (cell, code, the check meant to catch it, a phrase its message must contain)}."""
    return [Mutant(chapter, name, {cell: code}, {check: phrase})
            for name, (cell, code, check, phrase) in table.items()]


# -- 01_basics ---------------------------------------------------------------------------

BACKWARD = '''
def grad_of(fn, x):
    x.requires_grad_(True)
    fn(x).backward()
    return x.grad
'''
FLAG_LEFT_ON = '''
def grad_of(fn, x):
    x.requires_grad_(True)
    return torch.autograd.grad(fn(x), x)[0]
'''
FINITE_DIFFERENCES = '''
def grad_of(fn, x):
    eps = 1e-3
    flat = x.detach().reshape(-1)
    grad = torch.zeros_like(flat)
    for i in range(flat.numel()):
        step = torch.zeros_like(flat)
        step[i] = eps
        grad[i] = (fn((flat + step).reshape(x.shape)) - fn((flat - step).reshape(x.shape))) / (2 * eps)
    return grad.reshape(x.shape)
'''
FLOAT32_GRAD = '''
def grad_of(fn, x):
    x_ = x.detach().float().requires_grad_(True)
    return torch.autograd.grad(fn(x_), x_)[0]
'''
INTERPOLATE = '''
def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
    features = x[: degree + 1].unsqueeze(1) ** torch.arange(degree, -1, -1)
    return torch.linalg.solve(features, y[: degree + 1])
'''


def _fit(powers: str = "torch.arange(degree, -1, -1)", optimizer: str = "torch.optim.Adam([w], lr=lr)",
         steps: str = "steps", result: str = "w.detach()") -> str:
    """The reference fit_polynomial with one piece swapped out."""
    return f'''
def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
    features = x.unsqueeze(1) ** {powers}
    w = torch.zeros(features.shape[1], requires_grad=True)
    opt = {optimizer}
    for _ in range({steps}):
        loss = F.mse_loss(features @ w, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {result}
'''


CH01 = _single("01_basics", {
    "backward() fills x.grad": ("grad_of", BACKWARD, "check_grad_of_leaves_x_grad_alone", "x.grad"),
    "requires_grad left on": ("grad_of", FLAG_LEFT_ON, "check_grad_of_keeps_requires_grad",
                              "x.requires_grad is True"),
    "finite differences": ("grad_of", FINITE_DIFFERENCES, "check_grad_of_analytic", "values differ"),
    "float32 gradient": ("grad_of", FLOAT32_GRAD, "check_grad_of_matches_torch_func", "dtype torch.float32"),
    "lowest power first": ("fit_polynomial", _fit(result="w.detach().flip(0)"),
                           "check_fit_polynomial_guide_example", "reverse order"),
    "one coefficient short": ("fit_polynomial", _fit(powers="torch.arange(degree - 1, -1, -1)"),
                              "check_fit_polynomial_degrees_1_and_3", "instead of [2]"),
    "too few steps": ("fit_polynomial", _fit(steps="100"), "check_fit_polynomial_random_quadratics",
                      "values differ"),
    "lr ignored": ("fit_polynomial", _fit(optimizer="torch.optim.Adam([w], lr=0.1)"),
                   "check_fit_polynomial_uses_steps_and_lr", "values differ"),
    "through degree + 1 samples": ("fit_polynomial", INTERPOLATE, "check_fit_polynomial_noisy_data",
                                   "values differ"),
    "SGD instead of Adam": ("fit_polynomial", _fit(optimizer="torch.optim.SGD([w], lr=lr)"),
                            "check_fit_polynomial_uses_steps_and_lr", "plain SGD"),
})

# -- 02_modules --------------------------------------------------------------------------


def _affine(init: str = "nn.Parameter(torch.rand(1))", forward: str = "self.a * x + self.b") -> str:
    return f'''
class AffineScalar(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = {init}
        self.b = {init}

    def forward(self, x):
        return {forward}
'''


def _regressor(name: str = "linear", forward: str = "self.linear(x.unsqueeze(1)).squeeze(1)") -> str:
    return f'''
class LinearRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.{name} = nn.Linear(1, 1)

    def forward(self, x):
        return {forward}
'''


def _mlp(layers: str) -> str:
    return f"def make_mlp(in_features, hidden_features, out_features):\n    return nn.Sequential({layers})\n"


def _train(optimizer: str = "torch.optim.SGD(model.parameters(), lr=lr)", steps: str = "steps",
           zero_grad: str = "optimizer.zero_grad()", result: str = "loss.item()") -> str:
    return f'''
def train(model, x, y, steps=1000, lr=0.01):
    optimizer = {optimizer}
    losses = []
    for _ in range({steps}):
        {zero_grad}
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return {result}
'''


CH02 = _single("02_modules", {
    "plain tensors, not nn.Parameter": ("AffineScalar", _affine(init="torch.rand(1, requires_grad=True)"),
                                        "check_affine_parameters_registered", "parameters() is empty"),
    "parameters of shape []": ("AffineScalar", _affine(init="nn.Parameter(torch.rand(()))"),
                               "check_affine_parameters_registered", "'a': []"),
    "a and b swapped": ("AffineScalar", _affine(forward="self.b * x + self.a"), "check_affine_forward",
                        "values differ"),
    "no squeeze": ("LinearRegressor", _regressor(forward="self.linear(x.unsqueeze(1))"),
                   "check_linear_regressor_forward", "squeeze(1)"),
    "Linear not named linear": ("LinearRegressor", _regressor(name="fc", forward="self.fc(x[:, None])[:, 0]"),
                                "check_linear_regressor_structure", "submodule `linear`"),
    "missing ReLU": ("make_mlp", _mlp("nn.Linear(in_features, hidden_features), "
                                      "nn.Linear(hidden_features, out_features)"),
                     "check_make_mlp_guide_layers", "collapse"),
    "the guide's sizes hard-coded": ("make_mlp", _mlp("nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)"),
                                     "check_make_mlp_other_sizes", "differ in names or shapes"),
    "no zero_grad": ("train", _train(zero_grad="pass"), "check_train_fits_line", "did not fit"),
    "steps and lr ignored": ("train", _train(optimizer="torch.optim.SGD(model.parameters(), lr=0.01)",
                                             steps="1000"),
                             "check_train_follows_steps_and_lr", "did not fit"),
    "initial loss returned": ("train", _train(result="losses[0].item()"), "check_train_returns_final_loss",
                              "not the loss at the end"),
    "loss tensor returned": ("train", _train(result="loss"), "check_train_returns_final_loss", "not float"),
    "only a and b optimised": ("train", _train(optimizer="torch.optim.SGD([model.a, model.b], lr=lr)"),
                               "check_train_any_module", "has no attribute 'a'"),
})

# -- 03_broadcasting ---------------------------------------------------------------------

MERGE_HEAD = '''
class Merge(nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear1 = nn.Linear(in_features1, out_features)
        self.linear2 = nn.Linear(in_features2, out_features)
        self.activation = activation
'''
TILE_AND_CONCAT = MERGE_HEAD + '''
    def forward(self, a, b):
        tiled_b = b.repeat(*[n // m for n, m in zip(a.shape[:-1], b.shape[:-1])], 1)
        weight = torch.cat([self.linear1.weight, self.linear2.weight], dim=1)
        c = F.linear(torch.cat([a, tiled_b], dim=-1), weight, self.linear1.bias + self.linear2.bias)
        return c if self.activation is None else self.activation(c)
'''
EXPAND_CONTIGUOUS = MERGE_HEAD + '''
    def forward(self, a, b):
        b = b.expand(*a.shape[:-1], b.shape[-1]).contiguous()
        c = self.linear1(a) + self.linear2(b)
        return c if self.activation is None else self.activation(c)
'''
NO_ACTIVATION = MERGE_HEAD + '''
    def forward(self, a, b):
        return self.linear1(a) + self.linear2(b)
'''
BIAS_TWICE = MERGE_HEAD + '''
    def forward(self, a, b):
        c = self.linear1(a) + self.linear2(b) + self.linear1.bias
        return c if self.activation is None else self.activation(c)
'''
ONE_JOINT_LAYER = '''
class Merge(nn.Module):
    def __init__(self, in_features1, in_features2, out_features, activation=None):
        super().__init__()
        self.linear = nn.Linear(in_features1 + in_features2, out_features)
        self.activation = activation

    def forward(self, a, b):
        c = self.linear(torch.cat([a, b.expand(*a.shape[:-1], b.shape[-1])], dim=-1))
        return c if self.activation is None else self.activation(c)
'''
ALL_PAIRS = '''
def paired_sums(a, b):
    return a + b
'''
SQUEEZE_ALL = '''
def paired_sums(a, b):
    return (a + b.unsqueeze(1)).squeeze()
'''

CH03 = _single("03_broadcasting", {
    "tile and concatenate": ("Merge", TILE_AND_CONCAT, "check_merge_never_tiles", "repeat, cat"),
    "expand then contiguous": ("Merge", EXPAND_CONTIGUOUS, "check_merge_never_tiles", "expand then clone"),
    "activation ignored": ("Merge", NO_ACTIVATION, "check_merge_activation", "self.activation once"),
    "bias added twice": ("Merge", BIAS_TWICE, "check_merge_random_shapes", "its own bias"),
    "one joint layer": ("Merge", ONE_JOINT_LAYER, "check_merge_structure", "linear1"),
    "all pairs": ("paired_sums", ALL_PAIRS, "check_paired_sums_random", "[N, N] table"),
    "squeeze without dim": ("paired_sums", SQUEEZE_ALL, "check_paired_sums_single_pair", "squeeze(1)"),
})

# -- 04_overloaded_ops -------------------------------------------------------------------

ROW_LOOP = '''
def row_sum(x):
    z = torch.zeros_like(x[0])
    for i in range(x.shape[0]):
        z = z + x[i]
    return z
'''
WRONG_AXIS = '''
def row_sum(x):
    return x.sum(dim=1)
'''
VIEW_ON_STRIDED = '''
def row_sum(x):
    n, d = x.shape
    return x.view(n * d).view(n, d).sum(dim=0)
'''
DISTANCE_LOOP = '''
def pairwise_sq_distances(x, y):
    return torch.stack([((y - xi) ** 2).sum(dim=1) for xi in x])
'''
NOT_SQUARED = '''
def pairwise_sq_distances(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).sqrt()
'''
CROSS_TERM_SIGN = '''
def pairwise_sq_distances(x, y):
    return (x ** 2).sum(1, keepdim=True) + (y ** 2).sum(1) + 2 * x @ y.T
'''
LIBRARY_CDIST = '''
def pairwise_sq_distances(x, y):
    return torch.cdist(x, y) ** 2
'''

CH04 = _single("04_overloaded_ops", {
    "row loop": ("row_sum", ROW_LOOP, "check_row_sum_vectorized", "grows with the input"),
    "row loop is slow": ("row_sum", ROW_LOOP, "check_row_sum_speed", "faster than the slicing loop"),
    "wrong axis": ("row_sum", WRONG_AXIS, "check_row_sum_random", "dim=0"),
    "view on strided input": ("row_sum", VIEW_ON_STRIDED, "check_row_sum_non_contiguous", "view size"),
    "distance loop": ("pairwise_sq_distances", DISTANCE_LOOP, "check_pairwise_vectorized", "grows with the input"),
    "not squared": ("pairwise_sq_distances", NOT_SQUARED, "check_pairwise_random", "no square root"),
    "cross term sign": ("pairwise_sq_distances", CROSS_TERM_SIGN, "check_pairwise_small_example", "sign"),
    "library cdist": ("pairwise_sq_distances", LIBRARY_CDIST, "check_pairwise_vectorized", "_cdist_forward"),
})

# -- 05_batch_gather ---------------------------------------------------------------------

GATHER_LOOP = '''
def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
'''
SCRIPTED_LOOP = '''
@torch.jit.script
def batch_gather(tensor, indices):
    output = []
    for i in range(tensor.size(0)):
        output += [tensor[i][indices[i]]]
    return torch.stack(output)
'''
# The guide's batch_gather_vec as printed.
HARD_CODED_CUDA = '''
def batch_gather(tensor, indices):
    shape = list(tensor.shape)
    flat_first = torch.reshape(tensor, [shape[0] * shape[1]] + shape[2:])
    offset = torch.reshape(torch.arange(shape[0]).cuda() * shape[1], [shape[0]] + [1] * (len(indices.shape) - 1))
    return flat_first[indices + offset]
'''
OFFSETS_1D_ONLY = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.reshape(b * n, *tensor.shape[2:])
    return flat[indices + torch.arange(b, device=indices.device) * n]
'''
OFFSETS_BY_LAST_AXIS = '''
def batch_gather(tensor, indices):
    b = tensor.shape[0]
    flat = tensor.reshape(b * tensor.shape[1], *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * tensor.shape[-1]
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''
GATHER_DATA = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.data.reshape(b * n, *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * n
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''
GRADIENT_OVERWRITES = '''
class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, flat, flat_indices):
        ctx.save_for_backward(flat_indices)
        ctx.rows = flat.shape[0]
        return flat[flat_indices]

    @staticmethod
    def backward(ctx, grad):
        (flat_indices,) = ctx.saved_tensors
        out = grad.new_zeros((ctx.rows, *grad.shape[flat_indices.dim():]))
        out[flat_indices] = grad  # a repeated index keeps one gradient instead of their sum
        return out, None


def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    offsets = torch.arange(b, device=indices.device) * n
    flat_indices = indices + offsets.reshape([b] + [1] * (indices.dim() - 1))
    return _Gather.apply(tensor.reshape(b * n, *tensor.shape[2:]), flat_indices)
'''
NO_RANGE_CHECK = '''
def batch_gather(tensor, indices):
    b, n = tensor.shape[:2]
    flat = tensor.reshape(b * n, *tensor.shape[2:])
    offsets = torch.arange(b, device=indices.device) * n
    return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]
'''

CH05 = [Mutant("05_batch_gather", name, {"batch_gather": code}, fails) for name, (code, fails) in {
    "loop": (GATHER_LOOP, {"check_batch_gather_vectorized": "grows with the batch",
                           "check_batch_gather_speed": "faster than the guide's loop"}),
    "scripted loop": (SCRIPTED_LOOP, {"check_batch_gather_speed": "torch.jit.script"}),
    "hard-coded .cuda()": (HARD_CODED_CUDA, {"check_batch_gather_device": "device=indices.device"}),
    "offsets right only for [B] indices": (OFFSETS_1D_ONLY, {"check_batch_gather_index_tensors": "broadcast"}),
    "offsets stepped by the last axis": (OFFSETS_BY_LAST_AXIS,
                                         {"check_batch_gather_row_indices": "tensor.shape[1]"}),
    ".data": (GATHER_DATA, {"check_batch_gather_gradient": "autograd graph"}),
    "gradient overwritten": (GRADIENT_OVERWRITES, {"check_batch_gather_gradient": "adds up"}),
    "no range check": (NO_RANGE_CHECK, {"check_batch_gather_out_of_range": "silent garbage"}),
}.items()]

# -- 06_data_loaders ---------------------------------------------------------------------


def _directory_dataset(getitem: str, init: str = "sorted(glob.glob(os.path.join(path, pattern)))") -> str:
    return f'''
import random

class ImageDirectoryDataset(Dataset):
    def __init__(self, path, pattern="*.png"):
        super().__init__()
        self.paths = {init}

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
{getitem}
'''


RGB = "        return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)"
BGR = _directory_dataset("        return torch.from_numpy(cv2.imread(self.paths[index], 1)).permute(2, 0, 1)")
RANDOM_CHOICE = _directory_dataset(f"        image = cv2.imread(random.choice(self.paths), 1)\n{RGB}")
SHUFFLED = _directory_dataset(f"        image = cv2.imread(self.paths[index], 1)\n{RGB}",
                              init="random.Random(0).sample(sorted(glob.glob(os.path.join(path, pattern))), "
                                   "len(glob.glob(os.path.join(path, pattern))))")
_TAR_HELPERS = solution_cells("06_data_loaders")["TarImageDataset"].split("class TarImageDataset")[0]


def tar_dataset(iterate: str) -> str:
    """The reference TarImageDataset with another __iter__ body (its helpers kept)."""
    return _TAR_HELPERS + f'''
class TarImageDataset(IterableDataset):
    def __init__(self, paths):
        super().__init__()
        self.paths = list(paths)

    def __iter__(self):
        info = get_worker_info()
{iterate}
'''


NO_SHARDING = tar_dataset("        for path in self.paths:\n            yield from tar_image_iterator(path)")
GUIDE_SHARDING = tar_dataset('''\
        if info is None or info.num_workers != len(self.paths):
            raise ValueError("Number of workers doesn't match number of files.")
        yield from tar_image_iterator(self.paths[info.id])''')
FILE_PER_WORKER = tar_dataset('''\
        if info is None:
            for path in self.paths:
                yield from tar_image_iterator(path)
        elif info.id < len(self.paths):
            yield from tar_image_iterator(self.paths[info.id])''')
TAR_BGR = tar_dataset('''\
        for path in self.paths:
            with tarfile.open(path) as tar:
                for member in tar:
                    data = np.frombuffer(tar.extractfile(member).read(), np.uint8)
                    yield torch.from_numpy(cv2.imdecode(data, 1)).permute(2, 0, 1)''')
SKIPS_BROKEN = tar_dataset('''\
        for path in self.paths:
            with tarfile.open(path) as tar:
                for member in tar:
                    if member.isfile():
                        image = cv2.imdecode(np.frombuffer(tar.extractfile(member).read(), np.uint8), 1)
                        if image is not None:
                            yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)''')
HANGS_IN_WORKER = tar_dataset('''\
        while info is not None:
            time.sleep(0.05)
        for path in self.paths:
            yield from tar_image_iterator(path)''')

CH06 = _single("06_data_loaders", {
    "BGR output": ("ImageDirectoryDataset", BGR, "check_directory_rgb_uint8_chw", "BGR order"),
    "random __getitem__": ("ImageDirectoryDataset", RANDOM_CHOICE, "check_directory_same_index_same_image",
                           "random.choice"),
    "shuffled file list": ("ImageDirectoryDataset", SHUFFLED, "check_directory_sorted_and_len", "Sort the list"),
    "no sharding": ("TarImageDataset", NO_SHARDING, "check_tar_one_file_per_worker", "more than once"),
    "sharding only when workers equal files": ("TarImageDataset", GUIDE_SHARDING,
                                               "check_tar_more_files_than_workers", "Number of workers"),
    "one file per worker, extra files lost": ("TarImageDataset", FILE_PER_WORKER,
                                              "check_tar_more_files_than_workers", "never came out"),
    "tar BGR output": ("TarImageDataset", TAR_BGR, "check_tar_main_process", "BGR order"),
    "broken member skipped silently": ("TarImageDataset", SKIPS_BROKEN, "check_tar_corrupt_member_named",
                                       "silently"),
    "worker hangs": ("TarImageDataset", HANGS_IN_WORKER, "check_tar_one_file_per_worker", "timed out"),
})

# -- 07_numerical_stability --------------------------------------------------------------

NO_MAX = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits)
    return e / e.sum(dim=dim, keepdim=True)
'''
GLOBAL_MAX = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits - logits.max())
    return e / e.sum(dim=dim, keepdim=True)
'''
WRONG_DIM = '''
def softmax(logits, dim=-1):
    e = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
'''
LOG_OF_SOFTMAX = '''
def softmax_cross_entropy(labels, logits, dim=-1):
    return -(labels * torch.log(softmax(logits, dim))).sum(dim=dim)
'''
FLOAT32_SOFTMAX = '''
def softmax(logits, dim=-1):
    x = logits.float()
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
'''
HARD_CODED = '''
def softmax(logits, dim=-1):
    return torch.tensor([1.0, 0.0])
'''
XENT_HARD_CODED = '''
def softmax_cross_entropy(labels, logits, dim=-1):
    return logits[0] * 0.5
'''

CH07 = _single("07_numerical_stability", {
    "no max subtraction": ("softmax", NO_MAX, "check_softmax_huge_and_infinite_logits", "nan"),
    "global max": ("softmax", GLOBAL_MAX, "check_softmax_rows_far_apart", "one per row"),
    "wrong dim": ("softmax", WRONG_DIM, "check_softmax_other_dims", "dim"),
    "log of softmax": ("softmax_cross_entropy", LOG_OF_SOFTMAX, "check_xent_extreme_logits", "log-softmax"),
    "dtype change": ("softmax", FLOAT32_SOFTMAX, "check_softmax_keeps_dtype", "dtype torch.float32"),
    "hard-coded example": ("softmax", HARD_CODED, "check_softmax_random_batches", "Expected"),
    "hard-coded xent": ("softmax_cross_entropy", XENT_HARD_CODED, "check_xent_random_batches", "Expected"),
})

# The stretch log_softmax (bonus): named wrong forms of the Function, each a whole answer cell.
LOG_SOFTMAX = '''
class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, dim):
        {forward}
        ctx.save_for_backward({saved})
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad_out):
        ({saved},) = ctx.saved_tensors
        return {backward}


def log_softmax(logits, dim=-1):
    return LogSoftmax.apply(logits, dim)
'''
SHIFTED = ("shifted = logits - logits.amax(dim=dim, keepdim=True)\n"
           "        out = shifted - shifted.exp().sum(dim=dim, keepdim=True).log()")
RIGHT_BACKWARD = "grad_out - out.exp() * grad_out.sum(dim=ctx.dim, keepdim=True), None"


def _log_softmax(forward: str = SHIFTED, saved: str = "out", backward: str = RIGHT_BACKWARD) -> str:
    return LOG_SOFTMAX.format(forward=forward, saved=saved, backward=backward)


AUTOGRAD_LOG_SOFTMAX = '''
def log_softmax(logits, dim=-1):
    shifted = logits - logits.amax(dim=dim, keepdim=True)
    return shifted - torch.logsumexp(shifted, dim=dim, keepdim=True)
'''

CH07 += _single("07_numerical_stability", {
    "log_softmax: no shift": ("log_softmax", _log_softmax(
        forward="out = logits - logits.exp().sum(dim=dim, keepdim=True).log()"),
        "check_log_softmax_values", "overflows"),
    "log_softmax: the max added back": ("log_softmax", _log_softmax(
        forward="m = logits.amax(dim=dim, keepdim=True)\n"
                "        out = logits - (m + (logits - m).exp().sum(dim=dim, keepdim=True).log())"),
        "check_log_softmax_values", "1e30 + log 2"),
    "log_softmax: float32 inside": ("log_softmax", _log_softmax(
        forward="x = logits.float()\n        shifted = x - x.amax(dim=dim, keepdim=True)\n"
                "        out = shifted - shifted.exp().sum(dim=dim, keepdim=True).log()"),
        "check_log_softmax_values", "dtype torch.float32"),
    "log_softmax: backward without the sum": ("log_softmax", _log_softmax(backward="grad_out - out.exp(), None"),
                                             "check_log_softmax_gradient", "sums to 1"),
    "log_softmax: diagonal of the Jacobian": ("log_softmax", _log_softmax(
        backward="grad_out * (1 - out.exp()), None"), "check_log_softmax_gradient", "diagonal"),
    "log_softmax: backward sums along the last axis": ("log_softmax", _log_softmax(
        backward="grad_out - out.exp() * grad_out.sum(dim=-1, keepdim=True), None"),
        "check_log_softmax_gradient", "not along dim=0"),
    "log_softmax: no gradient for dim": ("log_softmax", _log_softmax(
        backward="grad_out - out.exp() * grad_out.sum(dim=ctx.dim, keepdim=True)"),
        "check_log_softmax_gradient", "gradients"),
    "log_softmax: autograd through the forward": ("log_softmax", AUTOGRAD_LOG_SOFTMAX,
                                                 "check_log_softmax_own_backward", "not your own"),
    "log_softmax: the library's forward": ("log_softmax", _log_softmax(
        forward="out = torch.log_softmax(logits, dim)"), "check_log_softmax_own_backward", "torch's own"),
})
CH07.append(Mutant("07_numerical_stability", "log_softmax: naive softmax recomputed from the saved input", {
    "log_softmax": _log_softmax(saved="logits", backward=(
        "grad_out - logits.exp() / logits.exp().sum(dim=ctx.dim, keepdim=True) "
        "* grad_out.sum(dim=ctx.dim, keepdim=True), None"))},
    {"check_log_softmax_gradient_extremes": "saved output", "check_log_softmax_own_backward": "the logits saved"}))

# -- 08_mixed_precision ------------------------------------------------------------------

STEP = '''
def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
{body}
'''
FORWARD = '''
    with torch.autocast(device_type=device_type, dtype=dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
'''
CLIP = '''
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
'''
FINISH = '''
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''


def _step(*parts: str) -> str:
    return STEP.format(body="".join(parts))


NO_AUTOCAST = _step('''
    outputs = model(inputs)
    loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
''', CLIP, FINISH)
BACKWARD_INSIDE_UNSCALED = _step('''
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
        loss.backward()
''', CLIP, FINISH)
NO_UPDATE = _step(FORWARD, "    scaler.scale(loss).backward()\n", CLIP, '''
    scaler.step(optimizer)
    optimizer.zero_grad()
    return loss.item()
''')
CLIP_BEFORE_UNSCALE = _step(FORWARD, '''
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.unscale_(optimizer)
''', FINISH)
NO_ZERO_GRAD = _step(FORWARD, "    scaler.scale(loss).backward()\n", CLIP, '''
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
''')
DEPRECATED_API = _step('''
    with torch.cuda.amp.autocast(dtype=dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
''', CLIP, FINISH)
OPTIMIZER_STEP = _step(FORWARD, '''
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
''')
AMP_CALL = '''            final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,
                                        device_type=device_type, dtype=dtype)
'''
INLINE_LOOP = '''            with torch.autocast(device_type, dtype=dtype):
                loss = F.mse_loss(model(inputs), targets)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            final_loss = loss.item()
'''


def _checkerboard_without_amp_train_step() -> str:
    code = solution_cells("08_mixed_precision")["train_checkerboard"]
    if AMP_CALL not in code:
        raise RuntimeError("the solution's amp_train_step call changed: update AMP_CALL in " + __file__)
    return code.replace(AMP_CALL, INLINE_LOOP)


CH08 = _single("08_mixed_precision", {
    "no autocast": ("amp_train_step", NO_AUTOCAST, "check_amp_forward_under_autocast", "torch.autocast"),
    "backward inside autocast on the unscaled loss": (
        "amp_train_step", BACKWARD_INSIDE_UNSCALED, "check_amp_backward_scaled_outside_autocast",
        "the loss was not scaled"),
    "no scaler.update": ("amp_train_step", NO_UPDATE, "check_amp_skips_inf_and_nan_steps", "scaler.update()"),
    "clipping before unscale_": (
        "amp_train_step", CLIP_BEFORE_UNSCALE, "check_amp_clips_unscaled_gradients", "scaler.unscale_(optimizer)"),
    "no zero_grad": ("amp_train_step", NO_ZERO_GRAD, "check_amp_clears_gradients", "optimizer.zero_grad()"),
    "deprecated torch.cuda.amp": ("amp_train_step", DEPRECATED_API, "check_amp_uses_current_api", "deprecated"),
    "optimizer.step instead of scaler.step": (
        "amp_train_step", OPTIMIZER_STEP, "check_amp_skips_inf_and_nan_steps", "the update was applied"),
    "checkerboard without amp_train_step": (
        "train_checkerboard", _checkerboard_without_amp_train_step(), "check_checkerboard_trains_with_amp_train_step",
        "amp_train_step"),
})


# -- stretch exercises of 01_basics and 02_modules (bonus) --------------------------------

_HVP = "def hessian_vector_product(fn, x, v):\n    x_ = x.detach().requires_grad_(True)\n"
_CURVED = "    if not g.requires_grad:\n        return torch.zeros_like(x)\n"
_FIRST = "    (g,) = torch.autograd.grad(fn(x_), x_, create_graph=True)\n"
HVP_NO_CREATE_GRAPH = (_HVP + "    (g,) = torch.autograd.grad(fn(x_), x_)\n"
                       "    return torch.autograd.grad((g * v).sum(), x_)[0]\n")
HVP_GRAD_TIMES_V = _HVP + "    (g,) = torch.autograd.grad(fn(x_), x_)\n    return g * v\n"
HVP_LINEAR_RAISES = _HVP + _FIRST + "    return torch.autograd.grad(g, x_, v)[0]\n"
HVP_GRAPH_KEPT = _HVP + _FIRST + _CURVED + "    return torch.autograd.grad(g, x_, v, create_graph=True)[0]\n"
HVP_FLAG_LEFT_ON = '''
def hessian_vector_product(fn, x, v):
    x.requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
    if not g.requires_grad:
        return torch.zeros_like(x)
    return torch.autograd.grad(g, x, v)[0]
'''
HVP_FULL_HESSIAN = '''
def hessian_vector_product(fn, x, v):
    h = torch.func.hessian(fn)(x.detach())
    return (h.reshape(x.numel(), x.numel()) @ v.reshape(-1)).reshape(x.shape)
'''
HVP_FINITE_DIFFERENCES = '''
def hessian_vector_product(fn, x, v):
    def gradient(t):
        t = t.detach().requires_grad_(True)
        return torch.autograd.grad(fn(t), t)[0]
    return (gradient(x + 1e-3 * v) - gradient(x - 1e-3 * v)) / 2e-3
'''

STRETCH01 = _single("01_basics", {
    "HVP: no create_graph": ("hessian_vector_product", HVP_NO_CREATE_GRAPH, "check_hvp_quadratic_form",
                             "does not require grad"),
    "HVP: gradient times v": ("hessian_vector_product", HVP_GRAD_TIMES_V, "check_hvp_matches_torch_func",
                              "values differ"),
    "HVP: a linear fn raises": ("hessian_vector_product", HVP_LINEAR_RAISES, "check_hvp_constant_gradient",
                                "does not depend on x"),
    "HVP: result keeps its graph": ("hessian_vector_product", HVP_GRAPH_KEPT, "check_hvp_leaves_x_alone",
                                    "requires_grad=True"),
    "HVP: requires_grad left on": ("hessian_vector_product", HVP_FLAG_LEFT_ON, "check_hvp_leaves_x_alone",
                                   "changed the caller's tensor"),
    "HVP: the full Hessian": ("hessian_vector_product", HVP_FULL_HESSIAN, "check_hvp_large_input",
                              "Never build the Hessian"),
    "HVP: finite differences": ("hessian_vector_product", HVP_FINITE_DIFFERENCES, "check_hvp_quadratic_form",
                                "values differ"),
})


def _running_norm(change: str, to: str) -> str:
    """The reference RunningNorm with one piece of its code replaced."""
    code = solution_cells("02_modules")["RunningNorm"]
    if change not in code:
        raise RuntimeError(f"the solution's RunningNorm changed: update {change!r} in " + __file__)
    return code.replace(change, to)


_REGISTER = ('        self.register_buffer("running_mean", torch.zeros(num_features))\n'
             '        self.register_buffer("running_var", torch.ones(num_features))')
_UPDATE = ("        with torch.no_grad():\n"
           "            self.running_mean.lerp_(mean, self.momentum)\n"
           "            self.running_var.lerp_(var * n / (n - 1), self.momentum)")
_NORMALISE = "return (x - mean) / torch.sqrt(var + self.eps)"
_EVAL = ("        if not self.training:\n"
         "            return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)\n")
_SAMPLES = "samples = x.reshape(-1, x.shape[-1])"

STRETCH02 = _single("02_modules", {
    "RunningNorm: plain tensor attributes": (
        "RunningNorm", _running_norm(_REGISTER, "        self.running_mean = torch.zeros(num_features)\n"
                                                "        self.running_var = torch.ones(num_features)"),
        "check_running_norm_buffers", "not a registered buffer"),
    "RunningNorm: frozen nn.Parameter statistics": (
        "RunningNorm", _running_norm(_REGISTER, "        self.running_mean = nn.Parameter(torch.zeros(num_features), "
                                                "requires_grad=False)\n"
                                                "        self.running_var = nn.Parameter(torch.ones(num_features), "
                                                "requires_grad=False)"),
        "check_running_norm_buffers", "must not be parameters"),
    "RunningNorm: biased running_var": ("RunningNorm", _running_norm("var * n / (n - 1)", "var"),
                                        "check_running_norm_training", "m.running_var"),
    "RunningNorm: momentum reversed": (
        "RunningNorm", _running_norm(_UPDATE, _UPDATE.replace("self.momentum)", "1 - self.momentum)")),
        "check_running_norm_training", "m.running_mean"),
    "RunningNorm: statistics over dim 0 only": ("RunningNorm", _running_norm(_SAMPLES, "samples = x"),
                                                "check_running_norm_training", "every dimension but the last"),
    "RunningNorm: unbiased variance to normalise": (
        "RunningNorm", _running_norm("var = samples.var(dim=0, correction=0)", "var = samples.var(dim=0)"),
        "check_running_norm_training", "values differ"),
    "RunningNorm: eps outside the square root": (
        "RunningNorm", _running_norm(_NORMALISE, "return (x - mean) / (torch.sqrt(var) + self.eps)"),
        "check_running_norm_training", "values differ"),
    "RunningNorm: eval mode ignored": ("RunningNorm", _running_norm(_EVAL, ""), "check_running_norm_eval",
                                       "in eval mode"),
    "RunningNorm: update records autograd history": (
        "RunningNorm", _running_norm(_UPDATE, _UPDATE.replace("        with torch.no_grad():\n", "")
                                     .replace("self.running_mean.lerp_(", "self.running_mean = self.running_mean.lerp(")
                                     .replace("self.running_var.lerp_(", "self.running_var = self.running_var.lerp(")
                                     .replace("            ", "        ")),
        "check_running_norm_gradient", "buffers"),
    "RunningNorm: batch statistics detached": (
        "RunningNorm", _running_norm(_NORMALISE, "return (x - mean.detach()) / torch.sqrt(var.detach() + self.eps)"),
        "check_running_norm_gradient", "x.grad"),
    "RunningNorm: float32 hard-coded": ("RunningNorm", _running_norm(_SAMPLES, _SAMPLES + ".float()"),
                                        "check_running_norm_state", "double"),
})


# The stretch LossScaler (bonus): the reference class with one method swapped out.
SCALER_METHODS = {
    "init": '''
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self._scale = float(init_scale)
        self.growth_factor, self.backoff_factor, self.growth_interval = growth_factor, backoff_factor, growth_interval
        self._clean_steps = 0
        self._unscaled = set()
        self._found_inf = False

    def get_scale(self):
        return self._scale
''',
    "scale": '''
    def scale(self, loss):
        return loss * self._scale
''',
    "unscale_": '''
    def unscale_(self, optimizer):
        if id(optimizer) in self._unscaled:
            return
        self._unscaled.add(id(optimizer))
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.div_(self._scale)
                        self._found_inf = self._found_inf or not bool(torch.isfinite(p.grad).all())
''',
    "step": '''
    def step(self, optimizer):
        self.unscale_(optimizer)
        if not self._found_inf:
            optimizer.step()
''',
    "update": '''
    def update(self):
        if self._found_inf:
            self._scale *= self.backoff_factor
            self._clean_steps = 0
        else:
            self._clean_steps += 1
            if self._clean_steps == self.growth_interval:
                self._scale *= self.growth_factor
                self._clean_steps = 0
        self._found_inf = False
        self._unscaled.clear()
''',
}


def _scaler(**swap: str) -> str:
    return "class LossScaler:" + "".join(swap.get(name, code) for name, code in SCALER_METHODS.items())


def _swapped(method: str, old: str, new: str) -> str:
    if old not in SCALER_METHODS[method]:
        raise RuntimeError(f"{old!r} is not in the reference LossScaler.{method}")
    return _scaler(**{method: SCALER_METHODS[method].replace(old, new)})


CH08 += _single("08_mixed_precision", {
    "LossScaler: steps on scaled gradients": ("LossScaler", _swapped(
        "step", "self.unscale_(optimizer)\n", "self._found_inf = any(not bool(torch.isfinite(p.grad).all()) "
        "for g in optimizer.param_groups for p in g['params'] if p.grad is not None)\n"),
        "check_loss_scaler_clean_steps", "still scaled"),
    "LossScaler: detached scaled loss": ("LossScaler", _swapped(
        "scale", "return loss * self._scale", "return torch.tensor(loss.item() * self._scale, requires_grad=True)"),
        "check_loss_scaler_clean_steps", "parameters differ"),
    "LossScaler: divides twice after unscale_": ("LossScaler", _swapped(
        "unscale_", "        if id(optimizer) in self._unscaled:\n            return\n", ""),
        "check_loss_scaler_unscale_then_clip", "divided twice"),
    "LossScaler: isinf misses nan": ("LossScaler", _swapped(
        "unscale_", "not bool(torch.isfinite(p.grad).all())", "bool(torch.isinf(p.grad).any())"),
        "check_loss_scaler_skips_bad_steps", "nan written"),
    "LossScaler: first gradient only": ("LossScaler", _swapped(
        "unscale_", "or not bool(", "or p is group['params'][0] and not bool("),
        "check_loss_scaler_skips_bad_steps", "parameter 5"),
    "LossScaler: clean count kept after a skip": ("LossScaler", _swapped(
        "update", "            self._clean_steps = 0\n        else:", "        else:"),
        "check_loss_scaler_skips_bad_steps", "then departs"),
    "LossScaler: grows a step late": ("LossScaler", _swapped(
        "update", "self._clean_steps == self.growth_interval", "self._clean_steps > self.growth_interval"),
        "check_loss_scaler_grows", "then departs"),
    "LossScaler: inf record never cleared": ("LossScaler", _swapped(
        "update", "        self._found_inf = False\n", ""), "check_loss_scaler_skips_bad_steps", "then departs"),
    "LossScaler: fixed scale": ("LossScaler", _swapped(
        "update", "        if self._found_inf:", "        if False:"), "check_loss_scaler_float16_dynamics",
        "float16"),
})


# -- 03_broadcasting, stretch: additive_scores ------------------------------------------

ADDITIVE_MASK_LINED_UP_WITH_KEYS = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
    real = torch.arange(k.shape[1]) < lengths
    return s.masked_fill(~real, float("-inf"))
'''
ADDITIVE_MASK_MULTIPLIED_IN = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
    real = (torch.arange(k.shape[1]) < lengths[:, None])[:, None, :]
    return s * real + float("-inf") * ~real
'''
ADDITIVE_PAIRS_CONCATENATED = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    B, N, M = q.shape[0], q.shape[1], k.shape[1]
    pairs = torch.cat([q[:, :, None].expand(B, N, M, -1), k[:, None].expand(B, N, M, -1)], dim=-1)
    s = torch.tanh(pairs @ torch.cat([w_q, w_k], dim=1).T) @ v
    real = torch.arange(M) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
'''
ADDITIVE_QUERIES_AND_KEYS_AXES_SWAPPED = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T)[:, None] + (k @ w_k.T)[:, :, None]) @ v
    real = torch.arange(k.shape[1]) < lengths[:, None]
    return s.masked_fill(~real[:, :, None], float("-inf"))
'''
ADDITIVE_PADDING_FILLED_IN_A_LOOP = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
    s = s.clone()
    for b in range(len(lengths)):
        s[b, :, int(lengths[b]):] = float("-inf")
    return s
'''
ADDITIVE_SQUEEZE_WITHOUT_DIM = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = (torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v[:, None]).squeeze()
    real = torch.arange(k.shape[1]) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
'''
ADDITIVE_V_APPLIED_BEFORE_TANH = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    s = torch.tanh((q @ w_q.T @ v)[:, :, None] + (k @ w_k.T @ v)[:, None])
    real = torch.arange(k.shape[1]) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
'''
ADDITIVE_SCORES_DETACHED = '''
def additive_scores(q, k, lengths, w_q, w_k, v):
    with torch.no_grad():
        s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
    real = torch.arange(k.shape[1]) < lengths[:, None]
    return s.masked_fill(~real[:, None], float("-inf"))
'''

CH03_STRETCH = _single("03_broadcasting", {
    "mask lined up with keys": ("additive_scores", ADDITIVE_MASK_LINED_UP_WITH_KEYS,
        "check_additive_scores_lengths_per_example", "lengths[:, None]"),
    "mask multiplied in": ("additive_scores", ADDITIVE_MASK_MULTIPLIED_IN,
        "check_additive_scores_random", "0 * -inf = nan"),
    "pairs concatenated": ("additive_scores", ADDITIVE_PAIRS_CONCATENATED,
        "check_additive_scores_never_tiles", "cat"),
    "queries and keys axes swapped": ("additive_scores", ADDITIVE_QUERIES_AND_KEYS_AXES_SWAPPED,
        "check_additive_scores_random", "Swapping the two new axes"),
    "padding filled in a loop": ("additive_scores", ADDITIVE_PADDING_FILLED_IN_A_LOOP,
        "check_additive_scores_never_tiles", "grows with the input"),
    "scores squeezed without dim": ("additive_scores", ADDITIVE_SQUEEZE_WITHOUT_DIM,
        "check_additive_scores_sizes_of_one", "squeeze(1)"),
    "v applied before tanh": ("additive_scores", ADDITIVE_V_APPLIED_BEFORE_TANH,
        "check_additive_scores_random", "then contract H with v"),
    "scores detached": ("additive_scores", ADDITIVE_SCORES_DETACHED,
        "check_additive_scores_gradients", "avoid .detach()"),
})

# -- 04_overloaded_ops, stretch: Dual ---------------------------------------------------


def _dual(*changes: tuple[str, str]) -> str:
    """The reference Dual with each (old, new) change made."""
    code = solution_cells("04_overloaded_ops")["Dual"]
    for old, new in changes:
        if old not in code:
            raise RuntimeError(f"the solution's Dual changed ({old.strip()!r} is gone): update CH04_STRETCH in "
                               + __file__)
        code = code.replace(old, new)
    return code


ELSE = "        return o if o is NotImplemented else "
CH04_STRETCH = _single("04_overloaded_ops", {
    "__rsub__ reuses __sub__": ("Dual", _dual((ELSE + "o + (-self)", ELSE + "self + (-o)")),
                                "check_dual_constants_on_the_left", "d.__rsub__(c) must compute c - d"),
    "product rule without u w'": ("Dual", _dual(("self.tangent * o.value + self.value * o.tangent)",
                                                 "self.tangent * o.value)")),
                                  "check_dual_polynomial", "(u w)' = u' w + u w'"),
    "quotient rule with a plus": ("Dual", _dual(("(self.tangent * o.value - self.value * o.tangent)",
                                                 "(self.tangent * o.value + self.value * o.tangent)")),
                                  "check_dual_quotients_and_powers", "(u / w)'"),
    "power rule off by one": ("Dual", _dual(("p * self.value ** (p - 1) * self.tangent",
                                             "p * self.value ** p * self.tangent")),
                              "check_dual_quotients_and_powers", "(u**p)'"),
    "matmul product rule in the wrong order": ("Dual", _dual(("self.tangent @ o.value + self.value @ o.tangent",
                                                              "o.value @ self.tangent + o.tangent @ self.value")),
                                               "check_dual_matrix_products", "matrices do not commute"),
    "__rmatmul__ computes d @ w": ("Dual", _dual((ELSE + "o @ self", ELSE + "self @ o")),
                                   "check_dual_matrix_products", "d.__rmatmul__(w)"),
    "tangent not broadcast": ("Dual", _dual(
        ("return Dual(value, tangent.expand_as(value) if tangent.shape != value.shape else tangent)",
         "return Dual(value, tangent)"),
        ("return Dual(value, torch.zeros_like(value))", "return Dual(value, torch.zeros(()))")),
        "check_dual_broadcasting", "tangent.expand_as(value)"),
    "no reflected operators": ("Dual", _dual(("    __radd__ = __add__\n", ""), ("    __rmul__ = __mul__\n", "")),
                               "check_dual_polynomial", "reflected method (__radd__"),
})


def mutants(chapter: str) -> list[Mutant]:
    return [m for m in MUTANTS if m.chapter == chapter]


# -- 05_batch_gather, stretch: batch_scatter_add ----------------------------------------

CH05_STRETCH = [Mutant("05_batch_gather", name, {"batch_scatter_add": code}, fails) for name, (code, fails) in {
    "+= on advanced index": ("""
def batch_scatter_add(values, indices, n):
    b = indices.shape[0]
    rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1))
    out = values.new_zeros((b, n, *values.shape[indices.dim():]))
    out[rows, indices.long()] += values
    return out
""",
        {"check_scatter_add_notebook_example": "accumulate", "check_scatter_add_collisions": "add up"}),
    "index_put without accumulate": ("""
def batch_scatter_add(values, indices, n):
    b = indices.shape[0]
    rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1)).expand(indices.shape)
    out = values.new_zeros((b, n, *values.shape[indices.dim():]))
    return out.index_put((rows, indices.long()), values)
""",
        {"check_scatter_add_collisions": "index_put_(..., accumulate=True)"}),
    "loop over rows": ("""
def batch_scatter_add(values, indices, n):
    rows = [values.new_zeros((n, *values.shape[indices.dim():])).index_add(0, indices[i].reshape(-1).long(),
            values[i].reshape(-1, *values.shape[indices.dim():])) for i in range(indices.shape[0])]
    return torch.stack(rows)
""",
        {"check_scatter_add_vectorized": "grows with the batch"}),
    "float32 result": ("""
def batch_scatter_add(values, indices, n):
    b, e = indices.shape[0], values.shape[indices.dim():]
    flat = (indices + n * torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
    out = torch.zeros((b * n, *e), device=values.device)
    return out.index_add(0, flat, values.reshape(-1, *e).float()).reshape(b, n, *e)
""",
        {"check_scatter_add_shapes_and_dtypes": "values.dtype"}),
    "n slots taken from the indices": ("""
def batch_scatter_add(values, indices, n):
    n = int(indices.max()) + 1
    b, e = indices.shape[0], values.shape[indices.dim():]
    flat = (indices + n * torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
    return values.new_zeros((b * n, *e)).index_add(0, flat, values.reshape(-1, *e)).reshape(b, n, *e)
""",
        {"check_scatter_add_notebook_example": "indices.max() + 1",
         "check_scatter_add_collisions": "indices.max() + 1"}),
    "trailing axes flattened into K": ("""
def batch_scatter_add(values, indices, n):
    b = indices.shape[0]
    idx, src = indices.long().reshape(b, -1), values.reshape(b, -1)
    return values.new_zeros((b, n)).scatter_add(1, idx, src[:, :idx.shape[1]])
""",
        {"check_scatter_add_shapes_and_dtypes": "trailing axis"}),
    "detached values": ("""
def batch_scatter_add(values, indices, n):
    b, e = indices.shape[0], values.shape[indices.dim():]
    flat = (indices + n * torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
    return values.new_zeros((b * n, *e)).index_add(0, flat, values.detach().reshape(-1, *e)).reshape(b, n, *e)
""",
        {"check_scatter_add_gradient": "autograd graph"}),
}.items()]


# -- 06_data_loaders, stretch: ShuffleBuffer ----------------------------------------------

# A compact ShuffleBuffer on random.Random whose parts the wrong forms replace (tests/test_ch06 grades it whole).
SHUFFLE_BASE = '''
import random

class ShuffleBuffer(IterableDataset):
    def __init__(self, source, buffer_size, seed=0):
        super().__init__()
        self.source, self.size, self.seed = source, buffer_size, seed
        self.epoch, self.pending, self.live = 0, None, None

    def __iter__(self):
        state, self.pending = self.pending, None
        epoch = self.epoch if state is None else state["epoch"]
        self.epoch = epoch + 1
        rng = random.Random(SEEDING)
        if state is not None and state["rng"] is not None:
            RESTORE
        live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                            "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
        buf, skip = live["buffer"], live["read"]
        for i, item in enumerate(iter(self.source)):
            if i < skip:
                continue
            live["read"] += 1
            buf.append(item)
            if len(buf) > self.size:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()
        while buf:
            j = rng.randrange(len(buf))
            buf[j], buf[-1] = buf[-1], buf[j]
            yield buf.pop()

    def state_dict(self):
        if self.pending is not None:
            return dict(self.pending)
        if self.live is None:
            return {"epoch": self.epoch, "read": 0, "buffer": [], "rng": None}
        live = self.live
        return STATE

    def load_state_dict(self, state):
        self.pending, self.epoch, self.live = dict(state), state["epoch"], None
'''


def shuffle_buffer(seeding="self.seed * 7919 + epoch", restore='rng.setstate(state["rng"])',
         state='{"epoch": live["epoch"], "read": live["read"], "buffer": list(live["buffer"]), '
               '"rng": live["rng"].getstate()}') -> str:
    return SHUFFLE_BASE.replace("SEEDING", seeding).replace("RESTORE", restore).replace("STATE", state)


SHUFFLE_WHOLE = shuffle_buffer().replace('''        for i, item in enumerate(iter(self.source)):''',
                                 '''        everything = list(self.source)
        rng.shuffle(everything)
        for i, item in enumerate(everything):''')
SHUFFLE_BLOCKS = shuffle_buffer().replace('''            if len(buf) > self.size:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()''', '''            if len(buf) == self.size:
                rng.shuffle(buf)
                while buf:
                    yield buf.pop()''')
CH06_STRETCH = [Mutant("06_data_loaders", name, {"ShuffleBuffer": code}, fails) for name, (code, fails) in {
    "whole stream in memory": (SHUFFLE_WHOLE, {"check_shuffle_each_once_bounded": "memory grows"}),
    "shuffled in blocks": (SHUFFLE_BLOCKS, {"check_shuffle_random_and_reproducible": "in blocks"}),
    "global random generator": (shuffle_buffer(seeding="None"), {"check_shuffle_notebook_example": "same seed",
                                                                 "check_shuffle_random_and_reproducible": "same seed"}),
    "same order every epoch": (shuffle_buffer(seeding="self.seed"),
                               {"check_shuffle_random_and_reproducible": "new order"}),
    "state without the buffer": (shuffle_buffer(state='{"epoch": live["epoch"], "read": live["read"], "buffer": [], '
                                            '"rng": live["rng"].getstate()}'),
                                 {"check_shuffle_resume": "differs from the original's rest"}),
    "state without the generator": (shuffle_buffer(restore="pass"), {"check_shuffle_resume": "generator's state"}),
    "live generator in the state": (shuffle_buffer(state='{"epoch": live["epoch"], "read": live["read"], '
                                               '"buffer": list(live["buffer"]), "rng": live["rng"]}',
                                         restore='rng = state["rng"]'),
                                    {"check_shuffle_resume": "plain data"}),
}.items()]


# Every named wrong implementation, in chapter order (a stable sort keeps each chapter's own order, stretch
# tasks after the rest), as the self-test reports them.
MUTANTS: tuple[Mutant, ...] = tuple(sorted(
    (*CH01, *CH02, *CH03, *CH04, *CH05, *CH06, *CH07, *CH08,
     *STRETCH01, *STRETCH02, *CH03_STRETCH, *CH04_STRETCH, *CH05_STRETCH, *CH06_STRETCH),
    key=lambda m: m.chapter))
