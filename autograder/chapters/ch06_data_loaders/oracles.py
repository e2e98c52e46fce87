"""Oracles for 06_data_loaders: what an item read back must be, judged against the images the judge wrote.

An item is identified by its exact content (ch06_inputs.image_key). When it matches no image, the likely
mistake is named: channels in BGR order, rows and columns swapped, the wrong dtype or layout. A stream
must give every image exactly once, and a DataLoader without shuffling a directory's files in sorted order.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch import Tensor

from autograder.chapters.ch06_data_loaders.inputs import Image, image_key
from autograder.judging.authoring import RemoteObject, failure, show

BGR_HINT = ("cv2.imread and cv2.imdecode give the channels in BGR order. Convert with "
            "cv2.cvtColor(image, cv2.COLOR_BGR2RGB) before making the tensor.")
LAYOUT_HINT = ("OpenCV gives [H, W, 3] arrays; PyTorch wants channels first: "
               "torch.from_numpy(rgb).permute(2, 0, 1) gives [3, H, W].")
DTYPE_HINT = "Keep OpenCV's uint8 pixels: no .float() or / 255 here (a transform can do that later)."
TYPE_HINT = "Return a torch.Tensor: torch.from_numpy(rgb).permute(2, 0, 1)."
SORT_HINT = ("glob.glob returns names in the directory's own order, which differs between machines. "
             "Sort the list once in __init__: sorted(glob.glob(os.path.join(glob.escape(path), pattern))), "
             "and read self.paths[index] in __getitem__.")
INDEX_HINT = ("__getitem__(index) must read file `index` of the sorted list, the same file every time: "
              "the DataLoader's sampler chooses the order (shuffle=True), not the dataset. "
              "Do not use random.choice or shuffle the list.")


def expect_format(item: Any, call: str, known: dict[str, Image]) -> str:
    """Fail unless `item` is a uint8 [3, H, W] tensor with the pixels of one of the `known` images; its key."""
    want = "an RGB uint8 tensor of shape [3, H, W]"
    if not isinstance(item, Tensor):
        name = item.type_name if isinstance(item, RemoteObject) else type(item).__name__
        raise failure(call=call, expected=want, got=f"a {name}", problem="the item is not a torch.Tensor",
                      hint=TYPE_HINT)
    if item.dtype != torch.uint8:
        raise failure(call=call, expected=want, got=show(item), problem=f"dtype {item.dtype} instead of torch.uint8",
                      hint=DTYPE_HINT)
    if item.dim() != 3 or item.shape[0] != 3:
        hint = LAYOUT_HINT if item.dim() == 3 and item.shape[-1] == 3 else "Read with cv2.IMREAD_COLOR (3 channels)."
        raise failure(call=call, expected=want, got=show(item), problem=f"shape {list(item.shape)} is not [3, H, W]",
                      hint=hint)
    key, flipped, transposed = image_key(item), image_key(item.flip(0)), image_key(item.transpose(1, 2))
    if key in known:
        return key
    if flipped in known:
        raise failure(call=call, expected=f"{known[flipped].name} in RGB order", got=show(item),
                      problem="the channels are in BGR order (red and blue swapped)", hint=BGR_HINT)
    if transposed in known:
        raise failure(call=call, expected=f"{known[transposed].name}, shape [3, H, W]", got=show(item),
                      problem="rows and columns are swapped: that is [3, W, H]", hint=LAYOUT_HINT)
    raise failure(call=call, expected="the pixels of one of the images written", got=show(item),
                  problem=f"a [3, {item.shape[1]}, {item.shape[2]}] tensor whose pixels match no image file",
                  hint="Decode the file's bytes with OpenCV (cv2.IMREAD_COLOR) and convert BGR to RGB; change "
                       "nothing else.")


def expect_image(got: Any, image: Image, call: str, others: list[Image], hint: str = INDEX_HINT) -> None:
    """Fail unless `got` is exactly `image`'s RGB tensor."""
    key = expect_format(got, call, {im.key: im for im in [image, *others]})
    if key != image.key:
        other = next(im.name for im in others if im.key == key)
        raise failure(call=call, expected=f"the image of {image.name}", got=f"the image of {other}",
                      problem="a different file's image", hint=hint)


def expect_each_once(items: list[Any], images: list[Image], call: str, twice_hint: str, lost_hint: str,
                     ordered: bool = False) -> None:
    """Fail unless `items` are the images, each exactly once (in the given order if `ordered`)."""
    known = {im.key: im for im in images}
    keys = [expect_format(item, f"{call}, item {i}", known) for i, item in enumerate(items)]
    counts = Counter(keys)
    twice = [f"{known[k].name} x{n}" for k, n in counts.items() if n > 1]
    lost = [im.name for im in images if im.key not in counts]
    if twice or lost:
        problems = ([f"{len(twice)} images came out more than once: {', '.join(twice[:6])}"] if twice else []) + (
            [f"{len(lost)} images never came out: {', '.join(lost[:6])}"] if lost else [])
        raise failure(call=call, expected=f"{len(images)} images, each exactly once", got=f"{len(items)} items",
                      problem="; ".join(problems), hint=twice_hint if twice else lost_hint)
    if ordered and keys != [im.key for im in images]:
        i = next(i for i, (k, im) in enumerate(zip(keys, images, strict=True)) if k != im.key)
        raise failure(call=call, expected=f"item {i} is {images[i].name} (file {i} in sorted order)",
                      got=known[keys[i]].name, problem="the DataLoader (shuffle=False) asks for index 0, 1, 2, ... "
                                                       "and gets the files in another order", hint=SORT_HINT)


