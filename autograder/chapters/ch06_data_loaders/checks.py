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

import ast
from pathlib import Path
from typing import Any, TypedDict

import cv2
import numpy as np
import torch

from autograder.chapters.ch06_data_loaders.inputs import (
    Image,
    directory_example,
    new_folder,
    plain_image,
    random_image,
    random_images,
    random_name,
    tar_example,
    tar_image_set,
    write_directory,
    write_tar,
)
from autograder.chapters.ch06_data_loaders.oracles import (
    INDEX_HINT,
    SORT_HINT,
    expect_each_once,
    expect_image,
    expect_padded,
)
from autograder.judging.authoring import (
    Remote,
    RemoteObject,
    StudentApi,
    StudentError,
    answer,
    check,
    describe_call,
    failure,
    harness,
    show,
    subclasses,
    summarize,
    task_code,
)

# -- the API: what the notebook asks for, as the judge calls it -----------------


class Raised(TypedDict, total=False):
    type: str | None  # the exception's type name; None when the stream ended without one
    value_error: bool  # whether it is a ValueError (or a subclass)
    message: str  # its own message, without torch's wrapping
    count: int  # the items streamed when none was raised


class Orders(TypedDict):
    orders: list[list[list[Any]]]  # per seed, per epoch: the items in the order yielded


class Endless(TypedDict):
    order: list[Any]  # the first items yielded from the endless count 0, 1, 2, ...


class Resumed(TypedDict, total=False):
    epoch0: list[Any]  # the original's epoch 0, with a checkpoint taken during it
    epoch1: list[Any]  # the original's next epoch
    state_error: str  # why the checkpoint did not survive torch.save / torch.load(weights_only=True)
    state_type: str
    resumed0: list[Any]  # a new ShuffleBuffer after load_state_dict: its first epoch, then its next
    resumed1: list[Any]


