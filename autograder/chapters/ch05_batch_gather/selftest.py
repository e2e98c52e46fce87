"""Chapter 05's CUDA self-test (autograder/judging/figures.py): batch_gather's achieved memory bandwidth on the
reference solution, against the GPU's peak."""

from __future__ import annotations

from collections.abc import Callable

import torch

from autograder.judging.authoring import CudaFigures, Figure, Solution, cuda_ms, peak_bandwidth

# [B, N, D] float32 tensor (256 MiB) and [B, K] indices, each row's a permutation: every element read once
GATHER_SHAPE = (256, 1024, 256, 1024)


def gather_bandwidth(batch_gather: Callable[..., torch.Tensor], shape: tuple[int, int, int, int] = GATHER_SHAPE
                     ) -> tuple[float, float]:
    """(bytes per second, ms per call) of batch_gather on CUDA, counting the least traffic it needs:
    the gathered rows read, the output written and the indices read once."""
    b, n, d, k = shape
    tensor = torch.randn(b, n, d, device="cuda")
    indices = torch.rand(b, n, device="cuda").argsort(dim=1)[:, :k]
    moved = 2 * b * k * d * tensor.element_size() + indices.numel() * indices.element_size()
    ms = cuda_ms(lambda: batch_gather(tensor, indices))
    return moved / (ms / 1e3), ms


def bandwidth(solution: Solution) -> Figure:
    achieved, ms = gather_bandwidth(solution("batch_gather"))
    peak = peak_bandwidth(torch.cuda.get_device_properties(0))
    values = {"bytes_per_second": achieved, "ms_per_call": ms, "peak_bytes_per_second": peak,
              "shape": list(GATHER_SHAPE)}
    if peak is None:
        return Figure(None, f"{achieved / 1e9:.0f} GB/s; the GPU's peak is unknown (torch reports no memory clock)",
                      values=values)
    # A figure above the memory's peak would mean the CUDA-event timing is wrong.
    plausible = achieved <= 1.1 * peak
    return Figure(plausible, f"{achieved / 1e9:.0f} GB/s of {peak / 1e9:.0f} GB/s peak ({achieved / peak:.0%})",
                  "" if plausible else "more than the memory's peak: the CUDA-event timing is wrong", values)


CUDA_FIGURES: CudaFigures = {"batch_gather bandwidth": bandwidth}
