"""Where rollouts run. The trainer only calls `map`, so a cluster executor can replace the local pool.

An executor is any object with `map(fn, items) -> list` that returns results in the order of `items` (the
trainer's determinism depends on it) and `close()`. `fn` must be safe to call concurrently; exceptions raised
by `fn` propagate out of `map` (the first one, after every started call has finished).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar, runtime_checkable

from skillopt_lib.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")


@runtime_checkable
class Executor(Protocol):
    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """A bounded thread pool: at most `max_workers` rollouts in flight (agent calls are I/O bound)."""

    def __init__(self, max_workers: int = 4) -> None:
        self.max_workers = max(1, int(max_workers))
        self._pool: ThreadPoolExecutor | None = None

    def _ensure(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.max_workers, thread_name_prefix="skillopt-rollout"
            )
        return self._pool

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if not items:
            return []
        if self.max_workers == 1 or len(items) == 1:
            return [fn(item) for item in items]
        futures = [self._ensure().submit(fn, item) for item in items]
        results: list[R] = []
        error: BaseException | None = None
        for fut in futures:
            try:
                results.append(fut.result())
            except BaseException as exc:  # keep waiting so no call outlives the step
                if error is None:
                    error = exc
        if error is not None:
            raise error
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# name -> "module:Class" for executors that live elsewhere (loaded only when chosen).
EXECUTORS: dict[str, str] = {"ray": "skillopt_lib.executor_ray:RayExecutor"}


def make_executor(kind: str, max_workers: int) -> Executor:
    """The executor named in the config; others register by import path `module:Class(max_workers=...)`."""
    if kind in ("local", "thread", "threads"):
        return LocalExecutor(max_workers)
    kind = EXECUTORS.get(kind, kind)
    if ":" in kind:
        module, _, cls = kind.partition(":")
        return getattr(importlib.import_module(module), cls)(max_workers=max_workers)  # type: ignore[no-any-return]
    raise ConfigError(f"unknown executor {kind!r}", hint="use 'local' or 'package.module:ExecutorClass'")
