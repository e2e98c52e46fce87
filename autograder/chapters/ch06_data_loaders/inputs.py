"""Inputs for 06_data_loaders: the images and tar archives the judge writes, each knowing what it must give.

Every image is a PNG the judge encodes itself with OpenCV, random in size and pixels (drawn from the
check's `rng`), or a plain colour for the notebook's examples. An Image carries the RGB tensor its file
must give (its oracle: the pixels are the judge's own), so an item read back is identified by content.
Files go under the grading's data folder, which the student's process may read.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import Tensor


def image_key(rgb: Tensor) -> str:
    """Identifies an image by its exact shape and pixels."""
    return hashlib.sha256(repr(list(rgb.shape)).encode() + rgb.contiguous().numpy().tobytes()).hexdigest()


@dataclass(frozen=True)
class Image:
    name: str
    rgb: Tensor  # [3, H, W] uint8: what the dataset must return for this file
    png: bytes  # the encoded file

    @property
    def key(self) -> str:
        return image_key(self.rgb)


RENAMES = 16  # new names drawn at most before a folder is left in the order it lists (p < 2^-16 for 2 images)


def encode_png(pixels: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(pixels))
    assert ok, "OpenCV could not encode a PNG"
    return buf.tobytes()


def plain_image(name: str, rgb: tuple[int, int, int], height: int, width: int) -> Image:
    """A PNG of one colour (stored as BGR, as OpenCV writes)."""
    pixels = np.full((height, width, 3), rgb, np.uint8)
    return Image(name, torch.from_numpy(pixels).permute(2, 0, 1).contiguous(), encode_png(pixels[..., ::-1]))


def random_name(rng: torch.Generator, taken: set[str], prefix: str = "", suffix: str = ".png") -> str:
    while True:
        n = int(torch.randint(3, 10, (1,), generator=rng))
        name = prefix + "".join("0123456789abcdef"[int(i)] for i in torch.randint(0, 16, (n,), generator=rng))
        if name + suffix not in taken:
            taken.add(name + suffix)
            return name + suffix


def palette_png(indices: np.ndarray, palette: np.ndarray) -> bytes:
    """A palette PNG (colour type 3, 8 bits), written by hand: OpenCV writes no palette PNGs."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    h, w = indices.shape
    rows = b"".join(b"\x00" + indices[r].astype(np.uint8).tobytes() for r in range(h))  # filter 0 on every row
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0))
            + chunk(b"PLTE", palette.astype(np.uint8).tobytes()) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


KINDS = ("rgb", "gray", "rgba", "rgb16", "palette")


def random_image(rng: torch.Generator, name: str, kind: str = "rgb") -> Image:
    """A PNG of random size and pixels, of a kind in KINDS: "rgb" (stored as BGR, as OpenCV writes), "gray",
    "rgba", "rgb16" (16 bits a channel) or "palette" (indices into 16 random colours)."""
    h, w = (int(n) for n in torch.randint(5, 41, (2,), generator=rng))
    if kind == "rgb16":  # read as 8 bits a channel: the high byte of each 16-bit value
        wide = torch.randint(0, 65536, (h, w, 3), generator=rng, dtype=torch.int32).numpy().astype(np.uint16)
        rgb = (wide >> 8).astype(np.uint8)
        return Image(name, torch.from_numpy(rgb).permute(2, 0, 1).contiguous(), encode_png(wide[..., [2, 1, 0]]))
    if kind == "palette":
        colours = torch.randint(0, 256, (16, 3), generator=rng, dtype=torch.uint8).numpy()
        indices = torch.randint(0, 16, (h, w), generator=rng, dtype=torch.uint8).numpy()
        return Image(name, torch.from_numpy(colours[indices]).permute(2, 0, 1).contiguous(),
                     palette_png(indices, colours))
    channels = {"rgb": 3, "gray": 1, "rgba": 4}[kind]
    pixels = torch.randint(0, 256, (h, w, channels), generator=rng, dtype=torch.uint8).numpy()
    if kind == "gray":
        return Image(name, torch.from_numpy(pixels[..., 0]).expand(3, h, w).contiguous(), encode_png(pixels[..., 0]))
    bgr = pixels[..., [2, 1, 0]] if kind == "rgb" else pixels[..., [2, 1, 0, 3]]
    # IMREAD_COLOR reads 3 channels: an RGBA file gives its RGB part, alpha dropped.
    return Image(name, torch.from_numpy(pixels[..., :3]).permute(2, 0, 1).contiguous(), encode_png(bgr))


