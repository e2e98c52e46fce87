"""Ordinary Python that the review scan (autograder/judging/scan.py) must never flag: one snippet per idiom,
as a student might write it in an answer cell. Each runs as written (tests/judging/test_review_flags.py)."""

IDIOMS: dict[str, str] = {
    "__getstate__ with self.__dict__": '''
class Counter:
    def __init__(self):
        self.count = 0
        self._lock = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = None
''',
    "state_dict from vars(self)": '''
class Schedule:
    def __init__(self, lr):
        self.lr = lr
        self.step_count = 0

    def state_dict(self):
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def load_state_dict(self, state):
        for key, value in state.items():
            setattr(self, key, value)
''',
    "an alias of the cell's own class": '''
class _Shards:
    _registry = {}

    def __init__(self, n):
        self._n = n


Shards = _Shards
count = Shards._registry
first = Shards(3)._n
''',
    "private attributes of the student's own objects": '''
class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self):
        self._scaler = torch.amp.GradScaler("cpu")

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()


wrapper = NativeScaler()
scale = wrapper._scaler.get_scale()
''',
    "__torch_function__ in the student's own class": '''
class Dual:
    def __init__(self, value, tangent):
        self.value, self.tangent = value, tangent

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.sin:
            (x,) = args
            return Dual(torch.sin(x.value), torch.cos(x.value) * x.tangent)
        return NotImplemented


class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def passthrough(func, types, args=(), kwargs=None):
    return torch.Tensor.__torch_function__(func, types, args, kwargs or {})
''',
    "dataclasses": '''
import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Config:
    width: int = 8
    layers: list = field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "width", max(1, self.width))


config = Config(4)
names = [f.name for f in dataclasses.fields(config)]
plain = dataclasses.asdict(config)
wider = dataclasses.replace(config, width=16)
''',
    "functools": '''
import functools


def logged(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner


@functools.lru_cache(maxsize=None)
def offsets(n):
    return tuple(range(n))


offsets.cache_clear()
total = functools.reduce(lambda a, b: a + b, [1, 2, 3])
double = functools.partial(pow, exp=2)
original = logged(abs).__wrapped__
name = logged(abs).__name__
''',
    "typing": '''
from typing import TYPE_CHECKING, Any, Callable, Protocol, cast, get_type_hints

if TYPE_CHECKING:
    from collections.abc import Iterator


class Step(Protocol):
    def __call__(self, loss: Any) -> float: ...


def apply(fn: Callable[[int], int], x: int) -> int:
    return cast(int, fn(x))


hints = get_type_hints(apply)
''',
    "getattr over a literal list of names": '''
def copy_params(src, dst):
    for name in ("weight", "bias"):
        if hasattr(src, name):
            setattr(dst, name, getattr(src, name))
''',
    "getattr on self with a parameter": '''
class Registry:
    def get(self, name):
        return getattr(self, name, None)
''',
    "super().__setattr__ in the class's own __setattr__": '''
class Frozen:
    def __setattr__(self, name, value):
        if name.startswith("_"):
            raise AttributeError(name)
        super().__setattr__(name, value)
''',
    "class attribute introspection of own classes": '''
class Base:
    pass


class Child(Base):
    pass


kinds = Child.__mro__
parents = Child.__bases__
name = type(Child()).__name__
''',
}
