"""Chapter 03_broadcasting: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it (autograder/course/cases.py
reads and checks it); the imports below are those of the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.course.cases import right, wrong

# -- Merge ---------------------------------------------------------------------------------------------------------


@wrong("tile and concatenate", fails={"check_merge_never_tiles": "tiled copy"})
def tile_and_concatenate():
    class Merge(nn.Module):
        def __init__(self, in_features1, in_features2, out_features, activation=None):
            super().__init__()
            self.linear1 = nn.Linear(in_features1, out_features)
            self.linear2 = nn.Linear(in_features2, out_features)
            self.activation = activation

        def forward(self, a, b):
            tiled_b = b.repeat(*[n // m for n, m in zip(a.shape[:-1], b.shape[:-1])], 1)  # noqa: B905
            weight = torch.cat([self.linear1.weight, self.linear2.weight], dim=1)
            c = F.linear(torch.cat([a, tiled_b], dim=-1), weight, self.linear1.bias + self.linear2.bias)
            return c if self.activation is None else self.activation(c)


@wrong("expand then contiguous", fails={"check_merge_never_tiles": "tiled copy"})
def expand_then_contiguous():
    class Merge(nn.Module):
        def __init__(self, in_features1, in_features2, out_features, activation=None):
            super().__init__()
            self.linear1 = nn.Linear(in_features1, out_features)
            self.linear2 = nn.Linear(in_features2, out_features)
            self.activation = activation

        def forward(self, a, b):
            b = b.expand(*a.shape[:-1], b.shape[-1]).contiguous()
            c = self.linear1(a) + self.linear2(b)
            return c if self.activation is None else self.activation(c)


@wrong("activation ignored", fails={"check_merge_activation": "self.activation once"})
def activation_ignored():
    class Merge(nn.Module):
        def __init__(self, in_features1, in_features2, out_features, activation=None):
            super().__init__()
            self.linear1 = nn.Linear(in_features1, out_features)
            self.linear2 = nn.Linear(in_features2, out_features)
            self.activation = activation

        def forward(self, a, b):
            return self.linear1(a) + self.linear2(b)


@wrong("bias added twice", fails={"check_merge_random_shapes": "its own bias"})
def bias_added_twice():
    class Merge(nn.Module):
        def __init__(self, in_features1, in_features2, out_features, activation=None):
            super().__init__()
            self.linear1 = nn.Linear(in_features1, out_features)
            self.linear2 = nn.Linear(in_features2, out_features)
            self.activation = activation

        def forward(self, a, b):
            c = self.linear1(a) + self.linear2(b) + self.linear1.bias
            return c if self.activation is None else self.activation(c)


@wrong("one joint layer", fails={"check_merge_structure": "linear1"})
def one_joint_layer():
    class Merge(nn.Module):
        def __init__(self, in_features1, in_features2, out_features, activation=None):
            super().__init__()
            self.linear = nn.Linear(in_features1 + in_features2, out_features)
            self.activation = activation

        def forward(self, a, b):
            c = self.linear(torch.cat([a, b.expand(*a.shape[:-1], b.shape[-1])], dim=-1))
            return c if self.activation is None else self.activation(c)


# -- paired_sums ---------------------------------------------------------------------------------------------------


@wrong("all pairs", fails={"check_paired_sums_random": "[N, N] table"})
def all_pairs():
    def paired_sums(a, b):
        return a + b


@wrong("squeeze without dim", fails={"check_paired_sums_single_pair": "squeeze(1)"})
def squeeze_without_dim():
    def paired_sums(a, b):
        return (a + b.unsqueeze(1)).squeeze()


# -- additive_scores -----------------------------------------------------------------------------------------------
# The stretch task (bonus).


@wrong("mask lined up with keys", fails={"check_additive_scores_lengths_per_example": "lengths[:, None]"})
def mask_lined_up_with_keys():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
        real = torch.arange(k.shape[1]) < lengths
        return s.masked_fill(~real, float("-inf"))


@wrong("mask multiplied in", fails={"check_additive_scores_random": "0 * -inf = nan"})
def mask_multiplied_in():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
        real = (torch.arange(k.shape[1]) < lengths[:, None])[:, None, :]
        return s * real + float("-inf") * ~real


@wrong("pairs concatenated", fails={"check_additive_scores_never_tiles": "tiled copy"})
def pairs_concatenated():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        B, N, M = q.shape[0], q.shape[1], k.shape[1]
        pairs = torch.cat([q[:, :, None].expand(B, N, M, -1), k[:, None].expand(B, N, M, -1)], dim=-1)
        s = torch.tanh(pairs @ torch.cat([w_q, w_k], dim=1).T) @ v
        real = torch.arange(M) < lengths[:, None]
        return s.masked_fill(~real[:, None], float("-inf"))


@wrong("queries and keys axes swapped", fails={"check_additive_scores_random": "Swapping the two new axes"})
def queries_and_keys_axes_swapped():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = torch.tanh((q @ w_q.T)[:, None] + (k @ w_k.T)[:, :, None]) @ v
        real = torch.arange(k.shape[1]) < lengths[:, None]
        return s.masked_fill(~real[:, :, None], float("-inf"))


@wrong("padding filled in a loop", fails={"check_additive_scores_never_tiles": "loops in Python"})
def padding_filled_in_a_loop():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
        s = s.clone()
        for b in range(len(lengths)):
            s[b, :, int(lengths[b]):] = float("-inf")
        return s


@wrong("scores squeezed without dim", fails={"check_additive_scores_sizes_of_one": "squeeze(1)"})
def scores_squeezed_without_dim():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = (torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v[:, None]).squeeze()
        real = torch.arange(k.shape[1]) < lengths[:, None]
        return s.masked_fill(~real[:, None], float("-inf"))


@wrong("v applied before tanh", fails={"check_additive_scores_random": "then contract H with v"})
def v_applied_before_tanh():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        s = torch.tanh((q @ w_q.T @ v)[:, :, None] + (k @ w_k.T @ v)[:, None])
        real = torch.arange(k.shape[1]) < lengths[:, None]
        return s.masked_fill(~real[:, None], float("-inf"))


@wrong("scores detached", fails={"check_additive_scores_gradients": "avoid .detach()"})
def scores_detached():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        with torch.no_grad():
            s = torch.tanh((q @ w_q.T)[:, :, None] + (k @ w_k.T)[:, None]) @ v
        real = torch.arange(k.shape[1]) < lengths[:, None]
        return s.masked_fill(~real[:, None], float("-inf"))


# -- additive_scores: correct forms --------------------------------------------------------------------------------


@right("einsum + where", only="additive_scores", bonus=5)
def einsum_where():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        pq = torch.einsum("bnd,hd->bnh", q, w_q)
        pk = torch.einsum("bmd,hd->bmh", k, w_k)
        s = torch.einsum("bnmh,h->bnm", torch.tanh(pq.unsqueeze(2) + pk.unsqueeze(1)), v)
        pad = torch.arange(k.shape[1], device=k.device).unsqueeze(0) >= lengths.unsqueeze(1)
        return torch.where(pad.unsqueeze(1), torch.tensor(float("-inf"), dtype=s.dtype), s)


@right("F.linear + sum", only="additive_scores", bonus=5)
def f_linear_sum():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        pq = F.linear(q, w_q)[:, :, None]
        pk = F.linear(k, w_k)[:, None]
        s = (torch.tanh(pq + pk) * v).sum(-1)
        mask = lengths.view(-1, 1, 1) <= torch.arange(k.shape[1], device=k.device)
        return s.masked_fill(mask, -float("inf"))


@right("transposed weights, in-place fill", only="additive_scores", bonus=5)
def transposed_weights_in_place_fill():
    def additive_scores(q, k, lengths, w_q, w_k, v):
        h = torch.tanh((q @ w_q.T).unsqueeze(-2) + (k @ w_k.T).unsqueeze(-3))
        s = h @ v
        keys = torch.arange(k.shape[1], device=k.device).expand(len(lengths), -1)
        s.masked_fill_((keys >= lengths[:, None])[:, None, :], float("-inf"))
        return s