# -- pad_collate ---------------------------------------------------------------------------

PAD_HINT = ("Make the output with images[0].new_zeros((B, 3, max H, max W)) (uint8, zeros), then copy image i into "
            "its top-left corner: out[i, :, :h, :w] = image. sizes = torch.tensor([[h, w], ...], dtype=torch.int64).")


def padded(images: list[Tensor], corner: str = "top-left", fill: int = 0) -> Tensor:
    """The images ([3, H_i, W_i] uint8) in one [B, 3, max H, max W] tensor of `fill`, each placed at `corner`
    ("top-left", "bottom-right" or "centre")."""
    height, width = max(im.shape[1] for im in images), max(im.shape[2] for im in images)
    out = torch.full((len(images), 3, height, width), fill, dtype=torch.uint8)
    for i, im in enumerate(images):
        h, w = im.shape[1:]
        top, left = {"top-left": (0, 0), "bottom-right": (height - h, width - w),
                     "centre": ((height - h) // 2, (width - w) // 2)}[corner]
        out[i, :, top:top + h, left:left + w] = im
    return out


def sizes_of(images: list[Tensor]) -> Tensor:
    """[B, 2] int64: (H_i, W_i) of each image."""
    return torch.tensor([[im.shape[1], im.shape[2]] for im in images], dtype=torch.int64).reshape(-1, 2)


def expect_padded(out: Any, images: list[Tensor], call: str, inputs: list[str]) -> None:
    """Fail unless `out` is (the images padded at the bottom and right with 0, their sizes), naming the mistake."""
    want, want_sizes = padded(images), sizes_of(images)
    b, _, height, width = want.shape
    expected = (f"(images uint8 {list(want.shape)}, each image in its top-left corner and 0 elsewhere, "
                f"sizes int64 [{b}, 2] of (H, W) rows)")

    def wrong(got: str, problem: str, hint: str = PAD_HINT) -> Exception:
        return failure(call=call, inputs=inputs, expected=expected, got=got, problem=problem, hint=hint)

    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise wrong(f"a {type(out).__name__}" + (f" of {len(out)}" if isinstance(out, (tuple, list)) else ""),
                    "pad_collate must return a pair (images, sizes)")
    got, sizes = out
    if not isinstance(got, Tensor):
        raise wrong(f"images: a {type(got).__name__}", "the images must be one torch.Tensor")
    if got.dtype != torch.uint8:
        raise wrong(f"images: {show(got)}", f"it converts the dtype: {got.dtype} instead of the images' torch.uint8",
                    "Keep the images' dtype: new_zeros on an image, or torch.zeros(..., dtype=torch.uint8). "
                    "Scaling to float belongs to a later transform, on the training device.")
    if tuple(got.shape) != tuple(want.shape):
        shape = tuple(got.shape)
        side = max(height, width)
        problem = ("height and width swapped: that is [B, 3, max W, max H]" if shape == (b, 3, width, height)
                   else "channels last: that is [B, max H, max W, 3]" if shape == (b, height, width, 3)
                   else f"padded to a square of the largest side ({side})" if shape == (b, 3, side, side)
                   else f"shape {list(shape)} instead of {list(want.shape)}")
        raise wrong(f"images: {show(got)}", problem)
    if not torch.equal(got.cpu(), want):
        i = next(i for i in range(b) if not torch.equal(got[i].cpu(), want[i]))
        h, w = images[i].shape[1:]
        image_part = got[i, :, :h, :w].cpu()
        pad = torch.ones(height, width, dtype=torch.bool)
        pad[:h, :w] = False
        values = got[i].cpu()[:, pad].unique()
        if torch.equal(got.cpu(), padded(images, "bottom-right")):
            problem = "each image sits in the bottom-right corner: the padding is at the top and left"
        elif torch.equal(got.cpu(), padded(images, "centre")):
            problem = "each image is centred: the padding is on every side"
        elif torch.equal(image_part, images[i]) and values.numel() == 1:
            problem = f"the padding is {int(values[0])}, not 0"
        elif torch.equal(image_part, images[i]):
            problem = f"image {i}'s padding holds other values ({show(values)}), not only 0"
        else:
            problem = (f"image {i} ({h} x {w}) is not in images[{i}, :, :{h}, :{w}]: its pixels differ there "
                       f"(got {show(image_part)})")
        raise wrong(f"images: {show(got)}", problem)
    if not isinstance(sizes, Tensor):
        raise wrong(f"sizes: a {type(sizes).__name__}", "sizes must be a torch.Tensor",
                    "torch.tensor([[h, w] for each image], dtype=torch.int64)")
    if sizes.dtype != torch.int64:
        raise wrong(f"sizes: {show(sizes)}", f"sizes has dtype {sizes.dtype}, not torch.int64",
                    "torch.tensor([[h, w] for each image], dtype=torch.int64)")
    if tuple(sizes.shape) != (b, 2):
        raise wrong(f"sizes: {show(sizes)}", f"sizes has shape {list(sizes.shape)} instead of [{b}, 2]",
                    "One row (H, W) per image.")
    if not torch.equal(sizes.cpu(), want_sizes):
        swapped = torch.equal(sizes.cpu(), want_sizes.flip(1))
        raise wrong(f"sizes: {show(sizes)}", "the sizes are in (W, H) order: height comes first" if swapped
                    else f"the sizes differ from the images' (H, W): {want_sizes.tolist()}",
                    "image.shape is [3, H, W]: row i of sizes is (image.shape[1], image.shape[2]).")
