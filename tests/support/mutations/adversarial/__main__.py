"""``python -m tests.support.mutations.adversarial``: print the per-class table of the suite."""

from __future__ import annotations

from tests.support.mutations.adversarial.report import run, table

if __name__ == "__main__":
    print(table(run()))