class Collated(TypedDict):
    out: Any  # what pad_collate returned
    same_list: bool  # whether the list it was given still holds the same tensors, in order
    after: list[Any]  # the tensors it was given, as they are after the call


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
    def stream_tar_by_worker(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> list[Any]:
        """stream_tar, each item as [the id of the DataLoader worker that yielded it, the item]."""

    @harness()
    def stream_error(self, dataset: RemoteObject, num_workers: int, timeout: float, limit: int) -> Raised:
        """Streams like stream_tar; the exception it raises, as plain data (nothing of the grader's)."""

    @answer
    def pad_collate(self, batch: list[Any]) -> Any:
        """(images uint8 [B, 3, max H, max W] padded at the bottom and right with 0, sizes int64 [B, 2] of (H, W))."""

    @harness()
    def collate(self, images: list[Any]) -> Collated:
        """pad_collate on the images as the datasets give them (channels-first views); the inputs after the call."""

    @harness()
    def collate_loader(self, images: list[Any], batch_size: int, num_workers: int, timeout: float,
                       limit: int) -> list[Any]:
        """The batches of DataLoader(the images, batch_size=..., collate_fn=pad_collate, num_workers=...)."""

    @answer
    def seed_worker(self, worker_id: int) -> None:
        """A worker_init_fn: gives the worker's copy of the dataset its own `rng`, from the worker's torch seed."""

    @harness()
    def seeded_epochs(self, count: int, num_workers: int, seed: int, epochs: int, timeout: float) -> list[Any]:
        """`epochs` epochs of one DataLoader(random draws, worker_init_fn=seed_worker, generator seeded with seed)."""

    @answer
    def ShuffleBuffer(self, source: Any, buffer_size: int, seed: int = 0) -> RemoteObject:
        """The stretch task: an IterableDataset streaming `source` shuffled by a buffer, checkpointed and resumed
        with state_dict() and load_state_dict()."""

    @harness()
    def shuffle_orders(self, items: list[int], buffer_size: int, seeds: list[int], epochs: int) -> Orders:
        """`epochs` epochs of a fresh ShuffleBuffer(items, buffer_size, seed) for each seed."""

    @harness()
    def shuffle_endless(self, buffer_size: int, seed: int, take: int) -> Endless:
        """The first `take` items of a ShuffleBuffer over an endless count."""

    @harness()
    def shuffle_resume(self, items: list[int], buffer_size: int, seed: int, cut: int | None) -> Resumed:
        """Epoch 0 checkpointed after `cut` items and continued, epoch 1, and both from a resumed copy."""

    @harness()
    def shuffle_loader(self, n: int, buffer_size: int, seed: int, num_workers: int, timeout: float,
                       limit: int) -> list[Any]:
        """The items of DataLoader(ShuffleBuffer(a range(n) sharded between workers, ...), batch_size=None)."""


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
        raise e.restated(f"Reading {what} through DataLoader(..., batch_size=None, num_workers={num_workers}):\n"
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
                "ValueError(f\"member {member.name!r} of {path} ...\") naming the member and the archive, as the "
                "notebook documents.")


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
    images = write_directory(folder, images, {"readme.txt": b"images for a test", "photo.jpg": jpeg, "png": b"no dot"},
                             rng)
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
    cats, dogs = write_directory(folder, cats, rng=rng), write_directory(folder, dogs, rng=rng)
    for images, pattern, keyword in ((cats, "cat_*.png", True), (dogs, "dog_*.png", False)):
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
    images = write_directory(folder, random_images(rng, 10), rng=rng)
    ds = directory_dataset(api, folder)
    order = torch.randperm(len(images), generator=rng).tolist()
    for i in order + order[::-1] + order:
        expect_image(get_item(api, ds, i), images[i], f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_rgb_uint8_chw(api: Api, rng: torch.Generator) -> None:
    """every item is an RGB (not BGR) uint8 tensor of shape [3, H, W] with the file's exact pixels"""
    folder = new_folder(api.student.data_dir)
    images = write_directory(folder, random_images(rng, 6), rng=rng)
    ds = directory_dataset(api, folder)
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images)


@check(task="ImageDirectoryDataset", points=1)
def check_directory_gray_and_rgba_png(api: Api, rng: torch.Generator) -> None:
    """grayscale, RGBA, palette and 16-bit PNGs also give RGB uint8 [3, H, W] (grey repeated, alpha dropped, palette
    looked up, 16-bit values scaled to their high byte); a file OpenCV cannot read raises an error naming it"""
    folder = new_folder(api.student.data_dir)
    taken: set[str] = set()
    kinds = ("gray", "rgba", "rgb", "palette", "rgb16", "gray", "palette", "rgb16")
    images = write_directory(folder, [random_image(rng, random_name(rng, taken), kind) for kind in kinds], rng=rng)
    ds = directory_dataset(api, folder)
    for i, image in enumerate(images):
        expect_image(get_item(api, ds, i), image, f"ImageDirectoryDataset(path)[{i}]", images,
                     "Read with cv2.IMREAD_COLOR: it always gives 3 channels of 8 bits (a 16-bit value becomes its "
                     "high byte, value >> 8), then convert BGR to RGB. IMREAD_UNCHANGED or IMREAD_ANYDEPTH keep "
                     "alpha, one grey channel or 16 bits.")
    _expect_unreadable_named(api, rng, taken)


def _expect_unreadable_named(api: Api, rng: torch.Generator, taken: set[str]) -> None:
    """The notebook's "raise a clear error if OpenCV cannot read the file": a truncated PNG alone in a folder."""
    folder = new_folder(api.student.data_dir)
    broken = random_name(rng, taken)
    (folder / broken).write_bytes(random_image(rng, broken).png[:40])  # the signature and part of the header
    call = f"ImageDirectoryDataset(path)[0], where {broken} is a truncated PNG OpenCV cannot decode"
    hint = ("cv2.imread returns None for a file it cannot decode: check for None and raise, e.g. "
            "raise ValueError(f'OpenCV cannot read {path!r}'), before converting the image.")
    try:
        got = get_item(api, directory_dataset(api, folder), 0)
    except StudentError as e:
        if broken not in str(e):
            raise failure(call=call, expected=f"an error whose message names {broken!r}", got=summarize(e),
                          problem="the error does not say which file OpenCV could not read", hint=hint) from None
        return
    raise failure(call=call, expected=f"an error whose message names {broken!r}", got=show(got),
                  problem="no error: the unreadable file was passed on", hint=hint)


@check(task="ImageDirectoryDataset", points=2)
def check_directory_dataloader_workers(api: Api, rng: torch.Generator) -> None:
    """through a DataLoader with 0, 1, 2 and 3 workers: every file once, in sorted order"""
    folder = new_folder(api.student.data_dir)
    images = write_directory(folder, random_images(rng, int(torch.randint(7, 14, (1,), generator=rng))), rng=rng)
    ds = directory_dataset(api, folder)
    for workers in (0, 1, 2, 3):
        items = read_through_loader(api.read_directory, ds, workers, len(images), f"a directory of {len(images)} PNGs")
        expect_each_once(items, images, loader_call("ImageDirectoryDataset", "path", workers), INDEX_HINT,
                         INDEX_HINT, ordered=True)


# -- TarImageDataset --------------------------------------------------------------------


@check(task="TarImageDataset", points=1, visible=True)
def check_tar_guide_example(api: Api) -> None:
    """two tar files of three plain-colour images with 0 and 2 workers, one of them with 2 workers; and your class
    derives from IterableDataset (read from your code)"""
    expect_iterable_dataset(api)
    paths, images = tar_example(new_folder(api.student.data_dir))
    for files, workers in ((2, 0), (2, 2), (1, 2)):
        expect_stream(api, paths[:files], [im for part in images[:files] for im in part], workers)


ITERABLE_BASES = ("torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset")


def expect_iterable_dataset(api: Api) -> None:
    """The judge's reading of the TarImageDataset cell: class TarImageDataset derives from IterableDataset."""
    code = task_code(api.student.submission, "TarImageDataset")
    found = {c.name for base in ITERABLE_BASES for _, c in subclasses(code, base)}
    if "TarImageDataset" not in found:
        classes = sorted({n.name for _, n in code.walk() if isinstance(n, ast.ClassDef)})
        raise failure(call="the judge's reading of the code of `TarImageDataset`",
                      expected="class TarImageDataset(IterableDataset), from torch.utils.data",
                      got=f"classes {classes} and none of them TarImageDataset deriving from IterableDataset",
                      problem="the task asks for a stream (an IterableDataset), not a map-style Dataset",
                      hint="Write class TarImageDataset(IterableDataset) with __iter__, as the notebook imports it.")


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


IDLE_HINT = ("With fewer files than workers, the workers that share a file split its members: worker w of the k "
             "workers reading a file takes its image members w, w + k, w + 2k, ... (or any split that gives each of "
             "them some). Whole files per worker leaves some workers idle.")


@check(task="TarImageDataset", points=2)
def check_tar_fewer_files_than_workers(api: Api, rng: torch.Generator) -> None:
    """fewer files than workers: 1 file with 2 and with 3 workers, 2 files with 3 workers; each image once and every
    worker yields some images (the worker of each item as the judge's DataLoader reports it)"""
    for n_files, workers in ((1, 2), (1, 3), (2, 3)):
        paths, images = tar_image_set(api.student.data_dir, rng, n_files)
        what = f"{len(images)} images in {tar_files(n_files)}"
        tagged = read_through_loader(api.stream_tar_by_worker, tar_dataset(api, paths), workers, len(images), what)
        call = loader_call("TarImageDataset", f"[{tar_files(n_files)}]", workers)
        expect_each_once([item for _, item in tagged], images, call, SHARD_HINT, LOST_HINT)
        counts = [sum(1 for w, _ in tagged if w == worker) for worker in range(workers)]
        if min(counts) == 0:
            raise failure(call=call, inputs=[f"{tar_files(n_files)} of {len(images)} images in all"],
                          expected=f"every one of the {workers} workers yields some images",
                          got=f"images per worker {counts}", problem="some workers read nothing: the members of a "
                          "file were not split between the workers that share it", hint=IDLE_HINT)


@check(task="TarImageDataset", points=2)
def check_tar_corrupt_member_named(api: Api, rng: torch.Generator) -> None:
    """a truncated PNG or a text member raises a ValueError naming it and its archive (0 and 2 workers), without
    hanging"""
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
        expected = f"ValueError naming {bad_name!r} (not an image) and its archive {Path(bad).name!r}"
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
        if Path(bad).name not in outcome["message"]:
            raise failure(call=call, expected=expected, got=got,
                          problem="the error does not say which archive holds the broken member", hint=CORRUPT_HINT)


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


# -- pad_collate ------------------------------------------------------------------------------

STACK_HINT = ("torch.stack (what DataLoader's default collate does) needs images of one size: make one zero tensor "
              "of the largest height and width and copy each image into its top-left corner.")
MUTATE_HINT = ("Leave the batch alone: no in-place operations on its images (unsqueeze_, resize_, copy_ into "
               "them, ...) and no sort, pop or reassignment of the list. Copy each image into the new tensor.")


def collate_call(images: list[torch.Tensor]) -> str:
    return "pad_collate([" + ", ".join(f"[3, {im.shape[1]}, {im.shape[2]}]" for im in images) + "])"


def random_batch(rng: torch.Generator, count: int, equal: bool = False) -> list[torch.Tensor]:
    """`count` random uint8 [3, H, W] images, sides 1 to 40 (all of one size if `equal`)."""
    sides = torch.randint(1, 41, (1 if equal else count, 2), generator=rng).expand(count, 2).tolist()
    return [torch.randint(0, 256, (3, h, w), generator=rng, dtype=torch.uint8) for h, w in sides]


def collate_once(api: Api, images: list[torch.Tensor]) -> Collated:
    """The student's pad_collate on `images` (as views, as the datasets give them), its output judged."""
    call = collate_call(images)
    inputs = ["each image a uint8 [3, H, W] view of an [H, W, 3] array, as ImageDirectoryDataset returns it"]
    run = api.collate.using(call=call, hint=STACK_HINT)(images)
    expect_padded(run["out"], images, call, inputs)
    return run


@check(task="pad_collate", points=1, visible=True)
def check_pad_collate_notebook_example(api: Api) -> None:
    """the notebook's example: three plain-colour images of different sizes"""
    images = [plain_image(name, colour, h, w).rgb for name, colour, h, w in
              (("a", (255, 0, 0), 4, 6), ("b", (0, 255, 0), 5, 3), ("c", (0, 0, 255), 2, 2))]
    collate_once(api, images)


@check(task="pad_collate", points=2)
def check_pad_collate_random_batches(api: Api, rng: torch.Generator) -> None:
    """random batches of 1 to 6 images of random sizes (1 to 40 pixels a side), one of equal sizes: pixels, zero
    padding at the bottom and right, (H, W) sizes, dtypes"""
    for count in (1, 2, 3, 4, 5, 6, 6, 3):
        collate_once(api, random_batch(rng, count))
    collate_once(api, random_batch(rng, 4, equal=True))


@check(task="pad_collate", points=1)
def check_pad_collate_leaves_inputs(api: Api, rng: torch.Generator) -> None:
    """a right answer that leaves the batch unchanged: the list and each of its images"""
    for count in (3, 5):
        images = random_batch(rng, count)
        run = collate_once(api, images)
        after = run["after"]
        changed = [i for i, (a, b) in enumerate(zip(after, images, strict=True))
                   if not (isinstance(a, torch.Tensor) and a.shape == b.shape and torch.equal(a, b))]
        if changed:
            i = changed[0]
            raise failure(call=collate_call(images), expected=f"image {i} unchanged: {show(images[i])}",
                          got=f"after the call: {show(after[i])}",
                          problem=f"pad_collate changed {len(changed)} of the images it was given (in place)",
                          hint=MUTATE_HINT)
        if not run["same_list"]:
            raise failure(call=collate_call(images), expected="the list given still holds its images, in order",
                          got="after the call it does not", problem="pad_collate changed the list it was given",
                          hint=MUTATE_HINT)


@check(task="pad_collate", points=1)
def check_pad_collate_dataloader_workers(api: Api, rng: torch.Generator) -> None:
    """as DataLoader(..., batch_size=4, collate_fn=pad_collate) with 0 and 2 workers: every batch padded right"""
    images = random_batch(rng, int(torch.randint(9, 15, (1,), generator=rng)))
    for workers in (0, 2):
        per_item = api.student.limits.call_seconds
        loader = api.collate_loader.using(timeout=per_item + 5.0 * workers + MARGIN_SECONDS, hint=STACK_HINT)
        batches = loader(images, 4, workers, per_item, len(images))
        call = f"DataLoader({len(images)} images, batch_size=4, collate_fn=pad_collate, num_workers={workers})"
        groups = [images[k:k + 4] for k in range(0, len(images), 4)]
        if not isinstance(batches, list) or len(batches) != len(groups):
            raise failure(call=call, expected=f"{len(groups)} batches", got=summarize(batches),
                          problem="a batch for every 4 images", hint=STACK_HINT)
        for k, (batch, group) in enumerate(zip(batches, groups, strict=True)):
            expect_padded(batch, group, f"{call}, batch {k}", [f"batch {k}: {collate_call(group)}"])


# -- seed_worker --------------------------------------------------------------------------------

SEED_WORKER_HINT = ("In seed_worker, info = get_worker_info() gives the worker's copy of the dataset "
                    "(info.dataset); give it a new generator: info.dataset.rng = np.random.default_rng(seed), with "
                    "seed = torch.initial_seed() (or info.seed), which the DataLoader makes from its generator and "
                    "the worker's id. Seeding random and numpy.random does not reach a generator the dataset holds.")
REPRODUCE_HINT = ("Seed the new generator only from torch.initial_seed() (or get_worker_info().seed): the clock, "
                  "os.urandom or np.random.default_rng() without a seed give new numbers on every run.")
NEW_EPOCH_HINT = ("The DataLoader draws a new base seed from its generator every epoch, and torch.initial_seed() in "
                  "a worker is that base seed + worker_id. A seed made from worker_id alone, or drawn from the "
                  "dataset's copied rng, is the same every epoch.")


def seeded_call(count: int, workers: int, seed: int) -> str:
    return (f"DataLoader(RandomDraws({count}), batch_size=None, num_workers={workers}, worker_init_fn=seed_worker, "
            f"generator=torch.Generator().manual_seed({seed}))")


def seeded_epochs(api: Api, count: int, workers: int, seed: int, epochs: int) -> list[list[tuple[int, int]]]:
    """Each epoch's draws, item by item, checked for their form (one item per index, in order)."""
    per_item = api.student.limits.call_seconds
    run = api.seeded_epochs.using(timeout=epochs * (per_item + 5.0 * workers + MARGIN_SECONDS),
                                  call=seeded_call(count, workers, seed), hint=SEED_WORKER_HINT)
    got = run(count, workers, seed, epochs, per_item)
    out = []
    for epoch in got:
        if (not isinstance(epoch, list) or [item[0] if isinstance(item, list) else None for item in epoch]
                != list(range(count))):
            raise failure(call=seeded_call(count, workers, seed), expected=f"items 0 .. {count - 1} in order",
                          got=summarize(epoch), problem="the DataLoader did not give every item once, in order",
                          hint="seed_worker should change the dataset's rng only.")
        out.append([(item[1], item[2]) for item in epoch])
    return out


def expect_distinct(draws: list[tuple[int, int]], call: str) -> None:
    seen: dict[tuple[int, int], int] = {}
    for i, pair in enumerate(draws):
        if pair in seen:
            raise failure(call=call, expected="random numbers of every item different from every other item's",
                          got=f"items {seen[pair]} and {i} drew the same numbers {list(pair)}",
                          problem="the workers' copies of dataset.rng start in the same state: each worker repeats "
                                  "the others' augmentations", hint=SEED_WORKER_HINT)
        seen[pair] = i


def expect_same(first: list[list[tuple[int, int]]], again: list[list[tuple[int, int]]], call: str) -> None:
    for epoch, (a, b) in enumerate(zip(first, again, strict=True)):
        i = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)
        if i is not None:
            raise failure(call=call + ", twice", expected=f"epoch {epoch}, item {i}: {list(a[i])} both times",
                          got=f"{list(a[i])}, then {list(b[i])}",
                          problem="two DataLoaders with the same generator seed drew different numbers",
                          hint=REPRODUCE_HINT)


