"""Rendering ``report.html`` in headless Chromium (Debian's ``chromium``) into a full-page PNG."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path


def screenshot(html_path: str | Path, png_path: str | Path, size: str = "1280,3200", timeout: int = 120) -> Path:
    """Render ``html_path`` with headless Chromium into ``png_path`` (raises if no browser is found,
    it fails, or it writes no PNG)."""
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        raise FileNotFoundError("no chromium / chromium-browser / google-chrome on PATH (Debian: apt-get install "
                                "chromium)")
    png = Path(png_path).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}",
               f"--window-size={size}", f"--screenshot={png}", Path(html_path).resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        raise RuntimeError(f"{exe} did not write {png} (exit {proc.returncode}): {proc.stderr[-800:]}")
    return png
