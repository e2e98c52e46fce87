"""Chapter 05_batch_gather: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it (autograder/course/cases.py
reads and checks it); the imports below are those of the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import torch

from autograder.judging.authoring import right, wrong

# -- batch_gather --------------------------------------------------------------------------------------------------


@wrong("loop", fails={"check_batch_gather_speed": "a loop of torch operations"}, example="ben")
def loop():
    def batch_gather(tensor, indices):
        output = []
        for i in range(tensor.size(0)):
            output += [tensor[i][indices[i]]]
        return torch.stack(output)


@wrong("scripted loop", fails={"check_batch_gather_speed": "torch.jit.script"})
def scripted_loop():
    @torch.jit.script
    def batch_gather(tensor, indices):
        output = []
        for i in range(tensor.size(0)):
            output += [tensor[i][indices[i]]]
        return torch.stack(output)


@wrong("numpy loop", fails={"check_batch_gather_speed": "loops in numpy"})
def numpy_loop():
    import numpy as np

    def batch_gather(tensor, indices):
        t, i = tensor.numpy(), indices.numpy()
        return torch.from_numpy(np.stack([t[b].take(i[b], axis=0) for b in range(t.shape[0])]))


@wrong("python numbers loop", fails={"check_batch_gather_speed": "over Python numbers"})
def python_numbers_loop():
    def batch_gather(tensor, indices):
        rows, index = tensor.tolist(), indices.tolist()
        return torch.tensor([[row[k] for k in ks] for row, ks in zip(rows, index, strict=True)],
                            dtype=tensor.dtype, device=tensor.device)


@wrong("hard-coded .cuda()", fails={"check_batch_gather_device": "device=indices.device"})
def hard_coded_cuda():
    """The guide's batch_gather_vec, as printed."""
    def batch_gather(tensor, indices):
        shape = list(tensor.shape)
        flat_first = torch.reshape(tensor, [shape[0] * shape[1]] + shape[2:])  # noqa: RUF005 (the guide's code)
        offset = torch.reshape(torch.arange(shape[0]).cuda() * shape[1], [shape[0]] + [1] * (len(indices.shape) - 1))
        return flat_first[indices + offset]


@wrong("offsets right only for [B] indices", fails={"check_batch_gather_index_tensors": "broadcast"})
def offsets_right_only_for_b_indices():
    def batch_gather(tensor, indices):
        b, n = tensor.shape[:2]
        flat = tensor.reshape(b * n, *tensor.shape[2:])
        return flat[indices + torch.arange(b, device=indices.device) * n]


@wrong("offsets stepped by the last axis", fails={"check_batch_gather_row_indices": "tensor.shape[1]"})
def offsets_stepped_by_the_last_axis():
    def batch_gather(tensor, indices):
        b = tensor.shape[0]
        flat = tensor.reshape(b * tensor.shape[1], *tensor.shape[2:])
        offsets = torch.arange(b, device=indices.device) * tensor.shape[-1]
        return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]


@wrong(".data", fails={"check_batch_gather_gradient": "autograd graph"})
def dot_data():
    def batch_gather(tensor, indices):
        b, n = tensor.shape[:2]
        flat = tensor.data.reshape(b * n, *tensor.shape[2:])
        offsets = torch.arange(b, device=indices.device) * n
        return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]


@wrong("gradient overwritten", fails={"check_batch_gather_gradient": "adds up"})
def gradient_overwritten():
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


@wrong("no range check", fails={"check_batch_gather_out_of_range": "silent garbage"})
def no_range_check():
    def batch_gather(tensor, indices):
        b, n = tensor.shape[:2]
        flat = tensor.reshape(b * n, *tensor.shape[2:])
        offsets = torch.arange(b, device=indices.device) * n
        return flat[indices + offsets.reshape([b] + [1] * (indices.dim() - 1))]


@wrong("range check only above N", fails={"check_batch_gather_out_of_range": "-1"})
def range_check_only_above():
    """Negative indices pass the check and plain indexing reads them Python-style, from the end of the row."""
    def batch_gather(tensor, indices):
        if bool((indices >= tensor.shape[1]).any()):
            raise IndexError(f"index {int(indices.max())} is out of range for N = {tensor.shape[1]}")
        rows = torch.arange(tensor.shape[0], device=indices.device).reshape([-1] + [1] * (indices.dim() - 1))
        return tensor[rows, indices]


# -- batch_scatter_add ---------------------------------------------------------------------------------------------
# The stretch task (bonus).


@wrong("+= on advanced index",
       fails={"check_scatter_add_notebook_example": "accumulate", "check_scatter_add_collisions": "add up"})
