"""Log in to Superset and screenshot one chart in headless Chromium.

Runs in ``.venv-bi`` (selenium comes with Superset), driving Debian's chromium
through chromedriver: ``python browser.py BASE_URL CHART_ID OUT.png``. Prints
what the page shows (the chart's title and whether an ECharts canvas drew).
"""

import json
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import WebDriverWait

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1000,600", "--hide-scrollbars",
]  # fmt: skip


def main(base: str, chart: str, out: str) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
        driver = webdriver.Chrome(options=options, service=service)
        try:
            wait = WebDriverWait(driver, 180)
            driver.get(f"{base}/login/")
            wait.until(ready.presence_of_element_located((By.ID, "username")))
            driver.find_element(By.ID, "username").send_keys("admin")
            driver.find_element(By.ID, "password").send_keys("admin-check")
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            wait.until(lambda d: "/login" not in d.current_url)
            driver.get(f"{base}/explore/?slice_id={chart}&standalone=1")
            wait.until(
                ready.presence_of_element_located(
                    (By.CSS_SELECTOR, ".chart-container canvas")
                )
            )
            time.sleep(3)  # the bars' entry animation
            driver.save_screenshot(out)
            canvases = driver.find_elements(By.CSS_SELECTOR, ".chart-container canvas")
            errors = driver.find_elements(
                By.CSS_SELECTOR, ".alert-danger, .ant-alert-error"
            )
            print(  # noqa: T201 - the report the test reads
                json.dumps(
                    {
                        "title": driver.title,
                        "canvases": len(canvases),
                        "errors": [e.text for e in errors],
                    }
                )
            )
        finally:
            driver.quit()


if __name__ == "__main__":
    main(*sys.argv[1:4])
