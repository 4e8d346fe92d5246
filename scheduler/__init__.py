"""The watermark-triggered scheduler: fires each window of each task once its inputs are
complete (docs/scheduler.md)."""
