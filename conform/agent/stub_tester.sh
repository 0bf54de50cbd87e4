#!/bin/bash
# stub_tester.sh - a stand-in for mroce-conform with its command line
# (--agent HOST:PORT --udp HOST:PORT [--tap] ...), used only to test
# conform/run_faults.sh's own logic (ctest conform_faults_script).  It asks
# the agent HELLO over the control protocol and "fails" exactly when the
# agent reports a seeded fault in its impl name, as a perfect suite would.
set -u
agent=
while [ $# -gt 0 ]; do
    case $1 in
    --agent) agent=$2; shift 2 ;;
    --udp | --junit | --filter | --slow | --seed) shift 2 ;;
    *) shift ;;
    esac
done
host=${agent%:*}
port=${agent##*:}
host=${host#[}
host=${host%]}
exec 3<>"/dev/tcp/$host/$port" || { echo "stub: cannot connect $agent" >&2; exit 2; }
printf 'HELLO\n' >&3
IFS= read -r -t 10 reply <&3 || { echo "stub: no reply" >&2; exit 2; }
printf 'QUIT\n' >&3
IFS= read -r -t 10 _ <&3
exec 3<&-
echo "TAP version 13"
echo "1..2"
case $reply in
OK\ version=1\ *) echo "ok 1 - stub_hello" ;;
*) echo "not ok 1 - stub_hello"; exit 1 ;;
esac
case $reply in
*impl=*+fault-*) echo "not ok 2 - stub_no_fault"; exit 1 ;;
*) echo "ok 2 - stub_no_fault" ;;
esac
exit 0
