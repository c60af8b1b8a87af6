"""Drivers the tests and the benchmarks share, outside tests/ so that benchmarks/ need not import tests
(not part of the kvlab wheel): Debian's Chromium under Playwright with host blocking (chromium.py),
`panel serve` as `kvlab serve` runs it (server.py), real Pyodide under Node or Chromium (pyodide.py,
run_python.mjs/.html; npm packages: app/site/package.json and devtools/package.json), a lab-session
client (lab_client.py) and the scenario grid CPython and Pyodide must agree on (grid.py)."""
