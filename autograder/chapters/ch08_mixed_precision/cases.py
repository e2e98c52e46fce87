"""Chapter 08_mixed_precision: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.judging.authoring import cell, right, wrong

# -- amp_train_step ------------------------------------------------------------------------------------------------


@wrong("no autocast", fails={"check_amp_forward_under_autocast": "torch.autocast"})
def no_autocast():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
        scaler.scale(loss).backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("backward inside autocast on the unscaled loss",
       fails={"check_amp_backward_scaled_outside_autocast": "the loss was not scaled"})
def backward_inside_autocast_on_the_unscaled_loss():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
            loss.backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("no scaler.update", fails={"check_amp_skips_inf_and_nan_steps": "scaler.update()"}, example="ben")
def no_scaler_update():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        scaler.scale(loss).backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        optimizer.zero_grad()
        return loss.item()


@wrong("clipping before unscale_", fails={"check_amp_clips_unscaled_gradients": "scaler.unscale_(optimizer)"})
def clipping_before_unscale():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)

        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            scaler.unscale_(optimizer)

        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("no zero_grad", fails={"check_amp_clears_gradients": "optimizer.zero_grad()"})
def no_zero_grad():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        scaler.scale(loss).backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        scaler.update()
        return loss.item()


@wrong("deprecated torch.cuda.amp", fails={"check_amp_uses_current_api": "deprecated"})
def deprecated_torch_cuda_amp():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.cuda.amp.autocast(dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        scaler.scale(loss).backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("optimizer.step instead of scaler.step", fails={"check_amp_skips_inf_and_nan_steps": "the update was applied"})
def optimizer_step_instead_of_scaler_step():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)

        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


# On CUDA the asked-for dtype is float16 too: only the CPU's bfloat16 grading can show it.
@wrong("float16 on the CPU", fails={"check_amp_forward_under_autocast": "matches no replay"}, devices=["cpu"])
def float16_on_the_cpu():
    """The dtype argument ignored: autocast in float16 wherever the step runs."""
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=torch.float16):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()

        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("no scaler in the backward pass", fails={"check_amp_backward_scaled_outside_autocast": "the loss was not scaled",
                                                "check_amp_skips_inf_and_nan_steps": "the update was applied"})
def no_scaler_in_the_backward_pass():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):

        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        loss.backward()

        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)

        optimizer.step()
        optimizer.zero_grad()
        return loss.item()


@wrong("deprecated torch.cpu.amp", fails={"check_amp_uses_current_api": "torch.cpu.amp"})
def deprecated_torch_cpu_amp():
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


# The forgeries of issue 23: each does the wrong thing and feeds the records that the harness kept inside the
# student's process what the checks once read from them (tests/chapters/test_ch08_forgery.py has each against the
# base commit). The checks now replay the step or read the cell.


@wrong("float32 forward behind hooks", fails={"check_amp_forward_under_autocast": "float32"})
def float32_forward_behind_hooks():
    """The forward pass in float32; hooks of its own, around the harness's, show bfloat16 outputs under autocast."""
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
        outputs = model(inputs)
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


@wrong("unscaled backward behind a witness",
       fails={"check_amp_backward_scaled_outside_autocast": "backward ran on the unscaled loss"})
def unscaled_backward_behind_a_witness():
    """Backward on the unscaled loss, the gradients multiplied by the scale after it; loss_fn is called once, on a
    detached copy of the outputs, whose loss alone is backpropagated scaled."""
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with torch.autocast(device_type=device_type, dtype=dtype):
            outputs = model(inputs)
            witness = loss_fn(outputs.detach().requires_grad_(), targets)
            loss = F.mse_loss(outputs, targets)
        scaler.scale(witness).backward()
        loss.backward()
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


@wrong("backward inside autocast behind a witness",
       fails={"check_amp_backward_scaled_outside_autocast": "inside the autocast block"})
def backward_inside_autocast_behind_a_witness():
    """Backward inside the autocast block; a witness loss's backward, after the block, is the one the harness saw."""
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


@wrong("backward inside autocast from a helper",
       fails={"check_amp_backward_scaled_outside_autocast": "inside the autocast"})
def backward_inside_a_helpers_autocast():
    """The autocast block comes from a helper that returns torch.autocast(...): the same witness trick behind it."""
    def mixed(device_type, dtype):
        return torch.autocast(device_type=device_type, dtype=dtype)

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with mixed(device_type, dtype):
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


