"""A ``concurrent.futures.Executor`` over Ray tasks, for ``autotune(executor=...)``.

Ray (checked on 2.60) has no ``concurrent.futures.Executor`` of its own; a task's
``ObjectRef.future()`` is a ``concurrent.futures.Future``, so ``submit`` runs the function as
a Ray task and returns that future.  The autotuner only calls ``submit`` (and waits on the
futures); ``shutdown`` leaves the Ray cluster running (whoever called ``ray.init`` owns it).

Example::

    >>> import ray                                                  # doctest: +SKIP
    >>> ray.init()                                                  # doctest: +SKIP
    >>> tuned = autotune(configs=..., executor=RayExecutor())(k)    # doctest: +SKIP
"""
from __future__ import annotations

import concurrent.futures


class RayExecutor(concurrent.futures.Executor):
    """Submit each call as a Ray task (``num_cpus`` per task, default 1)."""

    def __init__(self, num_cpus: float = 1):
        try:
            import ray
        except ImportError as e:
            raise ImportError("RayExecutor needs ray: pip install 'npujit[ray]'") from e
        self._ray = ray
        self._num_cpus = num_cpus
        self._remote: dict = {}

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:
        if not self._ray.is_initialized():
            raise RuntimeError("RayExecutor: call ray.init() (or ray.init(address=...) for a "
                               "cluster) before the sweep")
        task = self._remote.get(fn)
        if task is None:
            task = self._remote[fn] = self._ray.remote(num_cpus=self._num_cpus)(fn)
        return task.remote(*args, **kwargs).future()
