"""The analysis board in a real browser: headless Chromium driven by Selenium through Debian's
chromedriver. Run by tests/ui.rs, which starts the daemons and works out every expected answer
(from tests/data's references and the `patience` command line) into the JSON file given with
--expect; this script only drives the page and compares what it shows.

Prints one line per check, then "ui: N passed, M failed"; exits 1 when a check failed.
"""

import argparse
import json
import os
import pathlib
import sys
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

# Only catches a hang: every wait ends as soon as the page shows what is awaited.
WAIT = 60


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok: {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAILED: {name}: {detail}", flush=True)

    def equal(self, name, got, want):
        self.check(name, got == want, f"got {got!r}, want {want!r}")


def browser(args, downloads):
    options = webdriver.ChromeOptions()
    options.binary_location = args.chromium
    for flag in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,1000",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ]:
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
        },
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver: Selenium Manager (which would download one) is never asked.
    return webdriver.Chrome(options=options, service=Service(executable_path=args.chromedriver))


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def wait_text(driver, element_id, text):
    """Waits until the element's text contains `text`; returns its text either way."""
    try:
        WebDriverWait(driver, WAIT).until(ec.text_to_be_present_in_element((By.ID, element_id), text))
    except TimeoutException:
        pass
    return text_of(driver, element_id)


def wait_for(driver, condition):
    try:
        return WebDriverWait(driver, WAIT).until(condition)
    except TimeoutException:
        return None


def wait_change(driver, element_id, old):
    """Waits until the element's text is no longer `old`; returns the new text."""
    wait_for(driver, lambda d: d.find_element(By.ID, element_id).text not in ("", old))
    return text_of(driver, element_id)


def moves_shown(driver):
    return [
        [b.get_attribute("data-piles"), b.find_element(By.CLASS_NAME, "odds").text]
        for b in driver.find_elements(By.CSS_SELECTOR, "#moves .move")
    ]


def press(driver, key):
    webdriver.ActionChains(driver).send_keys(key).perform()


def downloaded(directory, name):
    """The bytes of a finished download (Chromium writes NAME.crdownload until it is done)."""
    path = pathlib.Path(directory) / name
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if path.exists() and not list(pathlib.Path(directory).glob("*.crdownload")):
            return path.read_bytes()
        time.sleep(0.05)
    return None


def screenshot(driver, path, width):
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(max(height, 600), 1500))
    driver.save_screenshot(str(path))
    driver.set_window_size(1200, 1000)
    print(f"saved {path}", flush=True)


