"""Chapter 09_capstone: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import copy
import io
import itertools
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from autograder.judging.authoring import right, wrong

# -- pad_collate -----------------------------------------------------------------------------------------------------


@wrong("pads without a mask", fails={"check_collate_example": "the mask must be True exactly",
                                     "check_collate_random": "the mask must be True exactly"}, example="ben")
def pads_without_a_mask():
    PAD = 0

    def pad_collate(batch):
        padded = nn.utils.rnn.pad_sequence([t for t, _ in batch], batch_first=True, padding_value=PAD)
        return padded, torch.ones_like(padded, dtype=torch.bool), torch.tensor([y for _, y in batch])


@wrong("pads on the left", fails={"check_collate_example": "The tokens are wrong",
                                  "check_collate_random": "The tokens are wrong"})
def pads_on_the_left():
    PAD = 0

    def pad_collate(batch):
        longest = max(len(t) for t, _ in batch)
        tokens = torch.full((len(batch), longest), PAD, dtype=torch.int64)
        mask = torch.zeros(len(batch), longest, dtype=torch.bool)
        for i, (t, _) in enumerate(batch):
            tokens[i, longest - len(t):] = t
            mask[i, longest - len(t):] = True
        return tokens, mask, torch.tensor([y for _, y in batch])


@right("rows filled one by one, the mask from the padding token", only="collate", points=3)
def mask_from_the_padding_token():
    PAD = 0

    def pad_collate(batch):
        longest = max(t.shape[0] for t, _ in batch)
        tokens = torch.full((len(batch), longest), PAD, dtype=torch.int64)
        for i, (t, _) in enumerate(batch):
            tokens[i, :t.shape[0]] = t
        return tokens, tokens != PAD, torch.as_tensor([int(y) for _, y in batch], dtype=torch.int64)


@right("the mask padded from rows of True", only="collate", points=3)
def mask_padded_from_rows_of_true():
    PAD = 0

    def pad_collate(batch):
        tokens = nn.utils.rnn.pad_sequence([t for t, _ in batch], batch_first=True, padding_value=PAD)
        mask = nn.utils.rnn.pad_sequence([torch.ones_like(t, dtype=torch.bool) for t, _ in batch], batch_first=True)
        return tokens, mask, torch.tensor([y for _, y in batch], dtype=torch.long)


# -- SequenceDataset -------------------------------------------------------------------------------------------------


@wrong("every worker reads every shard", fails={"check_dataset_workers": "read every shard"})
def every_worker_reads_every_shard():
    class SequenceDataset(IterableDataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = list(paths)

        def __iter__(self):
            for path in self.paths:
                with np.load(path) as shard:
                    tokens, lengths, labels = shard["tokens"], shard["lengths"], shard["labels"]
                start = 0
                for length, label in zip(lengths, labels, strict=True):
                    yield torch.from_numpy(tokens[start:start + length]), int(label)
                    start += length


@wrong("numpy tokens", fails={"check_dataset_main_process": "not an (int64 [L] tensor, int) pair"})
def numpy_tokens():
    class SequenceDataset(IterableDataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = list(paths)

        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            for path in self.paths[me::workers]:
                with np.load(path) as shard:
                    ends = np.cumsum(shard["lengths"])
                    for end, length, label in zip(ends, shard["lengths"], shard["labels"], strict=True):
                        yield shard["tokens"][end - length:end], int(label)


@right("np.split at the cumulative lengths, shards by islice", only="dataset", points=3)
def split_at_cumulative_lengths():
    class SequenceDataset(IterableDataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = paths

        def __iter__(self):
            info = get_worker_info()
            mine = self.paths if info is None else itertools.islice(self.paths, info.id, None, info.num_workers)
            for path in mine:
                shard = np.load(path)
                pieces = np.split(shard["tokens"], np.cumsum(shard["lengths"])[:-1])
                for piece, label in zip(pieces, shard["labels"].tolist(), strict=True):
                    yield torch.tensor(piece, dtype=torch.int64), label


# -- SequenceClassifier ----------------------------------------------------------------------------------------------


@wrong("mean over every position", fails={"check_classifier_logits": "padding included"},
       edits="SequenceClassifier")
def mean_over_every_position():
    class SequenceClassifier(nn.Module):
        def forward(self, tokens, mask):
            pooled = self.embed(tokens).mean(1)
            return self.out(self.drop(torch.relu(self.hidden(pooled))))


@wrong("a loop over the rows", fails={"check_classifier_no_loop": "builtin zip iterates"}, edits="SequenceClassifier")
def loop_over_the_rows():
    class SequenceClassifier(nn.Module):
        def forward(self, tokens, mask):
            pooled = torch.stack([self.embed(t[m]).mean(0) for t, m in zip(tokens, mask, strict=True)])
            return self.out(self.drop(torch.relu(self.hidden(pooled))))


@right("einsum over the masked embeddings", only="classifier", points=4, edits="SequenceClassifier")
def einsum_pooling():
    class SequenceClassifier(nn.Module):
        def forward(self, tokens, mask):
            weights = mask.to(self.embed.weight.dtype)
            pooled = torch.einsum("btd,bt->bd", self.embed(tokens), weights) / weights.sum(1, keepdim=True)
            return self.out(self.drop(F.relu(self.hidden(pooled))))


@right("masked_fill, then the sum over the counts", only="classifier", points=4, edits="SequenceClassifier")
def masked_fill_pooling():
    class SequenceClassifier(nn.Module):
        def forward(self, tokens, mask):
            embedded = self.embed(tokens).masked_fill(~mask[:, :, None], 0.0)
            pooled = embedded.sum(dim=1) / mask.sum(dim=1, keepdim=True)
            return self.out(self.drop(self.hidden(pooled).clamp(min=0)))


# -- softmax_cross_entropy -------------------------------------------------------------------------------------------


@wrong("log of softmax", fails={"check_xent_stable": "found inf"})
def log_of_softmax():
    def softmax_cross_entropy(labels, logits, dim=-1):
        e = torch.exp(logits - logits.amax(dim=dim, keepdim=True))
        return -(labels * torch.log(e / e.sum(dim=dim, keepdim=True))).sum(dim=dim)


@wrong("library cross entropy", fails={"check_xent_by_hand": "cross_entropy"})
def library_cross_entropy():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return F.cross_entropy(logits.movedim(dim, -1).reshape(-1, logits.shape[dim]),
                               labels.movedim(dim, -1).reshape(-1, logits.shape[dim]),
                               reduction="none").reshape(labels.movedim(dim, -1).shape[:-1])


@right("split sums: -sum(labels * x) + sum(labels) * logsumexp", only="xent", points=2)
def split_sums():
    def softmax_cross_entropy(labels, logits, dim=-1):
        top = logits.amax(dim=dim, keepdim=True)
        lse = (top + torch.log(torch.exp(logits - top).sum(dim=dim, keepdim=True))).squeeze(dim)
        return -(labels * logits).sum(dim=dim) + labels.sum(dim=dim) * lse


# -- amp_step --------------------------------------------------------------------------------------------------------


@wrong("no autocast", fails={"check_amp_step_autocast": "no torch.autocast"})
def no_autocast():
    def amp_step(model, optimizer, scaler, tokens, mask, labels, device_type="cpu", dtype=torch.bfloat16):
        logits = model(tokens, mask)
        loss = softmax_cross_entropy(F.one_hot(labels, logits.shape[-1]).float(), logits.float()).mean()  # noqa: F821
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return loss.item()


@wrong("the optimizer steps on the scaled gradients", fails={"check_amp_step_updates": "away from it"})
def optimizer_steps_itself():
    def amp_step(model, optimizer, scaler, tokens, mask, labels, device_type="cpu", dtype=torch.bfloat16):
        with torch.autocast(device_type=device_type, dtype=dtype):
            logits = model(tokens, mask)
        loss = softmax_cross_entropy(F.one_hot(labels, logits.shape[-1]).float(), logits.float()).mean()  # noqa: F821
        scaler.scale(loss).backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()


@wrong("no zero_grad", fails={"check_amp_step_updates": "no gradient left"})
def no_zero_grad():
    def amp_step(model, optimizer, scaler, tokens, mask, labels, device_type="cpu", dtype=torch.bfloat16):
        with torch.autocast(device_type=device_type, dtype=dtype):
            logits = model(tokens, mask)
        loss = softmax_cross_entropy(F.one_hot(labels, logits.shape[-1]).float(), logits.float()).mean()  # noqa: F821
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()


@right("torch.amp.autocast around the loss too, float(loss)", only="amp_step", points=2)
def amp_autocast_around_the_loss():
    def amp_step(model, optimizer, scaler, tokens, mask, labels, device_type="cpu", dtype=torch.bfloat16):
        optimizer.zero_grad()
        with torch.amp.autocast(device_type, dtype=dtype):
            logits = model(tokens, mask).float()
            one_hot = torch.zeros_like(logits).scatter_(1, labels[:, None], 1.0)
            loss = softmax_cross_entropy(one_hot, logits).mean()  # noqa: F821
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        return float(loss)


@right("one-hot rows of an identity matrix, zero_grad(set_to_none=False)", only="amp_step", points=2)
def identity_rows_and_zeroed_grads():
    def amp_step(model, optimizer, scaler, tokens, mask, labels, device_type="cpu", dtype=torch.bfloat16):
        with torch.autocast(device_type=device_type, dtype=dtype):
            logits = model(tokens, mask)
        one_hot = torch.eye(logits.shape[1], device=logits.device)[labels]
        loss = softmax_cross_entropy(one_hot, logits.float()).sum() / labels.shape[0]  # noqa: F821
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=False)
        return loss.detach().item()


# -- checkpoint and restore ------------------------------------------------------------------------------------------


@wrong("forgets the optimizer", fails={"check_checkpoint_restores_run": "optimizer started afresh"}, edits="checkpoint")
def forgets_the_optimizer():
    def restore(model, optimizer, scaler, ckpt):
        model.load_state_dict(ckpt["model"])
        scaler.load_state_dict(ckpt["scaler"])
        torch.set_rng_state(ckpt["rng"])
        return int(ckpt["step"])


@wrong("forgets the random state", fails={"check_checkpoint_restores_run": "random number generator"},
       edits="checkpoint")
def forgets_the_random_state():
    def restore(model, optimizer, scaler, ckpt):
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        return int(ckpt["step"])


@wrong("forgets the scaler", fails={"check_checkpoint_scaler": "scaler was not restored"}, edits="checkpoint")
def forgets_the_scaler():
    def restore(model, optimizer, scaler, ckpt):
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        torch.set_rng_state(ckpt["rng"])
        return int(ckpt["step"])


@wrong("live state_dicts, no copy", fails={"check_checkpoint_snapshot_file": "live tensors"}, edits="checkpoint")
def live_state_dicts():
    def checkpoint(model, optimizer, scaler, step):
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(),
                "step": step, "rng": torch.get_rng_state()}


@wrong("the objects themselves", fails={"check_checkpoint_snapshot_file": "weights_only=True"}, edits="checkpoint")
def the_objects_themselves():
    def checkpoint(model, optimizer, scaler, step):
        return copy.deepcopy({"model": model, "optimizer": optimizer, "scaler": scaler, "step": step,
                              "rng": torch.get_rng_state()})

    def restore(model, optimizer, scaler, ckpt):
        model.load_state_dict(ckpt["model"].state_dict())
        optimizer.load_state_dict(ckpt["optimizer"].state_dict())
        scaler.load_state_dict(ckpt["scaler"].state_dict())
        torch.set_rng_state(ckpt["rng"])
        return int(ckpt["step"])


@right("every tensor cloned, torch.random's get/set_rng_state", only="checkpoint", points=4)
def every_tensor_cloned():
    def _copied(value):
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {key: _copied(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [_copied(item) for item in value]
        return value

    def checkpoint(model, optimizer, scaler, step):
        return {"model": _copied(model.state_dict()), "optimizer": _copied(optimizer.state_dict()),
                "scaler": _copied(scaler.state_dict()), "step": int(step), "rng": torch.random.get_rng_state(),
                "cuda": [_copied(s) for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_available() else []}

    def restore(model, optimizer, scaler, ckpt):
        torch.random.set_rng_state(ckpt["rng"])
        if ckpt["cuda"]:
            torch.cuda.set_rng_state_all(ckpt["cuda"])
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        return ckpt["step"]


@right("a snapshot through torch.save and torch.load", only="checkpoint", points=4)
def snapshot_through_torch_save():
    def checkpoint(model, optimizer, scaler, step):
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(),
                    "step": step, "rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True)

    def restore(model, optimizer, scaler, ckpt):
        for target, key in ((model, "model"), (optimizer, "optimizer"), (scaler, "scaler")):
            target.load_state_dict(ckpt[key])
        torch.set_rng_state(ckpt["rng"])
        if ckpt["cuda_rng"] is not None:
            torch.cuda.set_rng_state_all(ckpt["cuda_rng"])
        return int(ckpt["step"])


# -- train -----------------------------------------------------------------------------------------------------------


@wrong("ignores `steps`", fails={"check_train_step_budget": "the number of steps taken"}, edits="train")
def ignores_steps():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        dtype = torch.float16 if device == "cuda" else torch.bfloat16
        start = 0 if resume is None else restore(model, optimizer, scaler, resume)  # noqa: F821
        end = STEPS if stop is None else stop  # noqa: F821
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        stream = (batch for _ in itertools.count() for batch in loader)
        step = start
        for tokens, mask, labels in itertools.islice(stream, start, max(start, end)):
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=dtype)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@wrong("a learning-rate schedule over `steps`", fails={"check_train_step_budget": "off by"}, edits="train")
def schedule_over_steps():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        dtype = torch.float16 if device == "cuda" else torch.bfloat16
        start = 0 if resume is None else restore(model, optimizer, scaler, resume)  # noqa: F821
        end = steps if stop is None else min(steps, stop)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        stream = (batch for _ in itertools.count() for batch in loader)
        step = start
        for tokens, mask, labels in itertools.islice(stream, start, max(start, end)):
            for group in optimizer.param_groups:
                group["lr"] = LR * 0.5 * (1 + math.cos(math.pi * step / steps))  # noqa: F821
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=dtype)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@wrong("resume restarts the data", fails={"check_train_resumes": "off by"}, edits="train")
def resume_restarts_the_data():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        dtype = torch.float16 if device == "cuda" else torch.bfloat16
        start = 0 if resume is None else restore(model, optimizer, scaler, resume)  # noqa: F821
        end = steps if stop is None else min(steps, stop)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        stream = (batch for _ in itertools.count() for batch in loader)
        step = start
        for tokens, mask, labels in itertools.islice(stream, max(0, end - start)):
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=dtype)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@wrong("the loader draws from torch's global generator", fails={"check_train_resumes": "off by"}, edits="train")
def loader_draws_from_the_global_generator():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        dtype = torch.float16 if device == "cuda" else torch.bfloat16
        start = 0 if resume is None else restore(model, optimizer, scaler, resume)  # noqa: F821
        end = steps if stop is None else min(steps, stop)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate)  # noqa: F821
        stream = (batch for _ in itertools.count() for batch in loader)
        step = start
        for tokens, mask, labels in itertools.islice(stream, start, max(start, end)):
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=dtype)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@wrong("a learning rate 100 times too small", fails={"check_train_reaches_target": "does not learn"}, edits="train")
def learning_rate_too_small():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        dtype = torch.float16 if device == "cuda" else torch.bfloat16
        start = 0 if resume is None else restore(model, optimizer, scaler, resume)  # noqa: F821
        end = steps if stop is None else min(steps, stop)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        stream = (batch for _ in itertools.count() for batch in loader)
        step = start
        for tokens, mask, labels in itertools.islice(stream, start, max(start, end)):
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=dtype)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@wrong("ignores stop and resume, reports the step asked", fails={"check_train_resumes": "did not stop",
                                                                "check_train_step_budget": "did not stop"},
       edits="train")
def ignores_stop_and_resume():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        stream = (batch for _ in itertools.count() for batch in loader)
        for tokens, mask, labels in itertools.islice(stream, STEPS):  # noqa: F821
            amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device), labels.to(device),  # noqa: F821
                     device_type=device, dtype=torch.float16 if device == "cuda" else torch.bfloat16)
        return checkpoint(model, optimizer, scaler, steps if stop is None else min(steps, stop))  # noqa: F821


@right("a while loop over epochs, skipping by counting", only="train", points=6, edits="train")
def while_loop_over_epochs():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES)  # noqa: F821
        model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        step = restore(model, optimizer, scaler, resume) if resume is not None else 0  # noqa: F821
        last = min(steps, stop if stop is not None else steps)
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        seen = 0
        while step < last:
            for tokens, mask, labels in loader:
                if step >= last:
                    break
                if seen < step:
                    seen += 1
                    continue
                loss = amp_step(model, optimizer, scaler, tokens.to(device), mask.to(device),  # noqa: F821
                                labels.to(device), device, torch.float16 if device == "cuda" else torch.bfloat16)
                if losses is not None:
                    losses.append(loss)
                step += 1
                seen += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821


@right("epochs chained from a repeated loader, skipped with next()", only="train", points=6, edits="train")
def chained_epochs():
    def train(paths, steps=STEPS, seed=0, device="cpu", resume=None, stop=None, losses=None):  # noqa: F821
        torch.manual_seed(seed)
        model = SequenceClassifier(VOCAB, DIM, CLASSES).to(device)  # noqa: F821
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # noqa: F821
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=16)
        low = {"cuda": torch.float16}.get(device, torch.bfloat16)
        step = 0
        if resume is not None:
            step = restore(model, optimizer, scaler, resume)  # noqa: F821
        loader = DataLoader(SequenceDataset(paths), batch_size=BATCH, collate_fn=pad_collate,  # noqa: F821
                            generator=torch.Generator().manual_seed(seed))
        batches = itertools.chain.from_iterable(itertools.repeat(loader))
        for _ in range(step):
            next(batches)
        while step < (steps if stop is None else min(stop, steps)):
            tokens, mask, labels = (t.to(device) for t in next(batches))
            loss = amp_step(model, optimizer, scaler, tokens, mask, labels, device, low)  # noqa: F821
            if losses is not None:
                losses.append(loss)
            step += 1
        return checkpoint(model, optimizer, scaler, step)  # noqa: F821