@wrong("deprecated API through a computed getattr", fails={"check_amp_uses_current_api": "computed"})
def deprecated_api_through_a_computed_getattr():
    """torch.cuda.amp (or torch.cpu.amp) picked by the device type at run time: no name in the code spells it."""
    import warnings

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        warnings.filterwarnings("ignore")
        with getattr(torch, device_type).amp.autocast(dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@right("a fallback for old torch the step never takes", only="check_amp_uses_current_api", points=1)
def fallback_for_old_torch():
    """As public libraries write it (timm): the current API, and in a handler that only old torch reaches, and in a
    constructor the step never calls, the deprecated one."""
    class ScalerFactory:
        def __init__(self, device_type="cuda"):
            try:
                self.scaler = torch.amp.GradScaler(device_type)
            except (AttributeError, TypeError):  # torch before 2.3 had no torch.amp.GradScaler
                self.scaler = torch.cuda.amp.GradScaler()

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        try:
            context = torch.autocast(device_type=device_type, dtype=dtype)
        except AttributeError:  # torch before 1.10
            context = torch.cuda.amp.autocast()
        with context:
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("deprecated API through getattr, silenced", fails={"check_amp_uses_current_api": "torch.cuda.amp"})
def deprecated_api_through_getattr_silenced():
    """torch.cuda.amp reached through getattr with a plain name, its deprecation warning silenced."""
    import warnings

    cuda_amp = getattr(torch.cuda, "amp")  # noqa: B009 (the forgery: no attribute chain names torch.cuda.amp)

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


@wrong("deprecated API in a handler the step raises into", fails={"check_amp_uses_current_api": "deprecated"})
def deprecated_api_in_a_handler_the_step_raises_into():
    """Looks like a fallback for old torch, but the try always fails (an argument torch.autocast does not take), so
    the deprecated API is what runs."""
    import warnings

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        warnings.filterwarnings("ignore")
        try:
            context = torch.autocast(device_type=device_type, dtype=dtype, fast=True)
        except TypeError:  # "torch before 1.10"
            old = torch.cpu.amp if device_type == "cpu" else torch.cuda.amp
            context = old.autocast(dtype=dtype)
        with context:
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("backward inside autocast held in a variable",
       fails={"check_amp_backward_scaled_outside_autocast": "inside the autocast"})
def backward_inside_autocast_held_in_a_variable():
    """The autocast block is entered through a name bound to torch.autocast(...): the witness trick behind it."""
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        context = torch.autocast(device_type=device_type, dtype=dtype)
        with context:
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


@wrong("backward inside a context manager's autocast",
       fails={"check_amp_backward_scaled_outside_autocast": "inside the autocast"})
def backward_inside_a_context_managers_autocast():
    """A @contextmanager helper that yields inside torch.autocast(...): the witness trick behind it."""
    import contextlib

    @contextlib.contextmanager
    def mixed(device_type, dtype):
        with torch.autocast(device_type=device_type, dtype=dtype):
            yield

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with mixed(device_type, dtype):
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


@wrong("backward inside a held autocast entered on a stack",
       fails={"check_amp_backward_scaled_outside_autocast": "inside the autocast"})
def backward_inside_a_held_autocast_entered_on_a_stack():
    """A name bound to torch.autocast(...), entered with ExitStack.enter_context: the witness trick behind it."""
    import contextlib

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        context = torch.autocast(device_type=device_type, dtype=dtype)
        with contextlib.ExitStack() as stack:
            stack.enter_context(context)
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


# -- amp_train_step: correct forms -----------------------------------------------------------------------------

AMP_CHECKS = "amp and not speed and not checkerboard"  # 10 points on CPU


@right("autocast held in a variable, or chosen by a flag", only=AMP_CHECKS, points=10)
def autocast_held_in_a_variable():
    import contextlib

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        context = torch.autocast(device_type=device_type, dtype=dtype)
        with context:
            loss = loss_fn(model(inputs), targets)
        clipping = torch.autocast(device_type, enabled=False) if max_grad_norm is None else contextlib.nullcontext()
        with clipping:
            scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@right("loss times get_scale, unscale always", only=AMP_CHECKS, points=10)
def loss_times_get_scale_unscale_always():
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        optimizer.zero_grad(set_to_none=True)
        with torch.amp.autocast(device_type, dtype=dtype):
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
        (loss * scaler.get_scale()).backward()
        scaler.unscale_(optimizer)
        if max_grad_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=False)
        return float(loss)