@check(task="seed_worker", points=1, visible=True)
def check_seed_worker_notebook_example(api: Api) -> None:
    """the notebook's example: 8 items, 2 workers, generator seed 0, twice: every item's numbers its own, the same
    in both runs"""
    first, again = seeded_epochs(api, 8, 2, 0, 1), seeded_epochs(api, 8, 2, 0, 1)
    expect_distinct(first[0], seeded_call(8, 2, 0))
    expect_same(first, again, seeded_call(8, 2, 0))


@check(task="seed_worker", points=1)
def check_seed_worker_workers_differ_reproducibly(api: Api, rng: torch.Generator) -> None:
    """2 and 3 workers, random generator seeds, two epochs: no two items draw the same numbers, and a second
    DataLoader with the same seed draws the same ones"""
    for workers in (2, 3):
        count, seed = int(torch.randint(9, 16, (1,), generator=rng)), int(torch.randint(0, 2**31, (1,), generator=rng))
        first, again = seeded_epochs(api, count, workers, seed, 2), seeded_epochs(api, count, workers, seed, 2)
        for epoch in first:
            expect_distinct(epoch, seeded_call(count, workers, seed))
        expect_same(first, again, seeded_call(count, workers, seed))


@check(task="seed_worker", points=1)
def check_seed_worker_new_each_epoch_and_seed(api: Api, rng: torch.Generator) -> None:
    """1 and 2 workers: a new epoch, and another generator seed, draw new numbers for every item"""
    for workers in (1, 2):
        count = int(torch.randint(5, 10, (1,), generator=rng))
        seed, other = (int(s) for s in torch.randperm(2**20, generator=rng)[:2])
        (first, second), (third,) = seeded_epochs(api, count, workers, seed, 2), seeded_epochs(api, count, workers,
                                                                                                other, 1)
        for label, later in (("epoch 1 of the same DataLoader", second), (f"generator seed {other}", third)):
            repeated = [i for i, (a, b) in enumerate(zip(first, later, strict=True)) if a == b]
            if repeated:
                i = repeated[0]
                raise failure(call=seeded_call(count, workers, seed), expected=f"{label}: new numbers for every item",
                              got=f"item {i} drew {list(first[i])} in epoch 0 and again with {label}",
                              problem=f"{len(repeated)} of {count} items drew the same numbers again: the "
                                      "augmentations repeat", hint=NEW_EPOCH_HINT)


