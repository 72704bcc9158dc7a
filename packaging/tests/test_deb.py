"""The .deb `make package` writes: built by CPack from the existing build tree, its metadata
and contents (dpkg-deb), lintian with only the accepted tags (lintian_accepted.txt), and the
installed files run on their own: `diagnose` on a real trace folder and `run` finding the
installed Python package, with the source tree hidden."""

import glob
import json
import os
import re
import subprocess

import pytest

from conftest import (BUILD_DIR, SHARED_DIR, SOURCE_DIR, TORCH_PYTHON, clean_env,
                      run_without_source_tree, version)

PACKAGING_DIR = os.path.join(SOURCE_DIR, "packaging")
TRACES = os.path.join(SHARED_DIR, "traces", "param_dlrm_8rank")


def sh(*args, **kwargs):
    return subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False, **kwargs)


@pytest.fixture(scope="module")
def deb(tmp_path_factory, built_binary):
    out = tmp_path_factory.mktemp("cpack")
    done = sh("cpack", "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"),
              "-B", str(out), cwd=BUILD_DIR, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    debs = glob.glob(str(out / "*.deb"))
    assert [os.path.basename(d) for d in debs] == ["eroica_%s_amd64.deb" % version()], debs
    return debs[0]


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    done = sh("dpkg-deb", "-x", deb, str(root))
    assert done.returncode == 0, done.stderr
    return str(root)


def test_metadata(deb):
    fields = {}
    for line in sh("dpkg-deb", "-f", deb).stdout.splitlines():
        if line[:1] not in (" ", ""):
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    assert fields["Package"] == "eroica" and fields["Version"] == version()
    assert fields["Architecture"] == "amd64"
    depends = [d.strip().split(" ")[0] for d in fields["Depends"].split(",")]
    # Computed by dpkg-shlibdeps from the binary's libraries, plus python3.
    for package in ("python3", "libc6", "libstdc++6", "libfmt9", "libzstd1", "libisal2", "zlib1g"):
        assert package in depends, fields["Depends"]
    assert "(>=" in fields["Depends"]  # versioned, as shlibs files make them
    assert fields["Maintainer"] and fields["Description"] and fields["Section"] == "utils"


def test_contents(deb, tmp_path):
    listing = sh("dpkg-deb", "-c", deb).stdout.splitlines()
    paths = {line.split()[-1].lstrip(".") for line in listing}
    for path in ("/usr/bin/eroica", "/usr/share/eroica/expectations.json",
                 "/usr/lib/python3/dist-packages/eroica/__main__.py",
                 "/usr/lib/python3/dist-packages/eroica/_boot/sitecustomize.py",
                 "/usr/share/man/man1/eroica.1.gz", "/lib/systemd/system/eroica-agent.service",
                 "/usr/share/doc/eroica/copyright", "/usr/share/doc/eroica/changelog.gz"):
        assert path in paths, path
    assert not [p for p in paths if "__pycache__" in p or p.endswith(".pyc")]
    # The maintainer scripts only byte-compile and clean the Python package: nothing enables
    # or starts the agent.
    control = tmp_path / "control"
    assert sh("dpkg-deb", "-e", deb, str(control)).returncode == 0
    scripts = sorted(p for p in os.listdir(control) if p in ("preinst", "postinst", "prerm", "postrm"))
    assert scripts == ["postinst", "prerm"], scripts
    for script in scripts:
        text = "\n".join(l for l in (control / script).read_text().splitlines() if not l.startswith("#"))
        assert "systemctl" not in text and "deb-systemd" not in text, text
    assert "py3compile -p eroica" in (control / "postinst").read_text()


def accepted_tags():
    tags = {}
    for line in open(os.path.join(PACKAGING_DIR, "lintian_accepted.txt")):
        if line.strip() and not line.startswith("#"):
            tag, _, why = line.partition(" ")
            assert why.strip(), "say why %s is accepted" % tag
            tags[tag] = why.strip()
    return tags


def test_lintian(deb):
    done = sh("lintian", "--no-tag-display-limit", "--display-level", ">=pedantic", deb,
              timeout=300)
    found = {}
    for line in done.stdout.splitlines():
        parts = line.split(": ", 2)  # "W: eroica: tag-name details"
        if len(parts) == 3 and parts[0] in ("E", "W", "I", "P"):
            found.setdefault(parts[2].split(" ")[0], []).append(line)
    accepted = accepted_tags()
    unexpected = {t: lines for t, lines in found.items() if t not in accepted}
    assert not unexpected, "lintian: %s" % json.dumps(unexpected, indent=1)
    stale = sorted(set(accepted) - set(found))
    assert not stale, "accepted but no longer reported (remove them): %s" % stale


def test_installed_expectations_are_the_built_in_ones(root):
    installed = os.path.join(root, "usr/share/eroica/expectations.json")
    assert open(installed, "rb").read() == open(os.path.join(SOURCE_DIR, "config/expectations.json"), "rb").read()


def test_installed_binary_diagnoses_a_real_trace_folder_on_its_own(root, built_binary, tmp_path):
    eroica = os.path.join(root, "usr/bin/eroica")
    env = clean_env()
    args = [eroica, "diagnose", TRACES, "--format", "json"]
    installed = run_without_source_tree(args, env, str(tmp_path))
    assert installed.returncode == 0, installed.stderr
    doc = json.loads(installed.stdout)
    assert doc["schema"] == "eroica.diagnosis/v1" and doc["workers"] == 8
    assert doc["findings"], doc
    # The same verdict as the build tree's binary, and the same as with the installed
    # expectations passed explicitly: the built-in defaults are that file.
    built = subprocess.run([built_binary, "diagnose", TRACES, "--format", "json"], env=env,
                           stdout=subprocess.PIPE, text=True, check=True)
    assert json.loads(built.stdout) == doc
    explicit = run_without_source_tree(
        args + ["--expect", os.path.join(root, "usr/share/eroica/expectations.json")], env, str(tmp_path))
    assert explicit.returncode == 0 and json.loads(explicit.stdout) == doc, explicit.stderr
    text = run_without_source_tree([eroica, "diagnose", TRACES], env, str(tmp_path))
    built_text = subprocess.run([built_binary, "diagnose", TRACES], env=env, stdout=subprocess.PIPE,
                                text=True, check=True)
    assert text.returncode == 0 and text.stdout == built_text.stdout, text.stderr


