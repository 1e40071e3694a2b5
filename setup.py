"""Packaging: the repository's application folders ship under ``tracebound._app``.

The metadata lives in pyproject.toml; this file only says *where* the code and data
go in a wheel. The repository keeps ``services/``, ``projections/``, ``schemas/`` …
at its top level (that is how the code is read and tested), but a wheel must not
install such generic names into site-packages, so each folder becomes
``tracebound/_app/<folder>`` with every file it holds. ``tracebound.resources``
finds them there (or in the checkout) and makes the code importable by its own
names inside tracebound's processes only. Packages are discovered, not listed, so a
new sub-package or data folder ships without an edit here.
"""

from setuptools import find_namespace_packages, setup

APP_PREFIX = "tracebound._app"
# Application folders: Python packages and the data they read (schemas, rules, prompts
# and skills, runbooks, the evaluation cases). The local stack's Kafka files live in
# the ``tracebound.stack.config`` package and ship with it.
APP_FOLDERS = (
    "services",
    "projections",
    "web",
    "replay",
    "bench",
    "schemas",
    "rules",
    "prompts",
    "runbooks",
    "evals",
)


def _app_packages() -> list[str]:
    found = find_namespace_packages(
        include=[p for top in APP_FOLDERS for p in (top, f"{top}.*")],
        exclude=["*.__pycache__"],
    )
    return [f"{APP_PREFIX}.{name}" for name in found]


setup(
    packages=[
        *find_namespace_packages(include=["tracebound", "tracebound.*"], exclude=["*.__pycache__"]),
        *_app_packages(),
    ],
    package_dir={f"{APP_PREFIX}.{top}": top for top in APP_FOLDERS},
    package_data={"": ["*"]},
    # The held-out groundedness corpus (megabytes of JSON Lines) is for developing the
    # verifier in a checkout, not for a deployment.
    exclude_package_data={"": ["*.pyc"], f"{APP_PREFIX}.evals.groundedness": ["*.jsonl"]},
)