# -- ShuffleBuffer (the stretch task, bonus points) ------------------------------------------

BOUND_HINT = ("Keep at most buffer_size items: fill the buffer, then for every new item yield one from a random slot "
              "and put the new item there; at the end of the stream, yield what is left in random order. Never "
              "read the whole source first (list(source), sorted, random.shuffle of everything).")
ONCE_SHUFFLE_HINT = ("Every item of the source must come out exactly once per epoch: one yielded for every item read "
                     "once the buffer is full, and the whole buffer emptied when the source ends.")
MIX_HINT = ("Items must leave the buffer from a random slot, one per item read, so that an item can stay in it for a "
            "long time. Shuffling blocks of buffer_size items and emptying the buffer each time keeps every item "
            "within its block.")
SEED_HINT = ("Draw every random number from a generator of your own, seeded from (seed, epoch): "
             "torch.Generator().manual_seed(...), random.Random(...) or numpy.random.default_rng(...). The global "
             "generators (random.shuffle, torch.randint without generator=) give another order on every run.")
EPOCH_HINT_SB = ("Count the epochs: each iter(dataset) starts the next one, and its generator is seeded from the seed "
                 "and the epoch number, so that every epoch gets a new order.")
RESUME_HINT = ("The state after an item is everything the rest of the epoch depends on: the epoch number, how many "
               "items were read from the source, the items in the buffer, and the generator's state "
               "(torch.Generator.get_state(), random.Random.getstate()). Update it before each yield; on resume, "
               "read past the items already read and restore buffer and generator.")
