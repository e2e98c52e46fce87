"""Hidden checks for 09_capstone: the pieces of a training run, and the run itself.

Where each check's evidence comes from:

- pad_collate and the classifier's logits: the judge's own batches against its direct formulas (inputs.py), the
  logits in float64 from the weights the judge set, with random tokens in every padded position;
- SequenceDataset: shards the judge writes (it knows every sequence in them), read back through a real DataLoader
  with 0, 2 and 3 workers (harness.stream);
- softmax_cross_entropy: torch's log_softmax in float64; amp_step: one step on the kit's model holding the judge's
  weights, against the float64 loss and gradient (harness.loss_and_grads), and a step whose gradients the kit's
  model makes non-finite;
- checkpoint/restore: the kit's model, step and AdamW trained through the student's checkpoint and restore
  (harness.resume_run) against the judge's own run without interruption (harness.reference_run, in the judge's
  process; on CUDA in a clean child of kit code);
- train: the returned weights, read by name, classify the judge's held-out sequences (drawn in the judge, never
  sent) with the judge's own float64 forward pass; stopped, saved and resumed, the run must end where the
  uninterrupted one does, and train(steps=k) where train(stop=k) stops. Those two compare runs of the student's
  own code with each other: they test that the pieces compose, and the held-out accuracy is what no run can fake;
- the rules (no Python loop in forward, no library softmax, torch.autocast) are the judge's reading of the source.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypedDict, cast

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.chapters.ch09_capstone.harness import Classifier, loss_and_grads
from autograder.chapters.ch09_capstone.harness import reference_run as kit_reference_run
from autograder.chapters.ch09_capstone.inputs import (
    CLASSES,
    DIM,
    VOCAB,
    Sequence,
    collate_oracle,
    garbage_padding,
    make_sequences,
    new_folder,
    random_batch,
    write_shards,
)
from autograder.judging.authoring import (
    RemoteObject,
    StudentApi,
    answer,
    check,
    expect_tensor,
    failure,
    harness,
    listed,
    names_used,
    python_loops,
    reference_process,
    released_stub,
    show,
    task_code,
    unreadable,
)

STEPS, TARGET = 80, 0.9  # the notebook's step budget and the held-out accuracy it asks for
TRAIN_SECONDS = 60.0  # one call of train (the reference takes about 0.5 s on a CPU)
STREAM_SECONDS = 10.0  # the wait for one item from a DataLoader worker

COLLATE_EXAMPLE: list[Sequence] = [(torch.tensor([5, 6, 7]), 1), (torch.tensor([8]), 0)]
XENT_EXAMPLE = (torch.tensor([0.5, 0.5]), torch.tensor([1000.0, 0.0]))


# -- the API: what the notebook asks for, as the judge calls it ------------------------------------------------------


class StepRecord(TypedDict):
    returned: Any  # what amp_step returned, if a number
    returned_type: str
    after: dict[str, Tensor]  # the parameters after the step
    grads: dict[str, Tensor | None]  # their .grad after it
    scale: float  # the scaler's scale after it


class ResumeRun(TypedDict):
    start: Any  # what restore returned: an int in range, else its repr
    state: dict[str, Tensor]  # the model's state_dict at the end ({} when start was unusable)
    scale: float  # the scaler's scale at the end
    tracker: int  # its count of clean steps at the end
    losses: list[float]


class Api(StudentApi):
    @answer(example=(COLLATE_EXAMPLE,))
    def pad_collate(self, batch: list[Any]) -> Any:
        """(tokens int64 [B, T] padded with 0, mask bool [B, T], labels int64 [B]) of (tokens, label) pairs."""

    @answer
    def SequenceDataset(self, paths: list[str]) -> RemoteObject:
        """An IterableDataset of the shards' (tokens, label) pairs, each once with any number of workers."""

    @harness(timeout=60.0)
    def stream(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> list[Any]:
        """Everything DataLoader(dataset, batch_size=None, num_workers=...) yields."""

    @answer
    def SequenceClassifier(self, vocab: int, dim: int, classes: int, dropout: float = 0.1) -> RemoteObject:
        """Embedding, masked mean, Linear, ReLU, Dropout, Linear: logits [B, classes] of (tokens, mask)."""

    @answer(example=XENT_EXAMPLE)
    def softmax_cross_entropy(self, labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
        """-sum(labels * log_softmax(logits)) along `dim`, computed stably."""

    @harness()
    def observe_step(self, case: dict[str, Any], device_type: str) -> StepRecord:
        """The student's amp_step once on the kit's model with the case's weights: what it left behind."""

    @answer
    def checkpoint(self, model: RemoteObject, optimizer: RemoteObject, scaler: RemoteObject, step: int) -> Any:
        """A snapshot of the run (its cell also defines restore(model, optimizer, scaler, ckpt) -> int)."""

    @harness()
    def resume_run(self, case: dict[str, Any]) -> ResumeRun:
        """The kit's run through the student's checkpoint and restore."""

    @harness()
    def reference_run(self, case: dict[str, Any], lost: str | None = None) -> ResumeRun:
        """The kit's run without interruption (run in a clean child of kit code on CUDA)."""

    @answer
    def train(self, paths: list[str], steps: int = STEPS, seed: int = 0, device: str = "cpu",
              resume: Any = None, stop: int | None = None) -> Any:
        """The whole run: checkpoint(model, optimizer, scaler, step) of the step it stopped at."""

    @harness(timeout=TRAIN_SECONDS)
    def run_train(self, paths: list[str], device: str, seed: int, steps: int | None = None,
                  stop: int | None = None) -> TrainSummary:
        """The student's train(paths, [steps,] seed=..., device=..., stop=...): its type, step and weights."""

    @harness(timeout=2 * TRAIN_SECONDS)
    def run_resumed(self, paths: list[str], device: str, seed: int, stop: int) -> dict[str, TrainSummary]:
        """train(stop=stop), saved and loaded with weights_only=True, then train(resume=it): both summaries."""


def _int(rng: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high, (1,), generator=rng))


# -- pad_collate -----------------------------------------------------------------------------------------------------

COLLATE_HINT = ("tokens: nn.utils.rnn.pad_sequence(list of tokens, batch_first=True, padding_value=PAD); mask: "
                "torch.arange(T) < lengths[:, None], True on the real tokens only; labels: "
                "torch.tensor(labels, dtype=torch.int64).")


def _describe_batch(batch: list[Sequence]) -> str:
    return "[" + ", ".join(f"({t.tolist()}, {y})" for t, y in batch[:4]) + (", ...]" if len(batch) > 4 else "]")


def _expect_collated(api: Api, batch: list[Sequence]) -> None:
    """pad_collate on CPU tensors on any device's grading: a DataLoader collates what its dataset yields, on the
    CPU, before the batch moves to the GPU."""
    call = f"pad_collate({_describe_batch(batch)})"
    got = api.pad_collate.using(call=call, hint=COLLATE_HINT)(batch)
    want = collate_oracle(batch)
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise failure(call=call, expected="a tuple (tokens, mask, labels)", got=show(got), hint=COLLATE_HINT)
    inputs = {"lengths": torch.tensor([len(t) for t, _ in batch])}
    for name, have, expected in zip(("tokens", "mask", "labels"), got, want, strict=True):
        problem = " (the mask must be True exactly at the real tokens and False at the padding)" if name == "mask" \
            else ""
        expect_tensor(have, expected, call=f"{call}: the {name}", inputs=inputs,
                      hint=f"The {name} are wrong{problem}. " + COLLATE_HINT, device="cpu")


@check(task="pad_collate", points=1, visible=True)
def check_collate_example(api: Api) -> None:
    """the notebook's example: [([5, 6, 7], 1), ([8], 0)] gives tokens [[5, 6, 7], [8, 0, 0]], its mask and [1, 0]"""
    _expect_collated(api, COLLATE_EXAMPLE)


@check(task="pad_collate", points=2)
def check_collate_random(api: Api, rng: torch.Generator) -> None:
    """random batches of 1 to 9 sequences of 1 to 12 tokens, equal lengths included: tokens, mask and labels"""
    uneven = [(torch.randint(1, VOCAB, (n,), generator=rng), _int(rng, 0, CLASSES)) for n in (5, 1, 3)]
    _expect_collated(api, uneven)
    for size, equal in ((1, False), (_int(rng, 2, 10), False), (_int(rng, 2, 10), True), (_int(rng, 2, 10), False)):
        _expect_collated(api, random_batch(rng, size, equal=equal))


# -- SequenceDataset -------------------------------------------------------------------------------------------------

DATASET_HINT = ("Worker w of W reads shards w, w + W, ... (get_worker_info(); None in the main process, which reads "
                "them all, in order); in each shard, sequence k is tokens[start:start + lengths[k]], start the sum "
                "of the lengths before it, yielded as (an int64 tensor, int(label)).")


def _key(item: Any) -> tuple[tuple[int, ...], int] | str:
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], Tensor):
        label = item[1].item() if isinstance(item[1], Tensor) and item[1].numel() == 1 else item[1]
        if item[0].dtype == torch.int64 and item[0].dim() == 1 and isinstance(label, int):
            return tuple(item[0].tolist()), label
    return f"not an (int64 [L] tensor, int) pair: {show(item)[:200]}"


