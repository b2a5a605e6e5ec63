"""The browser that the browser tests, `make pdf`, `make screenshots`
and `make bench` drive through Playwright: Debian's
chromium-headless-shell (`make browser` installs it), Chromium's
headless-only build, the one Playwright itself runs headless tests in.
It renders with the same engine as the full browser and does less
around it: on two cores the browser tests took 235 CPU-seconds in it
and 293 in Debian's full `chromium` (121 s against 150 s)."""

EXECUTABLE = "/usr/bin/chromium-headless-shell"
ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
]
