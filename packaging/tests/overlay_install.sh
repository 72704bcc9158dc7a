#!/bin/bash
# A real `dpkg -i` and `dpkg --purge` of DEB on a copy-on-write overlay of this machine's /, in a
# private mount namespace: the machine itself never sees the package. Prints what the
# installed system says, one "key: value" per line, for test_deb.py to check.
# Usage: unshare --mount --propagation private overlay_install.sh DEB
set -euo pipefail
deb=$1
work=$(mktemp -d /tmp/eroica-overlay.XXXXXX)
trap 'umount -R "$work/merged" 2> /dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/upper" "$work/work" "$work/merged"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$work/merged"
for d in proc sys dev; do mount --rbind "/$d" "$work/merged/$d"; done
cp "$deb" "$work/merged/tmp/eroica.deb"
chroot "$work/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 /bin/bash -c '
set -euo pipefail
dpkg -i /tmp/eroica.deb > /tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log >&2; exit 1; }
echo "version: $(eroica --version | head -1)"
echo "import: $(cd / && python3 -c "import eroica, eroica.binary; print(eroica.__file__, eroica.__version__, eroica.binary.find_binary(\"\"))")"
echo "bytecode: $(find /usr/lib/python3/dist-packages/eroica -name "*.pyc" | wc -l)"
echo "unit: $(systemctl is-enabled eroica-agent 2>&1 || true)"
echo "man: $(man -w eroica)"
dpkg --purge eroica > /tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log >&2; exit 1; }
echo "left: $(ls -d /usr/bin/eroica /usr/lib/python3/dist-packages/eroica /usr/share/eroica /lib/systemd/system/eroica-agent.service 2> /dev/null | tr "\n" " ")"
'
