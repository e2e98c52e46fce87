"""A chapter's API, declared once with types: the judge reaches student code, and the chapter's harness, through it.

A checks module starts with its declaration, a StudentApi subclass whose methods are stubs: the signature is
the contract (names, argument types, what comes back); the body never runs.

    class Api(StudentApi):
        @answer(example=(torch.tensor([1000.0, 0.0]),))
        def softmax(self, logits: Tensor, dim: int = -1) -> Tensor:
            \"\"\"The notebook's softmax.\"\"\"

        @harness("xent")
        def softmax_cross_entropy(self, labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
            \"\"\"The student's softmax_cross_entropy, run by the harness's xent with the kit's softmax.\"\"\"

Checks take the `api` fixture, an instance bound to the submission's process:

    api.softmax(x, dim=1)                       # the student's softmax(x, dim=1), decoded in the judge
    api.softmax.vjp(g, wrt=(0,))(x, dim=1)      # (value, gradients of the positional args in wrt)
    api.softmax.traced(x)                       # (value, the aten operators it issued)
    api.softmax.differentiable(0)(x, dim=1)     # x -> softmax(x, dim=1), for torch.autograd.gradcheck
    api.softmax.using(timeout=60.0)(x)          # the same function with other options (timeout, call, hint)

Arguments that do not fit the declared signature are the judge's own mistake: a TypeError before anything
is sent. An error of the student's code comes back as a StudentError naming the declared function; with an
`example` (the notebook's own call, which every working implementation answers), an error that the example
raises too is said to happen on the example too.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import torch

from autograder.judging.expect import explain_error, on_every_call
from autograder.judging.student import Student, StudentError

P = ParamSpec("P")
R = TypeVar("R")
Stub = Callable[Concatenate[Any, P], R]  # a declaration: a method whose signature is the contract

HARNESS = "kit."  # the child looks names with this prefix up in the chapter's harness


@dataclass(frozen=True)
class Options:
    timeout: float | None = None  # seconds for one call; None: the grading's limit for a call
    call: str | None = None  # the whole call as messages show it, in place of name(arguments)
    hint: str = ""  # added to an error the code raises, unless the example raises it too


@dataclass(frozen=True)
class DeclaredFunction(Generic[P, R]):
    """A declared function of the student's process; read on a StudentApi instance, it is a Remote."""

    name: str  # as the student knows it: messages use this name
    target: str  # what the child calls: a name the answer cells define, or "kit.<function>" of the harness
    signature: inspect.Signature
    example: tuple[Any, ...] | None
    options: Options

    @property
    def in_harness(self) -> bool:
        return self.target.startswith(HARNESS)

    @overload
    def __get__(self, api: None, owner: type) -> DeclaredFunction[P, R]: ...
    @overload
    def __get__(self, api: StudentApi, owner: type) -> Remote[P, R]: ...
    def __get__(self, api: StudentApi | None, owner: type) -> DeclaredFunction[P, R] | Remote[P, R]:
        return self if api is None else Remote(api.student, self, self.options)


def _declare(stub: Stub[P, R], target: str, example: tuple[Any, ...] | None, timeout: float | None
             ) -> DeclaredFunction[P, R]:
    signature = inspect.signature(stub)
    signature = signature.replace(parameters=list(signature.parameters.values())[1:])  # without self
    return DeclaredFunction(stub.__name__, target, signature, example, Options(timeout=timeout))


@overload
def answer(stub: Stub[P, R], /) -> DeclaredFunction[P, R]: ...
@overload
def answer(*, example: tuple[Any, ...] | None = None, timeout: float | None = None
           ) -> Callable[[Stub[P, R]], DeclaredFunction[P, R]]: ...
def answer(stub: Stub[P, R] | None = None, /, *, example: tuple[Any, ...] | None = None,
           timeout: float | None = None) -> DeclaredFunction[P, R] | Callable[[Stub[P, R]], DeclaredFunction[P, R]]:
    """Declare a name the answer cells define (the stub's name), with the notebook's `example` call."""
    if stub is not None:
        return _declare(stub, stub.__name__, None, None)
    return lambda s: _declare(s, s.__name__, example, timeout)


def harness(function: str | None = None, *, example: tuple[Any, ...] | None = None, timeout: float | None = None
            ) -> Callable[[Stub[P, R]], DeclaredFunction[P, R]]:
    """Declare a function of the chapter's harness: `function` (by default the stub's name) runs in the student's
    process, beside the answer cells; messages name it as the stub is named."""
    return lambda s: _declare(s, HARNESS + (function or s.__name__), example, timeout)