def _expect_stream(api: Api, rng: torch.Generator, n_shards: int, workers: int) -> None:
    sequences = make_sequences(_int(rng, 6, 14) * n_shards, rng)
    paths = write_shards(new_folder(api.student.data_dir), sequences, n_shards)
    call = (f"DataLoader(SequenceDataset([{n_shards} shards]), batch_size=None, num_workers={workers}), "
            f"{len(sequences)} sequences in all")
    dataset = api.SequenceDataset.using(call=call, hint=DATASET_HINT)(paths)
    if not isinstance(dataset, RemoteObject):
        raise failure(call=call, expected="an IterableDataset", got=show(dataset), hint=DATASET_HINT)
    items = api.stream.using(call=call, hint=DATASET_HINT)(dataset, workers, STREAM_SECONDS, 4 * len(sequences))
    keys = [_key(item) for item in items]
    bad = [k for k in keys if isinstance(k, str)]
    if bad:
        raise failure(call=call, expected="(tokens, label) pairs: an int64 tensor [L] and a Python int",
                      got=bad[0], hint=DATASET_HINT)
    got = [k for k in keys if not isinstance(k, str)]
    want = [(tuple(t.tolist()), y) for t, y in sequences]
    if workers == 0 and got == want:
        return
    if workers > 0 and Counter(got) == Counter(want):
        return
    counts, expected = Counter(got), Counter(want)
    repeated = sum(1 for k, n in counts.items() if n > expected.get(k, 0))
    missing = sum(1 for k, n in expected.items() if counts.get(k, 0) < n)
    if workers == 0 and not repeated and not missing:
        problem = "every sequence came, but not in the shards' order"
    else:
        problem = f"{missing} sequences missing or changed, {repeated} repeated"
        if repeated and len(got) == workers * len(want):
            problem += f": each of the {workers} workers read every shard"
    raise failure(call=call, expected=f"each of the {len(want)} sequences exactly once"
                  + (", in the order of the shards" if workers == 0 else ""),
                  got=f"{len(got)} items", problem=problem + ".", hint=DATASET_HINT)


