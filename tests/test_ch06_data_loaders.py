"""Chapter 06: the solution earns full marks, the release 0, and each named
wrong implementation loses points on the check written to catch it. DataLoaders
run with real worker processes, so each mutant is graded on one check only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import (
    assert_caught,
    grade_fast,
    solution_code,
    solved,
)

CH = "06_data_loaders"
MAX = 24


def directory_dataset(getitem: str, init: str = "sorted(glob.glob(os.path.join(path, pattern)))") -> str:
    return f'''
import random

class ImageDirectoryDataset(Dataset):
    def __init__(self, path, pattern="*.png"):
        super().__init__()
        self.paths = {init}

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
{getitem}
'''


RGB = "        return torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)"
BGR = directory_dataset("        return torch.from_numpy(cv2.imread(self.paths[index], 1)).permute(2, 0, 1)")
RANDOM_CHOICE = directory_dataset(f"        image = cv2.imread(random.choice(self.paths), 1)\n{RGB}")
SHUFFLED = directory_dataset(f"        image = cv2.imread(self.paths[index], 1)\n{RGB}",
                             init="random.Random(0).sample(sorted(glob.glob(os.path.join(path, pattern))), "
                                  "len(glob.glob(os.path.join(path, pattern))))")


def tar_dataset(iterate: str) -> str:
    """The reference TarImageDataset with another __iter__ body (its helpers kept)."""
    helpers = solution_code(CH)["TarImageDataset"].split("class TarImageDataset")[0]
    return helpers + f'''
class TarImageDataset(IterableDataset):
    def __init__(self, paths):
        super().__init__()
        self.paths = list(paths)

    def __iter__(self):
        info = get_worker_info()
{iterate}
'''


NO_SHARDING = tar_dataset("        for path in self.paths:\n            yield from tar_image_iterator(path)")
GUIDE_SHARDING = tar_dataset('''\
        if info is None or info.num_workers != len(self.paths):
            raise ValueError("Number of workers doesn't match number of files.")
        yield from tar_image_iterator(self.paths[info.id])''')
FILE_PER_WORKER = tar_dataset('''\
        if info is None:
            for path in self.paths:
                yield from tar_image_iterator(path)
        elif info.id < len(self.paths):
            yield from tar_image_iterator(self.paths[info.id])''')
FILES_ONLY = tar_dataset('''\
        workers, me = (1, 0) if info is None else (info.num_workers, info.id)
        for path in self.paths[me::workers]:
            yield from tar_image_iterator(path)''')
TAR_BGR = tar_dataset('''\
        for path in self.paths:
            with tarfile.open(path) as tar:
                for member in tar:
                    data = np.frombuffer(tar.extractfile(member).read(), np.uint8)
                    yield torch.from_numpy(cv2.imdecode(data, 1)).permute(2, 0, 1)''')
SKIPS_BROKEN = tar_dataset('''\
        for path in self.paths:
            with tarfile.open(path) as tar:
                for member in tar:
                    if member.isfile():
                        image = cv2.imdecode(np.frombuffer(tar.extractfile(member).read(), np.uint8), 1)
                        if image is not None:
                            yield torch.from_numpy(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)).permute(2, 0, 1)''')
HANGS_IN_WORKER = tar_dataset('''\
        while info is not None:
            time.sleep(0.05)
        for path in self.paths:
            yield from tar_image_iterator(path)''')

MUTANTS = {
    # name: (cell, code, the check meant to catch it, a phrase its message must contain)
    "BGR output": ("ImageDirectoryDataset", BGR, "check_directory_rgb_uint8_chw", "BGR order"),
    "random __getitem__": ("ImageDirectoryDataset", RANDOM_CHOICE, "check_directory_same_index_same_image",
                           "random.choice"),
    "shuffled file list": ("ImageDirectoryDataset", SHUFFLED, "check_directory_sorted_and_len", "Sort the list"),
    "no sharding": ("TarImageDataset", NO_SHARDING, "check_tar_one_file_per_worker", "more than once"),
    "sharding only when workers equal files": ("TarImageDataset", GUIDE_SHARDING,
                                               "check_tar_more_files_than_workers", "Number of workers"),
    "one file per worker, extra files lost": ("TarImageDataset", FILE_PER_WORKER,
                                              "check_tar_more_files_than_workers", "never came out"),
    "tar BGR output": ("TarImageDataset", TAR_BGR, "check_tar_main_process", "BGR order"),
    "broken member skipped silently": ("TarImageDataset", SKIPS_BROKEN, "check_tar_corrupt_member_named",
                                       "silently"),
    "worker hangs": ("TarImageDataset", HANGS_IN_WORKER, "check_tar_one_file_per_worker", "timed out"),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_wrong_implementation_loses_points_where_expected(tmp_path: Path, name: str) -> None:
    cell, code, check, phrase = MUTANTS[name]
    g = grade_fast(solved(tmp_path, CH, **{cell: code}), only=check)
    assert_caught(g, name, check, phrase)


def test_sharding_by_whole_files_is_accepted(tmp_path: Path) -> None:
    """Policy: with fewer files than workers, whole-file sharding leaves workers idle but loses nothing."""
    g = grade_fast(solved(tmp_path, CH, TarImageDataset=FILES_ONLY), only="check_tar_fewer_files_than_workers")
    assert g.score == g.max_score == 2, [r.output for r in g.results]
