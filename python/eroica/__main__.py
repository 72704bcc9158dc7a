"""Command line: `python -m eroica run [--dir D] [--config F] -- CMD ...`,
`python -m eroica diagnose SESSION_DIR`, `python -m eroica rebaseline [--dir D] [--job J]`,
`python -m eroica env` (and `finish`, which rank 0
starts at exit to complete a diagnosis in the background)."""

import argparse
import sys

from . import __version__


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(prog="python -m eroica",
                                     description="Online slowdown diagnosis for PyTorch jobs.")
    parser.add_argument("--version", action="version", version="eroica " + __version__)
    sub = parser.add_subparsers(dest="verb", required=True)
    run_p = sub.add_parser("run", help="run a command with eroica in every Python process",
                           usage="python -m eroica run [--dir DIR] [--config FILE] -- CMD ...")
    run_p.add_argument("--dir", help="session folder root (EROICA_DIR)")
    run_p.add_argument("--config", help="config file, JSON or TOML (EROICA_CONFIG)")
    run_p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    diag_p = sub.add_parser("diagnose", help="diagnose a session folder as rank 0 would")
    diag_p.add_argument("session_dir")
    sub.add_parser("env", help="list the environment variables eroica reads")
    re_p = sub.add_parser("rebaseline", help="tell a running job that its present speed is "
                          "intended: it takes a new baseline once iteration times settle")
    re_p.add_argument("--dir", help="the job's EROICA_DIR (default: from the environment)")
    re_p.add_argument("--job", help="the job id (default: EROICA_JOB_ID or the launcher's)")
    fin_p = sub.add_parser("finish", help=argparse.SUPPRESS)  # rank 0's detached exit
    fin_p.add_argument("session_dir")
    fin_p.add_argument("--world-size", type=int, required=True)
    fin_p.add_argument("--files", choices=["meta", "stacks"], required=True)
    fin_p.add_argument("--until", type=float, required=True)
    args = parser.parse_args(argv)

    if args.verb == "run":
        from . import runner

        overrides = {}
        if args.dir:
            overrides["EROICA_DIR"] = args.dir
        if args.config:
            overrides["EROICA_CONFIG"] = args.config
        return runner.run(args.rest + command, overrides)
    if args.verb == "diagnose":
        from . import config, diagnose

        cfg = config.load()
        line = diagnose.run(args.session_dir, cfg.bin, cfg.diagnose_timeout_s)
        return 0 if "report:" in line else 1
    if args.verb == "finish":
        from . import finish

        return finish.finish_main(args.session_dir, args.world_size, args.files, args.until)
    if args.verb == "rebaseline":
        from . import config, runtime, safe_fs, trigger

        cfg = config.load()
        root = safe_fs.ensure_root(args.dir or cfg.dir)
        path = runtime.rebaseline_request_path(root, trigger.job_id(args.job or cfg.job_id))
        safe_fs.write_atomic(path, b"rebaseline\n")
        print("eroica: asked for a new baseline: %s (rank 0 of the job acts on it within a few "
              "seconds)" % path)
        return 0
    if args.verb == "env":
        from . import config

        print("\n".join(config.env_names() + ["EROICA_PACKAGE_DIR"]))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