@check(task="SequenceDataset", points=1, visible=True)
def check_dataset_main_process(api: Api, rng: torch.Generator) -> None:
    """in the main process, every sequence of 3 shards, in the shards' order"""
    _expect_stream(api, rng, 3, 0)


@check(task="SequenceDataset", points=2)
def check_dataset_workers(api: Api, rng: torch.Generator) -> None:
    """with 2 and 3 workers (2, 3 and 5 shards), each sequence exactly once"""
    for n_shards, workers in ((2, 2), (5, 2), (3, 3)):
        _expect_stream(api, rng, n_shards, workers)


# -- SequenceClassifier ----------------------------------------------------------------------------------------------

MODEL_HINT = ("In __init__: self.embed = nn.Embedding(vocab, dim), self.hidden = nn.Linear(dim, dim), self.drop = "
              "nn.Dropout(dropout), self.out = nn.Linear(dim, classes). forward(tokens, mask): the mean of "
              "self.embed(tokens) over the positions where mask is True, then out(drop(relu(hidden(mean)))).")
MASK_HINT = ("The padded positions hold other tokens here: weight the embeddings with mask.unsqueeze(-1) (as a "
             "float) and divide the sum over T by the number of real tokens of each row, mask.sum(1, keepdim=True).")
LOOP_HINT = ("Pool with one masked sum over the positions: (embeddings * mask.unsqueeze(-1)).sum(1) divided by "
             "the counts; no loop over the rows or the positions, and build the four submodules one by one.")


def classifier_oracle(weights: dict[str, Tensor], tokens: Tensor, mask: Tensor) -> Tensor:
    """The logits in float64, dropout off (eval mode)."""
    w = {k: v.double() for k, v in weights.items()}
    m = mask.unsqueeze(-1).double()
    pooled = (w["embed.weight"][tokens] * m).sum(1) / m.sum(1)
    return torch.relu(pooled @ w["hidden.weight"].T + w["hidden.bias"]) @ w["out.weight"].T + w["out.bias"]


def _parameter_shapes(vocab: int, dim: int, classes: int) -> dict[str, list[int]]:
    return {"embed.weight": [vocab, dim], "hidden.weight": [dim, dim], "hidden.bias": [dim],
            "out.weight": [classes, dim], "out.bias": [classes]}


def _built_classifier(api: Api, sizes: tuple[int, int, int], device: str) -> RemoteObject:
    call = f"SequenceClassifier({', '.join(map(str, sizes))})"
    model = api.SequenceClassifier.using(call=call, hint=MODEL_HINT)(*sizes)
    if not isinstance(model, RemoteObject):
        raise failure(call=call, expected="an nn.Module", got=show(model), hint=MODEL_HINT)
    info = api.student.inspect(model)
    got = {name: list(t.shape) for name, t in info["parameters"].items()}
    want = _parameter_shapes(*sizes)
    if got != want:
        raise failure(call=f"{call}, then .named_parameters()", expected=str(want), got=str(got),
                      problem="the parameters differ in names or shapes.", hint=MODEL_HINT)
    api.student.method(model, ["to"], device)
    return model


def _random_weights(rng: torch.Generator, vocab: int, dim: int, classes: int) -> dict[str, Tensor]:
    return {name: torch.randn(shape, generator=rng, dtype=torch.float64).float() * (1.0 if "embed" in name else
                                                                                   dim ** -0.5)
            for name, shape in _parameter_shapes(vocab, dim, classes).items()}


def _expect_logits(api: Api, model: RemoteObject, weights: dict[str, Tensor], tokens: Tensor, mask: Tensor,
                   device: str, call: str) -> None:
    got = api.student.method(model, [], tokens.to(device), mask.to(device))["value"]
    want = classifier_oracle(weights, tokens, mask).float()
    hint = MODEL_HINT
    if isinstance(got, Tensor) and got.shape == want.shape and not torch.allclose(got.cpu().double(), want.double(),
                                                                                 rtol=1e-4, atol=1e-5):
        full = classifier_oracle(weights, tokens, torch.ones_like(mask))
        if torch.allclose(got.cpu().double(), full, rtol=1e-4, atol=1e-5):
            hint = "The logits are those of the mean over every position, padding included. " + MASK_HINT
        else:
            hint = MASK_HINT + " " + MODEL_HINT
    expect_tensor(got, want, call=call, inputs={"tokens": tokens, "mask": mask}, hint=hint, rtol=1e-4, atol=1e-5,
                  device=device)


@check(task="SequenceClassifier", points=1, visible=True)
def check_classifier_layers(api: Api, device: str) -> None:
    """SequenceClassifier(16, 32, 4) registers embed (16 x 32), hidden (32 x 32), out (4 x 32) and their biases"""
    _built_classifier(api, (VOCAB, DIM, CLASSES), device)


@check(task="SequenceClassifier", points=2)
def check_classifier_logits(api: Api, rng: torch.Generator, device: str) -> None:
    """with random weights, in eval mode, the logits of random batches with random tokens in the padding equal
    the float64 formula: the mean is over the masked positions only"""
    for _ in range(2):
        sizes = (_int(rng, 6, 20), _int(rng, 3, 12), _int(rng, 2, 6))
        model = _built_classifier(api, sizes, device)
        weights = _random_weights(rng, *sizes)
        api.student.set_parameters(model, weights)
        api.student.method(model, ["eval"])
        for size in (1, _int(rng, 2, 9)):
            tokens, mask, _ = collate_oracle(random_batch(rng, size, vocab=sizes[0]))
            tokens = garbage_padding(tokens, mask, rng) % sizes[0]
            call = f"SequenceClassifier{sizes} with random weights, .eval(), then model(tokens, mask)"
            _expect_logits(api, model, weights, tokens, mask, device, call)


