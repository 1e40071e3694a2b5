#!/usr/bin/env bash
# Make Debian's chromium available for the headless trace-page test.
#
# Exits 0 when /usr/bin/chromium is there (already, or after installing it with
# apt-get when running as root); otherwise prints why not and exits 1, so the
# test that needs it fails with the reason instead of being skipped.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "ensure-chromium: $CHROMIUM is present"
    exit 0
fi

if [ "$(id -u)" != "0" ]; then
    echo "ensure-chromium: $CHROMIUM is missing and this is not root; install the Debian package 'chromium'" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-chromium: $CHROMIUM is missing and there is no apt-get to install it" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "ensure-chromium: $CHROMIUM is missing; running apt-get update"
apt-get update -q
echo "ensure-chromium: installing the Debian package chromium with apt-get"
apt-get install -y -q --no-install-recommends chromium fonts-noto-cjk

if [ -x "$CHROMIUM" ]; then
    echo "ensure-chromium: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
    exit 0
fi
echo "ensure-chromium: apt-get finished but $CHROMIUM is still missing" >&2
exit 1