def test_installed_version_names_formats(root, tmp_path):
    done = run_without_source_tree([os.path.join(root, "usr/bin/eroica"), "--version"], clean_env(), str(tmp_path))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "eroica " + version()
    for fmt in ('magic "EROICAP", format version 11', 'magic "EROICAMF", format version 1',
                "diagnoses  eroica.diagnosis/v1", "eroica.pattern/v1"):
        assert fmt in done.stdout, done.stdout


def test_installed_run_uses_the_installed_python_package(root, tmp_path):
    probe = ("import eroica, os; from eroica import stack_sampler; print(eroica.__file__); "
             "print(os.environ['EROICA_BIN']); print(stack_sampler._native_frames.__file__)")
    done = run_without_source_tree(
        [os.path.join(root, "usr/bin/eroica"), "run", "--dir", str(tmp_path / "s"), "--",
         TORCH_PYTHON, "-c", probe], clean_env(EROICA_DISABLE=1), str(tmp_path))
    assert done.returncode == 0, done.stderr
    package, binary, walker = done.stdout.splitlines()
    assert package == os.path.join(root, "usr/lib/python3/dist-packages/eroica/__init__.py")
    assert binary == os.path.join(root, "usr/bin/eroica")
    # The stack sampler's native walker, installed beside the package (python/native/).
    assert walker.startswith(os.path.join(root, "usr/lib/python3/dist-packages/_eroica_frames")), walker


def test_manual_page_and_unit(root, tmp_path):
    page = sh("man", "--warnings", "-l", os.path.join(root, "usr/share/man/man1/eroica.1.gz"),
              env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
    assert page.returncode == 0 and not page.stderr.strip(), page.stderr
    text = re.sub(".\b", "", page.stdout).replace("\u2010", "-")  # no overstrike, plain hyphens
    for needle in ("diagnose", "agent", "--version", "expectations.json", "EROICA_DIR"):
        assert needle in text, needle
    unit = open(os.path.join(root, "lib/systemd/system/eroica-agent.service")).read()
    exec_start = [l for l in unit.splitlines() if l.startswith("ExecStart=")]
    assert exec_start == ["ExecStart=/usr/bin/eroica agent --dir ${EROICA_DIR} --prometheus-port 9400 "
                          "--prometheus-bind 127.0.0.1"]
    # systemd's own check of the unit, with ExecStart pointed at the extracted binary (the host
    # has no /usr/bin/eroica, and a bare --root has no sysinit.target).
    checked = tmp_path / "eroica-agent.service"
    checked.write_text(unit.replace("/usr/bin/eroica", os.path.join(root, "usr/bin/eroica")))
    verify = sh("systemd-analyze", "verify", "--man=no", str(checked))
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stdout + verify.stderr


def test_installed_binary_refuses_newer_formats_in_one_line(root, tmp_path):
    eroica = os.path.join(root, "usr/bin/eroica")
    env = clean_env()
    trace = sorted(glob.glob(os.path.join(TRACES, "*.json*")))[0]
    made = run_without_source_tree([eroica, "summarize", trace, "-o", str(tmp_path / "r.pattern")], env, str(tmp_path))
    assert made.returncode == 0, made.stderr
    newer = bytearray((tmp_path / "r.pattern").read_bytes())
    newer[7] += 1  # the format version byte after "EROICAP": one this eroica has not seen
    folder = tmp_path / "next"
    folder.mkdir()
    (folder / "r.pattern").write_bytes(bytes(newer))
    diagnosis = run_without_source_tree([eroica, "diagnose", TRACES, "--format", "json"], env, str(tmp_path))
    doc = json.loads(diagnosis.stdout)
    doc["schema"] = "eroica.diagnosis/v2"
    (tmp_path / "next.json").write_text(json.dumps(doc))
    for args, name in (([eroica, "show", str(folder / "r.pattern")], "r.pattern"),
                       ([eroica, "diagnose", str(folder)], "r.pattern"),
                       ([eroica, "annotate", trace, "-o", str(tmp_path / "a.json"), "--diagnosis",
                         str(tmp_path / "next.json")], "next.json")):
        done = run_without_source_tree(args, env, str(tmp_path))
        assert done.returncode != 0 and done.stdout == "", (args, done.stdout)
        assert done.stderr.count("\n") == 1 and name in done.stderr and "newer eroica" in done.stderr, done.stderr


def test_real_install_and_purge_on_an_overlay(deb):
    """dpkg -i, the installed system, dpkg --purge: on an overlay of /, so nothing stays."""
    done = sh("unshare", "--mount", "--propagation", "private",
              os.path.join(PACKAGING_DIR, "tests", "overlay_install.sh"), deb, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert said["version"] == "eroica " + version()
    assert said["import"] == "/usr/lib/python3/dist-packages/eroica/__init__.py %s /usr/bin/eroica" % version()
    assert int(said["bytecode"]) > 10  # postinst's py3compile
    assert said["unit"] == "disabled"
    assert said["man"] == "/usr/share/man/man1/eroica.1.gz"
    assert said.get("left", "").strip() == ""  # purge removed everything, byte-code included
