"""Chapter 08: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it.

On CPU the CUDA speed check is skipped and left out of max_score.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    assert_caught,
    grade_fast,
    release_path,
    solution_code,
    solved,
)

CH = "08_mixed_precision"
MAX_CPU = 20  # 14 for amp_train_step (without the 2-point CUDA speed check) + 6 for train_checkerboard


def test_solution_gets_full_marks(tmp_path: Path) -> None:
    g = grade_fast(solved(tmp_path, CH))
    assert g.max_score == MAX_CPU
    assert g.score == g.max_score, [(r.name, r.output) for r in g.results if r.status != "passed"]
    assert [r.nodeid.split("::")[-1] for r in g.results if r.status == "skipped"] == ["check_amp_speedup_on_cuda"]


def test_release_scores_zero_and_says_not_implemented() -> None:
    g = grade_fast(release_path(CH))
    assert g.score == 0 and g.max_score == MAX_CPU
    graded = [r for r in g.results if r.status != "skipped"]
    assert all("not implemented" in r.output for r in graded), [r.output for r in graded]


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


def step(*parts: str) -> str:
    return STEP.format(body="".join(parts))


NO_AUTOCAST = step('''
    outputs = model(inputs)
    loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
''', CLIP, FINISH)
BACKWARD_INSIDE_UNSCALED = step('''
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
        loss.backward()
''', CLIP, FINISH)
NO_UPDATE = step(FORWARD, "    scaler.scale(loss).backward()\n", CLIP, '''
    scaler.step(optimizer)
    optimizer.zero_grad()
    return loss.item()
''')
CLIP_BEFORE_UNSCALE = step(FORWARD, '''
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.unscale_(optimizer)
''', FINISH)
NO_ZERO_GRAD = step(FORWARD, "    scaler.scale(loss).backward()\n", CLIP, '''
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
''')
DEPRECATED_API = step('''
    with torch.cuda.amp.autocast(dtype=dtype):
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
    scaler.scale(loss).backward()
''', CLIP, FINISH)
OPTIMIZER_STEP = step(FORWARD, '''
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


def checkerboard_without_amp_train_step() -> str:
    code = solution_code(CH)["train_checkerboard"]
    assert AMP_CALL in code, "the solution's amp_train_step call changed: update AMP_CALL"
    return code.replace(AMP_CALL, INLINE_LOOP)


MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
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
        "train_checkerboard", None, "check_checkerboard_trains_with_amp_train_step", "amp_train_step"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    code = code if code is not None else checkerboard_without_amp_train_step()
    g = grade_fast(solved(tmp_path, CH, **{cell: code}), only=check)
    assert_caught(g, name, check, phrase)

