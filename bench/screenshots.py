"""Full-page screenshots of a built report directory, as a reader sees it at 1280 px.

    python bench/screenshots.py REPORTS_DIR OUT_DIR [--width 1280] [--max-height 9000]

It builds nothing: run `claimlab report` (e.g. `--from-data`) first, then point this at its
output. It writes one PNG per page (index, summary, each claim report, and each investigation
that was built) with headless Chromium through selenium and chromium-driver (the browser the
report tests use). Each PNG is reduced to a 256-colour palette and optimized, and a page taller
than --max-height px is cut there (the PNG says so in its name: `NAME.top.png`), so that the
committed screenshots stay small. Exits 1 with one line when a page is missing.
"""

from __future__ import annotations

import argparse
import base64
import io
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from claimlab import report  # noqa: E402


def pages(reports: Path) -> list[Path]:
    """The pages a reader opens, in the index's order; investigations only when they were built."""
    names = ["index", Path(report.SUMMARY).stem, *report.NOTEBOOKS.values()]
    found = [reports / f"{name}.html" for name in names]
    missing = [p.name for p in found if not p.exists()]
    if missing:
        raise SystemExit(f"screenshots: {reports}: no {', '.join(missing)} (build the reports first)")
    extra = [reports / f"{Path(n).stem}.html" for n, _ in report.INVESTIGATIONS.values()]
    return found + [p for p in extra if p.exists()]


def browser(profile_dir: Path, width: int = 1280, height: int = 2000):
    """Headless Chromium with no network chatter of its own, `width` px wide."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", f"--user-data-dir={profile_dir}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def full_page(driver, page: Path, width: int, max_height: int) -> tuple[bytes, bool]:
    """The PNG of the whole page at `width` CSS px (device scale 1), cut at `max_height`."""
    driver.get(page.as_uri())
    height = int(driver.execute_script("return document.documentElement.scrollHeight;"))
    cut = height > max_height
    height = min(height, max_height)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return base64.b64decode(shot["data"]), cut


def shrink(png: bytes) -> bytes:
    """256-colour palette, optimized: a text page loses nothing a reader sees, and is ~4x smaller."""
    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", type=Path, help="a built report directory (index.html, ...)")
    parser.add_argument("out", type=Path, help="where the PNGs go")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--max-height", type=int, default=9000, help="cut taller pages here (px)")
    args = parser.parse_args(argv)
    todo = pages(args.reports.resolve())
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="claimlab-shots-") as profile:
        driver = browser(Path(profile), args.width)
        try:
            for page in todo:
                png, cut = full_page(driver, page, args.width, args.max_height)
                for stale in args.out.glob(f"{page.stem}.*png"):
                    stale.unlink()
                target = args.out / f"{page.stem}{'.top' if cut else ''}.png"
                target.write_bytes(shrink(png))
                print(f"{target} ({target.stat().st_size // 1024} KiB{', cut' if cut else ''})")
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
