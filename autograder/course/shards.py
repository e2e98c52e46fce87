"""Which share of the class this machine grades: `--shard i/n`, or `--shard auto` from a scheduler's environment.

`auto` reads a Slurm job array (SLURM_ARRAY_TASK_ID with the array's SLURM_ARRAY_TASK_MIN, _MAX, _STEP and
_COUNT, which sbatch sets in every task) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, which Kubernetes
sets in every pod; the Job's completions are not in the pod's environment, so the count comes from
`--shard-count` or AUTOGRADER_SHARD_COUNT, which the manifest sets). Any doubt is refused with a message: a
shard guessed wrong grades some submissions twice (merge refuses) or never (no row, silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

COUNT_VARIABLE = "AUTOGRADER_SHARD_COUNT"
SLURM_ID = "SLURM_ARRAY_TASK_ID"
K8S_INDEX = "JOB_COMPLETION_INDEX"


class ShardError(ValueError):
    """A shard that cannot be told for sure; the message says why and what to give instead."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as `--shard i/n` writes it
    count: int
    source: str  # where it came from, for the log

    @property
    def spec(self) -> str:
        return f"{self.index}/{self.count}"


def parse(spec: str) -> Shard:
    """`i/n` with 1 <= i <= n."""
    parts = spec.split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ShardError(f"--shard {spec!r}: give i/n (shard i of n, from 1/n to n/n) or auto")
    index, count = (int(p) for p in parts)
    if not 1 <= index <= count:
        raise ShardError(f"--shard {spec}: need 1 <= i <= n")
    return Shard(index, count, "--shard")


def _number(env: Mapping[str, str], name: str) -> int:
    value = env.get(name, "").strip()
    if not value.isdigit():
        raise ShardError(f"{name}={env.get(name, '')!r}: expected a whole number >= 0")
    return int(value)


def _given_count(env: Mapping[str, str], flag: int | None) -> int | None:
    """The count from --shard-count or AUTOGRADER_SHARD_COUNT; both given must agree."""
    from_env = _number(env, COUNT_VARIABLE) if env.get(COUNT_VARIABLE, "").strip() else None
    if flag is not None and from_env is not None and flag != from_env:
        raise ShardError(f"--shard-count {flag} and {COUNT_VARIABLE}={from_env} disagree: give one of them")
    count = flag if flag is not None else from_env
    if count is not None and count < 1:
        raise ShardError(f"shard count {count}: need at least 1")
    return count


def _slurm(env: Mapping[str, str], given: int | None) -> Shard:
    task = _number(env, SLURM_ID)
    for name in ("SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"):
        if name not in env:
            raise ShardError(f"{SLURM_ID}={task} but {name} is not set: the array's bounds are unknown, so its "
                             "shards cannot be told apart")
    low, high = _number(env, "SLURM_ARRAY_TASK_MIN"), _number(env, "SLURM_ARRAY_TASK_MAX")
    step = _number(env, "SLURM_ARRAY_TASK_STEP") if "SLURM_ARRAY_TASK_STEP" in env else 1
    if step < 1 or not low <= task <= high or (high - low) % step:
        raise ShardError(f"Slurm array task {task} of {low}-{high}:{step} is inconsistent: "
                         "the array's bounds and step do not fit together")
    count = (high - low) // step + 1
    # A list such as --array=1,3,7 has the bounds of a range (Slurm says MIN=1, MAX=7, STEP=1) but fewer tasks:
    # only SLURM_ARRAY_TASK_COUNT shows it, and its tasks' positions cannot be read from the environment.
    if "SLURM_ARRAY_TASK_COUNT" in env and _number(env, "SLURM_ARRAY_TASK_COUNT") != count:
        tasks = _number(env, "SLURM_ARRAY_TASK_COUNT")
        raise ShardError(f"the Slurm array is a list of {tasks} tasks between {low} and {high}, not a range: "
                         f"submit it as a range (--array=0-{tasks - 1}; a step, as in 0-14:2, is fine) so that each "
                         "task knows its shard")
    if (task - low) % step:
        raise ShardError(f"Slurm array task {task} is not on the array's step ({low}-{high}:{step})")
    if count == 1 and task != 0:
        raise ShardError(f"Slurm array task {task} is the only task of its array (--array={task}): a rerun of one "
                         "task of a larger array would grade the whole class as shard 1/1. Submit the whole array "
                         "again (graded submissions are kept, only the missing ones are graded), or give --shard i/n")
    if given is not None and given != count:
        raise ShardError(f"the Slurm array has {count} tasks ({low}-{high}:{step}) but the shard count given is "
                         f"{given}: leave the count out under Slurm, or make them agree")
    return Shard((task - low) // step + 1, count, f"Slurm array task {task} of {low}-{high}:{step}")


def _kubernetes(env: Mapping[str, str], given: int | None) -> Shard:
    index = _number(env, K8S_INDEX)
    if given is None:
        raise ShardError(f"{K8S_INDEX}={index} (a Kubernetes Indexed Job) but no shard count: Kubernetes does not "
                         f"put the Job's completions in the pod's environment, so give --shard-count N or set "
                         f"{COUNT_VARIABLE} to the Job's spec.completions")
    if index >= given:
        raise ShardError(f"{K8S_INDEX}={index} is outside 0..{given - 1}: the shard count ({given}) must equal the "
                         "Job's spec.completions")
    return Shard(index + 1, given, f"Kubernetes Indexed Job, completion index {index} of {given}")


def from_environment(env: Mapping[str, str], count: int | None = None) -> Shard:
    """`--shard auto`: the shard of this Slurm array task or Kubernetes Indexed Job pod."""
    given = _given_count(env, count)
    found = [name for name in (SLURM_ID, K8S_INDEX) if name in env]
    if len(found) == 2:
        raise ShardError(f"both {SLURM_ID} and {K8S_INDEX} are set: a Slurm array task and a Kubernetes Indexed "
                         "Job at once is ambiguous; unset the one that is inherited, or give --shard i/n")
    if found == [SLURM_ID]:
        return _slurm(env, given)
    if found == [K8S_INDEX]:
        return _kubernetes(env, given)
    hint = (" (this is a Slurm job, but not an array: submit it with sbatch --array=0-N)"
            if "SLURM_JOB_ID" in env else "")
    raise ShardError(f"--shard auto found neither a Slurm job array ({SLURM_ID} is not set){hint} nor a Kubernetes "
                     f"Indexed Job ({K8S_INDEX} is not set): run it in one of them, or give --shard i/n")


def resolve(spec: str | None, env: Mapping[str, str], count: int | None = None) -> Shard | None:
    """The shard asked for on the command line, or None for the whole class."""
    if count is not None and spec != "auto":
        raise ShardError("--shard-count goes with --shard auto (a Kubernetes Indexed Job's completions)")
    if spec is None:
        return None
    return from_environment(env, count) if spec == "auto" else parse(spec)
