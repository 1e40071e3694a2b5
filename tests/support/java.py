"""The Java consumer example of ``docs/consumers.md``, built and run as its reader would.

Its jars (Apache Avro, kafka-clients) come from Maven Central through the example's
own ``pom.xml``, resolved once into the stack's download cache (keyed by the pom, so
a version change resolves again) the way the stack resolves Kafka's jars.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tracebound.stack.apt import ensure_binary
from tracebound.stack.jars import find_java

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "java"
MAIN = "AnswersConsumer"
MAVEN_TIMEOUT_S = 900
RUN_TIMEOUT_S = 180


def _tail(data: bytes) -> str:
    return data.decode("utf-8", "replace")[-3000:]


def example_libs(cache_dir: Path) -> Path:
    """The folder of the example's runtime jars, resolved with Maven on first use."""
    pom = EXAMPLE / "pom.xml"
    libs = cache_dir / f"java-example-{hashlib.sha256(pom.read_bytes()).hexdigest()[:12]}"
    if (libs / ".complete").is_file():
        return libs
    mvn = ensure_binary("mvn", "maven", cache_dir / "apt.log")
    partial = libs.with_name(libs.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    argv = [mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies"]
    argv += [f"-DoutputDirectory={partial}", "-DincludeScope=runtime"]
    done = subprocess.run(argv, capture_output=True, timeout=MAVEN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"Maven failed: {_tail(done.stdout + done.stderr)}"
    shutil.rmtree(libs, ignore_errors=True)
    partial.rename(libs)
    (libs / ".complete").write_text("", encoding="utf-8")
    return libs


def compile_example(libs: Path, classes: Path, apt_log: Path) -> None:
    javac = ensure_binary("javac", "openjdk-17-jdk-headless", apt_log)
    argv = [javac, "-cp", f"{libs}/*", "-d", str(classes), str(EXAMPLE / f"{MAIN}.java")]
    done = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"javac failed: {_tail(done.stdout + done.stderr)}"


def run_example(libs: Path, classes: Path, *args: str) -> list[dict[str, Any]]:
    """The JSON lines the example prints, one per answer."""
    argv = [find_java(), "-cp", f"{classes}:{libs}/*", MAIN, *args]
    done = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{MAIN} failed: {_tail(done.stderr)}"
    return [json.loads(line) for line in done.stdout.decode("utf-8").splitlines() if line]
