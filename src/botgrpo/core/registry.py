"""Name -> function registries with loud failures for unknown names.

Every advantage estimator, policy loss and aggregation mode is a plain function registered under a
name, so configs and the CLI refer to variants by string and an unknown string fails with the list
of valid names instead of falling through an if/elif chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    """A named collection of functions of one kind (e.g. "advantage estimator")."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator: ``@registry.register("bot")`` adds the function under ``name``."""

        def decorator(fn: F) -> F:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = fn
            return fn

        return decorator

    def get(self, name: str) -> F:
        """Return the function registered as ``name``; ValueError listing valid names otherwise."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"unknown {self.kind} {name!r}; valid names: {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items