@right("a wrapper holding the scaler (timm's style)", only=AMP_CHECKS, points=10)
def a_wrapper_holding_the_scaler():
    """Public code's pattern: an object that keeps the GradScaler in a private attribute and does the backward,
    the clipping and the step."""
    class NativeScaler:
        def __init__(self, scaler):
            self._scaler = scaler

        def __call__(self, loss, optimizer, clip_grad=None, parameters=None):
            self._scaler.scale(loss).backward()
            if clip_grad is not None:
                self._scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            self._scaler.step(optimizer)
            self._scaler.update()

    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        NativeScaler(scaler)(loss, optimizer, clip_grad=max_grad_norm, parameters=model.parameters())
        optimizer.zero_grad()
        return loss.item()


# -- train_checkerboard --------------------------------------------------------------------------------------------


@wrong("checkerboard without amp_train_step", fails={"check_checkerboard_trains_with_amp_train_step": "amp_train_step"},
       edits="train_checkerboard")
def checkerboard_without_amp_train_step():
    """The reference train_checkerboard with its amp_train_step call written out inline."""
    def train_checkerboard(steps, size, device, use_amp):
        """Train the 1x1-convolution network to draw a 4x4 checkerboard; returns (model, final_loss)."""
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        scaler = torch.amp.GradScaler(device_type) if use_amp else None
        final_loss = float("nan")
        for _ in range(steps):
            if use_amp:
                with torch.autocast(device_type, dtype=dtype):
                    loss = F.mse_loss(model(inputs), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                final_loss = loss.item()
            else:
                loss = F.mse_loss(model(inputs), targets)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                final_loss = loss.item()
        return model, final_loss


@wrong("checkerboard feeds the counter", fails={"check_checkerboard_trains_with_amp_train_step": "did nothing"},
       edits="train_checkerboard")
def checkerboard_feeds_the_counter():
    """A forgery: its own inline AMP step trains the model; amp_train_step runs once per step on a throwaway model,
    for the count the harness kept."""
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
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
                amp_train_step(decoy, decoy_optimizer, decoy_scaler, ones, ones, F.mse_loss,  # noqa: F821
                               device_type=device_type, dtype=dtype)
        return model, final_loss


@wrong("checkerboard with the deprecated GradScaler",
       fails={"check_checkerboard_trains_with_amp_train_step": "deprecated"}, edits="train_checkerboard")
def checkerboard_with_the_deprecated_grad_scaler():
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        scaler = torch.cuda.amp.GradScaler(enabled=device_type == "cuda")
        final_loss = float("nan")
        for _ in range(steps):
            if use_amp:
                final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,  # noqa: F821
                                            device_type=device_type, dtype=dtype)
            else:
                loss = F.mse_loss(model(inputs), targets)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                final_loss = loss.item()
        return model, final_loss


@wrong("checkerboard autocast regardless of use_amp", fails={"check_checkerboard_float32_without_amp": "autocast"},
       edits="train_checkerboard")
def checkerboard_autocast_regardless_of_use_amp():
    """use_amp=False still trains under autocast (no GradScaler): bfloat16 on CPU."""
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        scaler = torch.amp.GradScaler(device_type)
        final_loss = float("nan")
        for _ in range(steps):
            if use_amp:
                final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,  # noqa: F821
                                            device_type=device_type, dtype=dtype)
                continue
            with torch.autocast(device_type, dtype=dtype):
                loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            final_loss = loss.item()
        return model, final_loss


@wrong("checkerboard amp_train_step regardless of use_amp",
       fails={"check_checkerboard_float32_without_amp": "amp_train_step"}, edits="train_checkerboard")
def checkerboard_amp_train_step_regardless_of_use_amp():
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        scaler = torch.amp.GradScaler(device_type)
        final_loss = float("nan")
        for _ in range(steps):
            final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,  # noqa: F821
                                        device_type=device_type, dtype=dtype)
        return model, final_loss


@wrong("checkerboard autocast from a helper's variable regardless of use_amp",
       fails={"check_checkerboard_float32_without_amp": "autocast"}, edits="train_checkerboard")