def board(driver, checks, base, want):
    driver.get(f"{base}/?deal={want['deal_query']}")
    checks.equal("the board shows the sample's probability", wait_text(driver, "probability", want["probability"]), want["probability"])
    checks.equal("its exact fraction", text_of(driver, "exact"), want["exact"])
    checks.equal("the nine piles as cards", len(driver.find_elements(By.CSS_SELECTOR, "#piles .card")), 36)
    checks.equal("every move with its odds, best first", moves_shown(driver), want["moves"])
    best = driver.find_elements(By.CSS_SELECTOR, "#moves .move.best")
    checks.equal("the best move marked", [b.get_attribute("data-piles") for b in best], [want["moves"][0][0]])
    checks.equal("the likeliest winning line", len(driver.find_elements(By.CSS_SELECTOR, "#line li")), want["line_length"])
    checks.check(
        "the JavaScript rounding is half to even, as the daemon prints",
        driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "import('/ui/cards.js').then((c) => done("
            "[c.fixed(0.0078125, 6), c.fixed(0.0234375, 6), c.fixed(2.5, 0), c.fixed(0.5893141864127796, 6)]));"
        )
        == ["0.007812", "0.023438", "2", "0.589314"],
    )

    # The keyboard: 1 plays the best move, U undoes it.
    driver.find_element(By.TAG_NAME, "body").click()
    press(driver, "1")
    after = want["after"]
    checks.equal("key 1 plays the best move: the odds are solve's for the position it leads to", wait_change(driver, "probability", want["probability"]), after["probability"])
    checks.equal("the moves from there are solve's", moves_shown(driver), after["moves"])
    checks.equal("the URL holds the position", driver.current_url.split("?deal=", 1)[1], after["deal_query"])
    press(driver, "u")
    checks.equal("U undoes it", wait_change(driver, "probability", after["probability"]), want["probability"])

    # The mouse: a click on the same move, then Undo's button.
    driver.find_element(By.CSS_SELECTOR, f"#moves .move[data-piles='{want['moves'][0][0]}']").click()
    checks.equal("a click plays it too", wait_change(driver, "probability", want["probability"]), after["probability"])
    if want.get("screenshots"):
        screenshot(driver, pathlib.Path(want["screenshots"]) / "ui-board.png", 1200)
    driver.find_element(By.ID, "undo").click()
    checks.equal("the undo button undoes it", wait_change(driver, "probability", after["probability"]), want["probability"])

    # Stepping along the likeliest line to its end wins.
    for _ in range(want["line_length"]):
        before = text_of(driver, "verdict")
        press(driver, "n")
        wait_change(driver, "verdict", before)
    checks.check("N steps along the line to a cleared table", "Cleared" in text_of(driver, "verdict"), text_of(driver, "verdict"))
    checks.equal("and the probability 1", text_of(driver, "probability"), "1.000000")

    # A shared position opens as it was left.
    driver.get(f"{base}/?deal={after['deal_query']}")
    checks.equal("a position's link opens its board", wait_text(driver, "probability", after["probability"]), after["probability"])

    # The position docs/ui.md links to: won two times in three (docs/solving.md works it out).
    driver.get(f"{base}/?deal={want['doc_position']}")
    checks.equal("the documented position's link", wait_text(driver, "probability", "0.666667"), "0.666667")
    checks.equal("its exact fraction", text_of(driver, "exact"), "2/3")
    empty = driver.find_elements(By.CSS_SELECTOR, "#piles .card.empty")
    checks.equal("and its six empty piles", len(empty), 6)

    # A bad deal: the daemon's words.
    area = driver.find_element(By.ID, "deal-input")
    area.clear()
    area.send_keys(want["bad_deal"], Keys.ENTER)
    error = wait_text(driver, "board-error", want["bad_deal_error"])
    checks.check("a bad deal's error is shown in words", want["bad_deal_error"] in error, error)

    # Narrow screens: no sideways scrolling; the piles in rows of three.
    driver.get(f"{base}/?deal={want['deal_query']}")
    wait_text(driver, "probability", want["probability"])
    driver.set_window_size(400, 900)
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    checks.check("a narrow screen needs no sideways scrolling", width[0] <= width[1], width)
    columns = driver.execute_script("return getComputedStyle(document.getElementById('piles')).gridTemplateColumns.split(' ').length")
    checks.equal("and shows the piles three by three", columns, 3)
    driver.set_window_size(1200, 1000)


