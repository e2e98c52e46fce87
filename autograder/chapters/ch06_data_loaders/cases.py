"""Chapter 06_data_loaders: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import glob
import os
import tarfile
import time

import cv2
import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from autograder.judging.authoring import cell, right, wrong

# -- ImageDirectoryDataset -----------------------------------------------------------------------------------------


@wrong("BGR output", fails={"check_directory_rgb_uint8_chw": "BGR order"})
def bgr_output():
    import random  # noqa: F401 (unused here)

    class ImageDirectoryDataset(Dataset):
        def __init__(self, path, pattern="*.png"):
            super().__init__()
            self.paths = sorted(glob.glob(os.path.join(path, pattern)))

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            return torch.from_numpy(cv2.imread(self.paths[index], 1)).permute(2, 0, 1)


@wrong("IMREAD_UNCHANGED keeps 16 bits", fails={"check_directory_gray_and_rgba_png": "uint16"},
       edits="ImageDirectoryDataset")
def imread_unchanged():
    class ImageDirectoryDataset(Dataset):
        def __getitem__(self, index):
            image = cv2.imread(self.paths[index], cv2.IMREAD_UNCHANGED)
            if image is None:
                raise ValueError(f"OpenCV cannot read {self.paths[index]!r}")
            if image.ndim == 2:
                image = image[:, :, None].repeat(3, axis=2)
            return torch.from_numpy(np.ascontiguousarray(image[:, :, 2::-1])).permute(2, 0, 1)


@wrong("16 bits cast, not scaled", fails={"check_directory_gray_and_rgba_png": "IMREAD_COLOR"},
       edits="ImageDirectoryDataset")
def sixteen_bits_cast():
    class ImageDirectoryDataset(Dataset):
        def __getitem__(self, index):
            image = cv2.imread(self.paths[index], cv2.IMREAD_COLOR | cv2.IMREAD_ANYDEPTH)
            if image is None:
                raise ValueError(f"OpenCV cannot read {self.paths[index]!r}")
            rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB).astype(np.uint8)  # wraps 16-bit values around
            return torch.from_numpy(rgb).permute(2, 0, 1)


@right("16 bits read and scaled by hand", only="check_directory_gray_and_rgba_png", points=1,
       edits="ImageDirectoryDataset")
def sixteen_bits_by_hand():
    class ImageDirectoryDataset(Dataset):
        def __getitem__(self, index):
            image = cv2.imread(self.paths[index], cv2.IMREAD_COLOR | cv2.IMREAD_ANYDEPTH)
            if image is None:
                raise ValueError(f"OpenCV cannot read {self.paths[index]!r}")
            if image.dtype == np.uint16:
                image = (image >> 8).astype(np.uint8)
            return torch.from_numpy(np.ascontiguousarray(image[:, :, ::-1])).permute(2, 0, 1)


@right("decoded from the file's bytes", only="check_directory_gray_and_rgba_png", points=1,
       edits="ImageDirectoryDataset")
def decoded_from_bytes():
    class ImageDirectoryDataset(Dataset):
        def __getitem__(self, index):
            with open(self.paths[index], "rb") as f:
                image = cv2.imdecode(np.frombuffer(f.read(), np.uint8), cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"OpenCV cannot read {self.paths[index]!r}")
            return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("random __getitem__", fails={"check_directory_same_index_same_image": "random.choice"})
def random_getitem():
    import random

    class ImageDirectoryDataset(Dataset):
        def __init__(self, path, pattern="*.png"):
            super().__init__()
            self.paths = sorted(glob.glob(os.path.join(path, pattern)))

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            image = cv2.imread(random.choice(self.paths), 1)
            return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("os.listdir's order kept", fails={"check_directory_sorted_and_len": "Sort the list"},
       edits="ImageDirectoryDataset")
def listdir_order_kept():
    """glob returns the directory's own order (creation order on tmpfs, hash order on ext4): sorted only by luck."""
    class ImageDirectoryDataset(Dataset):
        def __init__(self, path, pattern="*.png"):
            super().__init__()
            self.paths = glob.glob(os.path.join(glob.escape(path), pattern))