PLAIN_HINT = ("state_dict() must return plain data that a checkpoint file holds: numbers, strings, lists, tuples, "
              "dicts and tensors. Save a generator's state (get_state() / getstate()), not the generator; never an "
              "iterator or a Python generator.")
LAZY_HINT = ("Call iter(source) inside __iter__: in each DataLoader worker that gives the source's share for that "
             "worker, and every epoch starts from the beginning of the source.")


def _distinct_items(rng: torch.Generator, n: int) -> list[int]:
    return torch.randperm(10 * n + 10, generator=rng)[:n].tolist()


def _seeds(rng: torch.Generator, count: int) -> list[int]:
    return torch.randperm(100_000, generator=rng)[:count].tolist()


def _expect_each_once(order: list[Any], items: list[int], call: str) -> None:
    if sorted(order) != sorted(items):
        twice = sorted({x for x in order if order.count(x) > 1})
        lost = sorted(set(items) - set(order))
        raise failure(call=call, inputs=[f"source = {summarize(items)}"],
                      expected=f"each of the {len(items)} items once",
                      got=f"{len(order)} items: {summarize(order)}",
                      problem=f"{len(twice)} came out more than once ({summarize(twice)}), {len(lost)} never came out "
                              f"({summarize(lost)})", hint=ONCE_SHUFFLE_HINT)


