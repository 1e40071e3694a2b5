"""The runtime's lines in the bench table: ratios to its peers and the fastavro floor."""

from __future__ import annotations

from typing import Any

from bench.figures import runtime_figures


def _run(tracebound: float, **peers: float) -> dict[str, Any]:
    run: dict[str, Any] = {
        "tracebound": {"messages_per_second": tracebound},
        "ratio": {name: round(tracebound / mps, 4) for name, mps in peers.items()},
        "message_bytes_mean": 182.0,
        "commit_interval_ms": 100,
        "commit_max_messages": 5000,
    }
    for name, mps in peers.items():
        run[name] = {"messages_per_second": mps}
    return run


def _lines(runs: list[dict[str, Any]]) -> dict[str, str]:
    return {f.name: f.line(20) for f in runtime_figures(runs)}


def test_the_floor_line_gives_the_fastavro_loops_ratios_and_no_target() -> None:
    runs = [
        _run(40_000, raw=200_000, fastavro=58_000, quix=66_000),
        _run(42_000, raw=200_000, fastavro=60_000, quix=70_000),
        _run(38_000, raw=200_000, fastavro=62_000, quix=70_000),
    ]
    lines = _lines(runs)
    floor = lines["fastavro / peers"]
    # the medians of fastavro ÷ raw (0.29, 0.30, 0.31) and fastavro ÷ quix (0.88, 0.86, 0.89)
    assert "0.30 of raw" in floor and "0.88 of quix" in floor and "median of 3" in floor
    assert "beyond" not in floor and ">=" not in lines["runtime / raw"]
    assert "no-regression figure, no target" in lines["runtime / quix"]


def test_no_floor_line_without_the_fastavro_loop() -> None:
    run = _run(40_000, raw=190_000, quix=66_000)
    run["fastavro"] = {"error": "fastavro loop failed"}
    lines = _lines([run])
    assert "fastavro / peers" not in lines and "runtime / raw" in lines
    assert "not measured: fastavro loop failed" in lines["runtime / fastavro"]
