# mpi4py-driver.py: run modules of mpi4py's test suite (its test/ directory)
# through mpi4py's own test program (test/main.py: the same loader, module
# setup and exclusion patterns as runtests.py), and record every test's
# outcome per rank for check-mpi4py.sh to compare between runs.
#
#   python mpi4py-driver.py --testdir DIR --out PREFIX [-x PATTERN]... MODULE...
#
# Writes, per rank r:
#   PREFIX.r.tsv  one line per test, written as it ends (a hang leaves the
#                 tests before it recorded):  id<TAB>status<TAB>seconds<TAB>detail
#                 status: pass, fail, error, skip, xfail (expected failure),
#                 xpass (unexpected success); a line "id<TAB>start" precedes
#                 each test, so the test that hangs or crashes is named
#   PREFIX.r.log  unittest's verbose output of that rank (tracebacks)
#   PREFIX.r.mpix what this process sees of libmpix, after the tests and
#                 before MPI_Finalize, via ctypes on the process's global
#                 symbols: "loaded 0|1", "version <MPIX_Get_library_version>",
#                 "world_handled 0|1" (MPIX_Comm_is_handled(MPI_COMM_WORLD))
import argparse
import ctypes
import os
import sys
import time
import unittest


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--testdir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("-x", dest="exclude", action="append", default=[])
    p.add_argument("modules", nargs="+")
    return p.parse_args()


class RecordingResult(unittest.TextTestResult):
    record = None  # the open .tsv file, set by the runner

    def _line(self, *fields):
        self.record.write("\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields) + "\n")
        self.record.flush()

    def startTest(self, test):
        self._t0 = time.monotonic()
        self._status = "pass"
        self._detail = ""
        self._line(test.id(), "start")
        super().startTest(test)

    def _set(self, status, detail=""):
        # The worst outcome of a test (and of its subtests) is what counts.
        order = ["pass", "xfail", "skip", "xpass", "fail", "error"]
        if order.index(status) >= order.index(self._status):
            self._status, self._detail = status, detail

    def _brief(self, err):
        exc = err[1]
        return f"{type(exc).__name__}: {exc}"[:300]

    def addFailure(self, test, err):
        super().addFailure(test, err)
        if not self._outside(test, "fail", err):
            self._set("fail", self._brief(err))

    def addError(self, test, err):
        super().addError(test, err)
        if not self._outside(test, "error", err):
            self._set("error", self._brief(err))

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._set("fail" if failed else "error", f"{subtest.id()}: {self._brief(err)}")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if not self._outside(test, "skip", None, reason):
            self._set("skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set("xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set("xpass")

    def _outside(self, test, status, err, reason=""):
        # setUpClass/setUpModule failures and class-level skips arrive as an
        # _ErrorHolder, outside any startTest/stopTest pair: their own line.
        if isinstance(test, unittest.TestCase):
            return False
        detail = reason if err is None else self._brief(err)
        self._line(test.id(), status, "0.000", detail)
        return True

    def stopTest(self, test):
        super().stopTest(test)
        self._line(test.id(), self._status, f"{time.monotonic() - self._t0:.3f}", self._detail)


def mpix_probe(MPI, path):
    # The process's global symbol scope: LD_PRELOAD=libmpix.so puts MPIX_*
    # there; without the library the lookups fail.
    lines = []
    try:
        glob = ctypes.CDLL(None)
        version = glob.MPIX_Get_library_version
        is_handled = glob.MPIX_Comm_is_handled
    except (AttributeError, OSError):
        lines.append("loaded 0")
    else:
        lines.append("loaded 1")
        buf = ctypes.create_string_buffer(1024)
        n = ctypes.c_int(0)
        if version(buf, ctypes.byref(n)) == 0:
            lines.append("version " + buf.value.decode(errors="replace"))
        flag = ctypes.c_int(-1)
        # MPI_Comm by value: an int (MPICH) or a pointer (Open MPI).
        comm_t = ctypes.c_int if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int) else ctypes.c_void_p
        handle = MPI.COMM_WORLD.handle
        is_handled.argtypes = [comm_t, ctypes.POINTER(ctypes.c_int)]
        rc = is_handled(handle, ctypes.byref(flag))
        lines.append(f"world_handled {flag.value if rc == 0 else 'error'}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    args = parse_args()
    sys.dont_write_bytecode = True
    sys.path.insert(0, args.testdir)
    import main as mpi4py_main  # mpi4py's test/main.py

    # Each rank's unittest stream goes to its own file; the rank is known
    # only once mpi4py.MPI is imported, which TestProgram does itself
    # (setup_modules) before it runs the tests.
    class Runner(unittest.TextTestRunner):
        resultclass = RecordingResult

        def __init__(self, **kw):
            from mpi4py import MPI

            rank = MPI.COMM_WORLD.Get_rank()
            self._prefix = f"{args.out}.{rank}"
            RecordingResult.record = open(self._prefix + ".tsv", "w")
            kw["stream"] = open(self._prefix + ".log", "w")
            kw["verbosity"] = 2
            super().__init__(**kw)

        def run(self, test):
            result = super().run(test)
            from mpi4py import MPI

            mpix_probe(MPI, self._prefix + ".mpix")
            return result

    argv = [os.path.join(args.testdir, "main.py")]
    for x in args.exclude:
        argv += ["-x", x]
    argv += args.modules
    # mpi4py's TestProgram ends with sys.exit(not success) whatever exit=
    # says; the outcomes are in the .tsv files, so a process that ran all
    # its tests exits 0 and a non-zero status means trouble (a crash, an
    # error in MPI_Finalize).
    try:
        mpi4py_main.TestProgram(module=None, argv=argv, testRunner=Runner, exit=False)
    except SystemExit as e:
        if e.code not in (None, 0, 1, True, False):
            raise


if __name__ == "__main__":
    main()