@check(task="SequenceClassifier", points=1, rule=True)
def check_classifier_no_loop(api: Api, rng: torch.Generator, device: str) -> None:
    """rule: no Python loop in the model's code (read from your code), and the notebook's example right"""
    code = task_code(api.student.submission, "SequenceClassifier")
    loops, hidden = python_loops(code), unreadable(code)
    if loops or hidden:
        raise failure(call="the judge's reading of the code of `SequenceClassifier`",
                      expected="no Python loop, and every function called by its name", got=listed(loops + hidden),
                      problem="the notebook's rule asks for a forward pass without Python loops, so none of this "
                      "exercise's checks counts.", hint=LOOP_HINT, breaks_rule=True)
    model = _built_classifier(api, (VOCAB, 8, CLASSES), device)
    weights = _random_weights(rng, VOCAB, 8, CLASSES)
    api.student.set_parameters(model, weights)
    api.student.method(model, ["eval"])
    tokens, mask, _ = collate_oracle(COLLATE_EXAMPLE)
    _expect_logits(api, model, weights, tokens, mask, device,
                   "the rule's point needs the notebook's example right: model(*pad_collate(example)[:2])")


# -- softmax_cross_entropy -------------------------------------------------------------------------------------------

LIBRARY = ("softmax", "log_softmax", "softmin", "Softmax", "LogSoftmax", "cross_entropy", "CrossEntropyLoss",
           "nll_loss", "NLLLoss", "distributions")
XENT_HINT = ("log softmax(x)_i = x_i - logsumexp(x): subtract the row's maximum (amax(dim, keepdim=True)), then "
             "torch.logsumexp(shifted, dim, keepdim=True); the loss is -(labels * log_probs).sum(dim). Never take "
             "the log of a probability: it is 0 for a logit far below the others.")


def xent_oracle(labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
    return (-(labels.double() * torch.log_softmax(logits.double(), dim)).sum(dim)).to(logits.dtype)


def _expect_xent(api: Api, labels: Tensor, logits: Tensor, dim: int, device: str) -> None:
    call = f"softmax_cross_entropy(labels, logits, dim={dim})"
    inputs = {"labels": labels, "logits": logits}
    value, (grad,) = api.softmax_cross_entropy.vjp(torch.ones(xent_oracle(labels, logits, dim).shape), wrt=(1,))(
        labels.to(device), logits.to(device), dim=dim)
    expect_tensor(value, xent_oracle(labels, logits, dim), call=call, inputs=inputs, hint=XENT_HINT, rtol=1e-5,
                  atol=1e-4, device=device)
    want_grad = (torch.softmax(logits.double(), dim) * labels.double().sum(dim, keepdim=True) - labels.double())
    expect_tensor(grad, want_grad.to(logits.dtype), call=f"{call}, the gradient with respect to the logits",
                  inputs=inputs, hint=XENT_HINT, rtol=1e-5, atol=1e-6, device=device)


@check(task="softmax_cross_entropy", points=1, visible=True)
def check_xent_stable(api: Api, rng: torch.Generator, device: str) -> None:
    """value and gradient against float64 on the notebook's example, logits of 1e4 and 1e30, and square and
    random batches of one-hot labels"""
    _expect_xent(api, *XENT_EXAMPLE, -1, device)
    huge = torch.tensor([[1e4, 0.0, -1e4], [1e30, 0.0, -1e30], [0.0, 1.0, 2.0], [-5000.0, -5001.0, -7000.0]])
    soft = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.1, 0.1, 0.8]])
    _expect_xent(api, soft, huge, -1, device)
    for b, c in ((4, 4), (_int(rng, 2, 9), _int(rng, 2, 9))):
        logits = torch.randn(b, c, generator=rng, dtype=torch.float64).float() * 5
        labels = F.one_hot(torch.randint(0, c, (b,), generator=rng), c).float()
        _expect_xent(api, labels, logits, -1, device)
        _expect_xent(api, labels.T.contiguous(), logits.T.contiguous(), 0, device)


@check(task="softmax_cross_entropy", points=1, rule=True)
def check_xent_by_hand(api: Api, device: str) -> None:
    """rule: no library softmax or cross entropy (read from your code), and the notebook's example right"""
    code = task_code(api.student.submission, "softmax_cross_entropy")
    used, hidden = names_used(code, LIBRARY), unreadable(code)
    if used or hidden:
        raise failure(call="the judge's reading of the code of `softmax_cross_entropy`",
                      expected="no library softmax or cross entropy, and every function called by its name",
                      got=listed(used + hidden), problem="the notebook's rule asks for the loss written out, so "
                      "none of this exercise's checks counts.", hint=XENT_HINT, breaks_rule=True)
    labels, logits = XENT_EXAMPLE
    expect_tensor(api.softmax_cross_entropy(labels.to(device), logits.to(device)), xent_oracle(labels, logits),
                  call="softmax_cross_entropy([0.5, 0.5], [1000., 0.])", inputs={"labels": labels, "logits": logits},
                  hint="The rule's point needs the notebook's example right too. " + XENT_HINT, device=device)


# -- amp_step --------------------------------------------------------------------------------------------------------

STEP_HINT = ("with torch.autocast(device_type, dtype=dtype): logits = model(tokens, mask); then loss = "
             "softmax_cross_entropy(F.one_hot(labels, classes).float(), logits.float()).mean(); "
             "scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update(); optimizer.zero_grad(); "
             "return loss.item().")
