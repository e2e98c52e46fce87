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

from pathlib import Path

import pytest

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