def _expect_window(order: list[Any], source: list[Any], buffer_size: int, call: str) -> None:
    """The bound on memory, read from the output: the k-th item out (k = 1, 2, ...) is one of the first k +
    buffer_size items of the source, since no more were read by then. (A count of the items read, kept in the
    student's process, could be rewritten; the order cannot be.)"""
    position = {item: p for p, item in enumerate(source)}
    for k, item in enumerate(order, start=1):
        if position[item] >= k + buffer_size:
            raise failure(call=call, inputs=[f"source = {summarize(source)}"],
                          expected=f"the k-th item out among the first k + {buffer_size} items of the source",
                          got=f"item {k} out is {item!r}, item {position[item] + 1} of the source: "
                              f"{summarize(order[:k])}",
                          problem=f"it read at least {position[item] + 1 - k} items beyond those yielded, more than "
                                  f"the {buffer_size} a buffer holds: memory grows with the stream",
                          hint=BOUND_HINT)


def _shuffle_call(n: int | str, buffer_size: int, what: str = "seed") -> str:
    return f"ShuffleBuffer(source of {n} items, buffer_size={buffer_size}, {what})"


@check(task="ShuffleBuffer", points=1, visible=True)
def check_shuffle_notebook_example(api: Api) -> None:
    """the notebook's example: 30 items with a buffer of 4, two epochs, a checkpoint after 11 items"""
    items = list(range(30))
    call = _shuffle_call(30, 4, "seed=1")
    run = api.shuffle_orders(items, 4, [1, 1], 2)
    (first, second), (again, _) = run["orders"]
    _expect_each_once(first, items, call)
    _expect_window(first, items, 4, call)
    if first == items:
        raise failure(call=call, got=summarize(first), problem="the order is unchanged", hint=MIX_HINT)
    if again != first:
        raise failure(call=call + ", built twice", expected=summarize(first), got=summarize(again),
                      problem="the same seed gave another first epoch", hint=SEED_HINT)
    if second == first:
        raise failure(call=call + ", iterated twice", got=summarize(second),
                      problem="the second epoch repeats the first one's order instead of a new order",
                      hint=EPOCH_HINT_SB)
    _expect_resumed(api, items, 4, 1, 11, first, second)