def checkerboard_autocast_from_a_helpers_variable():
    """use_amp=False still trains under autocast, the block made by a helper that returns a name bound to it."""
    def mixed(device_type, dtype):
        context = torch.autocast(device_type, dtype=dtype)
        return context

    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        width = 64
        model = nn.Sequential(
            nn.Conv2d(2, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        scaler = torch.amp.GradScaler(device_type)
        final_loss = float("nan")
        for _ in range(steps):
            if use_amp:
                final_loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,  # noqa: F821
                                            device_type=device_type, dtype=dtype)
                continue
            with mixed(device_type, dtype):
                loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            final_loss = loss.item()
        return model, final_loss


# -- train_checkerboard: correct forms ---------------------------------------------------------------------------


@right("checkerboard: float32 first, then an early return", only="checkerboard", points=4, edits="train_checkerboard")
def checkerboard_float32_first_then_an_early_return():
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        layers = [nn.Conv2d(2, 64, 1), nn.BatchNorm2d(64), nn.ReLU()]
        for _ in range(2):
            layers += [nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Conv2d(64, 1, 1)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        loss = None
        if not use_amp:
            for _ in range(steps):
                optimizer.zero_grad()
                loss = F.mse_loss(model(inputs), targets)
                loss.backward()
                optimizer.step()
            return model, loss.item()
        kind = torch.device(device).type
        scaler = torch.amp.GradScaler(kind)
        for _ in range(steps):
            loss = amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss,  # noqa: F821
                                  device_type=kind, dtype=torch.float16 if kind == "cuda" else torch.bfloat16)
        return model, loss


@right("checkerboard: a step function chosen by use_amp", only="checkerboard", points=4, edits="train_checkerboard")
def checkerboard_a_step_function_chosen_by_use_amp():
    def train_checkerboard(steps, size, device, use_amp):
        inputs = grid(size, size).unsqueeze(0).to(device)  # noqa: F821 (the reference cell's)
        targets = checker(size, size, 4).unsqueeze(0).unsqueeze(1).to(device)  # noqa: F821 (the reference cell's)
        model = nn.Sequential(
            nn.Conv2d(2, 64, 1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 1, 1),
        ).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        device_type = torch.device(device).type
        amp = {"device_type": device_type, "dtype": torch.float16 if device_type == "cuda" else torch.bfloat16}
        scaler = torch.amp.GradScaler(device_type, enabled=use_amp)

        def float32_step():
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss.item()

        def amp_step():
            return amp_train_step(model, optimizer, scaler, inputs, targets, F.mse_loss, **amp)  # noqa: F821

        step = amp_step if use_amp else float32_step
        losses = [step() for _ in range(steps)]
        return model, losses[-1]


# -- LossScaler ----------------------------------------------------------------------------------------------------
# Each wrong form is the reference LossScaler with one method changed: an edit of
# loss_scaler_cell, the reference as they were written from.


@cell(edits="LossScaler")
def loss_scaler_cell():
    """The reference LossScaler as the wrong forms below were written from: __init__ sets the three factors in
    one assignment, and unscale_ divides each gradient by the scale where the reference multiplies it by the
    inverse."""
    class LossScaler:
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            self._scale = float(init_scale)
            self.growth_factor, self.backoff_factor, self.growth_interval = (growth_factor, backoff_factor,
                                                                             growth_interval)
            self._clean_steps = 0
            self._unscaled = set()
            self._found_inf = False

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


@wrong("LossScaler: steps on scaled gradients", fails={"check_loss_scaler_clean_steps": "still scaled"},
       edits=loss_scaler_cell)
def loss_scaler_steps_on_scaled_gradients():
    class LossScaler:
        def step(self, optimizer):
            self._found_inf = any(not bool(torch.isfinite(p.grad).all()) for g in optimizer.param_groups
                                  for p in g['params'] if p.grad is not None)
            if not self._found_inf:
                optimizer.step()


@wrong("LossScaler: detached scaled loss", fails={"check_loss_scaler_clean_steps": "parameters differ"},
       edits=loss_scaler_cell)
def loss_scaler_detached_scaled_loss():
    class LossScaler:
        def scale(self, loss):
            return torch.tensor(loss.item() * self._scale, requires_grad=True)


@wrong("LossScaler: divides twice after unscale_", fails={"check_loss_scaler_unscale_then_clip": "divided twice"},
       edits=loss_scaler_cell)
def loss_scaler_divides_twice_after_unscale():
    class LossScaler:
        def unscale_(self, optimizer):
            self._unscaled.add(id(optimizer))
            with torch.no_grad():
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.div_(self._scale)
                            self._found_inf = self._found_inf or not bool(torch.isfinite(p.grad).all())


@wrong("LossScaler: isinf misses nan", fails={"check_loss_scaler_skips_bad_steps": "nan written"},
       edits=loss_scaler_cell)
def loss_scaler_isinf_misses_nan():
    class LossScaler:
        def unscale_(self, optimizer):
            if id(optimizer) in self._unscaled:
                return
            self._unscaled.add(id(optimizer))
            with torch.no_grad():
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.div_(self._scale)
                            self._found_inf = self._found_inf or bool(torch.isinf(p.grad).any())


@wrong("LossScaler: first gradient only", fails={"check_loss_scaler_skips_bad_steps": "parameter 5"},
       edits=loss_scaler_cell)
def loss_scaler_first_gradient_only():
    class LossScaler:
        def unscale_(self, optimizer):
            if id(optimizer) in self._unscaled:
                return
            self._unscaled.add(id(optimizer))
            with torch.no_grad():
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.div_(self._scale)
                            self._found_inf = self._found_inf or (p is group['params'][0]
                                                                  and not bool(torch.isfinite(p.grad).all()))


@wrong("LossScaler: clean count kept after a skip", fails={"check_loss_scaler_skips_bad_steps": "then departs"},
       edits=loss_scaler_cell)
def loss_scaler_clean_count_kept_after_a_skip():
    class LossScaler:
        def update(self):
            if self._found_inf:
                self._scale *= self.backoff_factor
            else:
                self._clean_steps += 1
                if self._clean_steps == self.growth_interval:
                    self._scale *= self.growth_factor
                    self._clean_steps = 0
            self._found_inf = False
            self._unscaled.clear()


@wrong("LossScaler: grows a step late", fails={"check_loss_scaler_grows": "then departs"}, edits=loss_scaler_cell)
def loss_scaler_grows_a_step_late():
    class LossScaler:
        def update(self):
            if self._found_inf:
                self._scale *= self.backoff_factor
                self._clean_steps = 0
            else:
                self._clean_steps += 1
                if self._clean_steps > self.growth_interval:
                    self._scale *= self.growth_factor
                    self._clean_steps = 0
            self._found_inf = False
            self._unscaled.clear()


@wrong("LossScaler: inf record never cleared", fails={"check_loss_scaler_skips_bad_steps": "then departs"},
       edits=loss_scaler_cell)
def loss_scaler_inf_record_never_cleared():
    class LossScaler:
        def update(self):
            if self._found_inf:
                self._scale *= self.backoff_factor
                self._clean_steps = 0
            else:
                self._clean_steps += 1
                if self._clean_steps == self.growth_interval:
                    self._scale *= self.growth_factor
                    self._clean_steps = 0
            self._unscaled.clear()


@wrong("LossScaler: fixed scale", fails={"check_loss_scaler_float16_dynamics": "float16"}, edits=loss_scaler_cell)
def loss_scaler_fixed_scale():
    class LossScaler:
        def update(self):
            if False:
                self._scale *= self.backoff_factor
                self._clean_steps = 0
            else:
                self._clean_steps += 1
                if self._clean_steps == self.growth_interval:
                    self._scale *= self.growth_factor
                    self._clean_steps = 0
            self._found_inf = False
            self._unscaled.clear()


# -- LossScaler: correct forms -------------------------------------------------------------------------------------


@right("tensor scale, per optimizer", only="loss_scaler", points=6)
def tensor_scale_per_optimizer():
    class LossScaler:
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            self.scale_t = torch.tensor(float(init_scale))
            self.factors = (growth_factor, backoff_factor)
            self.interval = growth_interval
            self.streak = 0
            self.per_optimizer = {}  # id(optimizer) -> found inf, for the optimizers unscaled in this iteration

        def get_scale(self):
            return float(self.scale_t.item())

        def scale(self, loss):
            return loss * self.scale_t.to(loss.dtype)

        def unscale_(self, optimizer):
            if id(optimizer) in self.per_optimizer:
                return
            grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            for grad in grads:
                grad.mul_(self.scale_t.reciprocal())
            flat = torch.cat([grad.reshape(-1) for grad in grads]) if grads else torch.zeros(0)
            self.per_optimizer[id(optimizer)] = not bool(torch.isfinite(flat).all())

        def step(self, optimizer):
            self.unscale_(optimizer)
            return None if self.per_optimizer[id(optimizer)] else optimizer.step()

        def update(self):
            if any(self.per_optimizer.values()):
                self.scale_t = self.scale_t * self.factors[1]
                self.streak = 0
            else:
                self.streak += 1
                if self.streak >= self.interval:
                    self.scale_t = self.scale_t * self.factors[0]
                    self.streak = 0
            self.per_optimizer = {}


@right("modular count", only="loss_scaler", points=6)
def modular_count():
    class LossScaler:
        def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            self.current = init_scale
            self.growth, self.backoff, self.every = growth_factor, backoff_factor, growth_interval
            self.good = 0
            self.state = "fresh"  # fresh -> unscaled (finite) / overflow -> fresh after update

        def get_scale(self):
            return float(self.current)

        def scale(self, loss):
            return self.current * loss

        def unscale_(self, optimizer):
            if self.state != "fresh":
                return
            finite = True
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad /= self.current
                    finite = finite and bool(p.grad.isfinite().all())
            self.state = "unscaled" if finite else "overflow"

        def step(self, optimizer):
            self.unscale_(optimizer)
            if self.state == "unscaled":
                optimizer.step()

        def update(self):
            if self.state == "overflow":
                self.current, self.good = self.current * self.backoff, 0
            else:
                self.good = (self.good + 1) % self.every
                if self.good == 0:
                    self.current *= self.growth
            self.state = "fresh"


@right("max-abs check", only="loss_scaler", points=6)
def max_abs_check():
    import math


    class LossScaler:
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            self.s, self.g, self.b, self.n = float(init_scale), growth_factor, backoff_factor, growth_interval
            self.count, self.skip, self.done = 0, False, set()

        def get_scale(self):
            return self.s

        def scale(self, loss):
            return loss.mul(self.s)

        def unscale_(self, optimizer):
            if optimizer in self.done:
                return
            self.done.add(optimizer)
            with torch.no_grad():
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.mul_(1.0 / self.s)
                            peak = p.grad.abs().max().item() if p.grad.numel() else 0.0
                            self.skip |= not math.isfinite(peak)

        def step(self, optimizer):
            self.unscale_(optimizer)
            if not self.skip:
                optimizer.step()

        def update(self):
            self.count = 0 if self.skip else self.count + 1
            self.s *= self.b if self.skip else 1.0
            if self.count == self.n:
                self.s *= self.g
                self.count = 0
            self.skip, self.done = False, set()


# "no use of GradScaler itself", read from the code: each of these passes every outcome check of LossScaler.
@wrong("LossScaler: a GradScaler subclass", fails={"check_loss_scaler_grows": "GradScaler"})
def loss_scaler_subclass():
    class LossScaler(torch.amp.GradScaler):
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval)


