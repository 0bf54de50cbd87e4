#!/bin/sh
# prov_fi_info: fi_info finds the mroce provider through FI_PROVIDER_PATH and
# lists its parameters.  $1: directory of libmroce-fi.so; $2: sanitizer
# runtimes to preload (sanitized builds), or empty.
dir=$1
preload=$2
command -v fi_info >/dev/null 2>&1 || { echo "fi_info not installed"; exit 77; }
export FI_PROVIDER_PATH="$dir"
[ -n "$preload" ] && export LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0
out=$(fi_info -p mroce) || { echo "fi_info -p mroce failed"; echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -aq 'provider: mroce' || { echo "mroce not listed"; exit 1; }
echo "$out" | grep -aq 'FI_EP_RDM' || { echo "no FI_EP_RDM endpoint"; exit 1; }
out=$(fi_info -e) || { echo "fi_info -e failed"; exit 1; }
for p in FI_MROCE_PATHS FI_MROCE_MTU FI_MROCE_CC FI_MROCE_IFACE \
         FI_MROCE_EAGER_SIZE FI_MROCE_UNEXP_MAX \
         FI_MROCE_UNEXP_COPY_MAX; do
    echo "$out" | grep -aq "$p" || { echo "parameter $p not listed"; exit 1; }
done
echo "$out" | grep -a -A1 FI_MROCE_
echo "prov_fi_info: ok"