class Remote(Generic[P, R]):
    """A declared function bound to one process: calling it runs it there."""

    def __init__(self, student: Student, declared: DeclaredFunction[P, R], options: Options) -> None:
        self.student = student
        self.declared = declared
        self.options = options

    @property
    def name(self) -> str:
        return self.declared.name

    def run_by(self, process: Student, target: str) -> Remote[P, R]:
        """The same contract, run by `process`'s function `target`: a reference process's code
        (timing.reference_process), timed beside the student's, needs no API of its own."""
        declared = dataclasses.replace(self.declared, name=target, target=target, example=None, options=Options())
        return Remote(process, declared, declared.options)

    def using(self, *, timeout: float | None = None, call: str | None = None, hint: str | None = None
              ) -> Remote[P, R]:
        """The same function with the options given changed."""
        o = self.options
        options = dataclasses.replace(o, timeout=o.timeout if timeout is None else timeout,
                                      call=o.call if call is None else call, hint=o.hint if hint is None else hint)
        return Remote(self.student, self.declared, options)

    def _request(self, args: tuple[Any, ...], kwargs: dict[str, Any], wrt: tuple[int, ...] = (),
                 grad_output: torch.Tensor | None = None) -> tuple[Any, list[torch.Tensor | None]]:
        self.declared.signature.bind(*args, **kwargs)  # a TypeError here is the judge's mistake
        call = self.options.call
        return self.student.vjp(self.declared.target, args, kwargs, wrt, grad_output, self.options.timeout,
                                shown=call or self.name, during=call)

    def _example(self) -> Callable[[], Any] | None:
        example = self.declared.example
        return None if example is None else lambda: self._request(example, {})

    def on_every_call(self, e: StudentError) -> StudentError | None:
        """`e`, an error of this function, restated as raised on the example too when the declared example raises
        too; else None."""
        example = self._example()
        return None if example is None else on_every_call(e, self.name, example)

    def explained(self, e: StudentError) -> StudentError:
        """`e` restated as raised on the example too (see on_every_call), else with the hint added."""
        return explain_error(e, self.name, self._example(), self.options.hint)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return self._request(args, kwargs)[0]
        except StudentError as e:
            raise self.explained(e) from None

    def vjp(self, grad_output: torch.Tensor | None, wrt: tuple[int, ...]
            ) -> Callable[P, tuple[R, list[torch.Tensor | None]]]:
        """The call, returning its value and the gradients of its positional args in `wrt` for `grad_output`."""
        def run(*args: P.args, **kwargs: P.kwargs) -> tuple[R, list[torch.Tensor | None]]:
            return self._request(args, kwargs, wrt, grad_output)
        return run

    def traced(self, *args: P.args, **kwargs: P.kwargs) -> tuple[R, list[str]]:
        """The call under a TorchDispatchMode: its value and the aten operators it issued, in order."""
        self.declared.signature.bind(*args, **kwargs)
        return self.student.traced(self.declared.target, args, kwargs, shown=self.options.call or self.name,
                                   during=self.options.call)

    def differentiable(self, wrt: int) -> Callable[P, Callable[[torch.Tensor], torch.Tensor]]:
        """The call as a function of its positional arg `wrt`, differentiable in the judge.

        torch.autograd.gradcheck needs a function it can call and backpropagate through in its own process;
        this autograd.Function forwards both directions to the student's process, so the field's own
        gradcheck runs on code the judge never imports.
        """
        def at(*args: P.args, **kwargs: P.kwargs) -> Callable[[torch.Tensor], torch.Tensor]:
            remote = self

            def with_x(x: torch.Tensor) -> tuple[Any, ...]:
                return (*args[:wrt], x.detach(), *args[wrt + 1:])

            class Function(torch.autograd.Function):
                @staticmethod
                def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
                    ctx.save_for_backward(x)
                    return remote._request(with_x(x), kwargs)[0]

                @staticmethod
                def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
                    (x,) = ctx.saved_tensors
                    _, grads = remote._request(with_x(x), kwargs, (wrt,), grad)
                    return grads[0] if grads and grads[0] is not None else torch.zeros_like(x)

            return Function.apply
        return at

    def timed(self, specs: list[list[dict[str, Any]]], seed: int, count: int, constants: tuple[int | float, ...] = ()
              ) -> dict[str, Any]:
        """One request making `count` input sets from `seed` in the child and calling this on each, call j on
        inputs made from `specs[j % len(specs)]`, then `constants` (timing.py)."""
        return self.student.timed_run(self.declared.target, specs, seed, count, self.options.timeout, constants)


class StudentApi:
    """The base of a chapter's API declaration; an instance is bound to one process (a submission's, or a
    clean reference process's)."""

    def __init__(self, student: Student) -> None:
        self.student = student

    @classmethod
    def declarations(cls) -> dict[str, DeclaredFunction[..., Any]]:
        return {name: d for c in reversed(cls.__mro__) for name, d in vars(c).items()
                if isinstance(d, DeclaredFunction)}
