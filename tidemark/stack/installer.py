"""Installs what the stack runs: Debian packages with apt-get, JVM jars from Maven Central.

Everything is downloaded here, at set-up; nothing downloads while a pipeline runs. Each step
is idempotent and cheap when its result is already present.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from tidemark.errors import TerminalError
from tidemark.stack.process import run

logger = logging.getLogger(__name__)


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


def _sudo() -> list[str]:
    if shutil.which("sudo") is None:
        raise TerminalError(
            "installing Debian packages needs root: run 'tidemark stack up' as root or install sudo"
        )
    return ["sudo"]
