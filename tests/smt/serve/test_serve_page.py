"""smt-serve's web page in a real headless browser (Debian's chromium through chromedriver, driven by selenium):
type a sentence, get the translation, hover a phrase and see its counterpart highlighted, the feature and
n-best tables, the attention heat map; a screenshot.

The same code takes the show-piece of docs/serve.md from a server on a real system::

    python tests/smt/serve/test_serve_page.py --url http://127.0.0.1:8080 --text "A man in an orange hat." \\
        --out docs/img/serve_page.png
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1200,1600", "--hide-scrollbars"]


def browser(profile: str):
    """A headless Chromium session (``/usr/bin/chromium`` and Debian's chromedriver; nothing downloaded)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    return webdriver.Chrome(options=opts, service=Service(executable_path=shutil.which("chromedriver")))


def drive_page(url: str, text: str, png: str | Path, nbest: int = 3) -> dict:
    """Translate ``text`` on the page at ``url``, hover the first source phrase, save a screenshot to ``png``;
    returns what the page showed."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    with tempfile.TemporaryDirectory(prefix="chromium-profile.") as profile:
        driver = browser(profile)
        try:
            wait = WebDriverWait(driver, 120)
            driver.get(url + "/")
            wait.until(EC.text_to_be_present_in_element((By.ID, "system"), "System "))
            box = driver.find_element(By.ID, "source")
            box.clear()
            box.send_keys(text)
            n = driver.find_element(By.ID, "nbest")
            n.clear()
            n.send_keys(str(nbest))
            driver.find_element(By.ID, "go").click()
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".sentence .translation")))
            seen = {"system": driver.find_element(By.ID, "system").text,
                    "translation": driver.find_element(By.CSS_SELECTOR, ".translation").text,
                    "nbest_rows": len(driver.find_elements(By.CSS_SELECTOR, "table.nbest tbody tr")),
                    "feature_rows": [r.find_element(By.TAG_NAME, "td").text
                                     for r in driver.find_elements(By.CSS_SELECTOR, "table.features tbody tr")],
                    "heat_rows": len(driver.find_elements(By.CSS_SELECTOR, "table.heat tbody tr")),
                    "heat_cells": len(driver.find_elements(By.CSS_SELECTOR, "table.heat tbody td"))}
            sources = driver.find_elements(By.CSS_SELECTOR, ".src-phrase")
            hovered = max(sources, key=lambda e: len(e.text))  # the longest source phrase
            group = hovered.get_attribute("data-group")
            ActionChains(driver).move_to_element(hovered).perform()
            wait.until(lambda d: "linked" in d.find_element(
                By.CSS_SELECTOR, f".tgt-phrase[data-group='{group}']").get_attribute("class"))
            seen["linked"] = sorted((e.get_attribute("class").split()[1], e.text)
                                    for e in driver.find_elements(By.CSS_SELECTOR, ".phrase.linked"))
            seen["hovered"] = (hovered.text, group)
            seen["phrases"] = [(e.get_attribute("data-group"), e.text)
                               for e in driver.find_elements(By.CSS_SELECTOR, ".tgt-phrase")]
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1200, min(int(height) + 160, 6000))  # the whole page in the screenshot
            driver.save_screenshot(str(png))
            ActionChains(driver).move_to_element(driver.find_element(By.ID, "system")).perform()
            wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, ".phrase.linked"))
            return seen
        finally:
            driver.quit()


def _need_browser() -> None:
    missing = [n for n in ("chromium", "chromedriver") if not shutil.which(n)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip: the dev extra)")
    if missing:
        why = f"no {', '.join(missing)} (scripts/setup.sh installs them: apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def test_the_page_translates_and_links_phrases(tmp_path_factory) -> None:
    _need_browser()
    from tests.smt.serve.serve_fixtures import build_tiny_experiment, serving

    from smt_features.serve.api import System

    work = build_tiny_experiment(tmp_path_factory.mktemp("serve"))
    text = "S8 s6 s10 s3 s1."
    png = tmp_path_factory.mktemp("page") / "page.png"
    with System.load(work, system="+all+RNNsearch", threads=1) as system, serving(system) as url:
        want = system.translate([text], nbest=3, trace=True, attention=True)[0]
        seen = drive_page(url, text, png)
    assert seen["system"].startswith("System +all+RNNsearch (run 1): en → fr") and "attention of RNNS0" in seen["system"]
    assert seen["translation"] == want.translation
    assert seen["nbest_rows"] == len(want.nbest) == 3
    assert seen["feature_rows"][-2:] == ["RNNS0", "total"]
    assert seen["heat_rows"] == len(want.best.tokens) + 1 and seen["heat_cells"] == seen["heat_rows"] * (
        len(want.source_tokens) + 1)
    # hovering a source phrase lights it and its target phrase, nothing else
    text_of, group = seen["hovered"]
    seg = want.best.segments[int(group.split("-")[1])]
    assert text_of == " ".join(seg.source)
    assert seen["linked"] == sorted([("src-phrase", " ".join(seg.source)), ("tgt-phrase", " ".join(seg.target))])
    assert [t for _, t in seen["phrases"]] == [" ".join(s.target) for s in want.best.segments]
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.shape[0] > 400 and img.shape[1] > 400 and img[..., :3].std() > 0.05  # a drawn page, not blank


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="screenshot of smt-serve's page after translating TEXT")
    parser.add_argument("--url", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--nbest", type=int, default=5)
    args = parser.parse_args()
    print(drive_page(args.url, args.text, args.out, args.nbest))
