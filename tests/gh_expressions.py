"""A small evaluator of GitHub Actions expressions, for the workflow tests: ``if:`` conditions and
``${{ }}`` interpolations over an event payload.

What the workflows use, with GitHub's semantics (docs.github.com, "Evaluate expressions"):
literals (``null``, ``true``, ``false``, numbers, ``'strings'`` with ``''`` for a quote), context
paths (``github.event.pull_request.number``, ``a['b']``), ``!``, ``==``, ``!=``, ``<``, ``<=``,
``>``, ``>=``, ``&&`` and ``||`` (which return one of their operands), parentheses, and the
functions ``contains``, ``startsWith``, ``endsWith``, ``format``, ``join``, ``fromJSON``,
``toJSON``, ``always``, ``success``,
``failure``, ``cancelled``. Strings compare case-insensitively; operands of different types compare
as numbers. A missing property is ``null``. Anything else raises ``ValueError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

TOKEN = re.compile(
    r"\s*(?:(?P<num>0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<str>'(?:[^']|'')*')"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*])|(?P<name>[A-Za-z_][\w-]*))"
)
STATUS = {"always": True, "success": True, "failure": False, "cancelled": False}


def tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read the expression at {text[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(int(value, 16)) if value.lower().startswith("0x") else float(value.strip() or 0)
        except ValueError:
            return math.nan
    return math.nan


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def text(value: Any) -> str:
    """A value as ``${{ }}`` puts it into a string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if type(a) is type(b) and not isinstance(a, int | float | str | bool | type(None)):
        return a is b
    return number(a) == number(b)


def compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if isinstance(a, str) and isinstance(b, str):
        x: Any = a.casefold()
        y: Any = b.casefold()
    else:
        x, y = number(a), number(b)
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


class Parser:
    def __init__(self, expression: str, contexts: Mapping[str, Any]) -> None:
        self.toks = tokens(expression)
        self.pos = 0
        self.contexts = contexts

    def peek(self) -> str | None:
        return self.toks[self.pos][1] if self.pos < len(self.toks) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.toks):
            raise ValueError("the expression ends too early")
        tok = self.toks[self.pos]
        if expected is not None and tok[1] != expected:
            raise ValueError(f"expected {expected!r}, found {tok[1]!r}")
        self.pos += 1
        return tok

    def parse(self) -> Any:
        value = self.or_()
        if self.pos != len(self.toks):
            raise ValueError(f"unexpected {self.peek()!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.comparison()
        while self.peek() == "&&":
            self.take()
            right = self.comparison()
            value = right if truthy(value) else value
        return value

    def comparison(self) -> Any:
        value = self.unary()
        while self.peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            value = compare(op, value, self.unary())
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix(self.primary())

    def postfix(self, value: Any) -> Any:
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key: Any = self.take()[1]
            else:
                key = self.or_()
                self.take("]")
            value = value.get(text(key)) if isinstance(value, Mapping) else None
        return value

    def primary(self) -> Any:
        kind, tok = self.take()
        if kind == "num":
            return float(int(tok, 16)) if tok.lower().startswith("0x") else float(tok)
        if kind == "str":
            return tok[1:-1].replace("''", "'")
        if tok == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind != "name":
            raise ValueError(f"unexpected {tok!r}")
        if tok in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[tok]
        if self.peek() == "(":
            return self.call(tok)
        return self.contexts.get(tok)

    def call(self, name: str) -> Any:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        if name in STATUS and not args:
            return STATUS[name]
        if name == "contains" and len(args) == 2:
            hay, needle = args
            if isinstance(hay, list):
                return any(equal(item, needle) for item in hay)
            return text(needle).casefold() in text(hay).casefold()
        if name in ("startsWith", "endsWith") and len(args) == 2:
            a, b = text(args[0]).casefold(), text(args[1]).casefold()
            return a.startswith(b) if name == "startsWith" else a.endswith(b)
        if name == "format" and args:
            return re.sub(r"\{(\d+)\}", lambda m: text(args[int(m.group(1)) + 1]), text(args[0]))
        if name == "join" and args:
            sep = text(args[1]) if len(args) > 1 else ","
            return sep.join(text(a) for a in args[0]) if isinstance(args[0], list) else text(args[0])
        if name == "fromJSON" and len(args) == 1:
            return json.loads(text(args[0]))
        if name == "toJSON" and len(args) == 1:
            return json.dumps(args[0], indent=2)
        raise ValueError(f"function {name}({len(args)} arguments) is not known here")


def evaluate(expression: str, contexts: Mapping[str, Any]) -> Any:
    """The value of one expression (the inside of ``${{ }}``, or an ``if:`` without it)."""
    return Parser(expression, contexts).parse()


def condition(source: str | bool, contexts: Mapping[str, Any]) -> bool:
    """An ``if:``: an expression with or without ``${{ }}``; a job without one runs (``success()``)."""
    if isinstance(source, bool):
        return source
    inner = source.strip()
    if inner.startswith("${{") and inner.endswith("}}") and inner.count("${{") == 1:
        inner = inner[3:-2]
    return truthy(evaluate(inner, contexts))


def interpolate(source: str, contexts: Mapping[str, Any]) -> str:
    """A string with ``${{ expr }}`` parts replaced by their values."""
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: text(evaluate(m.group(1), contexts)), source, flags=re.S)