@wrong("OpenCV's None passed on", fails={"check_directory_gray_and_rgba_png": "which file"},
       edits="ImageDirectoryDataset")
def opencv_none_passed_on():
    """Every readable file right; on a file OpenCV cannot decode, cvtColor fails on None, naming no file."""
    class ImageDirectoryDataset(Dataset):
        def __getitem__(self, index):
            image = cv2.imread(self.paths[index], cv2.IMREAD_COLOR)
            return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("shuffled file list", fails={"check_directory_sorted_and_len": "Sort the list"})
def shuffled_file_list():
    import random

    class ImageDirectoryDataset(Dataset):
        def __init__(self, path, pattern="*.png"):
            super().__init__()
            self.paths = random.Random(0).sample(sorted(glob.glob(os.path.join(path, pattern))),
                                                 len(glob.glob(os.path.join(path, pattern))))

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, index):
            image = cv2.imread(self.paths[index], 1)
            return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


# -- TarImageDataset -----------------------------------------------------------------------------------------------
# Each is the reference's helpers (decode_image, tar_image_iterator) with another TarImageDataset.__iter__: an edit
# of tar_cell.


@cell(edits="TarImageDataset")
def tar_cell():
    """The reference's cell with TarImageDataset.__init__ unannotated, as the cases below write it: what they edit."""
    class TarImageDataset(IterableDataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = list(paths)


@wrong("no sharding", fails={"check_tar_one_file_per_worker": "more than once"}, edits=tar_cell, example="ben")
def no_sharding():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()  # noqa: F841 (it never shards)
            for path in self.paths:
                yield from tar_image_iterator(path)  # noqa: F821 (tar_cell's)


@wrong("sharding only when workers equal files", fails={"check_tar_more_files_than_workers": "Number of workers"},
       edits=tar_cell)
def sharding_only_when_workers_equal_files():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            if info is None or info.num_workers != len(self.paths):
                raise ValueError("Number of workers doesn't match number of files.")
            yield from tar_image_iterator(self.paths[info.id])  # noqa: F821 (tar_cell's)


@wrong("one file per worker, extra files lost", fails={"check_tar_more_files_than_workers": "never came out"},
       edits=tar_cell)
def one_file_per_worker_extra_files_lost():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            if info is None:
                for path in self.paths:
                    yield from tar_image_iterator(path)  # noqa: F821 (tar_cell's)
            elif info.id < len(self.paths):
                yield from tar_image_iterator(self.paths[info.id])  # noqa: F821 (tar_cell's)


@wrong("tar BGR output", fails={"check_tar_main_process": "BGR order"}, edits=tar_cell)
def tar_bgr_output():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()  # noqa: F841 (it never shards)
            for path in self.paths:
                with tarfile.open(path) as tar:
                    for member in tar:
                        data = np.frombuffer(tar.extractfile(member).read(), np.uint8)
                        yield torch.from_numpy(cv2.imdecode(data, 1)).permute(2, 0, 1)


@wrong("broken member skipped silently", fails={"check_tar_corrupt_member_named": "silently"}, edits=tar_cell)
def broken_member_skipped_silently():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()  # noqa: F841 (it never shards)
            for path in self.paths:
                with tarfile.open(path) as tar:
                    for member in tar:
                        if member.isfile():
                            image = cv2.imdecode(np.frombuffer(tar.extractfile(member).read(), np.uint8), 1)
                            if image is not None:
                                yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("broken member named, its archive not", fails={"check_tar_corrupt_member_named": "which archive"},
       edits=tar_cell)
def broken_member_named_archive_not():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            for path in self.paths[me::workers]:
                with tarfile.open(path) as tar:
                    for member in tar:
                        if member.isfile():
                            image = cv2.imdecode(np.frombuffer(tar.extractfile(member).read(), np.uint8), 1)
                            if image is None:
                                raise ValueError(f"{member.name} is not an image")
                            yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("worker hangs", fails={"check_tar_one_file_per_worker": "timed out"}, edits=tar_cell)
def worker_hangs():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            while info is not None:
                time.sleep(0.05)
            for path in self.paths:
                yield from tar_image_iterator(path)  # noqa: F821 (tar_cell's)


# -- TarImageDataset: correct forms --------------------------------------------------------------------------------


@wrong("whole files per worker", fails={"check_tar_fewer_files_than_workers": "some workers read nothing"},
       edits=tar_cell)
def whole_files_per_worker():
    """With fewer files than workers, whole-file sharding loses nothing but leaves workers idle: the task asks for
    the members of a shared file to be split."""
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            for path in self.paths[me::workers]:
                yield from tar_image_iterator(path)  # noqa: F821 (tar_cell's)


@wrong("members split between two workers only", fails={"check_tar_fewer_files_than_workers": "some workers read "
       "nothing"}, edits=tar_cell)
def members_split_between_two_workers_only():
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            if len(self.paths) >= workers:
                for path in self.paths[me::workers]:
                    yield from tar_image_iterator(path)  # noqa: F821 (tar_cell's)
            elif me < 2:  # a third worker is never given a share
                for path in self.paths:
                    yield from tar_image_iterator(path, 2, me)  # noqa: F821 (tar_cell's)


@right("every file read by every worker, members dealt out in one count", only="check_tar_fewer_files_than_workers",
       points=2, edits=tar_cell)
def members_dealt_out_across_files():
    """Every worker reads every file and takes the image members i (counted over all files) with i % workers == id."""
    class TarImageDataset(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            index = 0
            for path in self.paths:
                with tarfile.open(path) as tar:
                    for member in tar:
                        if not member.isfile():
                            continue
                        if index % workers == me:
                            data = tar.extractfile(member).read()
                            yield decode_image(data, f"{member.name} in {path}")  # noqa: F821 (tar_cell's)
                        index += 1


@wrong("map-style Dataset", fails={"check_tar_guide_example": "not a map-style Dataset"})
def map_style_tar_dataset():
    class TarImageDataset(Dataset):
        def __init__(self, paths):
            super().__init__()
            self.members = []
            for path in paths:
                with tarfile.open(path) as tar:
                    self.members += [(path, m.name) for m in tar if m.isfile()]

        def __len__(self):
            return len(self.members)

        def __getitem__(self, index):
            path, name = self.members[index]
            with tarfile.open(path) as tar:
                data = np.frombuffer(tar.extractfile(name).read(), np.uint8)
            image = cv2.imdecode(data, cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"{name} in {path} is not an image")
            return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)


@wrong("map-style Dataset with an __iter__", fails={"check_tar_guide_example": "not a map-style Dataset"})
def dataset_with_iter():
    class TarImageDataset(Dataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = list(paths)

        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            index = 0
            for path in self.paths:
                with tarfile.open(path) as tar:
                    for member in tar:
                        if member.isfile():
                            if index % workers == me:
                                data = np.frombuffer(tar.extractfile(member).read(), np.uint8)
                                image = cv2.imdecode(data, cv2.IMREAD_COLOR)
                                if image is None:
                                    raise ValueError(f"{member.name} in {path} is not an image")
                                yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)
                            index += 1


@right("IterableDataset named through torch", only="check_tar_guide_example", points=1)
def iterable_through_torch():
    class TarImageDataset(torch.utils.data.IterableDataset):
        def __init__(self, paths):
            super().__init__()
            self.paths = list(paths)

        def __iter__(self):
            info = get_worker_info()
            workers, me = (1, 0) if info is None else (info.num_workers, info.id)
            index = 0
            for path in self.paths:
                with tarfile.open(path) as tar:
                    for member in tar:
                        if member.isfile():
                            if index % workers == me:
                                data = np.frombuffer(tar.extractfile(member).read(), np.uint8)
                                image = cv2.imdecode(data, cv2.IMREAD_COLOR)
                                if image is None:
                                    raise ValueError(f"{member.name} in {path} is not an image")
                                yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)
                            index += 1


# -- pad_collate ---------------------------------------------------------------------------------------------------


@right("F.pad each image, then stack", only="pad_collate", points=5)
def pad_each_then_stack():
    def pad_collate(batch):
        height = max(image.shape[1] for image in batch)
        width = max(image.shape[2] for image in batch)
        padded = [torch.nn.functional.pad(image, (0, width - image.shape[2], 0, height - image.shape[1]))
                  for image in batch]
        sizes = torch.tensor([list(image.shape[1:]) for image in batch], dtype=torch.long)
        return torch.stack(padded), sizes


@right("torch.zeros and copy_ in a loop", only="pad_collate", points=5)
def zeros_and_copy():
    def pad_collate(batch):
        sizes = torch.as_tensor([image.shape[-2:] for image in batch])
        out = torch.zeros(len(batch), 3, int(sizes[:, 0].max()), int(sizes[:, 1].max()), dtype=torch.uint8)
        for slot, image in zip(out, batch, strict=True):
            slot[:, :image.shape[1], :image.shape[2]].copy_(image)
        return out, sizes


@right("numpy, channels last, then permuted", only="pad_collate", points=5)
def through_numpy():
    def pad_collate(batch):
        arrays = [image.permute(1, 2, 0).numpy() for image in batch]
        height, width = max(a.shape[0] for a in arrays), max(a.shape[1] for a in arrays)
        out = np.zeros((len(arrays), height, width, 3), np.uint8)
        for i, a in enumerate(arrays):
            out[i, :a.shape[0], :a.shape[1]] = a
        sizes = torch.from_numpy(np.array([a.shape[:2] for a in arrays], np.int64))
        return torch.from_numpy(out).permute(0, 3, 1, 2), sizes