SKIP_HINT = ("Let the scaler step: scaler.step(optimizer) skips the step when a gradient is inf or nan, and "
             "scaler.update() then lowers the scale. optimizer.step() itself steps whatever the gradients hold.")
AUTOCAST_HINT = "Run the forward pass under torch.autocast(device_type=device_type, dtype=dtype)."
LOSS_RTOL, UPDATE_RTOL = 0.03, 0.35


def _step_case(rng: torch.Generator, device: str, poison: float | None) -> dict[str, Any]:
    sizes = [VOCAB, _int(rng, 6, 16), CLASSES]
    torch_rng_state = torch.get_rng_state()
    torch.manual_seed(_int(rng, 0, 2**31))
    weights = dict(Classifier(*sizes).state_dict())
    torch.set_rng_state(torch_rng_state)
    batch = collate_oracle(make_sequences(_int(rng, 8, 17), rng))
    return {"sizes": sizes, "weights": weights, "batch": [t.to(device) for t in batch], "lr": 0.5,
            "scale": 2.0 ** _int(rng, 6, 12), "poison": poison}


def _step_call(case: dict[str, Any], device: str) -> str:
    dtype = "torch.float16" if device == "cuda" else "torch.bfloat16"
    return (f"amp_step(model, optimizer, scaler, tokens, mask, labels, device_type={device!r}, dtype={dtype}) on "
            f"this notebook's model (dim {case['sizes'][1]}, no dropout), SGD(lr={case['lr']}), "
            f"GradScaler(init_scale={case['scale']:g}), a batch of {len(case['batch'][2])}")


def _expect_cleared(got: StepRecord, call: str) -> None:
    left = [name for name, g in got["grads"].items() if g is not None and bool(g.ne(0).any())]
    if left:
        raise failure(call=call, expected="no gradient left in .grad after the step", got=f".grad of {left}",
                      hint="Finish with optimizer.zero_grad() (set_to_none=True is the default).")


@check(task="amp_step", points=1, visible=True)
def check_amp_step_updates(api: Api, rng: torch.Generator, device: str) -> None:
    """one step returns the batch's mean cross entropy (3 %), moves the weights as SGD on the float64 gradient
    would (35 %) and clears the gradients; a step whose gradients are not finite changes nothing and lowers
    the scale"""
    case = _step_case(rng, device, None)
    call = _step_call(case, device)
    got = api.observe_step.using(call=call, hint=STEP_HINT)(case, device)
    want = loss_and_grads(case)
    returned = got["returned"]
    if not isinstance(returned, float) or not math.isclose(returned, want["loss"], rel_tol=LOSS_RTOL):
        raise failure(call=call, expected=f"the unscaled mean cross entropy as a Python float, about "
                      f"{want['loss']:.6g} (within {LOSS_RTOL:.0%})", got=f"{show(returned)} ({got['returned_type']})",
                      hint=STEP_HINT)
    names = list(want["grads"])
    update = torch.cat([(got["after"][n].cpu().double() - case["weights"][n].cpu().double()).reshape(-1)
                        for n in names])
    expected = torch.cat([-case["lr"] * want["grads"][n].reshape(-1) for n in names])
    off = float((update - expected).norm() / expected.norm())
    if not off <= UPDATE_RTOL:
        raise failure(call=call, expected=f"parameters moved by -lr * gradient (within {UPDATE_RTOL:.0%} of the "
                      "float64 step)", got=f"an update {off:.0%} away from it (norm {float(update.norm()):.4g} "
                      f"where SGD's is {float(expected.norm()):.4g})", hint=STEP_HINT)
    _expect_cleared(got, call)
    case = _step_case(rng, device, math.inf)
    call = _step_call(case, device) + ", the model's logits multiplied by inf (every gradient inf or nan)"
    got = api.observe_step.using(call=call, hint=SKIP_HINT)(case, device)
    moved = [n for n in names if not torch.equal(got["after"][n].cpu(), case["weights"][n].cpu())]
    if moved:
        raise failure(call=call, expected="the parameters unchanged (the scaler skips the step)",
                      got=f"{moved} changed", problem="the step was taken with non-finite gradients.",
                      hint=SKIP_HINT)
    if not got["scale"] < case["scale"]:
        raise failure(call=call, expected=f"the scale lowered from {case['scale']:g}", got=f"{got['scale']:g}",
                      hint="Call scaler.update() after scaler.step(optimizer): it lowers the scale after a "
                      "skipped step.")
    _expect_cleared(got, call)


@check(task="amp_step", points=1, rule=True)
def check_amp_step_autocast(api: Api, rng: torch.Generator, device: str) -> None:
    """rule: torch.autocast, and not torch.cuda.amp or torch.cpu.amp (read from your code), and a step right"""
    code = task_code(api.student.submission, "amp_step", stop={"softmax_cross_entropy", "SequenceClassifier"})
    used, hidden = names_used(code, ("autocast",)), unreadable(code)
    old = [u for u in used if "cuda.amp" in u.text or "cpu.amp" in u.text]
    case = _step_case(rng, device, None)
    if released_stub(code, "amp_step"):  # the untouched stub: its own error says "not implemented"
        api.observe_step.using(call=_step_call(case, device), hint=STEP_HINT)(case, device)
    if hidden or old or not used:
        found = listed(hidden + old) if hidden or old else "no torch.autocast in the code"
        raise failure(call="the judge's reading of the code of `amp_step`",
                      expected="torch.autocast (or torch.amp.autocast), no torch.cuda.amp or torch.cpu.amp, every "
                      "function called by its name", got=found, problem="the notebook's rule asks for the current "
                      "autocast API, so none of this exercise's checks counts.", hint=AUTOCAST_HINT,
                      breaks_rule=True)
    got = api.observe_step.using(call=_step_call(case, device), hint=STEP_HINT)(case, device)
    want = loss_and_grads(case)["loss"]
    if not (isinstance(got["returned"], float) and math.isclose(got["returned"], want, rel_tol=LOSS_RTOL)):
        raise failure(call=_step_call(case, device), expected=f"about {want:.6g}", got=show(got["returned"]),
                      problem="the rule's point needs a step right too.", hint=STEP_HINT)


