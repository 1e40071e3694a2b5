"""Which workload of the namespace a client's name for its upstream means.

Why: a failing-call series names its upstream the way the client does. Envoy says
``outbound|8080||geo-eta.maps.svc.cluster.local``, an HTTP client
``geo-eta:8080``, a gRPC client ``aml.v1.ScreeningService``. The upstream's
restarts and replicas are labelled by its deployment (``ironbark-aml-screen``).
An SRE reads one as the other without thinking; this module does it in code: the
name is cut to its host, and a host that is no workload is matched by its words.

Only a unique best match is taken. A name whose words fit two workloads equally,
or none, names no workload: the dependency is then looked up by its own name, as
before, and states nothing it cannot find.
"""

from __future__ import annotations

import re
from collections.abc import Collection

# Envoy's ``direction|port|subset|host`` cluster names
_ENVOY = re.compile(r"^(?:outbound|inbound)\|[^|]*\|[^|]*\|(?P<host>.+)$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_CLUSTER_DOMAIN = re.compile(r"\.svc(\.cluster\.local)?\.?$", re.IGNORECASE)
# word boundaries inside a name: separators and camelCase humps
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# words every client name carries and that say nothing of which upstream it is
_NOISE = frozenset(
    {
        "api",
        "client",
        "cluster",
        "default",
        "grpc",
        "http",
        "https",
        "inbound",
        "internal",
        "local",
        "outbound",
        "rpc",
        "server",
        "service",
        "services",
        "svc",
    }
)
_VERSION = re.compile(r"^v\d+([a-z]+\d*)?$")
# the shortest word matched by prefix ("screen" for "screening")
_STEM = 4


def host(name: str) -> str:
    """The host a client's name for its upstream points at: Envoy's cluster host, a
    URL's host, a ``host:port`` without the port."""
    text = name.strip()
    if envoy := _ENVOY.match(text):
        text = envoy.group("host")
    text = _SCHEME.sub("", text)
    text = text.split("/", 1)[0]
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text


def words(name: str) -> frozenset[str]:
    """The telling words of a name, lower-cased: camelCase and separators split, version
    segments (``v1``) and generic words (``service``, ``svc``) dropped."""
    found: set[str] = set()
    for part in _SEPARATORS.split(name):
        if _VERSION.match(part.lower()):
            continue
        for word in _HUMPS.findall(part):
            low = word.lower()
            if low not in _NOISE and len(low) > 1 and not low.isdigit():
                found.add(low)
    return frozenset(found)


def _alike(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= _STEM and long_.startswith(short)


def _score(wanted: frozenset[str], candidate: frozenset[str]) -> int:
    return sum(1 for w in wanted if any(_alike(w, c) for c in candidate))


def workload(name: str, workloads: Collection[str], *, namespace: str = "", own: str = "") -> str:
    """The workload among ``workloads`` that ``name`` means, or ``name`` cut to its host
    when none is unique.

    In order: the host itself; its first DNS label (``geo-eta.maps.svc…``); the one
    workload sharing the most telling words with it. The namespace's own name and the
    alert's service (``own``) are never a match by themselves.
    """
    target = host(name)
    known = {w for w in workloads if w and w != own}
    if target in known:
        return target
    bare = _CLUSTER_DOMAIN.sub("", target)
    first = bare.split(".", 1)[0]
    if first in known:
        return first
    wanted = words(bare) - words(namespace) - words(own)
    if not wanted:
        return target
    scored = sorted(((_score(wanted, words(w)), w) for w in known), reverse=True)
    if not scored or scored[0][0] == 0:
        return target
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return target
    return scored[0][1]