# Bounded memory, from the output and the judge's clock: every order must keep each item within the window a buffer
# of that size allows (_expect_window), and the endless count must give its first items within the call's time:
# a buffer that reads its whole source never answers, and the judge's deadline (or the box's memory limit) ends it.
ENDLESS_SECONDS = 10.0


@check(task="ShuffleBuffer", points=1)
def check_shuffle_each_once_bounded(api: Api, rng: torch.Generator) -> None:
    """every item once per epoch, each out within buffer_size places of its turn: empty, short and long sources, and
    an endless one"""
    for n, buffer_size in ((0, 4), (1, 4), (3, 4), (4, 4), (5, 4), (57, 1), (57, 16), (40, 7)):
        items = _distinct_items(rng, n)
        call = _shuffle_call(n, buffer_size)
        run = api.shuffle_orders(items, buffer_size, _seeds(rng, 1), 2)
        for order in run["orders"][0]:
            _expect_each_once(order, items, call)
            _expect_window(order, items, buffer_size, call)
    call = _shuffle_call("endless", 8)
    endless = api.shuffle_endless.using(timeout=min(ENDLESS_SECONDS, api.student.limits.call_seconds))
    try:
        order = endless(8, _seeds(rng, 1)[0], 50)["order"]
    except StudentError as e:
        raise failure(after=str(e), call=call + ": its first 50 items",
                      problem="it could not stream an endless source: a buffer that reads the whole stream first "
                              "never answers, and memory grows with the stream", hint=BOUND_HINT) from None
    if len(order) != 50 or len(set(order)) != 50 or not all(isinstance(x, int) and x >= 0 for x in order):
        raise failure(call=call, expected="50 distinct items of the count 0, 1, 2, ...", got=summarize(order),
                      problem="items repeated or missing", hint=ONCE_SHUFFLE_HINT)
    _expect_window(order, list(range(max(order) + 1)), 8, call)


@check(task="ShuffleBuffer", points=1)
def check_shuffle_random_and_reproducible(api: Api, rng: torch.Generator) -> None:
    """same seed, same orders; a new order each epoch and each seed; items leave from random slots, not blocks"""
    items, buffer_size = _distinct_items(rng, 200), 8
    seed, other = _seeds(rng, 2)
    call = _shuffle_call(200, buffer_size)
    (first, second), (again, again_second), (other_first, _) = api.shuffle_orders(items, buffer_size,
                                                                                  [seed, seed, other], 2)["orders"]
    for order in (first, second, other_first):
        _expect_each_once(order, items, call)
    if first == items:
        raise failure(call=call, got=summarize(first), problem="the order is unchanged", hint=MIX_HINT)
    if (again, again_second) != (first, second):
        raise failure(call=call + ", built twice with the same seed", expected=summarize(first), got=summarize(again),
                      problem="the same seed gave other orders", hint=SEED_HINT)
    if second == first:
        raise failure(call=call + ", iterated twice", got=summarize(second),
                      problem="the second epoch repeats the first one instead of a new order", hint=EPOCH_HINT_SB)
    if other_first == first:
        raise failure(call=call + f", seeds {seed} and {other}", got=summarize(first),
                      problem="two seeds gave the same order", hint=SEED_HINT)
    position = {item: p for p, item in enumerate(items)}
    delay = max(out - position[item] for out, item in enumerate(first))
    if delay < 2 * buffer_size:
        raise failure(call=call, got=summarize(first),
                      problem=f"no item came out more than {delay} places after its position in the source; with a "
                              f"buffer of {buffer_size} some stay in it for {2 * buffer_size} places or more, so the "
                              "items are shuffled in blocks", hint=MIX_HINT)
    starts = api.shuffle_orders(items[:20], buffer_size, _seeds(rng, 24), 1)["orders"]
    firsts = {run[0][0] for run in starts if run[0]}
    if len(firsts) < 4:
        raise failure(call=_shuffle_call(20, buffer_size, "24 seeds"), expected=f"the first item drawn from the first "
                      f"{buffer_size + 1} items of the source", got=f"only {sorted(firsts)} ever came first",
                      problem="the first item hardly depends on the seed", hint=MIX_HINT)


