"""Command-line flags that also come from the environment: the flag, else ``TFGANG_<FLAG>``, else the
default. One helper for every command (webhook, controller, certs, sandbox), so they agree.

Values from the environment are converted and checked exactly like the flag's own: a mistyped
number or boolean is a usage error naming the variable (``TFGANG_PORT='94x3': not an integer``),
never a silent default. Booleans are strict (``1/true/yes/on``, ``0/false/no/off``). A repeated
flag takes a comma-separated list from its variable.

It works through argparse's own defaulting: a value from the environment is the argument's
default, marked as such, so argparse converts it only when the flag was not given, the flag wins,
and sub-commands need no extra step.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

ENV_PREFIX = "TFGANG_"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class _Container(Protocol):
    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...


class _FromEnvironment(str):
    """A default taken from the environment; ``variable`` names it in error messages."""

    variable: str

    def __new__(cls, value: str, variable: str) -> _FromEnvironment:
        text = super().__new__(cls, value)
        text.variable = variable
        return text


def env_variable(flag: str, prefix: str = ENV_PREFIX) -> str:
    """``--ops-port`` -> ``TFGANG_OPS_PORT``."""
    return prefix + flag.lstrip("-").upper().replace("-", "_")


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"not a boolean (use one of {', '.join(_TRUE + _FALSE)}): {text!r}")


def integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def number(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def port(text: str) -> int:
    value = integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0-65535): {text!r}")
    return value


def positive_int(text: str) -> int:
    value = integer(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def positive_number(text: str) -> float:
    value = number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def non_negative_number(text: str) -> float:
    value = number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


class _Switch(argparse.Action):
    """``--flag`` means true, like ``store_true``; its variable may say either (strictly)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, True)


class _Append(argparse._AppendAction):
    """``append``, except that the first flag given replaces a list taken from the environment."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        if isinstance(getattr(namespace, self.dest, None), _FromEnvironment):
            setattr(namespace, self.dest, None)
        super().__call__(parser, namespace, values, option)


class Flags:
    """Adds flags to parsers (or argument groups) whose values fall back on the environment."""

    def __init__(self, environ: Mapping[str, str] | None = None, prefix: str = ENV_PREFIX) -> None:
        self._environ = os.environ if environ is None else environ
        self._prefix = prefix

    def add(
        self,
        container: _Container,
        flag: str,
        default: Any = None,
        help: str = "",
        *,
        type: Callable[[str], Any] = str,
        switch: bool = False,
        repeated: bool = False,
        also: Sequence[str] = (),
        **kwargs: Any,
    ) -> argparse.Action:
        """``--flag``: the command line, else ``TFGANG_FLAG`` (then any ``also`` variables), else
        ``default``. ``switch``: a boolean flag without a value, like ``store_true``; ``repeated``:
        the flag may be given many times, its variable holds a comma-separated list."""
        variable = env_variable(flag, self._prefix)
        found = next(
            (
                (name, self._environ[name])
                for name in (variable, *also)
                if name in self._environ and (name == variable or self._environ[name])
            ),
            None,
        )
        convert = boolean if switch else type
        if found is not None:
            default = _FromEnvironment(found[1], found[0])
        names = f"{variable}, then {', '.join(also)}" if also else variable
        shown = "" if default is None or isinstance(default, _FromEnvironment) else f"; default {default}"
        options: dict[str, Any] = {
            "dest": flag.lstrip("-").replace("-", "_"),
            "default": default,
            "help": f"{help} (env {names}{shown})",
            "type": _checked(convert, repeated),
            **kwargs,
        }
        if switch:
            options["action"] = _Switch
        elif repeated:
            options["action"] = _Append
        return container.add_argument(flag, **options)


def _checked(convert: Callable[[str], Any], repeated: bool) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        source = text.variable if isinstance(text, _FromEnvironment) else None
        try:
            if source is not None and repeated:
                return [convert(item.strip()) for item in text.split(",") if item.strip()]
            return convert(str(text))
        except (argparse.ArgumentTypeError, ValueError) as error:
            if source is None:
                raise
            raise argparse.ArgumentTypeError(f"{source}={str(text)!r}: {error}") from None

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse
