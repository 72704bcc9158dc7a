"""The agent image's Dockerfile. No container engine is on these machines, so it is checked
twice without building it: by dockerfilelint (npm; Debian 12 packages no Dockerfile linter,
hadolint included), and by reading it for what the image must be: Debian 12, the .deb that
`make package` writes installed, a non-root user at the end, and the agent as entry point."""

import os
import re
import shlex
import subprocess

from conftest import SOURCE_DIR

DOCKERFILE = os.path.join(SOURCE_DIR, "packaging", "Dockerfile")


def instructions(text):
    """(KEYWORD, arguments) per instruction: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#")))
    return [(l.split(None, 1)[0].upper(), l.split(None, 1)[1] if " " in l.strip() else "")
            for l in joined.splitlines() if l.strip()]


def test_dockerfilelint_finds_nothing():
    done = subprocess.run(["dockerfilelint", DOCKERFILE], stdout=subprocess.PIPE, text=True)
    assert done.returncode == 0 and "Issues: None found" in done.stdout, done.stdout


def test_image_is_debian_12_with_the_deb_as_a_non_root_user():
    steps = instructions(open(DOCKERFILE).read())
    froms = [args for kw, args in steps if kw == "FROM"]
    assert len(froms) == 1 and re.fullmatch(r"debian:12(-slim)?(@sha256:[0-9a-f]{64})?", froms[0]), froms
    copies = [args for kw, args in steps if kw == "COPY"]
    assert copies == ["eroica_*_amd64.deb /tmp/"], copies
    runs = " ".join(args for kw, args in steps if kw == "RUN")
    assert re.search(r"apt-get install -y --no-install-recommends /tmp/eroica_\*_amd64\.deb", runs), runs
    users = [args for kw, args in steps if kw == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users
    assert re.search(r"useradd .*--uid %s\b" % re.escape(user), runs), "USER %s is never created" % user
    assert steps.index(("USER", users[-1])) > max(i for i, (kw, _) in enumerate(steps) if kw == "RUN")
    entry = [args for kw, args in steps if kw == "ENTRYPOINT"]
    assert entry == ['["/usr/bin/eroica", "agent"]'], entry
    cmd = [args for kw, args in steps if kw == "CMD"]
    assert "127.0.0.1" in cmd[0], cmd  # /metrics on the loopback only
    labels = " ".join(args for kw, args in steps if kw == "LABEL")
    assert "io.eroica.capabilities.required" in labels
