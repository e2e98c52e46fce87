"""Kit code for 09_capstone, run in the student's process beside the answer cells, and in the judge's.

Classifier is the notebook's model written by the kit, and kit_step the notebook's training step with the kit's
loss: the checkpoint task is graded on them, so that a mistake in the model or the step costs points there only.
resume_run trains the kit's model with the kit's step, calls the student's checkpoint, trains on, restores into
fresh objects (after reseeding torch, as a new process would be) and trains to the end; the judge runs
reference_run, the same loop without interruption, in its own process (on CUDA in a clean child of kit code).
observe_step calls the student's amp_step once on the kit's model holding the judge's weights and returns what
the step left behind; stream iterates the student's dataset through a real DataLoader, workers included.
"""

import io
import operator
from typing import Any

import torch
import torch._dynamo  # the first optimizer step imports it: better spent while loading than inside a call
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


def _student() -> dict[str, Any]:
    return globals()["student"]  # the child puts the student's namespace here


def _function(name: str) -> Any:
    namespace = _student()
    if not callable(namespace.get(name)):
        raise NameError(f"`{name}` is not defined: keep the name in its answer cell")
    return namespace[name]


class Classifier(nn.Module):
    """Embedding, the mean over the masked positions, Linear, ReLU, Dropout, Linear; `poison` multiplies the
    logits (inf makes every gradient of the step non-finite)."""

    def __init__(self, vocab: int, dim: int, classes: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.hidden = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(dim, classes)
        self.poison: float | None = None

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        weights = mask.unsqueeze(-1).to(self.embed.weight.dtype)
        pooled = (self.embed(tokens) * weights).sum(1) / weights.sum(1).clamp(min=1)
        logits = self.out(self.drop(torch.relu(self.hidden(pooled))))
        return logits if self.poison is None else logits * self.poison


def kit_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The mean cross entropy of integer labels, from log-probabilities computed stably."""
    return -torch.log_softmax(logits, dim=-1).gather(1, labels.unsqueeze(1)).mean()


def low_dtype(device_type: str) -> torch.dtype:
    return torch.float16 if device_type == "cuda" else torch.bfloat16


def kit_step(model: nn.Module, optimizer: Any, scaler: Any, batch: list[torch.Tensor], device_type: str) -> float:
    """The notebook's amp_step, with the kit's loss."""
    tokens, mask, labels = batch
    with torch.autocast(device_type, dtype=low_dtype(device_type)):
        logits = model(tokens, mask)
    loss = kit_loss(logits.float(), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


# -- checkpoint and restore ----------------------------------------------------------------------------------------
# A case is plain data from the judge: "sizes" [vocab, dim, classes], "dropout", "initial" and "fresh" (state_dicts
# of the first model and of the one restore loads into), "lr" (AdamW), "scaler" (GradScaler's keyword arguments),
# "batches" [[tokens, mask, labels], ...] one per step, "at" (the step checkpoint is called after), "crash" (the step
# the first run reaches before it is dropped), "file" (through torch.save and torch.load(weights_only=True)),
# "seed" (torch.manual_seed before the first run) and "reseed" (before the fresh objects are built).


def _built(case: dict[str, Any], weights: str) -> tuple[Classifier, torch.optim.AdamW, torch.amp.GradScaler]:
    device = case["batches"][0][0].device
    vocab, dim, classes = case["sizes"]
    model = Classifier(vocab, dim, classes, dropout=case["dropout"]).to(device)
    model.load_state_dict(case[weights])
    return (model, torch.optim.AdamW(model.parameters(), lr=case["lr"]),
            torch.amp.GradScaler(device.type, **case["scaler"]))


def _steps(objects: tuple[Classifier, Any, Any], case: dict[str, Any], steps: range) -> list[float]:
    model, optimizer, scaler = objects
    model.train()
    device_type = case["batches"][0][0].device.type
    return [kit_step(model, optimizer, scaler, case["batches"][i], device_type) for i in steps]


def _ended(objects: tuple[Classifier, Any, Any], losses: list[float], start: Any = 0) -> dict[str, Any]:
    model, _, scaler = objects
    return {"start": start, "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "scale": float(scaler.get_scale()), "tracker": int(scaler.state_dict().get("_growth_tracker", -1)),
            "losses": losses}


def reference_run(case: dict[str, Any], lost: str | None = None) -> dict[str, Any]:
    """The judge's run without interruption; with `lost` ("optimizer", "scaler" or "rng"), the run a restore that
    forgot that piece of the state would give (for messages)."""
    torch.manual_seed(case["seed"])
    objects = _built(case, "initial")
    at, total = case["at"], len(case["batches"])
    losses = _steps(objects, case, range(at))
    if lost == "rng":
        torch.manual_seed(case["reseed"])
        _built(case, "fresh")  # what building the fresh objects draws
    elif lost == "optimizer":
        objects = (objects[0], torch.optim.AdamW(objects[0].parameters(), lr=case["lr"]), objects[2])
    elif lost == "scaler":
        objects = (*objects[:2], torch.amp.GradScaler(case["batches"][0][0].device.type, **case["scaler"]))
    return _ended(objects, losses + _steps(objects, case, range(at, total)))


def _through_file(ckpt: Any) -> Any:
    buffer = io.BytesIO()
    try:
        torch.save(ckpt, buffer)
    except Exception as err:
        raise TypeError(f"torch.save(checkpoint(...), io.BytesIO()) failed: {err}. Keep only tensors, numbers, "
                        "strings, lists and dicts in the checkpoint.") from None
    buffer.seek(0)
    try:
        return torch.load(buffer, weights_only=True)
    except Exception as err:
        raise TypeError("torch.load(..., weights_only=True) refused the checkpoint: it holds an object that is not "
                        "a tensor or plain data (a Module, an optimizer or a scaler itself?). Store their "
                        f"state_dict()s. torch.load said: {str(err).splitlines()[0][:300]}") from None


def resume_run(case: dict[str, Any]) -> dict[str, Any]:
    """Train `at` steps, ckpt = checkpoint(model, optimizer, scaler, at), train on to `crash`, (save and load,)
    reseed torch, build fresh objects, restore into them and train from the step restore returns to the end."""
    checkpoint, restore = _function("checkpoint"), _function("restore")
    torch.manual_seed(case["seed"])
    objects = _built(case, "initial")
    losses = _steps(objects, case, range(case["at"]))
    ckpt = checkpoint(*objects, case["at"])
    losses += _steps(objects, case, range(case["at"], case["crash"]))
    if case["file"]:
        ckpt = _through_file(ckpt)
    del objects
    torch.manual_seed(case["reseed"])
    fresh = _built(case, "fresh")
    start = restore(*fresh, ckpt)
    try:
        first = operator.index(start)
    except TypeError:
        return {**_ended(fresh, losses, repr(start)[:200]), "state": {}}
    if isinstance(start, bool) or not 0 <= first <= len(case["batches"]):
        return {**_ended(fresh, losses, repr(start)[:200]), "state": {}}
    resumed = _steps(fresh, case, range(first, len(case["batches"])))
    return _ended(fresh, losses[:first] + resumed, first)


# -- amp_step --------------------------------------------------------------------------------------------------------


def observe_step(case: dict[str, Any], device_type: str) -> dict[str, Any]:
    """One call of the student's amp_step on the kit's model (no dropout) with the case's weights, SGD at the case's
    lr and a GradScaler(init_scale=case["scale"]); `poison` makes every gradient non-finite. What it left behind."""
    tokens, mask, labels = case["batch"]
    vocab, dim, classes = case["sizes"]
    model = Classifier(vocab, dim, classes, dropout=0.0).to(tokens.device)
    model.load_state_dict(case["weights"])
    model.poison = case["poison"]
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"])
    scaler = torch.amp.GradScaler(device_type, init_scale=case["scale"], growth_interval=1000)
    returned = _function("amp_step")(model, optimizer, scaler, tokens, mask, labels, device_type=device_type,
                                     dtype=low_dtype(device_type))
    return {"returned": returned if isinstance(returned, (float, int, torch.Tensor)) else None,
            "returned_type": type(returned).__name__,
            "after": {name: p.detach().clone() for name, p in model.named_parameters()},
            "grads": {name: None if p.grad is None else p.grad.detach().clone()
                      for name, p in model.named_parameters()},
            "scale": float(scaler.get_scale())}


def loss_and_grads(case: dict[str, Any]) -> dict[str, Any]:
    """The judge's oracle for observe_step: the float64 loss and gradients of the same model and batch."""
    tokens, mask, labels = (t.cpu() for t in case["batch"])
    vocab, dim, classes = case["sizes"]
    model = Classifier(vocab, dim, classes, dropout=0.0).double()
    model.load_state_dict({k: v.cpu().double() for k, v in case["weights"].items()})
    loss = F.cross_entropy(model(tokens, mask), labels)
    loss.backward()
    return {"loss": loss.item(), "grads": {n: torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()
                                           for n, p in model.named_parameters()}}


# -- the dataset -----------------------------------------------------------------------------------------------------


def _as_is(item: Any) -> Any:
    return item


def stream(dataset: Any, num_workers: int, timeout: float, limit: int) -> list[Any]:
    """Everything DataLoader(dataset, batch_size=None, num_workers=...) yields, up to `limit` items; workers are
    forked (the student's classes live in no importable module)."""
    loader = DataLoader(dataset, batch_size=None, collate_fn=_as_is, num_workers=num_workers,
                        timeout=timeout if num_workers else 0,
                        multiprocessing_context="fork" if num_workers else None)
    items: list[Any] = []
    iterator = iter(loader)
    try:
        for item in iterator:
            items.append(item)
            if len(items) >= limit:
                break
    finally:
        stop = getattr(iterator, "_shutdown_workers", None)
        if stop is not None:
            stop()
    return items


# -- train -----------------------------------------------------------------------------------------------------------
# The student's checkpoints hold OrderedDicts and optimizer states keyed by ints, which stay in this process: the
# judge gets the step and the model's tensors, and a stopped run is saved, loaded and resumed here.


def _summary(result: Any) -> dict[str, Any]:
    """What the judge reads of a result of train: its type, its "step" and the tensors of its "model"."""
    if not isinstance(result, dict) or not isinstance(result.get("model"), dict):
        return {"type": type(result).__name__, "keys": sorted(map(str, result))[:10] if isinstance(result, dict)
                else [], "step": None, "model": {}}
    step = result.get("step")
    return {"type": "dict", "keys": sorted(map(str, result))[:10],
            "step": step if isinstance(step, int) and not isinstance(step, bool) else repr(step)[:100],
            "model": {str(k): v.detach().cpu().clone() for k, v in result["model"].items()
                      if isinstance(v, torch.Tensor)}}


def run_train(paths: list[str], device: str, seed: int, steps: int | None = None,
              stop: int | None = None) -> dict[str, Any]:
    """The student's train(paths, [steps,] seed=seed, device=device, stop=stop): its summary."""
    kwargs: dict[str, Any] = {} if steps is None else {"steps": steps}
    return _summary(_function("train")(paths, seed=seed, device=device, stop=stop, **kwargs))


def run_resumed(paths: list[str], device: str, seed: int, stop: int) -> dict[str, Any]:
    """part = train(paths, seed=seed, device=device, stop=stop), through torch.save and
    torch.load(weights_only=True), then train(paths, seed=seed, device=device, resume=part): both summaries."""
    train = _function("train")
    part = train(paths, seed=seed, device=device, stop=stop)
    return {"part": _summary(part),
            "resumed": _summary(train(paths, seed=seed, device=device, resume=_through_file(part)))}
