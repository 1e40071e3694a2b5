"""Java and Kafka's jars for the local stack's broker processes.

There is no Kafka distribution on the machine, only Java and Maven, so the broker's
jars are resolved once from Maven Central into the cache (a marker file written after
a complete copy tells a finished download from an interrupted one); every node of the
stack runs from that one folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tracebound.errors import StackError
from tracebound.settings import StackSettings
from tracebound.stack import progress
from tracebound.stack.paths import KAFKA_POM, StackPaths

MAVEN_TIMEOUT_S = 1800.0
JAVA_HINT = "Java 17+ is required: install openjdk-17-jre-headless"
_MAVEN_NOISE = ("[help ", "re-run maven", "for more information about", "full stack trace")


def find_java() -> str:
    """The ``java`` executable, checked to be version 17 or newer."""
    java = shutil.which("java")
    if java is None:
        raise StackError(JAVA_HINT)
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"{JAVA_HINT} ({java} does not run: {exc})") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if done.returncode != 0 or match is None:
        raise StackError(f"{JAVA_HINT} ({java} -version failed)")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_x" style
        major = int(match.group(2))
    if major < 17:
        raise StackError(f"{JAVA_HINT} (found Java {major} at {java})")
    return java


def last_maven_error(output: str) -> str:
    """The most telling line of Maven's output, without its generic help boilerplate."""
    lines = [line.strip() for line in output.splitlines()]
    errors = [line for line in lines if line.startswith(("[ERROR]", "[FATAL]"))] or lines
    for line in reversed(errors):
        text = re.sub(r"^\[(ERROR|FATAL)\]\s*", "", line)
        text = re.sub(r"\s*-> \[Help \d+\]$", "", text)
        if text and not any(noise in text.lower() for noise in _MAVEN_NOISE):
            return text
    return "no output"


def resolve_jars(settings: StackSettings, paths: StackPaths) -> Path:
    """The folder of Kafka's runtime jars, resolved with Maven when not cached yet."""
    if paths.kafka_libs_marker.is_file() and any(paths.kafka_libs.glob("*.jar")):
        return paths.kafka_libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("Maven is required to fetch the Kafka jars: install maven")
    paths.kafka_home.mkdir(parents=True, exist_ok=True)
    partial = paths.kafka_home / "libs.partial"
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"resolving Kafka {settings.kafka_version} jars with Maven (first run only)…")
    argv = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(KAFKA_POM),
        "dependency:copy-dependencies",
        f"-Dkafka.version={settings.kafka_version}",
        f"-DoutputDirectory={partial}",
        "-DincludeScope=runtime",
    ]
    try:
        with paths.maven_log.open("w", encoding="utf-8") as log:
            done = subprocess.run(
                argv, stdout=log, stderr=subprocess.STDOUT, timeout=MAVEN_TIMEOUT_S, check=False
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"Maven failed to run: {exc} (log: {paths.maven_log})") from exc
    output = paths.maven_log.read_text(encoding="utf-8", errors="replace")
    if done.returncode != 0 or not any(partial.glob("*.jar")):
        raise StackError(
            f"Maven could not resolve Kafka {settings.kafka_version}: "
            f"{last_maven_error(output)} (full output: {paths.maven_log})"
        )
    shutil.rmtree(paths.kafka_libs, ignore_errors=True)
    partial.rename(paths.kafka_libs)
    jars = sorted(p.name for p in paths.kafka_libs.glob("*.jar"))
    paths.kafka_libs_marker.write_text("\n".join(jars) + "\n", encoding="utf-8")
    return paths.kafka_libs


def java_argv(java: str, paths: StackPaths, main: str, *args: str, heap: str = "") -> list[str]:
    """A JVM command line running ``main`` from the cached jars with our log4j2 config."""
    memory = [f"-Xms{heap}", f"-Xmx{heap}"] if heap else []
    return [
        java,
        *memory,
        f"-Dlog4j2.configurationFile={paths.kafka_log4j}",
        f"-Dkafka.logs.dir={paths.kafka_logs}",
        "-Djava.awt.headless=true",
        "-cp",
        f"{paths.kafka_libs}/*",
        main,
        *args,
    ]