@wrong("stacks without padding", edits="pad_collate",
       fails={"check_pad_collate_notebook_example": "stack expects each tensor to be equal",
              "check_pad_collate_random_batches": "needs images of one size"})
def stacks_without_padding():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        return torch.stack(batch), sizes


@wrong("pads top and left", fails={"check_pad_collate_random_batches": "padding is at the top and left"},
       edits="pad_collate")
def pads_top_left():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = batch[0].new_zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            images[i, :, height - image.shape[1]:, width - image.shape[2]:] = image
        return images, sizes


@wrong("centred", fails={"check_pad_collate_random_batches": "padding is on every side"}, edits="pad_collate")
def centred():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = batch[0].new_zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            top, left = (height - image.shape[1]) // 2, (width - image.shape[2]) // 2
            images[i, :, top:top + image.shape[1], left:left + image.shape[2]] = image
        return images, sizes


@wrong("converts to float", fails={"check_pad_collate_notebook_example": "converts the dtype"}, edits="pad_collate")
def converts_to_float():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = torch.zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image / 255
        return images, sizes


@wrong("sizes as (W, H)", fails={"check_pad_collate_notebook_example": "(W, H) order"}, edits="pad_collate")
def sizes_width_first():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[2], image.shape[1]] for image in batch], dtype=torch.int64)
        height = max(image.shape[1] for image in batch)
        width = max(image.shape[2] for image in batch)
        images = batch[0].new_zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image
        return images, sizes


@wrong("height and width swapped", fails={"check_pad_collate_notebook_example": "height and width swapped"},
       edits="pad_collate")
def height_and_width_swapped():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = batch[0].new_zeros((len(batch), 3, width, height))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[2], :image.shape[1]] = image.transpose(1, 2)
        return images, sizes


@wrong("padded with 255", fails={"check_pad_collate_notebook_example": "padding is 255"}, edits="pad_collate")
def padded_with_255():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = torch.full((len(batch), 3, height, width), 255, dtype=torch.uint8)
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image
        return images, sizes