def _expect_resumed(api: Api, items: list[int], buffer_size: int, seed: int, cut: int | None, first: list[int],
                    second: list[int]) -> None:
    """A checkpoint after `cut` items (None: before any epoch) resumes the rest of the epoch, then the next one."""
    when = "before the first epoch" if cut is None else f"after {cut} items"
    call = f"{_shuffle_call(len(items), buffer_size, f'seed={seed}')}: state_dict() {when}, then load_state_dict()"
    out = api.shuffle_resume(items, buffer_size, seed, cut)
    if out["epoch0"] != first:
        raise failure(call=call, expected=summarize(first), got=summarize(out["epoch0"]),
                      problem="taking state_dict() changed the running epoch", hint=RESUME_HINT)
    if "state_error" in out:
        raise failure(call=call, got=f"a {out['state_type']} that torch.save / torch.load(weights_only=True) refused: "
                      f"{out['state_error'][:300]}", problem="the state is not plain data", hint=PLAIN_HINT)
    rest = first[cut or 0:]
    if out["resumed0"] != rest:
        raise failure(call=call, expected=f"the rest of the epoch: {summarize(rest)}",
                      got=summarize(out["resumed0"]), problem="the resumed epoch differs from the original's rest",
                      hint=RESUME_HINT)
    if out["resumed1"] != second:
        raise failure(call=call, expected=f"the next epoch: {summarize(second)}", got=summarize(out["resumed1"]),
                      problem="after the resumed epoch, the next epoch differs from the original's next epoch",
                      hint=RESUME_HINT)


@check(task="ShuffleBuffer", points=1)
def check_shuffle_resume(api: Api, rng: torch.Generator) -> None:
    """a checkpoint before the first epoch or after 1 to 40 of 40 items resumes the rest, then the next epoch"""
    items, buffer_size = _distinct_items(rng, 40), 8
    seed = _seeds(rng, 1)[0]
    first, second = api.shuffle_orders(items, buffer_size, [seed], 2)["orders"][0]
    for cut in (None, 1, 7, 8, 9, 20, 39, 40):
        _expect_resumed(api, items, buffer_size, seed, cut, first, second)


@check(task="ShuffleBuffer", points=1)
def check_shuffle_dataloader_workers(api: Api, rng: torch.Generator) -> None:
    """through a DataLoader over a source sharded by worker: the same order with 0 workers, each item once with 2"""
    n, buffer_size = 60, 6
    seed = _seeds(rng, 1)[0]
    direct = api.shuffle_orders(list(range(n)), buffer_size, [seed], 1)["orders"][0][0]
    for workers in (0, 2):
        call = (f"DataLoader(ShuffleBuffer(sharded range({n}), {buffer_size}, seed), batch_size=None, "
                f"num_workers={workers})")
        per_item = api.student.limits.call_seconds
        loader = api.shuffle_loader.using(timeout=per_item + 5.0 * workers + MARGIN_SECONDS)
        got = loader(n, buffer_size, seed, workers, per_item, 2 * n + 4)
        if workers == 0 and got != direct:
            raise failure(call=call, expected=summarize(direct), got=summarize(got),
                          problem="with no workers the DataLoader should give the order of iter(dataset)",
                          hint=SEED_HINT)
        if sorted(got) != list(range(n)):
            raise failure(call=call, expected=f"each of 0 .. {n - 1} once", got=summarize(got),
                          problem="items repeated or lost between the workers", hint=LAZY_HINT)