# -- checkpoint and restore ------------------------------------------------------------------------------------------

RESUME_CPU, RESUME_CUDA = (0.0, 0.0), (1e-3, 1e-3)  # (rtol, atol): bit for bit on the CPU
CHECKPOINT_HINT = ("checkpoint returns copy.deepcopy({'model': model.state_dict(), 'optimizer': "
                   "optimizer.state_dict(), 'scaler': scaler.state_dict(), 'step': step, 'rng': "
                   "torch.get_rng_state()}); restore loads the three state_dicts into the objects it is given, calls "
                   "torch.set_rng_state(ckpt['rng']) and returns int(ckpt['step']).")
LOST_HINTS = {
    "optimizer": ("the run matches one whose optimizer started afresh at the checkpoint: AdamW's moving averages "
                  "and step counts were not restored.", "Save optimizer.state_dict() and load it with "
                  "optimizer.load_state_dict."),
    "rng": ("the run matches one whose random number generator was not restored: every dropout mask after the "
            "checkpoint differs.", "Save torch.get_rng_state() (and torch.cuda.get_rng_state_all() on a GPU) and "
            "set it back with torch.set_rng_state in restore."),
}
SCALER_HINT = ("The GradScaler's scale and its count of clean steps are state too: save scaler.state_dict() and "
               "load it with scaler.load_state_dict.")
COPY_HINT = ("model.state_dict(), optimizer.state_dict() and scaler.state_dict() hand out live tensors and dicts "
             "that the next steps change: return copy.deepcopy of the checkpoint.")
SAVE_HINT = ("Keep only tensors, numbers, strings, lists and dicts in the checkpoint (state_dicts and "
             "torch.get_rng_state() are), so that torch.load(..., weights_only=True) reads it back.")


def _resume_case(rng: torch.Generator, device: str, crash: int = 0, file: bool = False) -> dict[str, Any]:
    sizes = [VOCAB, _int(rng, 6, 16), CLASSES]
    at, after = _int(rng, 4, 10), _int(rng, 4, 8)
    saved = torch.get_rng_state()
    torch.manual_seed(_int(rng, 0, 2**31))
    initial, fresh = dict(Classifier(*sizes).state_dict()), dict(Classifier(*sizes).state_dict())
    torch.set_rng_state(saved)
    batches = [[t.to(device) for t in collate_oracle(make_sequences(8, rng))] for _ in range(at + after)]
    return {"sizes": sizes, "dropout": 0.1, "initial": initial, "fresh": fresh, "lr": 0.01,
            "scaler": {"init_scale": 2.0 ** _int(rng, 6, 12), "growth_interval": 3}, "batches": batches, "at": at,
            "crash": at + crash, "file": file, "seed": _int(rng, 0, 2**31), "reseed": _int(rng, 0, 2**31)}


@contextlib.contextmanager
def reference(api: Api, device: str) -> Iterator[Callable[..., ResumeRun]]:
    """The judge's runs of the kit's loop: in the judge's process on CPU; on CUDA in a clean child of kit code,
    where the GPU is. The judge's own random state is left as it was."""
    if device != "cuda":
        def run(case: dict[str, Any], lost: str | None = None) -> ResumeRun:
            with torch.random.fork_rng(devices=[]):
                return cast(ResumeRun, kit_reference_run(case, lost))

        yield run
        return
    with reference_process(api.student, "# kit code only: the judge's run of the capstone's loop") as ref:
        yield Api(ref).reference_run


def _describe_resume(case: dict[str, Any], device: str) -> str:
    total, at, crash = len(case["batches"]), case["at"], case["crash"]
    went_on = f"the first run trains on to step {crash}, " if crash > at else ""
    through = "torch.save and torch.load(weights_only=True), " if case["file"] else ""
    return (f"the notebook's model (dim {case['sizes'][1]}, dropout 0.1) with AdamW(lr=0.01) and "
            f"GradScaler({device!r}, init_scale={case['scaler']['init_scale']:g}, growth_interval=3), trained "
            f"{at} steps; ckpt = checkpoint(model, optimizer, scaler, {at}); {went_on}{through}torch.manual_seed "
            f"of another seed, fresh objects, start = restore(model, optimizer, scaler, ckpt), then training on "
            f"to {total} steps in all")


def _differences(got: dict[str, Tensor], want: dict[str, Tensor], tol: tuple[float, float]) -> list[str]:
    out = []
    for name, expected in want.items():
        have = got.get(name)
        if not isinstance(have, Tensor) or have.shape != expected.shape:
            out.append(f"{name}: {show(have)[:80]} instead of a tensor of shape {list(expected.shape)}")
        elif not torch.allclose(have.cpu().double(), expected.cpu().double(), rtol=tol[0], atol=tol[1]):
            gap = (have.cpu().double() - expected.cpu().double()).abs().max().item()
            out.append(f"{name}: off by up to {gap:.3g}")
    return out


