"""Zero code change: `python -m eroica run` reaches every Python process, lazily and safely."""

import os
import subprocess

from conftest import PYTHON_DIR, TORCH_PYTHON, clean_env, eroica_run

PROBE = (
    "import sys\n"
    "print('torch-loaded', 'torch' in sys.modules)\n"
    "print('eroica-loaded', 'eroica.bootstrap' in sys.modules)\n"
    "import torch\n"
    "from eroica import hooks\n"
    "print('hooked', hooks.installed(), hooks.listener() is not None)\n"
)


def test_run_installs_lazily_without_importing_torch():
    done = eroica_run([TORCH_PYTHON, "-c", PROBE], clean_env())
    assert done.returncode == 0, done.stderr
    assert "torch-loaded False" in done.stdout  # nothing imported torch before the user did
    assert "eroica-loaded True" in done.stdout
    assert "hooked True True" in done.stdout
    assert done.stderr == ""


def test_run_reaches_multiprocessing_spawn_children(tmp_path):
    script = tmp_path / "spawner.py"
    script.write_text(
        "import multiprocessing as mp\n"
        "def child(q):\n"
        "    import torch\n"
        "    from eroica import hooks\n"
        "    q.put(hooks.installed())\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn')\n"
        "    q = ctx.Queue(); p = ctx.Process(target=child, args=(q,)); p.start()\n"
        "    print('child-hooked', q.get()); p.join()\n")
    done = eroica_run([TORCH_PYTHON, str(script)], clean_env(), timeout_s=60)
    assert "child-hooked True" in done.stdout, done.stderr


def test_run_chains_to_an_existing_sitecustomize(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    env = clean_env(PYTHONPATH=str(tmp_path) + os.pathsep + PYTHON_DIR)
    done = eroica_run([TORCH_PYTHON, "-c", "import os; print(os.environ.get('CHAINED'))"], env)
    assert done.stdout.strip() == "yes", done.stderr


def test_failing_sitecustomize_or_missing_package_never_stops_the_interpreter(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("raise ValueError('their bug')\n")
    boot = os.path.join(PYTHON_DIR, "eroica", "_boot")
    # An interpreter that cannot import eroica at all: only the boot folder on its path.
    env = clean_env(PYTHONPATH=boot + os.pathsep + str(tmp_path),
                    EROICA_PACKAGE_DIR="/nonexistent/eroica")
    done = subprocess.run([TORCH_PYTHON, "-c", "print('alive')"], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "alive"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("eroica: ") for line in lines)
    assert "their bug" in lines[0]


def test_package_found_through_eroica_package_dir_without_polluting_sys_path():
    boot = os.path.join(PYTHON_DIR, "eroica", "_boot")
    env = clean_env(PYTHONPATH=boot, EROICA_PACKAGE_DIR=os.path.join(PYTHON_DIR, "eroica"))
    code = "import sys, eroica; print(eroica.__file__); print(%r in sys.path)" % PYTHON_DIR
    done = subprocess.run([TORCH_PYTHON, "-c", code], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = done.stdout.split()
    assert out[0].startswith(PYTHON_DIR) and out[1] == "False", done.stderr


def test_disable_switch():
    done = eroica_run([TORCH_PYTHON, "-c", PROBE], clean_env(EROICA_DISABLE="1"))
    assert "eroica-loaded False" in done.stdout


def test_import_auto_from_a_script():
    code = "import torch\nimport eroica.auto\nfrom eroica import hooks\nprint(hooks.installed())"
    done = subprocess.run([TORCH_PYTHON, "-c", code], env=clean_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_run_exit_status_and_missing_command():
    assert eroica_run([TORCH_PYTHON, "-c", "raise SystemExit(7)"], clean_env()).returncode == 7
    done = eroica_run(["/nonexistent/program"], clean_env())
    assert done.returncode == 127 and "not found" in done.stderr