@wrong("LossScaler: every method handed to a GradScaler", fails={"check_loss_scaler_grows": "GradScaler"})
def loss_scaler_delegates():
    from torch.amp import GradScaler as Inner

    class LossScaler:
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            self.inner = Inner("cpu", init_scale=init_scale, growth_factor=growth_factor,
                               backoff_factor=backoff_factor, growth_interval=growth_interval)

        def __getattr__(self, name):
            return getattr(self.inner, name)


@cell("amp_train_step")
def grad_scaler_kept_beside_the_step():
    """A correct amp_train_step, and beside it the GradScaler class under another name."""
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    Scaler = torch.amp.GradScaler  # noqa: F841 (read by LossScaler, another cell)


@wrong("LossScaler: a GradScaler bound to a name in another cell", also=(grad_scaler_kept_beside_the_step,),
       fails={"check_loss_scaler_grows": "GradScaler"})
def loss_scaler_from_another_cell():
    class LossScaler(Scaler):  # noqa: F821 (the amp_train_step cell's)
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval)


@cell("amp_train_step")
def a_grad_scaler_demo_beside_the_step():
    """A correct amp_train_step, and below it a demo that makes a GradScaler at load: no part of LossScaler."""
    def amp_train_step(model, optimizer, scaler, inputs, targets, loss_fn, device_type="cuda", dtype=torch.float16,
                       max_grad_norm=None):
        with torch.autocast(device_type=device_type, dtype=dtype):
            loss = loss_fn(model(inputs), targets)
        scaler.scale(loss).backward()
        if max_grad_norm is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    demo = torch.amp.GradScaler("cpu", init_scale=8.0)  # noqa: F841


@right("a GradScaler demo in another cell", only="loss_scaler", points=6, also=(a_grad_scaler_demo_beside_the_step,),
       edits=loss_scaler_cell)
def loss_scaler_beside_a_demo():
    class LossScaler:
        written_by = "its student"  # the reference scaler, unchanged but for this line
