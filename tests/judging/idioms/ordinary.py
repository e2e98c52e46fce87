"""Ordinary Python that the review scan (autograder/judging/static/review.py) must never flag: one snippet per idiom,
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
    "nn.Module internals of its own": '''
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.register_buffer("running", torch.zeros(3))
        self.register_parameter("scale", nn.Parameter(torch.ones(3)))

    def forward(self, x):
        for name, child in self._modules.items():
            x = child(x)
        return x * self._parameters["scale"] + self._buffers["running"]

    def __setattr__(self, name, value):
        super().__setattr__(name, value)

    def extra_repr(self):
        return f"{type(self).__name__} with {len(self._modules)} children"


block = Block()
out = block(torch.ones(3))
''',
    "a Tensor subclass": '''
class Tagged(torch.Tensor):
    @staticmethod
    def __new__(cls, data, tag=""):
        t = torch.as_tensor(data).as_subclass(cls)
        t.tag = tag
        return t

    def __repr__(self):
        return f"{type(self).__name__}({self.tag})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


t = Tagged([1.0, 2.0], "a")
s = (t + 1).sum()
''',
    "contextlib": '''
import contextlib
import io


@contextlib.contextmanager
def timer(log):
    log.append("start")
    try:
        yield log
    finally:
        log.append("stop")


with contextlib.ExitStack() as stack:
    log = stack.enter_context(timer([]))
    stack.enter_context(contextlib.suppress(KeyError))
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print("hidden")
with contextlib.nullcontext(5) as five:
    pass
''',
    "abc": '''
import abc


class Loss(abc.ABC):
    @abc.abstractmethod
    def __call__(self, x):
        ...

    @classmethod
    def __subclasshook__(cls, other):
        return NotImplemented


class L1(Loss):
    def __call__(self, x):
        return x.abs().sum()


value = L1()(torch.ones(2))
''',
    "enum": '''
import enum


class Mode(enum.Enum):
    TRAIN = enum.auto()
    EVAL = enum.auto()

    @classmethod
    def _missing_(cls, value):
        return cls.TRAIN

    def describe(self):
        return f"{self.name}={self.value} ({self._name_})"


mode = Mode(99)
names = [m.name for m in Mode]
lookup = Mode["EVAL"]
members = Mode.__members__
''',
    "collections": '''
import collections

Point = collections.namedtuple("Point", "x y")
p = Point(1, 2)._replace(x=3)
fields = Point._fields
counts = collections.Counter("abca").most_common(1)
groups = collections.defaultdict(list)
groups["a"].append(1)
window = collections.deque(maxlen=3)
ordered = collections.OrderedDict(a=1)
ordered.move_to_end("a")
chain = collections.ChainMap({"a": 1}, {"b": 2})
''',
    "itertools": '''
import itertools

pairs = list(itertools.combinations(range(4), 2))
grid = list(itertools.product([0, 1], repeat=2))
flat = list(itertools.chain.from_iterable([[1], [2, 3]]))
head = list(itertools.islice(itertools.count(), 3))
runs = {k: len(list(g)) for k, g in itertools.groupby("aabbb")}
''',
    "copy and __deepcopy__": '''
import copy


class Tracker:
    def __init__(self):
        self.values = [1, 2]
        self._cache = {}

    def __copy__(self):
        cls = self.__class__
        result = cls.__new__(cls)
        result.__dict__.update(self.__dict__)
        return result

    def __deepcopy__(self, memo):
        cls = self.__class__
        result = cls.__new__(cls)
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            setattr(result, k, copy.deepcopy(v, memo))
        return result


a = Tracker()
b = copy.deepcopy(a)
c = copy.copy(a)
model = copy.deepcopy(nn.Linear(2, 2))
''',
    "typing.NamedTuple": '''
import typing


class Pair(typing.NamedTuple):
    left: int
    right: int = 0


hints = typing.get_type_hints(Pair)
as_dict = Pair(1)._asdict()
defaults = Pair._field_defaults
''',
    "__init_subclass__ registry": '''
class Plugin:
    registry = {}

    def __init_subclass__(cls, name="", **kwargs):
        super().__init_subclass__(**kwargs)
        cls.registry[name or cls.__name__] = cls


class Fast(Plugin, name="fast"):
    pass


found = Plugin.registry["fast"]
''',
    "__class_getitem__": '''
class Box:
    def __class_getitem__(cls, item):
        return cls


IntBox = Box[int]
''',
    "properties": '''
class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def celsius(self):
        return self._celsius

    @celsius.setter
    def celsius(self, value):
        self._celsius = value

    @celsius.deleter
    def celsius(self):
        del self._celsius


t = Temperature(3)
t.celsius = 4
doc = Temperature.celsius.__doc__
''',
    "__slots__": '''
class Slotted:
    __slots__ = ("x", "_y")

    def __init__(self, x, y):
        self.x = x
        self._y = y

    def total(self):
        return self.x + self._y


s = Slotted(1, 2).total()
''',
    "__repr__ with type(self).__name__": '''
class Run:
    def __init__(self, lr):
        self.lr = lr

    def __repr__(self):
        return f"{type(self).__name__}(lr={self.lr!r}) / {self.__class__.__qualname__} / {Run.__module__}"


text = repr(Run(0.1))
''',
    "super() in classmethods and __new__": '''
class Base:
    @classmethod
    def create(cls):
        return cls()


class Child(Base):
    @classmethod
    def create(cls):
        obj = super().create()
        obj.ready = True
        return obj

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)


c = Child.create()
''',
    "the script guard": '''
def main():
    return 0


if __name__ == "__main__":
    main()
''',
    "dataclass equality over its fields": '''
import dataclasses


@dataclasses.dataclass(eq=False)
class Hyper:
    lr: float = 0.1
    steps: int = 10

    def __eq__(self, other):
        return all(getattr(self, f.name) == getattr(other, f.name) for f in dataclasses.fields(self))

    def as_row(self):
        return [getattr(self, f.name) for f in dataclasses.fields(self)]


same = Hyper() == Hyper()
''',
    "a functools.cached_property and singledispatch": '''
import functools


class Data:
    def __init__(self, n):
        self.n = n

    @functools.cached_property
    def squares(self):
        return [i * i for i in range(self.n)]


@functools.singledispatch
def describe(x):
    return "thing"


@describe.register
def _(x: int):
    return "int"


kind = describe(3)
cached = Data(3).squares
''',
    "exceptions with a cause": '''
import traceback

try:
    raise KeyError("a")
except KeyError as error:
    message = "".join(traceback.format_exception_only(type(error), error))
    try:
        raise ValueError("b") from error
    except ValueError as chained:
        cause = chained.__cause__
''',
    "library settings": '''
import warnings

torch.manual_seed(0)
torch.set_printoptions(precision=3)
torch.backends.cudnn.benchmark = False
warnings.filterwarnings("ignore", category=UserWarning)
''',
    "autograd Function context": '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.mark_non_differentiable()
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None
        return 2 * x * grad


y = Square.apply(torch.ones(2, requires_grad=True))
''',
}
