"""The README's first command ends in the smoke pipeline; it must pass on the real stack."""

from __future__ import annotations

import subprocess
import sys

from tidemark.stack.endpoints import StackEndpoints


def test_the_smoke_pipeline_mirrors_mariadb(endpoints: StackEndpoints) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "spark_jobs.smoke_pipeline"],
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "==> OK: the mirror equals MariaDB" in result.stdout
    assert "    mirror:  [(1, 'kettle', 1), (3, 'cup', 4)]" in result.stdout