def file_view(driver, checks, base, want, downloads):
    driver.get(f"{base}/#file")
    driver.find_element(By.ID, "file-input").send_keys(want["random_file"])
    count = wait_text(driver, "file-count", "done")
    checks.equal("the results stream in to the end", count, "1,000 of 1,000 deals: done")
    progress = driver.execute_script("const p = document.getElementById('file-progress'); return [p.value, p.max]")
    checks.equal("the progress bar is full", progress, [1000, 1000])
    summary = text_of(driver, "file-summary")
    checks.check("1,000 results, 314 unwinnable", summary.startswith("1,000 results") and f"{want['unwinnable']} unwinnable" in summary, summary)
    bars = driver.execute_script("return [...document.querySelectorAll('#histogram rect')].map(r => Number(r.dataset.count))")
    checks.equal("the histogram: the unwinnable, then 20 bins of 0.05", bars, [want["unwinnable"], *want["bins"]])
    checks.equal("a row per result", len(driver.find_elements(By.CSS_SELECTOR, "#file-table tbody tr")), 500)

    driver.find_element(By.ID, "download-text").click()
    text = downloaded(downloads, "random1000.txt")
    checks.check("the text download is the judge's expected output, byte for byte", text == pathlib.Path(want["random_out6"]).read_bytes(), (text or b"")[:200])
    driver.find_element(By.ID, "download-json").click()
    lines = (downloaded(downloads, "random1000.jsonl") or b"").decode().splitlines()
    checks.equal("the JSON download has a line per deal", len(lines), 1000)
    if want.get("screenshots"):
        screenshot(driver, pathlib.Path(want["screenshots"]) / "ui-file.png", 1200)

    # A row opens its deal's board.
    row = driver.find_elements(By.CSS_SELECTOR, "#file-table tbody tr")[want["row"]]
    row.click()
    checks.equal("a row opens its deal's board", wait_text(driver, "probability", want["row_probability"]), want["row_probability"])

    # A file of 5,007 deals (so two calls), four of the last seven bad: each listed with its error, and the
    # downloads byte for byte what `patience solve` prints for the whole file at once.
    driver.get(f"{base}/#file")
    driver.find_element(By.ID, "file-input").send_keys(want["bad_file"])
    count = wait_text(driver, "file-count", "done")
    checks.equal("a file in two parts is answered to its end", count, want["bad_count"])
    errors = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#bad-list li")]
    checks.equal("the bad deals listed with their errors, numbered in the whole file", errors, want["bad_errors"])
    name = pathlib.Path(want["bad_file"]).stem
    driver.find_element(By.ID, "download-text").click()
    text = downloaded(downloads, f"{name}.txt")
    checks.check("its text download is what solve prints for it", text == want["bad_text"].encode(), (text or b"")[-400:])
    driver.find_element(By.ID, "download-json").click()
    text = downloaded(downloads, f"{name}.jsonl")
    checks.check("and its JSON download what solve --format json prints", text == want["bad_json"].encode(), (text or b"")[-400:])


def rps(driver, checks, base, want):
    driver.get(f"{base}/#rps")
    players = want["rps_players"]
    n = driver.find_element(By.ID, "rps-n")
    n.clear()
    n.send_keys(str(len(players) - 1))
    for i, row in enumerate(players):
        for gesture, value in zip(["rock", "paper", "scissors"], row):
            box = driver.find_element(By.CSS_SELECTOR, f"#rps-players input[data-player='{i}'][data-gesture='{gesture}']")
            box.clear()
            box.send_keys(value)
    box.send_keys(Keys.ENTER)
    checks.equal("FZU 2145: Maze's probability", wait_text(driver, "rps-probability", want["rps_probability"]), want["rps_probability"])
    box = driver.find_element(By.CSS_SELECTOR, "#rps-players input[data-player='0'][data-gesture='rock']")
    box.clear()
    box.send_keys(want["rps_bad"], Keys.ENTER)
    error = wait_text(driver, "rps-error", want["rps_bad_error"])
    checks.check("and a bad case's error in words", want["rps_bad_error"] in error, error)


def token(driver, checks, want):
    base = want["token_url"]
    driver.get(f"{base}/?deal={want['deal_query']}")
    why = wait_text(driver, "token-why", "401")
    checks.check("a daemon with a token: the page asks for it, saying why", "needs a token (HTTP 401" in why, why)
    driver.find_element(By.ID, "token-input").send_keys(want["token"], Keys.ENTER)
    checks.equal("and with it, solves", wait_text(driver, "probability", want["probability"]), want["probability"])
    stored = driver.execute_script("return sessionStorage.getItem('patience.token')")
    checks.equal("the token is kept for the tab", stored, want["token"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="the daemon, http://HOST:PORT")
    parser.add_argument("--expect", required=True, help="a JSON file of expected answers")
    parser.add_argument("--downloads", required=True, help="a directory for the downloads")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    want = json.loads(pathlib.Path(args.expect).read_text())
    checks = Checks()
    driver = browser(args, args.downloads)
    try:
        for part in (
            lambda: board(driver, checks, args.url, want),
            lambda: file_view(driver, checks, args.url, want, args.downloads),
            lambda: rps(driver, checks, args.url, want),
            lambda: token(driver, checks, want),
        ):
            try:
                part()
            except Exception:  # One part's failure must not hide the others' results.
                checks.check("a part ran to its end", False, traceback.format_exc())
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE" and "401" not in e.get("message", "")]
        checks.check("no errors in the browser's console", not logs, logs)
    finally:
        driver.quit()
    print(f"ui: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