def plus_equals_on_advanced_index():
    def batch_scatter_add(values, indices, n):
        b = indices.shape[0]
        rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1))
        out = values.new_zeros((b, n, *values.shape[indices.dim():]))
        out[rows, indices.long()] += values
        return out


@wrong("index_put without accumulate", fails={"check_scatter_add_collisions": "index_put_(..., accumulate=True)"})
def index_put_without_accumulate():
    def batch_scatter_add(values, indices, n):
        b = indices.shape[0]
        rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1)).expand(indices.shape)
        out = values.new_zeros((b, n, *values.shape[indices.dim():]))
        return out.index_put((rows, indices.long()), values)


@wrong("loop over rows", fails={"check_scatter_add_vectorized": "a loop of torch operations"})
def loop_over_rows():
    def batch_scatter_add(values, indices, n):
        rows = [values.new_zeros((n, *values.shape[indices.dim():])).index_add(0, indices[i].reshape(-1).long(),
                values[i].reshape(-1, *values.shape[indices.dim():])) for i in range(indices.shape[0])]
        return torch.stack(rows)


@wrong("numpy loop over rows", fails={"check_scatter_add_vectorized": "loops in numpy"})
def numpy_loop_over_rows():
    import numpy as np

    def batch_scatter_add(values, indices, n):
        v, idx = values.numpy(), indices.numpy()
        trailing = v.shape[idx.ndim:]
        out = np.zeros((v.shape[0], n, *trailing), dtype=v.dtype)
        for b in range(v.shape[0]):
            np.add.at(out[b], idx[b].reshape(-1), v[b].reshape(-1, *trailing))
        return torch.from_numpy(out)


