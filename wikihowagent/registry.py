"""The one shape of the package's named extension points (providers, scoring modes, ...): `Registry[T]`.

    MODES: Registry[Mode] = Registry("scoring mode", {"a": Mode(...), "b": Mode(...)})
    MODES.add("c", Mode(...))                  # or as a decorator: @MODES.register("c")
    MODES.get("c")                             # RegistryError "unknown scoring mode 'x'; known: a, b, c"
    MODES["c"]                                 # the same as get
    list(MODES)                                # the names, in registration order

A registry holds what its module registers, nothing more: creating one does no I/O and imports nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from wikihowagent.errors import WikihowagentError

T = TypeVar("T")


class RegistryError(WikihowagentError, ValueError):
    """A name no entry has, or one registered twice; one line naming the registry's known names."""


class Registry(Generic[T]):
    """Entries of one kind by name, in registration order."""

    def __init__(self, kind: str, entries: Mapping[str, T] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self.changes = 0  # adds and removes so far: what is derived from the entries can be cached against it
        for name, entry in (entries or {}).items():
            self.add(name, entry)

    def add(self, name: str, entry: T) -> T:
        """Register `entry` as `name` (a name is registered once); returns the entry."""
        if name in self._entries:
            raise RegistryError(f"{self.kind} {name!r} is registered already")
        self._entries[name] = entry
        self.changes += 1
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """`add` as a decorator: `@REGISTRY.register("name")` above a class or function."""
        return lambda entry: self.add(name, entry)

    def remove(self, name: str) -> T:
        """Take `name` out again (e.g. an entry a test added); returns its entry."""
        self.get(name)
        self.changes += 1
        return self._entries.pop(name)

    def get(self, name: str) -> T:
        """The entry of `name`; RegistryError listing the known names if there is none."""
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(f"unknown {self.kind} {name!r}; known: {', '.join(self._entries)}") from None

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def names(self) -> list[str]:
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