@wrong("square padding", fails={"check_pad_collate_random_batches": "square of the largest side"},
       edits="pad_collate")
def square_padding():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        side = int(sizes.max())
        images = batch[0].new_zeros((len(batch), 3, side, side))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image
        return images, sizes


@wrong("sizes as int32", fails={"check_pad_collate_notebook_example": "not torch.int64"}, edits="pad_collate")
def sizes_int32():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int32)
        height, width = sizes.max(dim=0).values.tolist()
        images = batch[0].new_zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image
        return images, sizes


@wrong("unsqueeze_ on the inputs", fails={"check_pad_collate_leaves_inputs": "changed 3 of the images"},
       edits="pad_collate")
def unsqueeze_in_place():
    def pad_collate(batch):
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        padded = [torch.nn.functional.pad(image.unsqueeze_(0), (0, width - image.shape[-1], 0,
                                                                 height - image.shape[-2])) for image in batch]
        return torch.cat(padded), sizes


@wrong("sorts the batch by size", fails={"check_pad_collate_random_batches": "is not in images"},
       edits="pad_collate")
def sorts_the_batch():
    def pad_collate(batch):
        batch.sort(key=lambda image: image.shape[1] * image.shape[2], reverse=True)
        sizes = torch.tensor([[image.shape[1], image.shape[2]] for image in batch], dtype=torch.int64)
        height, width = sizes.max(dim=0).values.tolist()
        images = batch[0].new_zeros((len(batch), 3, height, width))
        for i, image in enumerate(batch):
            images[i, :, :image.shape[1], :image.shape[2]] = image
        return images, sizes


# -- seed_worker ---------------------------------------------------------------------------------------------------


@right("get_worker_info().seed", only="seed_worker", points=3)
def info_seed():
    def seed_worker(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)


@right("numpy's global generator, seeded by torch in every worker", only="seed_worker", points=3)
def from_numpy_global():
    def seed_worker(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(np.random.randint(0, 2**31, size=4))


@right("state replaced in place, seed from the id and torch's seed", only="seed_worker", points=3)
def state_in_place():
    def seed_worker(worker_id):
        fresh = np.random.default_rng([worker_id, torch.initial_seed() % 2**32])
        get_worker_info().dataset.rng.bit_generator.state = fresh.bit_generator.state


@wrong("the documentation's recipe: random and np.random only",
       fails={"check_seed_worker_notebook_example": "start in the same state",
              "check_seed_worker_workers_differ_reproducibly": "start in the same state"}, edits="seed_worker")
def globals_only():
    def seed_worker(worker_id):
        import random

        seed = torch.initial_seed() % 2**32
        np.random.seed(seed)
        random.seed(seed)


@wrong("does nothing", fails={"check_seed_worker_new_each_epoch_and_seed": "the augmentations repeat"},
       edits="seed_worker")
def does_nothing():
    def seed_worker(worker_id):
        pass


@wrong("seeded from worker_id alone", fails={"check_seed_worker_new_each_epoch_and_seed": "augmentations repeat"},
       edits="seed_worker")
def worker_id_alone():
    def seed_worker(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng(worker_id)


@wrong("seeded from the copied rng", fails={"check_seed_worker_new_each_epoch_and_seed": "augmentations repeat"},
       edits="seed_worker")
def from_copied_rng():
    def seed_worker(worker_id):
        dataset = get_worker_info().dataset
        dataset.rng = np.random.default_rng(int(dataset.rng.integers(2**62)) + worker_id)


@wrong("unseeded default_rng", fails={"check_seed_worker_notebook_example": "drew different numbers",
                                      "check_seed_worker_workers_differ_reproducibly": "drew different numbers"},
       edits="seed_worker")
def unseeded():
    def seed_worker(worker_id):
        get_worker_info().dataset.rng = np.random.default_rng()


# -- ShuffleBuffer -------------------------------------------------------------------------------------------------
# The stretch task (bonus). Each wrong form is the compact ShuffleBuffer on random.Random, the first correct
# form, with one part changed: an edit of it.


@right("random.Random, append then pop", only="shuffle", bonus=5)
def random_random_append_then_pop():
    """The compact ShuffleBuffer that the wrong forms below change."""
    import random

    class ShuffleBuffer(IterableDataset):
        def __init__(self, source, buffer_size, seed=0):
            super().__init__()
            self.source, self.size, self.seed = source, buffer_size, seed
            self.epoch, self.pending, self.live = 0, None, None

        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed * 7919 + epoch)
            if state is not None and state["rng"] is not None:
                rng.setstate(state["rng"])
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()

        def state_dict(self):
            if self.pending is not None:
                return dict(self.pending)
            if self.live is None:
                return {"epoch": self.epoch, "read": 0, "buffer": [], "rng": None}
            live = self.live
            return {"epoch": live["epoch"], "read": live["read"], "buffer": list(live["buffer"]),
                    "rng": live["rng"].getstate()}

        def load_state_dict(self, state):
            self.pending, self.epoch, self.live = dict(state), state["epoch"], None


@wrong("whole stream in memory", fails={"check_shuffle_each_once_bounded": "memory grows with the stream"},
       edits=random_random_append_then_pop)
def whole_stream_in_memory():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed * 7919 + epoch)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                rng.setstate(state["rng"])
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            everything = list(self.source)
            rng.shuffle(everything)
            for i, item in enumerate(everything):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()


