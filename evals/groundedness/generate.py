"""Generate the groundedness corpus: ``.venv/bin/python -m evals.groundedness.generate``.

Deterministic: one seed, no clock. Each kind is instantiated four times with
fresh invented names and values; instances 0 and 2 go to the dev split, 1 and
3 to the test split. Every wording of a kind is applied to every instance, so
both splits share kinds and wordings but no service, name or value.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.groundedness.core import Edit, Kind, Names, Values, Wording, apply_edit, render
from evals.groundedness.evidence import refs_of
from evals.groundedness.kinds import (
    app_logs,
    blackbox,
    cadvisor,
    coredns,
    jvm,
    kafka,
    kube_state,
    nginx,
    no_evidence,
    node,
    postgres,
    redis,
    runbooks,
    runtime_logs,
    tls,
)
from services.gatekeeper.check import check
from services.gatekeeper.ruleset import default_ruleset
from tracebound.events import ToolInvocation

SEED = 20261118
INSTANCES = 4
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPLIT_FILES = {"dev": "dev.jsonl", "test": "test.jsonl"}

KINDS: tuple[Kind, ...] = (
    kafka.KAFKA_LAG,
    kube_state.POD_RESTARTS,
    kube_state.DEPLOY_REPLICAS,
    kube_state.OOM_KILLED,
    node.NODE_DISK,
    node.NODE_CPU,
    node.NODE_MEMORY,
    blackbox.PROBE_FAILED,
    blackbox.PROBE_SLOW,
    cadvisor.CONTAINER_CPU,
    cadvisor.CONTAINER_MEMORY,
    redis.REDIS_MEMORY,
    redis.REDIS_EVICTIONS,
    redis.REDIS_CLIENTS,
    postgres.PG_REPLICATION,
    postgres.PG_CONNECTIONS,
    postgres.PG_DEADLOCKS,
    nginx.NGINX_5XX,
    nginx.NGINX_RPS,
    coredns.COREDNS_SERVFAIL,
    coredns.COREDNS_LATENCY,
    jvm.JVM_GC_PAUSE,
    jvm.JVM_HEAP,
    app_logs.APP_JSON_LOG,
    app_logs.NGINX_ACCESS,
    app_logs.NGINX_ERROR,
    app_logs.COREDNS_LOG,
    runtime_logs.JVM_GC_LOG,
    runtime_logs.PG_DEADLOCK_LOG,
    runtime_logs.PG_SLOW_LOG,
    runbooks.RUNBOOK,
    no_evidence.NONE_LOGS,
    no_evidence.NONE_METRICS,
    no_evidence.NONE_KNOWLEDGE,
    tls.SSL_EXPIRY,  # appended last: the cases drawn before it keep their names and values
)


def repository_words(root: Path = ROOT) -> frozenset[str]:
    """Every lowercase letter run of the repository's .py/.md/.json files, this folder excepted."""
    words: set[str] = set()
    for path in scanned_files(root):
        words.update(
            re.findall(r"[a-z]+", path.read_text(encoding="utf-8", errors="ignore").lower())
        )
    return frozenset(words)


def scanned_files(root: Path = ROOT) -> Iterator[Path]:
    """The .py, .md and .json files outside this folder, .venv and .git."""
    skip = {".venv", ".git", "node_modules"}
    here = HERE.resolve()
    for path in root.rglob("*"):
        if path.suffix not in (".py", ".md", ".json") or not path.is_file():
            continue
        parts = path.relative_to(root).parts
        if skip.intersection(parts) or here in path.resolve().parents:
            continue
        yield path


def excerpt_of(wording: Wording, ref: str, view: Mapping[str, str]) -> str:
    if wording.excerpt is None:
        return ref
    if isinstance(wording.excerpt, int):
        return ref.split("; ")[wording.excerpt]
    text = wording.excerpt.format(**view)
    if text not in ref:
        raise ValueError(f"excerpt {text!r} not in {ref!r}")
    return text


def _literal(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def states_of(wording: Wording, values: Values) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for state in wording.states:
        name, _, rest = state.partition("=")
        key, _, unit = rest.partition(":")
        entry: dict[str, Any] = {
            "field": name,
            "value": values[key] if key in values else _literal(key),
        }
        if unit:
            entry["unit"] = unit
        out.append(entry)
    return out


def structured_output(
    text: str, claim_type: str, invocation: Mapping[str, Any], path: str, excerpt: str
) -> dict[str, Any]:
    """One executor_evidence_v2 document with one claim and one binding."""
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": invocation["tool_name"],
        "source_invocation_id": invocation["source_invocation_id"],
        "raw_path": path,
        "evidence_excerpt": excerpt,
    }
    claim = {
        "claim_id": "claim-1",
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }
    return {
        "answer_version": "executor_evidence_v2",
        "claims": [claim],
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }


