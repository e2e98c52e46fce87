"""Chapter 08 alone: submissions that do the wrong thing and forge what the harness records inside their process.

Before issue 23, five checks of 08 decided points from records made in the student's process: forward hooks
(layer dtypes, autocast state), a probe on the loss (the gradient backward brought it, the autocast state then),
loss_fn's call count, warnings caught around the call, amp_train_step's call count in train_checkerboard, and
the layer dtypes of the use_amp=False run. Each attack below does the wrong thing the check is about and feeds
the record what the check wanted, with nothing the integrity scan flags: on the base commit (d532b0b) each earned
the check's points. Now those checks replay the step in the judge and compare what the step produced, or read
the cell's source; the records only shape the messages, and each attack fails with a message naming its mistake.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autograder.judging.notebook import Submission
from tests.kit import by_name, grade_fast, limits_for, solved

CH = "08_mixed_precision"

# The forward pass in float32, with the Linear layers' outputs shown to the harness's hooks in bfloat16 and
# autocast switched on around them: a hook of its own, put before the harness's, and one after it undoing both.
FLOAT32_FORWARD_BEHIND_HOOKS = '''
def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    kept = {}

    def shown_low(module, args, output):
        kept[module] = output
        torch.set_autocast_enabled(device_type, True)
        return output.to(dtype)

    def real_output(module, args, output):
        torch.set_autocast_enabled(device_type, False)
        return kept.pop(module)

    handles = []
    for m in model.modules():
        if isinstance(m, nn.Linear):
            handles += [m.register_forward_hook(shown_low, prepend=True), m.register_forward_hook(real_output)]
    outputs = model(inputs)  # float32 matrix multiplications
    for h in handles:
        h.remove()
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

# Backward on the unscaled loss, the gradients multiplied by the scale afterwards; the judge's loss_fn is called
# once, on a detached copy of the outputs, and only that copy's loss is backpropagated scaled.
UNSCALED_BACKWARD_BEHIND_A_WITNESS = '''
def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    with torch.autocast(device_type=device_type, dtype=dtype):
        outputs = model(inputs)
        witness = loss_fn(outputs.detach().requires_grad_(), targets)
        loss = F.mse_loss(outputs, targets)
    scaler.scale(witness).backward()  # what the harness sees: the scale, outside autocast
    loss.backward()  # what trains: unscaled
    with torch.no_grad():
        for p in model.parameters():
            p.grad.mul_(scaler.get_scale())
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

# Backward inside the autocast block; the witness's backward, outside it, is the one the harness sees.
BACKWARD_INSIDE_AUTOCAST_BEHIND_A_WITNESS = '''
def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    with torch.autocast(device_type=device_type, dtype=dtype):
        outputs = model(inputs)
        witness = loss_fn(outputs.detach().requires_grad_(), targets)
        loss = F.mse_loss(outputs, targets)
        scaler.scale(loss).backward()
    scaler.scale(witness).backward()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

# The deprecated torch.cuda.amp, reached through getattr with a plain name, its warning silenced.
DEPRECATED_API_SILENCED = '''
import warnings

cuda_amp = getattr(torch.cuda, "amp")


def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    warnings.filterwarnings("ignore")
    with cuda_amp.autocast(dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

# torch.cpu.amp.autocast: deprecated as torch.cuda.amp is; the check only looked for the latter.
DEPRECATED_CPU_API = '''
def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                   max_grad_norm=None):
    with torch.cpu.amp.autocast(dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()
'''

_BOARD = '''
def grid(width, height):
    ys, xs = torch.meshgrid(torch.arange(height) / height, torch.arange(width) / width, indexing="ij")
    return torch.stack([xs, ys])


def checker(width, height, freq):
    def dark(n):
        return (torch.arange(n) * freq) % (2 * n) > n
    return (dark(width)[None, :] ^ dark(height)[:, None]).float()


def network(device, width=64):
    return nn.Sequential(
        nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 1, 1),
    ).to(device)
'''

# Trains with its own inline AMP step, and calls amp_train_step on a throwaway model once per step for the count.
CHECKERBOARD_FEEDS_THE_COUNTER = _BOARD + '''

def train_checkerboard(steps, size, device, use_amp):
    inputs = grid(size, size).unsqueeze(0).to(device)
    targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)
    model = network(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    device_type = torch.device(device).type
    dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler(device_type)
    decoy = nn.Linear(1, 1).to(device)
    decoy_optimizer = torch.optim.SGD(decoy.parameters(), lr=0.0)
    decoy_scaler = torch.amp.GradScaler(device_type)
    ones = torch.ones(1, 1, device=device)
    final_loss = float("nan")
    for _ in range(steps):
        with torch.autocast(device_type, dtype=dtype, enabled=use_amp):
            loss = F.mse_loss(model(inputs), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        final_loss = loss.item()
        if use_amp:
            amp_train_step(decoy, decoy_optimizer, decoy_scaler, ones, ones, F.mse_loss, device_type=device_type,
                           dtype=dtype)
    return model, final_loss
'''

# The deprecated torch.cuda.amp.GradScaler in train_checkerboard, its warnings silenced.
CHECKERBOARD_DEPRECATED_SCALER_SILENCED = _BOARD + '''
import warnings


def train_checkerboard(steps, size, device, use_amp):
    warnings.simplefilter("ignore")
    inputs = grid(size, size).unsqueeze(0).to(device)
    targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)
    model = network(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    device_type = torch.device(device).type
    dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler(enabled=device_type == "cuda")
    final_loss = float("nan")
    for _ in range(steps):
        if use_amp:
            final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,
                                        device_type=device_type, dtype=dtype)
        else:
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            final_loss = loss.item()
    return model, final_loss
'''

# use_amp=False still trains under autocast, through functional convolutions the module hooks never see, and shows
# the hooks one float32 Conv2d outside autocast.
CHECKERBOARD_AUTOCAST_WITHOUT_AMP = _BOARD + '''

class Functional(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        for layer in self.net:
            x = F.conv2d(x, layer.weight, layer.bias) if isinstance(layer, nn.Conv2d) else layer(x)
        return x


def train_checkerboard(steps, size, device, use_amp):
    inputs = grid(size, size).unsqueeze(0).to(device)
    targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)
    model = Functional(network(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    device_type = torch.device(device).type
    dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler(device_type)
    final_loss = float("nan")
    for _ in range(steps):
        if use_amp:
            final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,
                                        device_type=device_type, dtype=dtype)
        else:
            with torch.autocast(device_type, dtype=dtype):
                loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            final_loss = loss.item()
    if not use_amp:
        nn.Conv2d(2, 1, 1).to(device)(inputs)  # the one layer the hooks see: float32, autocast off
    return model, final_loss
'''

# (attack, answer cell, code, the check it earned on d532b0b, a phrase of its failure now)
ATTACKS = [
    ("float32 forward behind hooks", "amp_train_step", FLOAT32_FORWARD_BEHIND_HOOKS,
     "check_amp_forward_under_autocast", "float32"),
    ("unscaled backward behind a witness", "amp_train_step", UNSCALED_BACKWARD_BEHIND_A_WITNESS,
     "check_amp_backward_scaled_outside_autocast", "backward ran on the unscaled loss"),
    ("backward inside autocast behind a witness", "amp_train_step", BACKWARD_INSIDE_AUTOCAST_BEHIND_A_WITNESS,
     "check_amp_backward_scaled_outside_autocast", "inside the autocast block"),
    ("deprecated API through getattr, silenced", "amp_train_step", DEPRECATED_API_SILENCED,
     "check_amp_uses_current_api", "torch.cuda.amp"),
    ("deprecated torch.cpu.amp", "amp_train_step", DEPRECATED_CPU_API,
     "check_amp_uses_current_api", "torch.cpu.amp"),
    ("checkerboard feeds the counter", "train_checkerboard", CHECKERBOARD_FEEDS_THE_COUNTER,
     "check_checkerboard_trains_with_amp_train_step", "did nothing"),
    ("checkerboard deprecated scaler, silenced", "train_checkerboard", CHECKERBOARD_DEPRECATED_SCALER_SILENCED,
     "check_checkerboard_trains_with_amp_train_step", "torch.cuda.amp"),
    ("checkerboard autocast without amp", "train_checkerboard", CHECKERBOARD_AUTOCAST_WITHOUT_AMP,
     "check_checkerboard_float32_without_amp", "autocast"),
]


@pytest.mark.parametrize(("cell", "code", "check", "phrase"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_a_forged_record_earns_nothing(tmp_path: Path, cell: str, code: str, check: str, phrase: str) -> None:
    g = grade_fast(solved(tmp_path, CH, **{cell: code}), only=check.removeprefix("check_"), limits=limits_for(CH))
    result = by_name(g)[check]
    assert result.status == "failed", (result.status, result.output)
    assert phrase in result.output, result.output


# -- the rules read from the cells (autograder/chapters/ch08_mixed_precision/amp_rules.py) --------------------------
# Every honest spelling reads clean; every reach found, also the ones written to get past the first version of
# the rules (a helper in another cell, enter_context, set_autocast_enabled, `or True`, a name built by join).

_HEAD = "def train_checkerboard(steps, size, device, use_amp):\n"
_STEP = ("def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type='cuda', "
         "dtype=torch.float16, max_grad_norm=None):\n")


def _source(**cells: str) -> Submission:
    """A submission of the reference cells, some replaced (dedented)."""
    from autograder.course.reference import solution_cells
    from autograder.judging.registry import CHAPTERS

    code = {**solution_cells(CH), **{k: textwrap.dedent(v) for k, v in cells.items()}}
    return Submission(Path("x.ipynb"), CHAPTERS[CH], [{"id": k, "source": v} for k, v in code.items()])


def _board(body: str, extra: str = "") -> Submission:
    return _source(train_checkerboard=extra + _HEAD + textwrap.indent(textwrap.dedent(body), "    "))


def _step(body: str, extra: str = "", **other: str) -> Submission:
    return _source(amp_train_step=extra + _STEP + textwrap.indent(textwrap.dedent(body), "    "), **other)


HONEST_BOARDS = {
    "enabled=use_amp": """
        for _ in range(steps):
            with torch.autocast(device, dtype=torch.bfloat16, enabled=use_amp):
                loss = F.mse_loss(model(x), y)
        """,
    "enabled positionally, through a derived name": """
        amp_on = use_amp and device == "cuda"
        with torch.autocast("cuda", torch.float16, amp_on):
            pass
        """,
    "an early return of the float32 path": """
        if not use_amp:
            return train_float32(steps, size, device)
        with torch.autocast(device, dtype=torch.bfloat16):
            pass
        """,
    "continue in the loop": """
        for _ in range(steps):
            if not use_amp:
                float32_step()
                continue
            with torch.autocast(device, dtype=torch.bfloat16):
                pass
        """,
    "a context chosen by a conditional expression": """
        ctx = torch.autocast(device, dtype=torch.bfloat16) if use_amp else contextlib.nullcontext()
        with ctx:
            pass
        """,
    "a dtype that is None without amp": """
        dtype = torch.bfloat16 if use_amp else None
        if dtype is not None:
            with torch.autocast(device, dtype=dtype):
                pass
        """,
    "a helper that takes the flag": """
        forward(model, use_amp)
        """,
    "a nested step chosen by use_amp": """
        def amp_step():
            with torch.autocast(device, dtype=torch.bfloat16):
                pass

        step = amp_step if use_amp else float32_step
        step()
        """,
}
HELPER = '''def forward(model, amp):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        return model


'''
WRONG_BOARDS = {
    "a plain with block": """
        with torch.autocast(device, dtype=torch.bfloat16):
            pass
        """,
    "a test that is always true": """
        if use_amp or True:
            with torch.autocast(device, dtype=torch.bfloat16):
                pass
        """,
    "enabled=not use_amp": """
        with torch.autocast(device, dtype=torch.bfloat16, enabled=not use_amp):
            pass
        """,
    "a helper that always enters autocast": """
        always_low(model)
        """,
    "enter_context": """
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.autocast(device, dtype=torch.bfloat16))
        """,
    "set_autocast_enabled": """
        torch.set_autocast_enabled(device, True)
        """,
}
ALWAYS_LOW = '''def always_low(model):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return model


'''


@pytest.mark.parametrize("body", HONEST_BOARDS.values(), ids=list(HONEST_BOARDS))
def test_use_amp_guards_read_clean(body: str) -> None:
    from autograder.chapters.ch08_mixed_precision.amp_rules import unguarded_autocast

    assert unguarded_autocast(_board(body, HELPER), "train_checkerboard", "train_checkerboard", 3) == []


@pytest.mark.parametrize("body", WRONG_BOARDS.values(), ids=list(WRONG_BOARDS))
def test_autocast_that_runs_without_amp_is_found(body: str) -> None:
    from autograder.chapters.ch08_mixed_precision.amp_rules import unguarded_autocast

    assert unguarded_autocast(_board(body, ALWAYS_LOW), "train_checkerboard", "train_checkerboard", 3) != []


HONEST_STEPS = {
    "backward after the block": """
        with torch.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        """,
    "backward in a block with autocast off": """
        with torch.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
            with torch.autocast(device_type, enabled=False):
                scaler.scale(loss).backward()
        """,
    "a helper defined in the block, called after it": """
        with torch.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)

            def backward():
                scaler.scale(loss).backward()
        backward()
        """,
    "a docstring and a message naming the old API": '''
        """Uses torch.amp, not torch.cuda.amp.autocast."""
        print("torch.cuda.amp.autocast is deprecated")
        with torch.amp.autocast(device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        ''',
}
WRONG_STEPS = {
    "backward in the block": ("""
        with torch.autocast(device_type, dtype=dtype):
            scaler.scale(loss_fn(model(inputs), targets)).backward()
        """, {}),
    "torch.autograd.backward in the block": ("""
        with torch.autocast(device_type, dtype=dtype):
            torch.autograd.backward(scaler.scale(loss_fn(model(inputs), targets)))
        """, {}),
    "a helper of another cell that calls backward": ("""
        with torch.autocast(device_type, dtype=dtype):
            run_backward(scaler.scale(loss_fn(model(inputs), targets)))
        """, {"LossScaler": "def run_backward(loss):\n    loss.backward()\n"}),
    "backward after enter_context": ("""
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.autocast(device_type, dtype=dtype))
            scaler.scale(loss_fn(model(inputs), targets)).backward()
        """, {}),
    "backward after set_autocast_enabled": ("""
        loss = loss_fn(model(inputs), targets)
        torch.set_autocast_enabled(device_type, True)
        scaler.scale(loss).backward()
        """, {}),
}


@pytest.mark.parametrize("body", HONEST_STEPS.values(), ids=list(HONEST_STEPS))
def test_honest_steps_read_clean(body: str) -> None:
    from autograder.chapters.ch08_mixed_precision.amp_rules import backward_inside_autocast, deprecated_amp

    submission = _step(body)
    assert backward_inside_autocast(submission, "amp_train_step") == []
    assert deprecated_amp(submission, "amp_train_step") == []


@pytest.mark.parametrize(("body", "other"), WRONG_STEPS.values(), ids=list(WRONG_STEPS))
def test_backward_inside_autocast_is_found(body: str, other: dict[str, str]) -> None:
    from autograder.chapters.ch08_mixed_precision.amp_rules import backward_inside_autocast

    assert backward_inside_autocast(_step(body, **other), "amp_train_step") != []


DEPRECATED_USES = {
    "from torch.cuda.amp import autocast": ("from torch.cuda.amp import autocast\n", "", {}),
    "import torch.cuda.amp as tca": ("import torch.cuda.amp as tca\n", "", {}),
    "an alias made in another cell": ("", "with old_amp.autocast():\n    pass\n",
                                      {"LossScaler": "old_amp = torch.cuda.amp\n"}),
    "a function of another cell": ("", "old_context()\n",
                                   {"LossScaler": "def old_context():\n    return torch.cpu.amp.autocast()\n"}),
    "import_module": ("import importlib\n", "importlib.import_module('torch.cuda.amp')\n", {}),
    "getattr with a joined name": ("", "getattr(torch.cuda, ''.join(['a', 'mp'])).autocast()\n", {}),
}


@pytest.mark.parametrize(("extra", "body", "other"), DEPRECATED_USES.values(), ids=list(DEPRECATED_USES))
def test_every_spelling_of_the_deprecated_api_is_found(extra: str, body: str, other: dict[str, str]) -> None:
    from autograder.chapters.ch08_mixed_precision.amp_rules import deprecated_amp

    assert deprecated_amp(_step(body or "pass\n", extra, **other), "amp_train_step") != []


def test_another_tasks_function_costs_only_its_own_task() -> None:
    """train_checkerboard calls amp_train_step: the deprecated API in the latter is the latter's check's business."""
    from autograder.chapters.ch08_mixed_precision.amp_rules import deprecated_amp

    submission = _step("with torch.cuda.amp.autocast():\n    pass\n")
    assert deprecated_amp(submission, "amp_train_step") != []
    assert deprecated_amp(submission, "train_checkerboard") == []


def test_the_replays_in_a_clean_child_are_the_judges_bit_for_bit(tmp_path: Path) -> None:
    """On CUDA the judge replays the step in a clean child of kit code only (checks.replayer); on CPU in its own
    process. Both give the same bits, as the student's correct step does: the checks' tolerances rest on it."""
    import time

    import torch

    from autograder.chapters.ch08_mixed_precision.checks import Api
    from autograder.chapters.ch08_mixed_precision.harness import replay_steps
    from autograder.chapters.ch08_mixed_precision.inputs import near_case, odd_scale_case, overflow_case
    from autograder.judging.notebook import load_submission
    from autograder.judging.student import Student
    from autograder.judging.timing import reference_process
    from tests.kit import FAST, zygote

    rng = torch.Generator().manual_seed(3)
    cases = [make(rng) for make in (near_case, odd_scale_case, overflow_case)]
    student = Student(load_submission(solved(tmp_path, CH)), "cpu", FAST, time.monotonic() + 120, zygote())
    try:
        with reference_process(student, "# kit code only") as ref:
            theirs = [Api(ref).replay_steps(case.record(), "cpu", torch.bfloat16) for case in cases]
    finally:
        student.close()
    for case, replays in zip(cases, theirs, strict=True):
        mine = replay_steps(case.record(), "cpu", torch.bfloat16)
        assert sorted(replays) == sorted(mine)
        for key, record in mine.items():
            assert replays[key]["returned"] == record["returned"], key
            assert all(torch.equal(replays[key]["after"][n], t) for n, t in record["after"].items()), key
            assert (replays[key]["scale_after"], replays[key]["growth_tracker"]) == (record["scale_after"],
                                                                                    record["growth_tracker"])
