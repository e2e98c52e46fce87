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
from autograder.judging.expect import failure, show
from autograder.sandbox.runtime.wire import RemoteObject

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
