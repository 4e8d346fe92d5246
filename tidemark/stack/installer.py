"""Installs what the stack runs: Debian packages with apt-get, JVM jars from Maven Central.

Everything is downloaded here, at set-up; nothing downloads while a pipeline runs. Each step
is idempotent and cheap when its result is already present.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from tidemark.errors import TerminalError
from tidemark.stack.process import run

logger = logging.getLogger(__name__)

MINIMUM_JAVA = 17  # Kafka 4 brokers, and Spark 4


def ensure_debian_packages(packages: Sequence[str], *, present: bool) -> None:
    """apt-get install ``packages`` unless ``present`` says they already are."""
    if present:
        return
    if shutil.which("apt-get") is None:
        raise TerminalError(
            f"cannot install {', '.join(packages)}: this is not a Debian-like system. "
            "Install them with your package manager, or point Tidemark at your own services."
        )
    sudo = [] if os.geteuid() == 0 else _sudo()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    logger.info("Installing Debian packages: %s", " ".join(packages))
    run([*sudo, "apt-get", "update", "-q"], what="apt-get update", env=env)
    run(
        [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
        what=f"apt-get install {' '.join(packages)}",
        env=env,
    )


def resolve_maven_jars(pom: str, destination: Path, substitutions: dict[str, str]) -> list[Path]:
    """Copy the runtime dependencies of the packaged POM ``pom`` into ``destination``.

    A stamp holding the POM's hash makes a second call free; a changed version re-resolves.
    """
    text = resources.files("tidemark.stack").joinpath("resources", pom).read_text()
    for name, value in substitutions.items():
        text = text.replace("${" + name + "}", value)
    digest = hashlib.sha256(text.encode()).hexdigest()
    stamp = destination / ".resolved"
    if stamp.exists() and stamp.read_text() == digest:
        return sorted(destination.glob("*.jar"))
    ensure_debian_packages(["maven"], present=shutil.which("mvn") is not None)
    if destination.exists():
        shutil.rmtree(destination)
    destination.mkdir(parents=True)
    pom_file = destination / "pom.xml"
    pom_file.write_text(text)
    logger.info("Resolving %s from Maven Central into %s", pom, destination)
    run(
        [
            "mvn",
            "--batch-mode",
            "--quiet",
            "-f",
            str(pom_file),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={destination}",
        ],
        what=f"resolving the jars of {pom} with Maven",
    )
    stamp.write_text(digest)
    return sorted(destination.glob("*.jar"))


def ensure_java(minimum: int, *, compiler: bool = False) -> None:
    """Java ``minimum`` or newer on PATH, from Debian's OpenJDK when there is none; with
    ``compiler``, a JDK's ``javac`` too."""
    kind, tools = ("jdk", ("java", "javac")) if compiler else ("jre", ("java",))
    ensure_debian_packages(
        [f"openjdk-{minimum}-{kind}-headless"],
        present=all(shutil.which(tool) is not None for tool in tools),
    )
    # Java writes its settings to stderr.
    result = subprocess.run(
        ["java", "-XshowSettings:properties", "-version"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    match = re.search(r"java\.specification\.version = (\d+)", result.stderr)
    if match is None or int(match.group(1)) < minimum:
        found = match.group(1) if match else "unknown"
        raise TerminalError(
            f"the stack's Java services need Java {minimum} or newer, and 'java' on PATH is "
            f"{found}: install openjdk-{minimum}-{kind}-headless and put it first on PATH"
        )


def _sudo() -> list[str]:
    if shutil.which("sudo") is None:
        raise TerminalError(
            "installing Debian packages needs root: run 'tidemark stack up' as root or install sudo"
        )
    return ["sudo"]
