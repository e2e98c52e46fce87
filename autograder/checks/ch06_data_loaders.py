"""Hidden checks for 06_data_loaders: ImageDirectoryDataset and TarImageDataset.

The judge writes every image itself with OpenCV: PNGs of random sizes and
random pixels (drawn from `rng`), in a directory or inside tar archives under
`student.data_dir`. It knows the RGB tensor each file must give, so an item is
identified by a hash of its exact content. The multiset of hashes a DataLoader
yields must equal the images written: this catches duplicates and losses at
once, and BGR order, wrong layouts or wrong pixels on the way. DataLoaders run
in the student's process (harness ch06_data_loaders) with a timeout for every
item from a worker, inside a call that is itself bounded in time.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import cv2
import numpy as np
import torch
from torch import Tensor

from autograder.expect import CheckFailure, show
from autograder.plugin import check
from autograder.remote import Student, StudentError, describe_call, summarize
from autograder.wire import RemoteObject

# -- the seam: typed adapters to the student's code ------------------------------

# A call through a DataLoader may take the per-item timeout, then torch's shutdown of hung workers
# (up to 5 s each, one after the other), plus this margin for starting and stopping them.
MARGIN_SECONDS = 10.0


def make_directory_dataset(student: Student, path: Path, *args: str, **kwargs: str) -> RemoteObject:
    return _dataset(student, "ImageDirectoryDataset", str(path), *args, **kwargs)


def make_tar_dataset(student: Student, paths: list[str]) -> RemoteObject:
    return _dataset(student, "TarImageDataset", paths)


def _dataset(student: Student, name: str, *args: Any, **kwargs: Any) -> RemoteObject:
    obj = student.call(name, *args, **kwargs)
    if not isinstance(obj, RemoteObject):
        raise CheckFailure(f"Call: {describe_call(name, args, kwargs)}\n"
                           f"Expected: a {name} instance\nGot:      {summarize(obj)}")
    return obj


def get_item(student: Student, dataset: RemoteObject, index: int) -> Any:
    return student.method(dataset, ["__getitem__"], index)["value"]


def dataset_len(student: Student, dataset: RemoteObject) -> Any:
    return student.call("kit.size", dataset)


def read_through_loader(student: Student, kit_fn: str, dataset: RemoteObject, num_workers: int,
                        expected_count: int, what: str) -> list[Any]:
    """The items of DataLoader(dataset, batch_size=None, num_workers=num_workers) by the harness's `kit_fn`.

    Time-bounded twice: the DataLoader's own timeout for each item from a worker, and the call.
    """
    per_item = student.limits.call_seconds
    try:
        return student.call(kit_fn, dataset, num_workers, per_item, 2 * expected_count + 4,
                            timeout=per_item + 5.0 * num_workers + MARGIN_SECONDS)
    except StudentError as e:
        hint = f"\nHint:     {HANG_HINT}" if "timed out" in str(e) else ""
        raise StudentError(f"Reading {what} through DataLoader(..., batch_size=None, num_workers={num_workers}):\n"
                           f"{e}{hint}") from None


# -- the judge's images --------------------------------------------------------------


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


def encode_png(pixels: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(pixels))
    assert ok, "OpenCV could not encode a PNG"
    return buf.tobytes()


def random_name(rng: torch.Generator, taken: set[str], prefix: str = "", suffix: str = ".png") -> str:
    while True:
        n = int(torch.randint(3, 10, (1,), generator=rng))
        name = prefix + "".join("0123456789abcdef"[int(i)] for i in torch.randint(0, 16, (n,), generator=rng))
        if name + suffix not in taken:
            taken.add(name + suffix)
            return name + suffix


def random_image(rng: torch.Generator, name: str, kind: str = "rgb") -> Image:
    """A PNG of random size and pixels: "rgb" (stored as BGR, as OpenCV writes), "gray" or "rgba"."""
    h, w = (int(n) for n in torch.randint(5, 41, (2,), generator=rng))
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


def new_folder(student: Student) -> Path:
    folder = Path(tempfile.mkdtemp(dir=student.data_dir))
    folder.chmod(0o755)
    return folder


def write_directory(folder: Path, images: list[Image], extra: dict[str, bytes] | None = None) -> None:
    for image in images:
        (folder / image.name).write_bytes(image.png)
    for name, data in (extra or {}).items():
        (folder / name).write_bytes(data)


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def add_directory(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def write_tars(folder: Path, rng: torch.Generator, images: list[Image], n_files: int) -> list[str]:
    """Spread the images over n_files archives, every archive non-empty, in random proportions."""
    owner = list(range(n_files)) + [int(i) for i in torch.randint(0, n_files, (len(images) - n_files,),
                                                                  generator=rng)]
    paths = []
    for k in range(n_files):
        path = folder / f"shard-{k}.tar"
        with tarfile.open(path, "w") as tar:
            for image, o in zip(images, owner, strict=True):
                if o == k:
                    add_member(tar, image.name, image.png)
        paths.append(str(path))
    return paths


def tar_image_set(student: Student, rng: torch.Generator, n_files: int) -> tuple[list[str], list[Image]]:
    """Random images, 5 to 11 more than files, spread over `n_files` new archives."""
    images = random_images(rng, n_files + int(torch.randint(5, 12, (1,), generator=rng)))
    return write_tars(new_folder(student), rng, images, n_files), images


# -- judging -----------------------------------------------------------------------

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
SHARD_HINT = ("Each worker runs __iter__ on its own copy of the dataset. Use get_worker_info() (None in the "
              "main process) so that worker w reads only its share: files w, w + num_workers, ... and, when "
              "there are fewer files than workers, every k-th member of a file it shares with other workers.")
LOST_HINT = ("Some images were never yielded: with this many files and workers no worker took them. Every file, "
             "and every member of a file that workers share, must belong to exactly one worker.")
ONCE_HINT = "With num_workers=0 the main process reads each file once, each member once."
EPOCH_HINT = ("Every call of __iter__ must start a fresh pass: open the files inside __iter__, not in __init__, "
              "and keep no iterator on the dataset.")
MAIN_HINT = "With num_workers=0 get_worker_info() is None: the main process must read every file itself."
HANG_HINT = ("A worker gave no item for that long: look for a loop that never ends, or a call that blocks, in "
             "code that runs in the workers (where get_worker_info() is not None).")
CORRUPT_HINT = ("cv2.imdecode returns None for bytes it cannot decode. Raise "
                "ValueError(f\"... {member.name} ...\") naming the member, as the notebook documents.")


def _fail(call: str, expected: str, got: str, problem: str, hint: str = "") -> NoReturn:
    lines = [f"Call: {call}", f"Expected: {expected}", f"Got:      {got}", f"Problem:  {problem}"]
    raise CheckFailure("\n".join(lines + ([f"Hint:     {hint}"] if hint else [])))


def expect_format(item: Any, call: str, known: dict[str, Image]) -> str:
    """Fail unless `item` is a uint8 [3, H, W] tensor with the pixels of one of the `known` images; its key."""
    want = "an RGB uint8 tensor of shape [3, H, W]"
    if not isinstance(item, Tensor):
        name = item.type_name if isinstance(item, RemoteObject) else type(item).__name__
        _fail(call, want, f"a {name}", "the item is not a torch.Tensor", TYPE_HINT)
    if item.dtype != torch.uint8:
        _fail(call, want, show(item), f"dtype {item.dtype} instead of torch.uint8", DTYPE_HINT)
    if item.dim() != 3 or item.shape[0] != 3:
        hint = LAYOUT_HINT if item.dim() == 3 and item.shape[-1] == 3 else "Read with cv2.IMREAD_COLOR (3 channels)."
        _fail(call, want, show(item), f"shape {list(item.shape)} is not [3, H, W]", hint)
    key, flipped, transposed = image_key(item), image_key(item.flip(0)), image_key(item.transpose(1, 2))
    if key in known:
        return key
    if flipped in known:
        _fail(call, f"{known[flipped].name} in RGB order", show(item),
              "the channels are in BGR order (red and blue swapped)", BGR_HINT)
    if transposed in known:
        _fail(call, f"{known[transposed].name}, shape [3, H, W]", show(item),
              "rows and columns are swapped: that is [3, W, H]", LAYOUT_HINT)
    _fail(call, "the pixels of one of the images written", show(item),
          f"a [3, {item.shape[1]}, {item.shape[2]}] tensor whose pixels match no image file",
          "Decode the file's bytes with OpenCV (cv2.IMREAD_COLOR) and convert BGR to RGB; change nothing else.")


def expect_image(got: Any, image: Image, call: str, others: list[Image], hint: str = INDEX_HINT) -> None:
    """Fail unless `got` is exactly `image`'s RGB tensor."""
    key = expect_format(got, call, {im.key: im for im in [image, *others]})
    if key != image.key:
        _fail(call, f"the image of {image.name}", f"the image of {next(im.name for im in others if im.key == key)}",
              "a different file's image", hint)


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
        _fail(call, f"{len(images)} images, each exactly once", f"{len(items)} items", "; ".join(problems),
              twice_hint if twice else lost_hint)
    if ordered and keys != [im.key for im in images]:
        i = next(i for i, (k, im) in enumerate(zip(keys, images, strict=True)) if k != im.key)
        _fail(call, f"item {i} is {images[i].name} (file {i} in sorted order)", f"{known[keys[i]].name}",
              "the DataLoader (shuffle=False) asks for index 0, 1, 2, ... and gets the files in another order",
              SORT_HINT)


def loader_call(name: str, what: str, workers: int) -> str:
    return f"DataLoader({name}({what}), batch_size=None, num_workers={workers})"


def tar_files(n: int) -> str:
    return "1 tar file" if n == 1 else f"{n} tar files"


def expect_stream(student: Student, paths: list[str], images: list[Image], workers: int) -> None:
    """Every image of the archives exactly once through a DataLoader with `workers` workers."""
    items = read_through_loader(student, "kit.stream_tar", make_tar_dataset(student, paths), workers, len(images),
                                f"{len(images)} images in {tar_files(len(paths))}")
    expect_each_once(items, images, loader_call("TarImageDataset", f"[{tar_files(len(paths))}]", workers),
                     SHARD_HINT if workers else ONCE_HINT, LOST_HINT if workers else MAIN_HINT)


# -- ImageDirectoryDataset ------------------------------------------------------------


def _guide_example(folder: Path) -> list[Image]:
    """The notebook's visible example: three plain colours, written out of sorted order, and a text file."""
    plain = {"b.png": ((255, 0, 0), (4, 6)), "a.png": ((0, 255, 0), (5, 3)), "c.png": ((0, 0, 255), (2, 2))}
    images = []
    for name, (rgb, (h, w)) in plain.items():
        pixels = np.full((h, w, 3), rgb, np.uint8)
        images.append(Image(name, torch.from_numpy(pixels).permute(2, 0, 1).contiguous(),
                            encode_png(pixels[..., ::-1])))
    write_directory(folder, images, {"notes.txt": b"not an image"})
    return sorted(images, key=lambda im: im.name)


