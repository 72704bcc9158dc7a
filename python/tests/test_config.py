"""Settings from defaults, a JSON or TOML file, and the environment (which wins)."""

import json

from eroica import config


def test_defaults():
    cfg = config.load({})
    assert (cfg.window, cfg.threshold, cfg.warmup, cfg.hang_factor) == (50, 1.05, 20, 5.0)
    assert (cfg.capture_iters, cfg.capture_s, cfg.dir) == (5, 20.0, "/tmp/eroica")


def test_environment_overrides():
    cfg = config.load({"EROICA_WINDOW": "30", "EROICA_THRESHOLD": "1.1",
                       "EROICA_WARMUP": "5", "EROICA_HANG_FACTOR": "3",
                       "EROICA_DISABLE": "yes", "EROICA_DIR": "/x"})
    assert (cfg.window, cfg.threshold, cfg.warmup, cfg.hang_factor) == (30, 1.1, 5, 3.0)
    assert cfg.disable is True and cfg.dir == "/x"


def test_json_file_and_environment_precedence(tmp_path):
    path = tmp_path / "eroica.json"
    path.write_text(json.dumps({"window": 40, "threshold": 1.2, "capture_iters": 3}))
    cfg = config.load({"EROICA_CONFIG": str(path), "EROICA_THRESHOLD": "1.3"})
    assert (cfg.window, cfg.threshold, cfg.capture_iters) == (40, 1.3, 3)


def test_toml_file_with_table(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text("[eroica]\nwindow = 60\nhang_min_s = 2.5\nwith_stack = true\n")
    cfg = config.load({"EROICA_CONFIG": str(path)})
    assert (cfg.window, cfg.hang_min_s, cfg.with_stack) == (60, 2.5, True)


def test_bad_values_keep_defaults_and_say_so(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"window": "many", "nonsense": 1}))
    cfg = config.load({"EROICA_CONFIG": str(path), "EROICA_WARMUP": "-3",
                       "EROICA_THRESHOLD": "abc"})
    assert (cfg.window, cfg.warmup, cfg.threshold) == (50, 20, 1.05)
    err = capsys.readouterr().err
    assert "window" in err and "nonsense" in err and "EROICA_THRESHOLD" in err


def test_unreadable_file_is_ignored(capsys):
    cfg = config.load({"EROICA_CONFIG": "/nonexistent/eroica.toml", "EROICA_WINDOW": "9"})
    assert cfg.window == 9
    assert "unreadable" in capsys.readouterr().err


def test_every_setting_has_an_environment_variable():
    names = config.env_names()
    for expected in ("EROICA_WINDOW", "EROICA_THRESHOLD", "EROICA_WARMUP",
                     "EROICA_HANG_FACTOR", "EROICA_CONFIG", "EROICA_BIN", "EROICA_STORE",
                     "EROICA_BASELINE", "EROICA_BASELINE_AT", "EROICA_BASELINE_ITERS"):
        assert expected in names


def test_baseline_is_on_by_default_and_turned_off_by_zero():
    assert config.load({}).baseline
    cfg = config.load({"EROICA_BASELINE": "0", "EROICA_BASELINE_AT": "80", "EROICA_BASELINE_ITERS": "0"})
    assert not cfg.baseline and cfg.baseline_at == 80
    assert cfg.baseline_iters == config.Config.baseline_iters  # must be > 0: default kept


def test_scale_out_settings():
    assert config.load({}).local_dir == ""  # unset: the one-folder behaviour
    cfg = config.load({"EROICA_LOCAL_DIR": "/local", "EROICA_LOCAL_KEEP_SESSIONS": "3",
                       "EROICA_LOCAL_KEEP_MB": "-1", "EROICA_SUMMARIZE_MEM_MB": "0"})
    assert (cfg.local_dir, cfg.local_keep_sessions) == ("/local", 3)
    assert (cfg.local_keep_mb, cfg.summarize_mem_mb) == (20480, 2048)  # bad values: defaults