def verifier_input(
    so: dict[str, Any], invocation: Mapping[str, Any], query: str, lang: str
) -> dict[str, Any]:
    """The verifier input ``tracebound verifier check`` reads, gatekeeper result included."""
    record = ToolInvocation.model_validate(invocation)
    outcome = check(so, [record], default_ruleset())
    details = invocation["retrieval_details"]
    return {
        "original_query": query,
        "language": lang,
        "mode": "CHAT",
        "round": 1,
        "executor_final_answer": "",
        "executor_structured_output": outcome.structured_output,
        "executor_output_parse_status": {"status": "valid", "detail": ""},
        "tool_trace_summary": [
            {
                "source_invocation_id": invocation["source_invocation_id"],
                "tool_name": invocation["tool_name"],
                "success": invocation["success"],
                "evidence_status": details["evidence_status"],
                "raw_paths": [r["raw_path"] for r in details["evidence_refs"]],
                "backend": invocation["backend"],
            }
        ],
        "gatekeeper_result": outcome.result.model_dump(mode="json"),
        "tool_invocations": [dict(invocation)],
    }


def _case(
    meta: dict[str, Any],
    text: str,
    *,
    wording: Wording,
    inv: Mapping[str, Any],
    path: str,
    excerpt: str,
    query: str,
) -> dict[str, Any]:
    so = structured_output(text, wording.claim_type, inv, path, excerpt)
    return {**meta, **verifier_input(so, inv, query, wording.lang)}


def build(forbidden: frozenset[str]) -> list[dict[str, Any]]:
    rng = random.Random(SEED)  # noqa: S311 - a corpus, not a secret
    names = Names(rng, forbidden)
    cases: list[dict[str, Any]] = []
    for kind in KINDS:
        for inst in range(INSTANCES):
            values = kind.make(rng, names)
            split = "dev" if inst % 2 == 0 else "test"
            run_id = f"groundedness-{kind.name}-{inst}"
            inv = kind.evidence(run_id, values)
            ref = refs_of(inv)[kind.raw_path]
            view = kind.view(values)
            base_entities = sorted(set(names.invented(json.dumps(values))))
            for w_index, wording in enumerate(kind.wordings):
                base_id = f"{kind.name}.{inst}.{w_index}"
                text = render(kind, wording, values)
                excerpt = excerpt_of(wording, ref, view)
                query = kind.query_zh if wording.lang == "zh" else kind.query_en
                meta = {
                    "id": base_id,
                    "split": split,
                    "lang": wording.lang,
                    "kind": kind.name,
                    "source": kind.source,
                    "expect": "PASS",
                    "edit_class": None,
                    "base_id": None,
                    "states": states_of(wording, values),
                    "entities": base_entities,
                    "note": None,
                }
                cases.append(
                    _case(
                        meta,
                        text,
                        wording=wording,
                        inv=inv,
                        path=kind.raw_path,
                        excerpt=excerpt,
                        query=query,
                    )
                )
                count = min(len(wording.edits), rng.choice((1, 2, 2, 3)))
                specs = rng.sample(list(wording.edits), count)
                for e_index, spec in enumerate(specs):
                    edit: Edit = apply_edit(spec, kind, wording, values, rng=rng, names=names)
                    edit_meta = {
                        **meta,
                        "id": f"{base_id}.e{e_index}",
                        "expect": "NOT_PASS",
                        "edit_class": edit.edit_class,
                        "base_id": base_id,
                        "states": None,
                        "entities": sorted(set(base_entities) | set(names.invented(edit.text))),
                        "note": f"edit {spec}; claim_text changed only, binding and excerpt kept",
                    }
                    cases.append(
                        _case(
                            edit_meta,
                            edit.text,
                            wording=wording,
                            inv=inv,
                            path=kind.raw_path,
                            excerpt=excerpt,
                            query=query,
                        )
                    )
    return cases


def _line(case: Mapping[str, Any]) -> str:
    return json.dumps(case, ensure_ascii=False, separators=(",", ":"))


def counts(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    true = [c for c in cases if c["expect"] == "PASS"]
    edits = [c for c in cases if c["expect"] != "PASS"]
    return {
        "cases": len(cases),
        "true_claims": len(true),
        "edits": len(edits),
        "by_lang": dict(sorted(Counter(f"{c['lang']}/{c['expect']}" for c in cases).items())),
        "by_kind": dict(sorted(Counter(str(c["kind"]) for c in cases).items())),
        "by_edit_class": dict(sorted(Counter(str(c["edit_class"]) for c in edits).items())),
    }


def write(out_dir: Path, cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "generator": "evals/groundedness/generate.py",
        "seed": SEED,
        "split_rule": "instance index parity per kind: instances 0 and 2 dev, 1 and 3 test",
        "files": {},
    }
    for split, name in SPLIT_FILES.items():
        chosen = [c for c in cases if c["split"] == split]
        data = "".join(_line(c) + "\n" for c in chosen).encode("utf-8")
        (out_dir / name).write_bytes(data)
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), **counts(chosen)}
    (out_dir / "MANIFEST.json").write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the groundedness corpus.")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: this one)")
    args = parser.parse_args(argv)
    cases = build(repository_words())
    manifest = write(args.out, cases)
    for name, entry in manifest["files"].items():
        print(
            f"{name}: {entry['cases']} cases, {entry['true_claims']} true, {entry['edits']} edits"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