@wrong("shuffled in blocks", fails={"check_shuffle_random_and_reproducible": "in blocks"},
       edits=random_random_append_then_pop)
def shuffled_in_blocks():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed * 7919 + epoch)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                rng.setstate(state["rng"])
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) == self.size:
                    rng.shuffle(buf)
                    while buf:
                        yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()


@wrong("global random generator",
       fails={"check_shuffle_notebook_example": "same seed", "check_shuffle_random_and_reproducible": "same seed"},
       edits=random_random_append_then_pop)
def global_random_generator():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(None)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                rng.setstate(state["rng"])
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()


@wrong("same order every epoch", fails={"check_shuffle_random_and_reproducible": "new order"},
       edits=random_random_append_then_pop)
def same_order_every_epoch():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                rng.setstate(state["rng"])
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()


@wrong("state without the buffer", fails={"check_shuffle_resume": "differs from the original's rest"},
       edits=random_random_append_then_pop)
def state_without_the_buffer():
    class ShuffleBuffer(IterableDataset):
        def state_dict(self):
            if self.pending is not None:
                return dict(self.pending)
            if self.live is None:
                return {"epoch": self.epoch, "read": 0, "buffer": [], "rng": None}
            live = self.live
            return {"epoch": live["epoch"], "read": live["read"], "buffer": [], "rng": live["rng"].getstate()}


@wrong("state without the generator", fails={"check_shuffle_resume": "generator's state"},
       edits=random_random_append_then_pop)
def state_without_the_generator():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed * 7919 + epoch)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                pass
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()


@wrong("live generator in the state", fails={"check_shuffle_resume": "plain data"},
       edits=random_random_append_then_pop)
def live_generator_in_the_state():
    class ShuffleBuffer(IterableDataset):
        def __iter__(self):
            state, self.pending = self.pending, None
            epoch = self.epoch if state is None else state["epoch"]
            self.epoch = epoch + 1
            rng = random.Random(self.seed * 7919 + epoch)  # noqa: F821 (the import of the code it edits)
            if state is not None and state["rng"] is not None:
                rng = state["rng"]
            live = self.live = {"epoch": epoch, "read": 0 if state is None else state["read"],
                                "buffer": [] if state is None else list(state["buffer"]), "rng": rng}
            buf, skip = live["buffer"], live["read"]
            for i, item in enumerate(iter(self.source)):
                if i < skip:
                    continue
                live["read"] += 1
                buf.append(item)
                if len(buf) > self.size:
                    j = rng.randrange(len(buf))
                    buf[j], buf[-1] = buf[-1], buf[j]
                    yield buf.pop()
            while buf:
                j = rng.randrange(len(buf))
                buf[j], buf[-1] = buf[-1], buf[j]
                yield buf.pop()

        def state_dict(self):
            if self.pending is not None:
                return dict(self.pending)
            if self.live is None:
                return {"epoch": self.epoch, "read": 0, "buffer": [], "rng": None}
            live = self.live
            return {"epoch": live["epoch"], "read": live["read"], "buffer": list(live["buffer"]), "rng": live["rng"]}


