"""Headless Chromium for tests of the status page: Debian's ``chromium`` driven through its
``chromium-driver`` by Selenium (``make test`` installs both). A missing browser fails the test
that needs it, naming the fix; it is never skipped."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: without the background-networking ones, Chromium's calls home are refused here at every start
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    for program in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(program) is None:
            raise AssertionError(
                f"{program} is missing: `make test` installs Debian's chromium and "
                "chromium-driver (apt-get install chromium chromium-driver)"
            )
    with tempfile.TemporaryDirectory(prefix="tidemark-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        # the driver's path is given, so Selenium Manager never looks for one online
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            yield driver
        finally:
            driver.quit()
