"""The value of a constant PromQL expression of number literals (``(100 - 92)``, ``80/100``).

An alerting rule may compare with such an expression instead of a number; its
value is the rule's threshold. A small recursive-descent reader with PromQL's
precedence, never an evaluation as code.
"""

from __future__ import annotations

import math
import re

_CONSTANT_TOKEN = re.compile(
    r"\s*(?:(?P<num>0x[0-9a-f]+|inf|nan|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)|(?P<op>[-+*/%^()]))",
    re.IGNORECASE,
)
MAX_CONSTANT_TOKENS = 64


class _Constant:
    """A constant arithmetic expression of number literals (``(0.9 * 100)``, ``80/100``).

    PromQL's precedence: ``^`` (right-associative) over unary signs over
    ``* / %`` over ``+ -``. Only numbers, these operators and brackets; anything
    else is not a constant, and nothing is ever evaluated as code.
    """

    def __init__(self, text: str) -> None:
        self.tokens: list[str | float] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            match = _CONSTANT_TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ValueError(text)
            num = match.group("num")
            self.tokens.append(_hex_or_float(num) if num else match.group("op"))
            pos = match.end()
        if not self.tokens or len(self.tokens) > MAX_CONSTANT_TOKENS:
            raise ValueError(text)
        self.at = 0

    def value(self) -> float:
        result = self._sum()
        if self.at != len(self.tokens):
            raise ValueError("trailing tokens")
        return result

    def _peek(self) -> str | float | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self) -> str | float:
        token = self._peek()
        if token is None:
            raise ValueError("unexpected end")
        self.at += 1
        return token

    def _sum(self) -> float:
        result = self._product()
        while self._peek() in ("+", "-"):
            op = self._take()
            right = self._product()
            result = result + right if op == "+" else result - right
        return result

    def _product(self) -> float:
        result = self._unary()
        while self._peek() in ("*", "/", "%"):
            op = self._take()
            right = self._unary()
            if op == "*":
                result *= right
            elif right == 0:
                result = (
                    float("nan")
                    if op == "%" or result == 0
                    else math.copysign(float("inf"), result)
                )
            else:
                result = result / right if op == "/" else math.fmod(result, right)
        return result

    def _unary(self) -> float:
        if self._peek() in ("+", "-"):
            sign = -1.0 if self._take() == "-" else 1.0
            return sign * self._unary()
        return self._power()

    def _power(self) -> float:
        base = self._atom()
        if self._peek() == "^":
            self._take()
            exponent = self._unary()  # right-associative: 2 ^ 3 ^ 2 = 2 ^ 9
            return float(base**exponent)
        return base

    def _atom(self) -> float:
        token = self._take()
        if isinstance(token, float):
            return token
        if token == "(":  # noqa: S105 - a bracket, not a password
            inner = self._sum()
            if self._take() != ")":
                raise ValueError("unbalanced")
            return inner
        raise ValueError(f"unexpected {token}")


def _hex_or_float(number: str) -> float:
    return float(int(number, 16)) if number.lower().startswith("0x") else float(number)


def constant(text: str) -> float | None:
    """The value of a constant arithmetic expression of literals, or None when it is not one."""
    try:
        result = _Constant(text).value()
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return None if math.isnan(result) else result
