"""One value of ``[tool.kernelgate]`` or of the command line, parsed and checked: percentages,
microseconds, milliseconds, choices. Each error names the value and the fix."""

from __future__ import annotations

import enum
from typing import TypeVar

_Choice = TypeVar("_Choice", bound=enum.Enum)


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the value and the fix."""


def parse_fraction(value: object, what: str) -> float:
    """``"10%"`` -> 0.10; ``0.1`` -> 0.10. A bare number above 1 is refused as ambiguous."""
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        number = float(text[:-1] if percent else text)
    except ValueError as exc:
        raise ConfigError(f"{what} = {value!r} is not a percentage; write e.g. '10%' or 0.10.") from exc
    if not percent and number > 1.0:
        raise ConfigError(
            f"{what} = {value!r} is ambiguous: write it as a percentage ('{text}%') "
            f"or as a fraction ({number / 100:g})."
        )
    result = number / 100.0 if percent else number
    if not 0.0 < result < float("inf"):
        raise ConfigError(f"{what} = {value!r} must be a finite number above 0 (e.g. '10%').")
    return result


def parse_floor(value: object, what: str) -> float:
    return _amount(value, what, ("us", "µs"), "microseconds", "5.0")


def parse_ms(value: object, what: str) -> float:
    return _amount(value, what, ("ms",), "milliseconds", "250.0")


def _amount(value: object, what: str, suffixes: tuple[str, ...], unit: str, example: str) -> float:
    text = str(value).strip()
    for suffix in suffixes:
        text = text.removesuffix(suffix)
    try:
        result = float(text)
    except ValueError as exc:
        raise ConfigError(f"{what} = {value!r} is not a number of {unit}; write e.g. {example}.") from exc
    if not 0.0 <= result < float("inf"):
        raise ConfigError(f"{what} = {value!r} must be a finite number of {unit}, 0 or more.")
    return result


def parse_choice(kind: type[_Choice], value: object, what: str) -> _Choice:
    """The member of the enum ``kind`` whose value is ``value``, or a ConfigError listing the values."""
    try:
        return kind(value)
    except ValueError as exc:
        *most, last = [repr(member.value) for member in kind]
        raise ConfigError(f"{what} = {value!r}; use {', '.join(most)} or {last}.") from exc
