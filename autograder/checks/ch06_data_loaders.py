"""Hidden checks for 06_data_loaders: ImageDirectoryDataset and TarImageDataset.

The inputs (ch06_inputs) are PNGs the judge writes itself with OpenCV, of random
sizes and random pixels (drawn from `rng`), in a directory or inside tar archives
under `student.data_dir`: the judge knows the RGB tensor each file must give. The
oracles (ch06_oracles) identify an item by a hash of its exact content: the
multiset of hashes a DataLoader yields must equal the images written, which
catches duplicates and losses at once, and BGR order, wrong layouts or wrong
pixels on the way. DataLoaders run in the student's process (harness
ch06_data_loaders) with a timeout for every item from a worker, inside a call
that is itself bounded in time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import cv2
import numpy as np
import torch

from autograder.api import Remote, StudentApi, answer, harness
from autograder.checks.ch06_inputs import (
    Image,
    directory_example,
    new_folder,
    random_image,
    random_images,
    random_name,
    tar_example,
    tar_image_set,
    write_directory,
    write_tar,
)
from autograder.checks.ch06_oracles import INDEX_HINT, SORT_HINT, expect_each_once, expect_image
from autograder.expect import failure
from autograder.plugin import check
from autograder.remote import StudentError, describe_call, summarize
from autograder.wire import RemoteObject

# -- the API: what the notebook asks for, as the judge calls it -----------------


class Raised(TypedDict, total=False):
    type: str | None  # the exception's type name; None when the stream ended without one
    value_error: bool  # whether it is a ValueError (or a subclass)
    message: str  # its own message, without torch's wrapping
    count: int  # the items streamed when none was raised


class Api(StudentApi):
    @answer
    def ImageDirectoryDataset(self, path: str, pattern: str = "*.png") -> RemoteObject:
        """A map-style Dataset of the files matching `pattern` in `path`, in sorted order, as RGB uint8 [3, H, W]."""

    @answer
    def TarImageDataset(self, paths: list[str]) -> RemoteObject:
        """An IterableDataset streaming the images in the tar files, each exactly once across workers."""

    @harness()
    def size(self, dataset: RemoteObject) -> Any:
        """len(dataset), as DataLoader's sampler takes it."""

    @harness()
    def read_directory(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> list[Any]:
        """The items of DataLoader(dataset, batch_size=None, num_workers=...), in the loader's order."""

    @harness()
    def stream_tar(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> list[Any]:
        """The same for a TarImageDataset."""

    @harness()
    def stream_error(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> Raised:
        """Streams like stream_tar; the exception it raises, as plain data (nothing of the grader's)."""


def dataset(made: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> RemoteObject:
    """What `name(*args, **kwargs)` made, which must be an instance living in the student's process."""
    if not isinstance(made, RemoteObject):
        raise failure(call=describe_call(name, args, kwargs), expected=f"a {name} instance", got=summarize(made))
    return made


def directory_dataset(api: Api, path: Path, *args: str, **kwargs: str) -> RemoteObject:
    return dataset(api.ImageDirectoryDataset(str(path), *args, **kwargs), "ImageDirectoryDataset", (str(path), *args),
                   kwargs)


def tar_dataset(api: Api, paths: list[str]) -> RemoteObject:
    return dataset(api.TarImageDataset(paths), "TarImageDataset", (paths,), {})


def get_item(api: Api, ds: RemoteObject, index: int) -> Any:
    return api.student.method(ds, ["__getitem__"], index)["value"]


# A call through a DataLoader may take the per-item timeout, then torch's shutdown of hung workers
# (up to 5 s each, one after the other), plus this margin for starting and stopping them.
MARGIN_SECONDS = 10.0


def through_loader(loader: Remote[[RemoteObject, int, float, int], Any], ds: RemoteObject, num_workers: int,
                   expected_count: int) -> Any:
    """`loader` (a harness function) on DataLoader(ds, batch_size=None, num_workers=num_workers), keeping up to
    twice the items expected. Time-bounded twice: the DataLoader's own timeout for each item from a worker,
    and the call."""
    per_item = loader.student.limits.call_seconds
    bounded = loader.using(timeout=per_item + 5.0 * num_workers + MARGIN_SECONDS)
    return bounded(ds, num_workers, per_item, 2 * expected_count + 4)


def read_through_loader(loader: Remote[[RemoteObject, int, float, int], list[Any]], ds: RemoteObject,
                        num_workers: int, expected_count: int, what: str) -> list[Any]:
    """The items of DataLoader(ds, batch_size=None, num_workers=num_workers); a failure says what was read."""
    try:
        return through_loader(loader, ds, num_workers, expected_count)
    except StudentError as e:
        hint = f"\nHint:     {HANG_HINT}" if "timed out" in str(e) else ""
        raise StudentError(f"Reading {what} through DataLoader(..., batch_size=None, num_workers={num_workers}):\n"
                           f"{e}{hint}") from None


# -- judging -----------------------------------------------------------------------

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


def loader_call(name: str, what: str, workers: int) -> str:
    return f"DataLoader({name}({what}), batch_size=None, num_workers={workers})"


def tar_files(n: int) -> str:
    return "1 tar file" if n == 1 else f"{n} tar files"


def expect_stream(api: Api, paths: list[str], images: list[Image], workers: int) -> None:
    """Every image of the archives exactly once through a DataLoader with `workers` workers."""
    items = read_through_loader(api.stream_tar, tar_dataset(api, paths), workers, len(images),
                                f"{len(images)} images in {tar_files(len(paths))}")
    expect_each_once(items, images, loader_call("TarImageDataset", f"[{tar_files(len(paths))}]", workers),
                     SHARD_HINT if workers else ONCE_HINT, LOST_HINT if workers else MAIN_HINT)


# -- ImageDirectoryDataset ------------------------------------------------------------


@check(task="ImageDirectoryDataset", points=1, visible=True)
def check_directory_guide_example(api: Api) -> None:
    """three plain-colour PNGs and a text file: len 3, sorted order, RGB uint8 [3, H, W]"""
    folder = new_folder(api.student.data_dir)
    images = directory_example(folder)
    ds = directory_dataset(api, folder)
    n = api.size(ds)
    if n != 3:
        raise failure(call=f"len(ImageDirectoryDataset({folder.name!r}))", expected="3 (a.png, b.png, c.png)",
                      got=repr(n), problem="notes.txt does not match the default pattern '*.png'" if n == 4
                      else "wrong length")
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_sorted_and_len(api: Api, rng: torch.Generator) -> None:
    """random file names: len() counts the *.png files and index i reads the i-th name in sorted order"""
    folder = new_folder(api.student.data_dir)
    images = random_images(rng, int(torch.randint(8, 16, (1,), generator=rng)))
    jpeg = cv2.imencode(".jpg", np.zeros((4, 4, 3), np.uint8))[1].tobytes()
    write_directory(folder, images, {"readme.txt": b"images for a test", "photo.jpg": jpeg, "png": b"no dot"})
    images.sort(key=lambda im: im.name)
    ds = directory_dataset(api, folder)
    n = api.size(ds)
    if n != len(images):
        raise failure(call="len(ImageDirectoryDataset(path))", expected=f"{len(images)} (the .png files)", got=repr(n),
                      problem="len() must count the files matching '*.png', and only those",
                      hint="Build the list once in __init__ with glob and return len(self.paths).")
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images, SORT_HINT)


@check(task="ImageDirectoryDataset", points=1)
def check_directory_pattern(api: Api, rng: torch.Generator) -> None:
    """the `pattern` argument (positional or keyword) selects which files are read"""
    folder = new_folder(api.student.data_dir)
    taken: set[str] = set()
    cats, dogs = random_images(rng, 4, "cat_", taken), random_images(rng, 5, "dog_", taken)
    write_directory(folder, cats + dogs)
    for images, pattern, keyword in ((cats, "cat_*.png", True), (dogs, "dog_*.png", False)):
        images = sorted(images, key=lambda im: im.name)
        call = f"ImageDirectoryDataset(path, {'pattern=' if keyword else ''}{pattern!r})"
        ds = directory_dataset(api, folder, pattern=pattern) if keyword else directory_dataset(api, folder, pattern)
        n = api.size(ds)
        if n != len(images):
            raise failure(call=f"len({call})", expected=str(len(images)), got=repr(n),
                          problem=f"only files matching {pattern!r} belong to it",
                          hint="glob.glob(os.path.join(glob.escape(path), pattern)), with the pattern given.")
        for i, image in enumerate(images):
            expect_image(get_item(api, ds, i), image, f"{call}[{i}]", images, SORT_HINT)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_same_index_same_image(api: Api, rng: torch.Generator) -> None:
    """ds[i] is deterministic: the same image for the same index, asked in any order, any number of times"""
    folder = new_folder(api.student.data_dir)
    images = sorted(random_images(rng, 10), key=lambda im: im.name)
    write_directory(folder, images)
    ds = directory_dataset(api, folder)
    order = torch.randperm(len(images), generator=rng).tolist()
    for i in order + order[::-1] + order:
        expect_image(get_item(api, ds, i), images[i], f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_rgb_uint8_chw(api: Api, rng: torch.Generator) -> None:
    """every item is an RGB (not BGR) uint8 tensor of shape [3, H, W] with the file's exact pixels"""
    folder = new_folder(api.student.data_dir)
    images = sorted(random_images(rng, 6), key=lambda im: im.name)
    write_directory(folder, images)
    ds = directory_dataset(api, folder)
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=1)
def check_directory_gray_and_rgba_png(api: Api, rng: torch.Generator) -> None:
    """grayscale and RGBA PNGs also give RGB [3, H, W] (grey repeated, alpha dropped)"""
    folder = new_folder(api.student.data_dir)
    taken: set[str] = set()
    images = sorted([random_image(rng, random_name(rng, taken), kind) for kind in ("gray", "rgba", "rgb", "gray")],
                    key=lambda im: im.name)
    write_directory(folder, images)
    ds = directory_dataset(api, folder)
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images,
                     "Read with cv2.IMREAD_COLOR: it always gives 3 channels.")


@check(task="ImageDirectoryDataset", points=2)
def check_directory_dataloader_workers(api: Api, rng: torch.Generator) -> None:
    """through a DataLoader with 0, 1, 2 and 3 workers: every file once, in sorted order"""
    folder = new_folder(api.student.data_dir)
    images = random_images(rng, int(torch.randint(7, 14, (1,), generator=rng)))
    write_directory(folder, images)
    images.sort(key=lambda im: im.name)
    ds = directory_dataset(api, folder)
    for workers in (0, 1, 2, 3):
        items = read_through_loader(api.read_directory, ds, workers, len(images), f"a directory of {len(images)} PNGs")
        expect_each_once(items, images, loader_call("ImageDirectoryDataset", "path", workers), INDEX_HINT,
                         INDEX_HINT, ordered=True)


# -- TarImageDataset --------------------------------------------------------------------


@check(task="TarImageDataset", points=1, visible=True)
def check_tar_guide_example(api: Api) -> None:
    """two tar files of three plain-colour images with 0 and 2 workers, and one of them with 2 workers"""
    paths, images = tar_example(new_folder(api.student.data_dir))
    for files, workers in ((2, 0), (2, 2), (1, 2)):
        expect_stream(api, paths[:files], [im for part in images[:files] for im in part], workers)


@check(task="TarImageDataset", points=2)
def check_tar_main_process(api: Api, rng: torch.Generator) -> None:
    """num_workers=0 reads 1, 2 and 5 tar files completely: RGB uint8 [3, H, W], each image once"""
    for n_files in (1, 2, 5):
        paths, images = tar_image_set(api.student.data_dir, rng, n_files)
        expect_stream(api, paths, images, 0)


@check(task="TarImageDataset", points=2)
def check_tar_one_file_per_worker(api: Api, rng: torch.Generator) -> None:
    """as many workers as files (the guide's case): 1 file and 1 worker, 2 files and 2 workers"""
    for n in (1, 2):
        paths, images = tar_image_set(api.student.data_dir, rng, n)
        expect_stream(api, paths, images, n)


@check(task="TarImageDataset", points=2)
def check_tar_more_files_than_workers(api: Api, rng: torch.Generator) -> None:
    """more files than workers: 2 files with 1 worker, 5 files with 2 and with 3 workers"""
    for n_files, workers in ((2, 1), (5, 2), (5, 3)):
        paths, images = tar_image_set(api.student.data_dir, rng, n_files)
        expect_stream(api, paths, images, workers)


@check(task="TarImageDataset", points=2)
def check_tar_fewer_files_than_workers(api: Api, rng: torch.Generator) -> None:
    """fewer files than workers: 1 file with 2 and with 3 workers, 2 files with 3 workers"""
    for n_files, workers in ((1, 2), (1, 3), (2, 3)):
        paths, images = tar_image_set(api.student.data_dir, rng, n_files)
        expect_stream(api, paths, images, workers)


@check(task="TarImageDataset", points=2)
def check_tar_corrupt_member_named(api: Api, rng: torch.Generator) -> None:
    """a truncated PNG or a text member raises a ValueError naming it (0 and 2 workers), without hanging"""
    taken: set[str] = set()
    truncated = random_image(rng, "truncated.png")
    cases = [(random_name(rng, taken), truncated.png[: len(truncated.png) // 2], 0),
             (random_name(rng, taken, "labels_", ".txt"), b"cat 0\ndog 1\n", 2)]
    for bad_name, data, workers in cases:
        folder = new_folder(api.student.data_dir)
        images = random_images(rng, 6, taken=taken)
        members: list[tuple[str, bytes | None]] = [(im.name, im.png) for im in images]
        good = write_tar(folder / "shard-good.tar", members)
        bad = write_tar(folder / "shard-0.tar", [*members[:3], (bad_name, data), *members[3:]])
        # The same class on an archive of good images first: a dataset that raises on every archive earns nothing.
        read_through_loader(api.stream_tar, tar_dataset(api, [good]), workers, len(images), "a tar file of good images")
        call = loader_call("TarImageDataset", "[1 tar file]", workers)
        outcome = through_loader(api.stream_error, tar_dataset(api, [bad]), workers, len(images))
        expected = f"ValueError naming {bad_name!r} (not an image)"
        if outcome["type"] is None:
            raise failure(call=call, expected=expected, got=f"{outcome['count']} items and no error",
                          problem="a member that does not decode was skipped or passed on silently", hint=CORRUPT_HINT)
        got = f"{outcome['type']}: {outcome['message'][-600:]}"
        if not outcome["value_error"]:
            raise failure(call=call, expected=expected, got=got,
                          problem=f"raised {outcome['type']}, not ValueError (or a subclass of it)",
                          hint=HANG_HINT if "timed out" in outcome["message"] else CORRUPT_HINT)
        if bad_name not in outcome["message"]:
            raise failure(call=call, expected=expected, got=got,
                          problem="the error does not say which member is broken", hint=CORRUPT_HINT)


@check(task="TarImageDataset", points=1)
def check_tar_skips_directories(api: Api, rng: torch.Generator) -> None:
    """directory entries in an archive (as `tar cf` writes them) are skipped, not decoded"""
    images = random_images(rng, 7, "images/")
    members = [(im.name, im.png) for im in images]
    path = write_tar(new_folder(api.student.data_dir) / "shard-0.tar",
                     [("images", None), *members[:4], ("images/more", None), *members[4:]])
    for workers in (0, 2):
        expect_stream(api, [path], images, workers)


@check(task="TarImageDataset", points=1)
def check_tar_second_epoch(api: Api, rng: torch.Generator) -> None:
    """iterating the same dataset again (a second epoch) yields every image again"""
    paths, images = tar_image_set(api.student.data_dir, rng, 2)
    ds = tar_dataset(api, paths)
    for epoch, workers in enumerate((0, 0, 2, 2)):
        items = read_through_loader(api.stream_tar, ds, workers, len(images), f"epoch {epoch} of the same dataset")
        call = f"epoch {epoch}: " + loader_call("TarImageDataset", "[2 tar files]", workers)
        expect_each_once(items, images, call, SHARD_HINT if workers else ONCE_HINT, EPOCH_HINT)