def _resumed(api: Api, case: dict[str, Any], device: str, hint: str = CHECKPOINT_HINT) -> tuple[ResumeRun, str]:
    call = _describe_resume(case, device)
    got = api.resume_run.using(call=call, hint=hint)(case)
    if got["start"] != case["at"]:
        raise failure(call=call, expected=f"restore returns {case['at']}, the step of the checkpoint",
                      got=f"restore returned {got['start']}", hint="Store the step in the checkpoint and return "
                      "int(ckpt['step']) from restore.")
    return got, call


def _expect_weights(api: Api, got: ResumeRun, case: dict[str, Any], device: str, call: str,
                    hint: str = CHECKPOINT_HINT, problem: str = "") -> None:
    tol = RESUME_CUDA if device == "cuda" else RESUME_CPU
    with reference(api, device) as run:
        want = run(case)
        differences = _differences(got["state"], want["state"], tol)
        if not differences:
            return
        if not problem:
            for lost, (why, fix) in LOST_HINTS.items():
                if not _differences(got["state"], run(case, lost)["state"], tol):
                    problem, hint = why, fix
                    break
    raise failure(call=call, expected=f"the weights of the judge's uninterrupted run (rtol={tol[0]}, atol={tol[1]})",
                  got="; ".join(differences[:4]), problem=problem or "the resumed run left the uninterrupted one.",
                  hint=hint)


@check(task="checkpoint", points=2, visible=True)
def check_checkpoint_restores_run(api: Api, rng: torch.Generator, device: str) -> None:
    """restored at once into fresh objects after a reseed, the run ends with the uninterrupted run's weights
    (AdamW's state and the dropout masks' random state restored), and restore returns the step"""
    case = _resume_case(rng, device)
    got, call = _resumed(api, case, device)
    _expect_weights(api, got, case, device, call)


@check(task="checkpoint", points=1)
def check_checkpoint_scaler(api: Api, rng: torch.Generator, device: str) -> None:
    """the GradScaler's scale and count of clean steps at the end equal the uninterrupted run's"""
    case = _resume_case(rng, device)
    got, call = _resumed(api, case, device, SCALER_HINT)
    with reference(api, device) as run:
        want = run(case)
    if (got["scale"], got["tracker"]) != (want["scale"], want["tracker"]):
        raise failure(call=call, expected=f"scale {want['scale']:g} after {want['tracker']} clean steps since it "
                      "last changed", got=f"scale {got['scale']:g} after {got['tracker']}",
                      problem="the scaler was not restored.", hint=SCALER_HINT)


@check(task="checkpoint", points=1)
def check_checkpoint_snapshot_file(api: Api, rng: torch.Generator, device: str) -> None:
    """training goes on for some steps after checkpoint(), then the checkpoint goes through torch.save and
    torch.load(weights_only=True): the resumed run still ends with the uninterrupted run's weights"""
    case = _resume_case(rng, device, crash=_int(rng, 2, 4), file=True)
    got, call = _resumed(api, case, device, SAVE_HINT)
    at_once = {**case, "crash": case["at"]}
    with reference(api, device) as run:
        want = run(case)
    tol = RESUME_CUDA if device == "cuda" else RESUME_CPU
    if _differences(got["state"], want["state"], tol):
        again = api.resume_run.using(call=call, hint=CHECKPOINT_HINT)(at_once)
        live = not _differences(again["state"], want["state"], tol)
        _expect_weights(api, got, case, device, call, COPY_HINT if live else CHECKPOINT_HINT,
                        "restored at once the checkpoint resumes right; restored after more training it does not: "
                        "it holds live tensors, not copies." if live else "")


# -- train -----------------------------------------------------------------------------------------------------------

TRAIN_HINT = ("Seed with torch.manual_seed(seed), build the model, AdamW and the GradScaler, restore when resuming, "
              "then take one amp_step per batch of DataLoader(SequenceDataset(paths), batch_size=BATCH, "
              "collate_fn=pad_collate, generator=torch.Generator().manual_seed(seed)), epoch after epoch, and "
              "return checkpoint(model, optimizer, scaler, step).")
RESUME_HINT = ("A resumed run must take exactly the steps the uninterrupted one takes after the checkpoint: restore "
               "the optimizer, the scaler and the random state, skip the `step` batches already seen "
               "(itertools.islice), and give the DataLoader its own generator: starting an epoch draws from torch's "
               "global one.")
BUDGET_HINT = ("Take exactly `steps` steps (fewer with `stop`), whatever the data, and nothing that depends on "
               "`steps` (a schedule, an early stop), so that train(steps=k) is train(stop=k).")
SEQUENCES, SHARDS, HELD_OUT = 1024, 4, 512


def _shards(api: Api, rng: torch.Generator) -> list[str]:
    return write_shards(new_folder(api.student.data_dir), make_sequences(SEQUENCES, rng), SHARDS)


class TrainSummary(TypedDict):
    type: str  # the type train returned
    keys: list[str]  # its keys, when a dict
    step: Any  # its "step", an int, else its repr
    model: dict[str, Tensor]  # the tensors of its "model"