# -- ShuffleBuffer: other correct forms ----------------------------------------------------------------------------


@right("numpy Generator", only="shuffle", bonus=5)
def numpy_generator():
    class ShuffleBuffer(IterableDataset):
        def __init__(self, source, buffer_size, seed=0):
            super().__init__()
            self.source, self.size, self.seed = source, buffer_size, seed
            self.next_epoch, self.loaded, self.now = 0, None, None

        def __iter__(self):
            st, self.loaded = self.loaded, None
            epoch = self.next_epoch if st is None else st["epoch"]
            self.next_epoch = epoch + 1
            gen = np.random.default_rng([self.seed, epoch])
            if st is not None and st["rng"] is not None:
                gen.bit_generator.state = st["rng"]
            now = self.now = {"epoch": epoch, "read": st["read"] if st else 0,
                              "buffer": list(st["buffer"]) if st else [],
                              "gen": gen}
            source = iter(self.source)
            for _ in range(now["read"]):
                next(source)
            buf = now["buffer"]
            for item in source:
                now["read"] += 1
                if len(buf) < self.size:
                    buf.append(item)
                    continue
                j = int(gen.integers(self.size))
                buf[j], item = item, buf[j]
                yield item
            gen.shuffle(buf)
            while buf:
                yield buf.pop()

        def state_dict(self):
            if self.loaded is not None:
                return self.loaded
            if self.now is None:
                return {"epoch": self.next_epoch, "read": 0, "buffer": [], "rng": None}
            return {"epoch": self.now["epoch"], "read": self.now["read"], "buffer": list(self.now["buffer"]),
                    "rng": self.now["gen"].bit_generator.state}

        def load_state_dict(self, state):
            self.loaded, self.next_epoch, self.now = dict(state), state["epoch"], None


@right("replay from the seed", only="shuffle", bonus=5)
def replay_from_the_seed():
    """Resumes by replaying the epoch from its seed and dropping the items already yielded: slower, but correct."""
    class ShuffleBuffer(IterableDataset):
        def __init__(self, source, buffer_size, seed=0):
            super().__init__()
            self.source, self.size, self.seed = source, buffer_size, seed
            self.epoch, self.skip, self.yielded = 0, 0, 0

        def _epoch(self, epoch):
            gen = torch.Generator().manual_seed(self.seed * 10_007 + epoch)
            buf = []
            for item in iter(self.source):
                if len(buf) < self.size:
                    buf.append(item)
                    continue
                j = int(torch.randint(self.size, (), generator=gen))
                buf[j], item = item, buf[j]
                yield item
            for j in torch.randperm(len(buf), generator=gen).tolist():
                yield buf[j]

        def __iter__(self):
            epoch, skip = self.epoch, self.skip
            self.epoch, self.skip, self.current, self.yielded = epoch + 1, 0, epoch, skip
            for k, item in enumerate(self._epoch(epoch)):
                if k >= skip:
                    self.yielded = k + 1
                    yield item

        def state_dict(self):
            if self.skip or not hasattr(self, "current"):
                return {"epoch": self.epoch, "yielded": self.skip}
            return {"epoch": self.current, "yielded": self.yielded}

        def load_state_dict(self, state):
            self.epoch, self.skip = state["epoch"], state["yielded"]
            if hasattr(self, "current"):
                del self.current
