#!/bin/sh
# Checks that every C source and header in the tree is as clang-format
# (Debian's clang-format-14, installed by scripts/deps.sh) would write it
# with the tree's .clang-format; lists each file that is not and exits 1.
# Files not yet committed are checked too; build folders are not.
#   scripts/check_format.sh          check
#   clang-format-14 -i FILE...       rewrite a file in place
set -e
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "check_format: clang-format-14 not found (scripts/deps.sh)" >&2; exit 1; }
bad=0
n=0
for f in $(git ls-files --cached --others --exclude-standard '*.c' '*.h'); do
  [ -f "$f" ] || continue
  n=$((n + 1))
  if ! "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check_format: $f is not formatted"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "check_format: $bad of $n files need clang-format (clang-format-14 -i FILE)"
  exit 1
fi
echo "check_format: $n files formatted"
