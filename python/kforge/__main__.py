"""`python -m kforge parquet RUN OUT`: the run's table (kforge.load_run) as Parquet, through pyarrow.
`kforge export RUN --format parquet` runs it. Exit 3 when pandas or pyarrow is missing."""
import sys


def main(argv):
    if len(argv) != 3 or argv[0] != "parquet":
        print("usage: python -m kforge parquet RUN OUT", file=sys.stderr)
        return 2
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        print("kforge export: --format parquet needs pandas and pyarrow in %s (%s); scripts/install-deps installs "
              "them, or use --format csv" % (sys.executable, e), file=sys.stderr)
        return 3
    import kforge
    kforge.load_run(argv[1]).to_parquet(argv[2], engine="pyarrow", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
