#!/bin/sh
# Install the Debian packages the build and tests need, if any is missing.
# Used by demo.sh and test.sh so both work on a fresh Debian 12 machine.
set -e
need=""
for p in cmake make gcc clang libclang-rt-14-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  echo "deps: installing$need"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