@check(task="ImageDirectoryDataset", points=1, visible=True)
def check_directory_guide_example(student: Student) -> None:
    """three plain-colour PNGs and a text file: len 3, sorted order, RGB uint8 [3, H, W]"""
    folder = new_folder(student)
    images = _guide_example(folder)
    ds = make_directory_dataset(student, folder)
    n = dataset_len(student, ds)
    if n != 3:
        _fail(f"len(ImageDirectoryDataset({folder.name!r}))", "3 (a.png, b.png, c.png)", repr(n),
              "notes.txt does not match the default pattern '*.png'" if n == 4 else "wrong length")
    for i, image in enumerate(images):
        expect_image(get_item(student, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_sorted_and_len(student: Student, rng: torch.Generator) -> None:
    """random file names: len() counts the *.png files and index i reads the i-th name in sorted order"""
    folder = new_folder(student)
    images = random_images(rng, int(torch.randint(8, 16, (1,), generator=rng)))
    jpeg = cv2.imencode(".jpg", np.zeros((4, 4, 3), np.uint8))[1].tobytes()
    write_directory(folder, images, {"readme.txt": b"images for a test", "photo.jpg": jpeg, "png": b"no dot"})
    images.sort(key=lambda im: im.name)
    ds = make_directory_dataset(student, folder)
    n = dataset_len(student, ds)
    if n != len(images):
        _fail("len(ImageDirectoryDataset(path))", f"{len(images)} (the .png files)", repr(n),
              "len() must count the files matching '*.png', and only those",
              "Build the list once in __init__ with glob and return len(self.paths).")
    for i, image in enumerate(images):
        expect_image(get_item(student, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images, SORT_HINT)


@check(task="ImageDirectoryDataset", points=1)
def check_directory_pattern(student: Student, rng: torch.Generator) -> None:
    """the `pattern` argument (positional or keyword) selects which files are read"""
    folder = new_folder(student)
    taken: set[str] = set()
    cats, dogs = random_images(rng, 4, "cat_", taken), random_images(rng, 5, "dog_", taken)
    write_directory(folder, cats + dogs)
    for images, pattern, keyword in ((cats, "cat_*.png", True), (dogs, "dog_*.png", False)):
        images = sorted(images, key=lambda im: im.name)
        call = f"ImageDirectoryDataset(path, {'pattern=' if keyword else ''}{pattern!r})"
        ds = (make_directory_dataset(student, folder, pattern=pattern) if keyword
              else make_directory_dataset(student, folder, pattern))
        n = dataset_len(student, ds)
        if n != len(images):
            _fail(f"len({call})", str(len(images)), repr(n), f"only files matching {pattern!r} belong to it",
                  "glob.glob(os.path.join(glob.escape(path), pattern)), with the pattern given.")
        for i, image in enumerate(images):
            expect_image(get_item(student, ds, i), image, f"{call}[{i}]", images, SORT_HINT)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_same_index_same_image(student: Student, rng: torch.Generator) -> None:
    """ds[i] is deterministic: the same image for the same index, asked in any order, any number of times"""
    folder = new_folder(student)
    images = sorted(random_images(rng, 10), key=lambda im: im.name)
    write_directory(folder, images)
    ds = make_directory_dataset(student, folder)
    order = torch.randperm(len(images), generator=rng).tolist()
    for i in order + order[::-1] + order:
        expect_image(get_item(student, ds, i), images[i], f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_rgb_uint8_chw(student: Student, rng: torch.Generator) -> None:
    """every item is an RGB (not BGR) uint8 tensor of shape [3, H, W] with the file's exact pixels"""
    folder = new_folder(student)
    images = sorted(random_images(rng, 6), key=lambda im: im.name)
    write_directory(folder, images)
    ds = make_directory_dataset(student, folder)
    for i, image in enumerate(images):
        expect_image(get_item(student, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=1)
def check_directory_gray_and_rgba_png(student: Student, rng: torch.Generator) -> None:
    """grayscale and RGBA PNGs also give RGB [3, H, W] (grey repeated, alpha dropped)"""
    folder = new_folder(student)
    taken: set[str] = set()
    images = sorted([random_image(rng, random_name(rng, taken), kind) for kind in ("gray", "rgba", "rgb", "gray")],
                    key=lambda im: im.name)
    write_directory(folder, images)
    ds = make_directory_dataset(student, folder)
    for i, image in enumerate(images):
        expect_image(get_item(student, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images,
                     "Read with cv2.IMREAD_COLOR: it always gives 3 channels.")


@check(task="ImageDirectoryDataset", points=2)
def check_directory_dataloader_workers(student: Student, rng: torch.Generator) -> None:
    """through a DataLoader with 0, 1, 2 and 3 workers: every file once, in sorted order"""
    folder = new_folder(student)
    images = random_images(rng, int(torch.randint(7, 14, (1,), generator=rng)))
    write_directory(folder, images)
    images.sort(key=lambda im: im.name)
    ds = make_directory_dataset(student, folder)
    for workers in (0, 1, 2, 3):
        items = read_through_loader(student, "kit.read_directory", ds, workers, len(images),
                                    f"a directory of {len(images)} PNGs")
        expect_each_once(items, images, loader_call("ImageDirectoryDataset", "path", workers), INDEX_HINT,
                         INDEX_HINT, ordered=True)


# -- TarImageDataset --------------------------------------------------------------------


@check(task="TarImageDataset", points=1, visible=True)
def check_tar_guide_example(student: Student) -> None:
    """two tar files of three plain-colour images with 0 and 2 workers, and one of them with 2 workers"""
    folder = new_folder(student)
    images: list[list[Image]] = [[], []]
    for k in range(2):
        with tarfile.open(folder / f"part_{k}.tar", "w") as tar:
            for j in range(3):
                pixels = np.full((2 + j, 3 + k, 3), (40 * j, 200 - 100 * k, 10 + 30 * j + k), np.uint8)
                image = Image(f"part_{k}/img_{j}.png", torch.from_numpy(pixels).permute(2, 0, 1).contiguous(),
                              encode_png(pixels[..., ::-1]))
                add_member(tar, f"img_{j}.png", image.png)
                images[k].append(image)
    for files, workers in ((2, 0), (2, 2), (1, 2)):
        paths = [str(folder / f"part_{k}.tar") for k in range(files)]
        expect_stream(student, paths, [im for part in images[:files] for im in part], workers)


@check(task="TarImageDataset", points=2)
def check_tar_main_process(student: Student, rng: torch.Generator) -> None:
    """num_workers=0 reads 1, 2 and 5 tar files completely: RGB uint8 [3, H, W], each image once"""
    for n_files in (1, 2, 5):
        paths, images = tar_image_set(student, rng, n_files)
        expect_stream(student, paths, images, 0)


@check(task="TarImageDataset", points=2)
def check_tar_one_file_per_worker(student: Student, rng: torch.Generator) -> None:
    """as many workers as files (the guide's case): 1 file and 1 worker, 2 files and 2 workers"""
    for n in (1, 2):
        paths, images = tar_image_set(student, rng, n)
        expect_stream(student, paths, images, n)


@check(task="TarImageDataset", points=2)
def check_tar_more_files_than_workers(student: Student, rng: torch.Generator) -> None:
    """more files than workers: 2 files with 1 worker, 5 files with 2 and with 3 workers"""
    for n_files, workers in ((2, 1), (5, 2), (5, 3)):
        paths, images = tar_image_set(student, rng, n_files)
        expect_stream(student, paths, images, workers)


@check(task="TarImageDataset", points=2)
def check_tar_fewer_files_than_workers(student: Student, rng: torch.Generator) -> None:
    """fewer files than workers: 1 file with 2 and with 3 workers, 2 files with 3 workers"""
    for n_files, workers in ((1, 2), (1, 3), (2, 3)):
        paths, images = tar_image_set(student, rng, n_files)
        expect_stream(student, paths, images, workers)


@check(task="TarImageDataset", points=2)
def check_tar_corrupt_member_named(student: Student, rng: torch.Generator) -> None:
    """a truncated PNG or a text member raises a ValueError naming it (0 and 2 workers), without hanging"""
    taken: set[str] = set()
    truncated = random_image(rng, "truncated.png")
    cases = [(random_name(rng, taken), truncated.png[: len(truncated.png) // 2], 0),
             (random_name(rng, taken, "labels_", ".txt"), b"cat 0\ndog 1\n", 2)]
    for bad_name, data, workers in cases:
        folder = new_folder(student)
        images = random_images(rng, 6, taken=taken)
        good, path = folder / "shard-good.tar", folder / "shard-0.tar"
        for archive, extra in ((good, []), (path, [(bad_name, data)])):
            members = [(im.name, im.png) for im in images[:3]] + extra + [(im.name, im.png) for im in images[3:]]
            with tarfile.open(archive, "w") as tar:
                for name, content in members:
                    add_member(tar, name, content)
        # The same class on an archive of good images first: a dataset that raises on every archive earns nothing.
        read_through_loader(student, "kit.stream_tar", make_tar_dataset(student, [str(good)]), workers, len(images),
                            "a tar file of good images")
        call = loader_call("TarImageDataset", "[1 tar file]", workers)
        per_item = student.limits.call_seconds
        outcome = student.call("kit.stream_error", make_tar_dataset(student, [str(path)]), workers, per_item,
                               2 * len(images) + 4, timeout=per_item + 5.0 * workers + MARGIN_SECONDS)
        expected = f"ValueError naming {bad_name!r} (not an image)"
        if outcome["type"] is None:
            _fail(call, expected, f"{outcome['count']} items and no error",
                  "a member that does not decode was skipped or passed on silently", CORRUPT_HINT)
        got = f"{outcome['type']}: {outcome['message'][-600:]}"
        if not outcome["value_error"]:
            hint = HANG_HINT if "timed out" in outcome["message"] else CORRUPT_HINT
            _fail(call, expected, got, f"raised {outcome['type']}, not ValueError (or a subclass of it)", hint)
        if bad_name not in outcome["message"]:
            _fail(call, expected, got, "the error does not say which member is broken", CORRUPT_HINT)


@check(task="TarImageDataset", points=1)
def check_tar_skips_directories(student: Student, rng: torch.Generator) -> None:
    """directory entries in an archive (as `tar cf` writes them) are skipped, not decoded"""
    folder = new_folder(student)
    images = random_images(rng, 7, "images/")
    path = folder / "shard-0.tar"
    with tarfile.open(path, "w") as tar:
        add_directory(tar, "images")
        for image in images[:4]:
            add_member(tar, image.name, image.png)
        add_directory(tar, "images/more")
        for image in images[4:]:
            add_member(tar, image.name, image.png)
    for workers in (0, 2):
        expect_stream(student, [str(path)], images, workers)


@check(task="TarImageDataset", points=1)
def check_tar_second_epoch(student: Student, rng: torch.Generator) -> None:
    """iterating the same dataset again (a second epoch) yields every image again"""
    paths, images = tar_image_set(student, rng, 2)
    ds = make_tar_dataset(student, paths)
    for epoch, workers in enumerate((0, 0, 2, 2)):
        items = read_through_loader(student, "kit.stream_tar", ds, workers, len(images),
                                    f"epoch {epoch} of the same dataset")
        call = f"epoch {epoch}: " + loader_call("TarImageDataset", "[2 tar files]", workers)
        expect_each_once(items, images, call, SHARD_HINT if workers else ONCE_HINT, EPOCH_HINT)
