"""Rollouts and replays as Ray tasks, for runs that outgrow one machine.

`RayExecutor` implements the executor protocol of `skillopt_lib.executor` (`map(fn, items)` in the order of
`items`, `close()`), so the trainer cannot tell it from the local pool: the same seeds and the same recorded
model outputs give the same results. Select it with `--executor ray` (config `executor = "ray"`).

Where the tasks run: `ray.init(address=...)` with, in order, the `address` argument, `SKILLOPT_RAY_ADDRESS`,
Ray's own `RAY_ADDRESS` (`ray://head:10001` for a remote cluster, `auto` for the cluster this machine
belongs to); with none of them a local Ray instance is started with `max_workers` CPUs. A Ray that is already
initialised in this process is used as it is (and left running on `close()`).

What crosses to the workers: the rollout function with everything it closes over (environment, skill,
agent backend) is serialized once per `map` and put in Ray's object store. Model clients hold sockets and
locks that cannot be pickled; they are sent as their settings (endpoint, key, timeouts) and rebuilt on the
worker. The API key therefore travels to the workers inside Ray (never to disk by skillopt); on a shared
cluster, prefer giving the workers the key variable through Ray's runtime environment. Data folders must be
reachable at the same path on every node (the shipped samples are inside the package, so installing skillopt
on the workers is enough for `--sample`).
"""

from __future__ import annotations

import _thread
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anthropic
import openai

from skillopt_lib.errors import ConfigError

# Ray itself is an optional dependency (`skillopt-local[ray]`): it is imported where it is used, and a missing
# Ray is a ConfigError with the install command.

T = TypeVar("T")
R = TypeVar("R")

_registered = False
_register_lock = threading.Lock()


@dataclass
class _Failure:
    """An exception raised by `fn` on a worker, carried back so the driver re-raises the original type."""

    error: BaseException


# The function of the current `map`, per worker process: deserializing it (environment, skill, a rebuilt model
# client) once per worker instead of once per item is most of Ray's per-task cost for quick rollouts.
_fn_cache: dict[str, Callable[[Any], Any]] = {}


def _call(box: list[Any], item: Any) -> Any:
    """Run one item. The function's object reference arrives inside a list so Ray does not resolve it for
    every task; the worker fetches it once and keeps it for the rest of the map."""
    import ray

    ref = box[0]
    key = ref.hex()
    fn = _fn_cache.get(key)
    if fn is None:
        fn = ray.get(ref)
        _fn_cache.clear()  # one map at a time per worker: drop the previous map's function
        _fn_cache[key] = fn
    try:
        return fn(item)
    except Exception as exc:
        return _Failure(exc)


def _client_settings(client: Any) -> dict[str, Any]:
    return {
        "api_key": getattr(client, "api_key", None),
        "base_url": str(getattr(client, "base_url", "") or "") or None,
        "timeout": getattr(client, "timeout", None),
        "max_retries": getattr(client, "max_retries", 2),
    }


def _rebuild_openai(settings: dict[str, Any]) -> Any:
    return openai.OpenAI(**settings)


def _rebuild_anthropic(settings: dict[str, Any]) -> Any:
    return anthropic.Anthropic(**settings)


def _rebuild_azure(settings: dict[str, Any]) -> Any:
    return openai.AzureOpenAI(**settings)


def _azure_settings(client: Any) -> dict[str, Any]:
    base = str(getattr(client, "base_url", ""))
    endpoint = base.split("/openai", 1)[0]
    return {
        "api_key": getattr(client, "api_key", None),
        "azure_endpoint": endpoint,
        "api_version": getattr(client, "_api_version", None),
        "timeout": getattr(client, "timeout", None),
        "max_retries": getattr(client, "max_retries", 2),
    }


def register_serializers() -> None:
    """Teach Ray to send what cannot be pickled as the settings to rebuild it with.

    Locks become fresh locks (each worker has its own threads), and SDK clients become new clients with the
    same endpoint, key, time-out and retries.
    """
    global _registered
    with _register_lock:
        if _registered:
            return
        import ray.util

        for lock_type in {type(threading.Lock()), type(threading.RLock()), _thread.LockType}:
            ray.util.register_serializer(lock_type, serializer=lambda _lock: None, deserializer=_new_lock)
        ray.util.register_serializer(openai.OpenAI, serializer=_client_settings, deserializer=_rebuild_openai)
        ray.util.register_serializer(
            openai.AzureOpenAI, serializer=_azure_settings, deserializer=_rebuild_azure
        )
        ray.util.register_serializer(
            anthropic.Anthropic, serializer=_client_settings, deserializer=_rebuild_anthropic
        )
        _registered = True


def _new_lock(_state: Any) -> Any:
    return threading.RLock()


class RayExecutor:
    """At most `max_workers` items in flight as Ray tasks, results in the order of the items."""

    def __init__(
        self,
        max_workers: int = 4,
        *,
        address: str | None = None,
        num_cpus_per_task: float = 1.0,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the ray executor needs Ray, which is not installed",
                hint="pip install 'skillopt-local[ray]' (or pip install ray), or use --executor local",
            ) from None
        self.max_workers = max(1, int(max_workers))
        self.num_cpus_per_task = num_cpus_per_task
        self._ray = ray
        self._started_here = False
        if not ray.is_initialized():
            address = (
                address or os.environ.get("SKILLOPT_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS") or None
            )
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                kwargs["num_cpus"] = self.max_workers
            kwargs.update(init_kwargs or {})
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ConfigError(
                    f"cannot connect to the Ray cluster at {address}: {exc}",
                    hint="check the address (ray://HEAD:10001, or 'auto' on a cluster node) and that the cluster "
                    "runs the same Ray and Python versions",
                ) from None
            self._started_here = True
        register_serializers()
        self._remote = ray.remote(num_cpus=num_cpus_per_task, max_retries=0)(_call)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if not items:
            return []
        ray = self._ray
        fn_ref = ray.put(fn)
        refs: list[Any] = [None] * len(items)
        pending: dict[Any, int] = {}
        next_index = 0
        while next_index < len(items) or pending:
            while next_index < len(items) and len(pending) < self.max_workers:
                ref = self._remote.remote([fn_ref], items[next_index])
                refs[next_index] = ref
                pending[ref] = next_index
                next_index += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                pending.pop(ref, None)
        results = ray.get(refs)
        for out in results:
            if isinstance(out, _Failure):
                raise out.error
        return list(results)

    def close(self) -> None:
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()
        self._started_here = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
