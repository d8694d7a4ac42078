"""The page's frame: one HTML document with its style inline and no script.

The Content-Security-Policy forbids every fetch, so a page opened from disk cannot reach a network
even if a value in it were mistaken for a URL.
"""

from __future__ import annotations

from string import Template

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1b1f24;
       background: #f6f8fa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.5em; margin: 0 0 4px; }
h2 { font-size: 1.15em; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 16px; }
.verdict { display: flex; gap: 24px; align-items: center; flex-wrap: wrap; }
.badge { color: #fff; font-weight: 700; font-size: 1.6em; padding: 8px 18px; border-radius: 8px; }
.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: 0; }
.facts dt { color: #57606a; }
.facts dd { margin: 0; }
.reason { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; margin-top: 12px; }
.probs { display: grid; grid-template-columns: 110px 1fr 50px; gap: 4px 8px; align-items: center; max-width: 520px; }
.bar { height: 12px; border-radius: 3px; }
ul { margin: 4px 0; padding-left: 22px; }
li { margin: 3px 0; }
.muted { color: #57606a; }
figure.plot { margin: 12px 0; background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 8px; }
figure.plot svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; margin-bottom: 4px; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; font-size: 0.92em; }
th { background: #eaeef2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
footer { margin-top: 32px; font-size: 0.85em; color: #57606a; }
</style>
</head>
<body>
<main>
$body
<footer>Written by bottleneck-operator from a BottleneckReport status; this page is self-contained and
makes no network requests.</footer>
</main>
</body>
</html>
""")
