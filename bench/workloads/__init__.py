"""What the benchmarks drive, which the tests drive too: a workload of known changes, changelog
commits made without a binlog, and a two-table pipeline's reports and executor for the scheduler.

The tests import these from here; nothing in ``bench`` imports ``tests``
(``tests/test_architecture.py``), so changing a test's own helper cannot break a benchmark that
CI does not run.
"""
