#!/usr/bin/env bash
# Installs Debian's prometheus (with promtool), prometheus-node-exporter, victoria-metrics (a second
# PromQL backend the suite checks verdicts through) and chromium (the HTML report's browser test opens
# the page headless) when they are missing.
set -euo pipefail
missing=()
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || missing+=(prometheus-node-exporter)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The scale-out backend the suite checks verdicts through (tests/telemetry/test_victoriametrics.py).
command -v victoria-metrics >/dev/null 2>&1 || missing+=(victoria-metrics)
[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
echo "Installing Debian packages: $pkgs"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install these by hand: $pkgs" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "error: need root (or sudo) to install: $pkgs" >&2; exit 1; fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; }; then
  echo "error: could not install $pkgs with apt-get; install them by hand and run again" >&2
  exit 1
fi
# The Debian packages start services on install where systemd runs; the project starts its own.
for p in $pkgs; do command -v "$p" >/dev/null 2>&1 || { echo "error: $p still missing" >&2; exit 1; }; done