def _expect_result(result: TrainSummary, call: str, steps: int) -> dict[str, Tensor]:
    """The result is checkpoint(...) of `steps` steps of SequenceClassifier(16, 32, 4): its weights."""
    if result["type"] != "dict" or not result["model"]:
        raise failure(call=call, expected="checkpoint(model, optimizer, scaler, step): a dict with 'model' (a "
                      "state_dict) and 'step'", got=f"a {result['type']} with keys {result['keys']}",
                      hint=TRAIN_HINT)
    if result["step"] != steps:
        raise failure(call=call, expected=f"'step': {steps}, the number of steps taken", got=show(result["step"]),
                      hint=BUDGET_HINT)
    state, want = result["model"], _parameter_shapes(VOCAB, DIM, CLASSES)
    got = {name: list(t.shape) for name, t in state.items()}
    if any(got.get(name) != shape for name, shape in want.items()):
        raise failure(call=f"{call}, then result['model']", expected=f"the weights of SequenceClassifier(16, 32, 4): "
                      f"{want}", got=str(got), hint="Return checkpoint(model, ...): its 'model' is "
                      "model.state_dict() of SequenceClassifier(VOCAB, DIM, CLASSES).")
    return {name: state[name] for name in want}


@check(task="train", points=3, visible=True)
def check_train_reaches_target(api: Api, rng: torch.Generator, device: str) -> None:
    """train(paths) on the judge's shards: after the default 80 steps its weights classify 512 held-out sequences,
    which never leave the judge, with at least 90 % accuracy (read by the judge's own float64 forward pass)"""
    paths, seed = _shards(api, rng), _int(rng, 0, 1000)
    held_out = collate_oracle(make_sequences(HELD_OUT, rng))
    call = f"train([{SHARDS} shards of {SEQUENCES // SHARDS} sequences], seed={seed}, device={device!r})"
    weights = _expect_result(api.run_train.using(call=call, hint=TRAIN_HINT)(paths, device, seed), call, STEPS)
    tokens, mask, labels = held_out
    logits = classifier_oracle(weights, tokens, mask)
    accuracy = float((logits.argmax(1) == labels).double().mean())
    if not accuracy >= TARGET:
        found = "" if torch.isfinite(logits).all() else " (the weights hold inf or nan)"
        raise failure(call=call, inputs=[f"{HELD_OUT} held-out sequences of the same task, drawn by the judge"],
                      expected=f"accuracy >= {TARGET:.0%} on them after {STEPS} steps",
                      got=f"{accuracy:.1%}{found}", problem="the run does not learn the task within the budget.",
                      hint="Check each piece's own checks first (the mask, the loss, the step); then the learning "
                      "rate, training mode, and that every step sees a new batch. " + TRAIN_HINT)


def _expect_same(got: dict[str, Tensor], want: dict[str, Tensor], device: str, call: str, expected: str,
                 hint: str) -> None:
    tol = RESUME_CUDA if device == "cuda" else RESUME_CPU
    differences = _differences(got, want, tol)
    if differences:
        raise failure(call=call, expected=f"{expected} (rtol={tol[0]}, atol={tol[1]})",
                      got="; ".join(differences[:4]), hint=hint)


@check(task="train", points=2)
def check_train_resumes(api: Api, rng: torch.Generator, device: str) -> None:
    """stopped with stop=k (not at an epoch's end: other weights than the whole run's), saved, loaded and resumed,
    the run ends with the uninterrupted run's weights"""
    paths, seed = _shards(api, rng), _int(rng, 0, 1000)
    epoch = SEQUENCES // 32
    k = _int(rng, 1, STEPS // epoch) * epoch + _int(rng, 1, epoch)
    base = f"train(paths, seed={seed}, device={device!r}"
    full = _expect_result(api.run_train.using(call=base + ")", hint=TRAIN_HINT)(paths, device, seed), base + ")",
                          STEPS)
    call = f"part = {base}, stop={k}); torch.save and torch.load(part, weights_only=True); {base}, resume=part)"
    runs = api.run_resumed.using(call=call, hint=RESUME_HINT)(paths, device, seed, k)
    part = _expect_result(runs["part"], f"{base}, stop={k})", k)
    _expect_moved(part, full, f"{base}, stop={k}) against {base})", f"stopped after {k} steps")
    _expect_same(_expect_result(runs["resumed"], call, STEPS), full, device, call,
                 f"the weights of the uninterrupted {base})", RESUME_HINT)


@check(task="train", points=1)
def check_train_step_budget(api: Api, rng: torch.Generator, device: str) -> None:
    """the step budget: train(steps=k) takes k steps and returns the weights train(stop=k) stops with, and other
    weights than train(steps=k + 1)"""
    paths, seed = _shards(api, rng), _int(rng, 0, 1000)
    k = _int(rng, 5, STEPS // 2)
    base = f"train(paths, seed={seed}, device={device!r}"
    short_call, stop_call = f"{base}, steps={k})", f"{base}, stop={k})"
    short = _expect_result(api.run_train.using(call=short_call, hint=BUDGET_HINT)(paths, device, seed, steps=k),
                           short_call, k)
    stopped = _expect_result(api.run_train.using(call=stop_call, hint=BUDGET_HINT)(paths, device, seed, stop=k),
                             stop_call, k)
    _expect_same(short, stopped, device, f"{short_call} against {stop_call}",
                 f"the weights {stop_call} returns", BUDGET_HINT)
    longer_call = f"{base}, steps={k + 1})"
    longer = _expect_result(api.run_train.using(call=longer_call, hint=BUDGET_HINT)(paths, device, seed,
                                                                                     steps=k + 1), longer_call, k + 1)
    _expect_moved(short, longer, f"{short_call} against {longer_call}", f"{k} steps")


def _expect_moved(got: dict[str, Tensor], other: dict[str, Tensor], call: str, what: str) -> None:
    """Runs of different lengths end with different weights: a train that returns the same weights whatever it is
    asked has not stopped where it says it did."""
    if all(torch.equal(got[name], other[name]) for name in got):
        raise failure(call=call, expected=f"other weights after {what} than after more steps",
                      got="the same weights, bit for bit", problem="the run did not stop where its 'step' says.",
                      hint=BUDGET_HINT)