def random_images(rng: torch.Generator, count: int, prefix: str = "", taken: set[str] | None = None) -> list[Image]:
    taken = set() if taken is None else taken
    return [random_image(rng, random_name(rng, taken, prefix)) for _ in range(count)]


def new_folder(data_dir: Path) -> Path:
    """A new folder under the grading's data folder, readable by the student's process."""
    folder = Path(tempfile.mkdtemp(dir=data_dir))
    folder.chmod(0o755)
    return folder


def listed(folder: Path, images: list[Image]) -> list[str]:
    """The images' names in the folder's own order (os.listdir's, which glob keeps)."""
    names = {image.name for image in images}
    return [name for name in os.listdir(folder) if name in names]


def write_directory(folder: Path, images: list[Image], extra: dict[str, bytes] | None = None,
                    rng: torch.Generator | None = None) -> list[Image]:
    """Write the images and `extra` files into `folder`; the images as written, in sorted order (what a
    correct dataset gives).

    The folder's own order never puts the images in sorted order (unless fixed names, rng None, come out so
    in both creation orders), so that code which keeps it (glob without sorted) fails on every seed and
    filesystem, not only by luck. That order is the filesystem's: creation order
    or its reverse (tmpfs), a hash of the names (ext4). So the images are written again in the other order, and
    where the names decide it, under new names drawn from `rng` (keeping each name's prefix up to '_')."""
    for name, data in (extra or {}).items():
        (folder / name).write_bytes(data)
    order, written = list(images), list[Image]()
    for attempt in range(RENAMES + 2):
        if attempt == 1:
            order.reverse()  # where creation order decides (tmpfs): the other one
        elif attempt >= 2:
            if rng is None:
                break
            taken: set[str] = set()  # where the names decide (ext4): new ones
            order = [replace(im, name=random_name(rng, taken, im.name[:im.name.rfind("_") + 1])) for im in order]
        for image in written:
            (folder / image.name).unlink()
        for image in order:
            (folder / image.name).write_bytes(image.png)
        written = order
        names = listed(folder, order)
        if len(names) < 2 or names != sorted(names):
            break
    return sorted(written, key=lambda im: im.name)


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def add_directory(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def write_tar(path: Path, members: list[tuple[str, bytes | None]]) -> str:
    """An archive of (name, content) members in that order; a content of None is a directory entry."""
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            if data is None:
                add_directory(tar, name)
            else:
                add_member(tar, name, data)
    return str(path)


def write_tars(folder: Path, rng: torch.Generator, images: list[Image], n_files: int) -> list[str]:
    """Spread the images over n_files archives, every archive non-empty, in random proportions."""
    owner = list(range(n_files)) + [int(i) for i in torch.randint(0, n_files, (len(images) - n_files,),
                                                                  generator=rng)]
    return [write_tar(folder / f"shard-{k}.tar", [(image.name, image.png)
                                                  for image, o in zip(images, owner, strict=True) if o == k])
            for k in range(n_files)]


def tar_image_set(data_dir: Path, rng: torch.Generator, n_files: int) -> tuple[list[str], list[Image]]:
    """Random images, 5 to 11 more than files, spread over `n_files` new archives."""
    images = random_images(rng, n_files + int(torch.randint(5, 12, (1,), generator=rng)))
    return write_tars(new_folder(data_dir), rng, images, n_files), images


def directory_example(folder: Path) -> list[Image]:
    """The notebook's visible example: three plain colours, written out of sorted order, and a text file;
    the images in sorted order."""
    images = [plain_image("b.png", (255, 0, 0), 4, 6), plain_image("a.png", (0, 255, 0), 5, 3),
              plain_image("c.png", (0, 0, 255), 2, 2)]
    return write_directory(folder, images, {"notes.txt": b"not an image"})


def tar_example(folder: Path) -> tuple[list[str], list[list[Image]]]:
    """The notebook's visible example: two tar files of three plain-colour images each; their paths and
    images (named part_<k>/img_<j>.png to tell the files apart)."""
    paths, images = [], []
    for k in range(2):
        part = [plain_image(f"part_{k}/img_{j}.png", (40 * j, 200 - 100 * k, 10 + 30 * j + k), 2 + j, 3 + k)
                for j in range(3)]
        paths.append(write_tar(folder / f"part_{k}.tar", [(f"img_{j}.png", im.png) for j, im in enumerate(part)]))
        images.append(part)
    return paths, images
