"""The pipeline files the config tests check whole: every example of configs/, and the Paimon
sample beside this module (not one of configs/, which people copy and run, until ingest writes
Paimon tables: issue 43)."""

from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).parents[2] / "configs"
PAIMON_SAMPLE = Path(__file__).parent / "samples" / "paimon.yaml"
EXAMPLES = (*sorted(CONFIGS.glob("*.yaml")), PAIMON_SAMPLE)
