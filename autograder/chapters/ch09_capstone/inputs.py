"""Inputs for 09_capstone: the judge's own sequences, shards and batches, drawn from a check's `rng`.

The task is the notebook's: a sequence of tokens 1 to VOCAB - 1 whose class is the marker token (1 to CLASSES)
it holds most often; 0 is padding. Shards are .npz files the judge writes under the grading's data folder
(`tokens` all sequences end to end, `lengths`, `labels`), so it knows every sequence a dataset must yield.
Held-out sequences never leave the judge's process.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

VOCAB, CLASSES, DIM = 16, 4, 32  # the notebook's sizes; token 0 pads, 1 to CLASSES mark a class
MIN_LEN, MAX_LEN = 4, 20

Sequence = tuple[Tensor, int]  # int64 tokens [L], label


def make_sequences(count: int, rng: torch.Generator) -> list[Sequence]:
    """`count` sequences of 4 to 20 tokens: filler tokens with a few markers, the label's marker strictly most
    often (each other marker at most length // 4 - 1 times, the label's once more than the most of them)."""
    out = []
    for _ in range(count):
        length = int(torch.randint(MIN_LEN, MAX_LEN + 1, (1,), generator=rng))
        label = int(torch.randint(0, CLASSES, (1,), generator=rng))
        tokens = torch.randint(CLASSES + 1, VOCAB, (length,), generator=rng)
        counts = torch.randint(0, max(1, length // 4), (CLASSES,), generator=rng)
        counts[label] = counts.max() + 1
        markers = torch.repeat_interleave(torch.arange(1, CLASSES + 1), counts)
        tokens[torch.randperm(length, generator=rng)[:len(markers)]] = markers
        out.append((tokens, label))
    return out


def write_shards(folder: Path, sequences: list[Sequence], n_shards: int) -> list[str]:
    """The sequences in order, in `n_shards` .npz files of consecutive runs (as even as can be)."""
    paths = []
    for i, part in enumerate(np.array_split(np.arange(len(sequences)), n_shards)):
        chosen = [sequences[j] for j in part]
        path = folder / f"shard-{i:02d}.npz"
        np.savez(path, tokens=np.concatenate([t.numpy() for t, _ in chosen]).astype(np.int64),
                 lengths=np.array([len(t) for t, _ in chosen], dtype=np.int64),
                 labels=np.array([label for _, label in chosen], dtype=np.int64))
        paths.append(str(path))
    return paths


def new_folder(data_dir: Path) -> Path:
    """A new folder under the grading's data folder, for one check's files, readable by the student's process."""
    folder = Path(tempfile.mkdtemp(dir=data_dir))
    folder.chmod(0o755)
    return folder


def collate_oracle(batch: list[Sequence]) -> tuple[Tensor, Tensor, Tensor]:
    """(tokens [B, T] padded with 0 on the right, mask [B, T] True on real tokens, labels [B]), by the definition."""
    longest = max(len(t) for t, _ in batch)
    tokens = torch.zeros(len(batch), longest, dtype=torch.int64)
    mask = torch.zeros(len(batch), longest, dtype=torch.bool)
    for i, (t, _) in enumerate(batch):
        tokens[i, :len(t)] = t
        mask[i, :len(t)] = True
    return tokens, mask, torch.tensor([label for _, label in batch], dtype=torch.int64)


def garbage_padding(tokens: Tensor, mask: Tensor, rng: torch.Generator) -> Tensor:
    """The tokens with random valid tokens where the mask is False: a model must not read them."""
    noise = torch.randint(0, VOCAB, tokens.shape, generator=rng)
    return torch.where(mask, tokens, noise)


def random_batch(rng: torch.Generator, size: int, vocab: int = VOCAB, equal: bool = False) -> list[Sequence]:
    """`size` sequences of random tokens 1 to vocab - 1 and labels, lengths 1 to 12 (all equal with `equal`)."""
    first = int(torch.randint(1, 13, (1,), generator=rng))
    out = []
    for _ in range(size):
        length = first if equal else int(torch.randint(1, 13, (1,), generator=rng))
        out.append((torch.randint(1, vocab, (length,), generator=rng), int(torch.randint(0, CLASSES, (1,),
                                                                                         generator=rng))))
    return out
