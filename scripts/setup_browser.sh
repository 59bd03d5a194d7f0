#!/usr/bin/env bash
# Debian's Chromium for the report's browser test (Playwright drives it; Playwright's own browser download
# cannot work on these machines). Idempotent: does nothing when /usr/bin/chromium exists.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "setup_browser: chromium is not installed; run as root (it runs apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y --no-install-recommends chromium >/dev/null
fi