@wrong("float32 result", fails={"check_scatter_add_shapes_and_dtypes": "values.dtype"})
def float32_result():
    def batch_scatter_add(values, indices, n):
        b, e = indices.shape[0], values.shape[indices.dim():]
        flat = (indices + n * torch.arange(b, device=indices.device)
                .reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
        out = torch.zeros((b * n, *e), device=values.device)
        return out.index_add(0, flat, values.reshape(-1, *e).float()).reshape(b, n, *e)


@wrong("n slots taken from the indices", fails={
    "check_scatter_add_notebook_example": "indices.max() + 1",
    "check_scatter_add_collisions": "indices.max() + 1",
})
def n_slots_taken_from_the_indices():
    def batch_scatter_add(values, indices, n):
        n = int(indices.max()) + 1
        b, e = indices.shape[0], values.shape[indices.dim():]
        flat = (indices + n * torch.arange(b, device=indices.device)
                .reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
        return values.new_zeros((b * n, *e)).index_add(0, flat, values.reshape(-1, *e)).reshape(b, n, *e)


@wrong("trailing axes flattened into K", fails={"check_scatter_add_shapes_and_dtypes": "trailing axis"})
def trailing_axes_flattened_into_k():
    def batch_scatter_add(values, indices, n):
        b = indices.shape[0]
        idx, src = indices.long().reshape(b, -1), values.reshape(b, -1)
        return values.new_zeros((b, n)).scatter_add(1, idx, src[:, :idx.shape[1]])


@wrong("detached values", fails={"check_scatter_add_gradient": "autograd graph"})
def detached_values():
    def batch_scatter_add(values, indices, n):
        b, e = indices.shape[0], values.shape[indices.dim():]
        flat = (indices + n * torch.arange(b, device=indices.device)
                .reshape([b] + [1] * (indices.dim() - 1))).reshape(-1)
        return values.new_zeros((b * n, *e)).index_add(0, flat, values.detach().reshape(-1, *e)).reshape(b, n, *e)


# -- batch_scatter_add: correct forms ------------------------------------------------------------------------------


@right("index_put accumulate", only="scatter_add", bonus=5)
def index_put_accumulate():
    def batch_scatter_add(values, indices, n):
        b = indices.shape[0]
        rows = torch.arange(b, device=indices.device).reshape([b] + [1] * (indices.dim() - 1)).expand(indices.shape)
        out = values.new_zeros((b, n, *values.shape[indices.dim():]))
        return out.index_put((rows, indices.long()), values, accumulate=True)


@right("scatter_add expanded", only="scatter_add", bonus=5)
def scatter_add_expanded():
    def batch_scatter_add(values, indices, n):
        b, trailing = indices.shape[0], values.shape[indices.dim():]
        idx = indices.long().reshape(b, -1, *[1] * len(trailing)).expand(b, -1, *trailing)
        src = values.reshape(b, -1, *trailing)
        return torch.zeros((b, n, *trailing), dtype=values.dtype, device=values.device).scatter_add(1, idx, src)


@right("one-hot einsum", only="scatter_add", bonus=5)
def one_hot_einsum():
    import torch.nn.functional as F

    def batch_scatter_add(values, indices, n):
        b, trailing = indices.shape[0], values.shape[indices.dim():]
        hot = F.one_hot(indices.long().reshape(b, -1), n).to(values.dtype)   # [B, K, n]
        flat = values.reshape(b, hot.shape[1], -1)                           # [B, K, prod(E)]
        return torch.einsum("bkn,bke->bne", hot, flat).reshape(b, n, *trailing)


@right("in-place index_add_ on flat offsets", only="scatter_add", bonus=5)
def in_place_index_add_on_flat_offsets():
    def batch_scatter_add(values, indices, n):
        b = indices.shape[0]
        e = values.shape[indices.dim():]
        flat = indices.long() + n * torch.arange(b, device=indices.device).view(-1, *[1] * (indices.dim() - 1))
        out = torch.zeros(b * n, *e, dtype=values.dtype, device=values.device)
        out.index_add_(0, flat.flatten(), values.flatten(0, indices.dim() - 1))
        return out.view(b, n, *e)


# -- puzzles: other correct forms (any allowed expression) and named wrong ones -------------------------------------


@wrong("pick_per_row: take_along_dim bound to a name by an assignment",
       fails={"check_pick_per_row_rule": "pick = torch.take_along_dim: not among the allowed"})
def pick_per_row_take_along_dim_assigned():
    pick = torch.take_along_dim

    def pick_per_row(x, idx):
        return pick(x, idx[:, None], dim=1)[:, 0]


@wrong("pick_per_row: a name bound to torch.gather, then imported as take_along_dim",
       fails={"check_pick_per_row_rule": "pick: bound 2 times"})
def pick_per_row_name_rebound():
    """The judge's alias map kept the assignment (torch.gather, allowed); the later import wins when it runs."""
    pick = torch.gather
    from torch import take_along_dim as pick  # noqa: F811

    def pick_per_row(x, idx):
        return pick(x, idx[:, None], dim=1)[:, 0]


@wrong("pick_per_row: take_along_dim imported under another name",
       fails={"check_pick_per_row_rule": "torch.take_along_dim: not among the allowed"})
def pick_per_row_take_along_dim_alias():
    from torch import take_along_dim as pick

    def pick_per_row(x, idx):
        return pick(x, idx[:, None], dim=1)[:, 0]


@right("pick_per_row by torch.gather", only="pick_per_row", points=2)
def pick_per_row_gather():
    def pick_per_row(x, idx):
        return torch.gather(x, 1, idx.view(-1, 1)).view(-1)


@right("pick_per_row on flat offsets", only="pick_per_row", points=2)
def pick_per_row_flat():
    def pick_per_row(x, idx):
        return x.flatten()[torch.arange(x.shape[0], device=x.device) * x.shape[1] + idx]


@wrong("pick_per_row with x[:, idx]", fails={"check_pick_per_row_rule": "rows = torch.arange(B)",
                                             "check_pick_per_row_random": "rows = torch.arange(B)"})
def pick_per_row_all_pairs():
    def pick_per_row(x, idx):
        return x[:, idx]


@wrong("pick_per_row by a comprehension", fails={"check_pick_per_row_rule": "not allowed in a puzzle"})
def pick_per_row_comprehension():
    def pick_per_row(x, idx):
        return torch.stack([x[i, idx[i]] for i in range(x.shape[0])])


@right("last_valid on flat offsets", only="last_valid", points=2)
def last_valid_flat():
    def last_valid(x, lengths):
        return x.flatten(0, 1)[torch.arange(x.shape[0], device=x.device) * x.shape[1] + lengths - 1]


@right("last_valid by reshape and a shifted arange", only="last_valid", points=2)
def last_valid_reshape():
    def last_valid(x, lengths):
        return x.reshape(-1, x.shape[2])[(torch.arange(1, x.shape[0] + 1, device=x.device) - 1) * x.shape[1]
                                         + lengths - 1]


@wrong("last_valid with the last position", fails={"check_last_valid_rule": "not lengths[i] and not -1",
                                                   "check_last_valid_random": "not lengths[i] and not -1"})
def last_valid_last_position():
    def last_valid(x, lengths):
        return x[:, -1]


@wrong("last_valid through index_select", fails={"check_last_valid_rule": "torch.index_select"})
def last_valid_index_select():
    def last_valid(x, lengths):
        return torch.index_select(x.flatten(0, 1), 0, torch.arange(x.shape[0]) * x.shape[1] + lengths - 1)


@right("batch_diagonal by a strided slice", only="batch_diagonal", points=2)
def batch_diagonal_stride():
    def batch_diagonal(m):
        return m.flatten(1)[:, ::m.shape[1] + 1]


@right("batch_diagonal on flat positions i * (N + 1)", only="batch_diagonal", points=2)
def batch_diagonal_flat():
    def batch_diagonal(m):
        return m.reshape(m.shape[0], -1)[:, torch.arange(m.shape[1], device=m.device) * (m.shape[1] + 1)]


@wrong("batch_diagonal by torch.diagonal", fails={"check_batch_diagonal_rule": "torch.diagonal"})
def batch_diagonal_library():
    def batch_diagonal(m):
        return torch.diagonal(m, dim1=1, dim2=2)


@wrong("batch_diagonal stepped by N", fails={"check_batch_diagonal_rule": "same arange(N)",
                                             "check_batch_diagonal_random": "same arange(N)"})
def batch_diagonal_step_n():
    def batch_diagonal(m):
        return m.flatten(1)[:, ::m.shape[1]][:, :m.shape[1]]


@right("roll_rows by torch.gather", only="roll_rows", points=2)
def roll_rows_gather():
    def roll_rows(x, shifts):
        return torch.gather(x, 1, (torch.arange(x.shape[1], device=x.device) - shifts.view(-1, 1)) % x.shape[1])


@right("roll_rows on flat offsets", only="roll_rows", points=2)
def roll_rows_flat():
    def roll_rows(x, shifts):
        return x.flatten()[torch.arange(x.shape[0], device=x.device).view(-1, 1) * x.shape[1]
                           + (torch.arange(x.shape[1], device=x.device) - shifts.view(-1, 1)) % x.shape[1]]


@wrong("roll_rows the wrong way", fails={"check_roll_rows_rule": "subtract the shift",
                                         "check_roll_rows_random": "subtract the shift"})
def roll_rows_wrong_way():
    def roll_rows(x, shifts):
        return torch.gather(x, 1, (torch.arange(x.shape[1], device=x.device) + shifts.view(-1, 1)) % x.shape[1])


@wrong("roll_rows by torch.roll per row", fails={"check_roll_rows_rule": "torch.roll"})
def roll_rows_library():
    def roll_rows(x, shifts):
        return torch.stack([torch.roll(row, int(s)) for row, s in zip(x, shifts, strict=True)])


@right("pick_pair_sum by torch.gather", only="pick_pair_sum", points=2)
def pick_pair_sum_gather():
    def pick_pair_sum(x, a, b):
        return (torch.gather(x, 1, a.view(-1, 1)) + torch.gather(x, 1, b.view(-1, 1))).view(-1)


@right("pick_pair_sum on flat offsets", only="pick_pair_sum", points=2)
def pick_pair_sum_flat():
    def pick_pair_sum(x, a, b):
        return (x.flatten()[torch.arange(x.shape[0], device=x.device) * x.shape[1] + a]
                + x.flatten()[torch.arange(x.shape[0], device=x.device) * x.shape[1] + b])


@wrong("pick_pair_sum by .sum", fails={"check_pick_pair_sum_rule": ".sum"})
def pick_pair_sum_sum():
    def pick_pair_sum(x, a, b):
        return torch.gather(x, 1, torch.stack([a, b], 1)).sum(1)


@wrong("pick_pair_sum picking a twice", fails={"check_pick_pair_sum_rule": "one for a, one for b",
                                               "check_pick_pair_sum_random": "one for a, one for b"})
def pick_pair_sum_twice():
    def pick_pair_sum(x, a, b):
        return x[torch.arange(x.shape[0]), a] * 2


@right("permute_rows on flat offsets", only="permute_rows", points=2)
def permute_rows_flat():
    def permute_rows(x, perm):
        return x.flatten(0, 1)[torch.arange(x.shape[0], device=x.device).view(-1, 1) * x.shape[1] + perm]


@right("permute_rows with reshaped row numbers", only="permute_rows", points=2)
def permute_rows_reshape():
    def permute_rows(x, perm):
        return x[torch.arange(x.shape[0], device=x.device).reshape(x.shape[0], 1), perm]


@wrong("permute_rows with x[:, perm]", fails={"check_permute_rows_rule": "pairs every batch",
                                              "check_permute_rows_random": "pairs every batch"})
def permute_rows_all_pairs():
    def permute_rows(x, perm):
        return x[:, perm]


@wrong("permute_rows by take_along_dim", fails={"check_permute_rows_rule": "torch.take_along_dim"})
def permute_rows_library():
    def permute_rows(x, perm):
        return torch.take_along_dim(x, perm[:, :, None], dim=1)
