#!/usr/bin/python3
"""The ONNX suite driver's own check (tests/onnx_suite.c): a suite folder made here from one
real node test that passes (copied, its output_0.pb rewritten), where every verdict is known:

  pass          the test as it is                      PASS
  within_tol    one element moved by half ONNX's rtol  PASS
  beyond_tol    one element moved by 1.0               FAILED naming that element, got and want
  want_nan      one element NaN in the reference      FAILED (NaN equals only NaN)
  wrong_dtype   the reference as double                FAILED "dtype float, want double"
  wrong_shape   the reference with its dims reversed   FAILED "shape [...], want [...]"
  extra_output  an output_1.pb the model lacks         ERROR naming both counts
  bad_model     model.onnx cut in half                 ERROR naming model.onnx
  crash         the child raises SIGSEGV               ERROR "crashed: signal 11", and CRASH
  hang          the child never ends                   ERROR "timed out after 2 s"
  int_off_by_one  test_shape's int64 output, one element + 1        FAILED (exact)
  bool_flipped    test_equal's bool output, one element flipped     FAILED (exact)
  const_bound     test_constantofshape_int_zeros (its shape input)  PASS (const-bound)

then the expected list (a lost pass fails the run and is named, a new pass is printed, a name
no folder holds is lost too), --write-expected, and the counts line.

usage: check_onnx_suite.py ONNX_SUITE NODE_FOLDER [BASE_TEST]   (BASE_TEST: test_relu)
"""
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def varint(data, pos):
    value, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def put_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# TensorProto.data_type -> struct's format of one element (float, double, int64, int32, bool).
FORMATS = {1: "f", 11: "d", 7: "q", 6: "i", 9: "B"}


def read_tensor(path, want_dtype=1):
    """dims, values and name of a TensorProto (raw_data, or float_data for floats)."""
    data = open(path, "rb").read()
    pos, dims, dtype, raw, floats, name = 0, [], None, None, [], b""
    while pos < len(data):
        key, pos = varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = varint(data, pos)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, pos = varint(data, pos)
            chunk = data[pos:pos + n]
            pos += n
            if field == 1:
                p = 0
                while p < len(chunk):
                    v, p = varint(chunk, p)
                    dims.append(v)
            elif field == 4:
                floats += struct.unpack("<%df" % (len(chunk) // 4), chunk)
            elif field == 8:
                name = chunk
            elif field == 9:
                raw = chunk
        elif wire == 5:
            if field == 4:
                floats.append(struct.unpack("<f", data[pos:pos + 4])[0])
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            raise SystemExit("%s: wire type %d" % (path, wire))
    if dtype != want_dtype or (raw is None and dtype != 1):
        raise SystemExit("%s: data_type %s, this check needs %d in raw_data" % (path, dtype,
                                                                          want_dtype))
    fmt = FORMATS[dtype]
    size = struct.calcsize(fmt)
    values = list(struct.unpack("<%d%s" % (len(raw) // size, fmt), raw)) if raw is not None \
        else floats
    return dims, values, name


def write_tensor(path, dims, values, name, dtype=1):
    out = bytearray()
    for d in dims:
        out += put_varint(1 << 3) + put_varint(d)
    out += put_varint(2 << 3) + put_varint(dtype)
    out += put_varint(8 << 3 | 2) + put_varint(len(name)) + name
    raw = struct.pack("<%d%s" % (len(values), FORMATS[dtype]), *values)
    out += put_varint(9 << 3 | 2) + put_varint(len(raw)) + raw
    with open(path, "wb") as f:
        f.write(out)


def index_text(dims, flat):
    idx = []
    for d in reversed(dims):
        idx.append(flat % d)
        flat //= d
    return "[" + ",".join(str(i) for i in reversed(idx)) + "]"


failures = 0


def check(cond, what):
    global failures
    if cond:
        print("ok   %s" % what)
    else:
        failures += 1
        print("FAIL %s" % what)


def main():
    driver, node = sys.argv[1], sys.argv[2]
    base = sys.argv[3] if len(sys.argv) > 3 else "test_relu"
    src = os.path.join(node, base)
    work = tempfile.mkdtemp(prefix="onnx_suite_check.")
    try:
        run_checks(driver, src, os.path.join(work, "suite"), work)
    finally:
        shutil.rmtree(work)
    print("check_onnx_suite: %s" % ("all passed" if not failures else "%d failed" % failures))
    return 1 if failures else 0


ints = {}


def make_suite(src, suite):
    os.makedirs(suite)
    out0 = os.path.join(src, "test_data_set_0", "output_0.pb")
    dims, values, name = read_tensor(out0)
    # The element to move: the largest in magnitude (so that half of rtol is above atol).
    k = max(range(len(values)), key=lambda i: abs(values[i]))

    def copy(test, values_=None, dims_=None, dtype=1):
        dst = os.path.join(suite, test)
        shutil.copytree(src, dst)
        if values_ is not None:
            write_tensor(os.path.join(dst, "test_data_set_0", "output_0.pb"),
                         dims if dims_ is None else dims_, values_, name, dtype)
        return dst

    copy("pass")
    within = list(values)
    within[k] = values[k] * (1 + 0.5e-3)
    copy("within_tol", within)
    beyond = list(values)
    beyond[k] = values[k] + 1.0
    copy("beyond_tol", beyond)
    nan = list(values)
    nan[k] = math.nan
    copy("want_nan", nan)
    copy("wrong_dtype", values, dtype=11)
    copy("wrong_shape", values, dims_=list(reversed(dims)) if len(set(dims)) > 1 else dims + [1])
    extra = copy("extra_output")
    shutil.copy(out0, os.path.join(extra, "test_data_set_0", "output_1.pb"))
    bad = copy("bad_model")
    model = open(os.path.join(bad, "model.onnx"), "rb").read()
    open(os.path.join(bad, "model.onnx"), "wb").write(model[: len(model) // 2])
    copy("crash")
    copy("hang")
    # Integers and bools compare exactly: test_shape's int64 output one off, test_equal's
    # bool output with one element flipped; test_constantofshape_int_zeros's shape input is
    # bound as a Const on the retry.
    node = os.path.dirname(src)
    for test, base, dtype, change in (("int_off_by_one", "test_shape", 7, lambda v: v + 1),
                                      ("bool_flipped", "test_equal", 9, lambda v: 1 - v)):
        dst = os.path.join(suite, test)
        shutil.copytree(os.path.join(node, base), dst)
        out = os.path.join(dst, "test_data_set_0", "output_0.pb")
        d, v, nm = read_tensor(out, dtype)
        v[len(v) - 1] = change(v[len(v) - 1])
        write_tensor(out, d, v, nm, dtype)
        ints[test] = (d, v)
    shutil.copytree(os.path.join(node, "test_constantofshape_int_zeros"),
                    os.path.join(suite, "const_bound"))
    return dims, values, k, beyond


def run_checks(driver, src, suite, work):
    dims, values, k, beyond = make_suite(src, suite)
    expected = os.path.join(work, "expected.txt")
    with open(expected, "w") as f:
        f.write("beyond_tol\nno_such_test\npass\n")
    written = os.path.join(work, "written.txt")
    cmd = [driver, "-j", "2", "--timeout", "2", "--crash-test", "crash", "--hang-test", "hang",
           "--expected", expected, "--write-expected", written, suite]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    out = p.stdout
    print(out)
    lines = {}
    for line in out.splitlines():
        if line.startswith("["):
            verdict_name = line.split("] ", 1)[1]
            verdict, rest = verdict_name.split(" ", 1)
            test = rest.split(":", 1)[0].split(" ", 1)[0]
            lines[test] = (verdict, line)

    def verdict(test, want, *texts):
        got = lines.get(test)
        check(got is not None and got[0] == want and all(t in got[1] for t in texts),
              "%s: %s %s (got: %s)" % (test, want, " ".join(texts), got[1] if got else None))

    n = len(values)
    verdict("pass", "PASS")
    verdict("within_tol", "PASS")
    verdict("beyond_tol", "FAILED", "1 of %d elements differ" % n,
            "worst at %s" % index_text(dims, k), "want %.9g" % struct.unpack(
                "<f", struct.pack("<f", beyond[k]))[0])
    verdict("want_nan", "FAILED", "1 of %d elements differ" % n, "want nan")
    verdict("wrong_dtype", "FAILED", "dtype float, want double")
    verdict("wrong_shape", "FAILED", "shape [", "want [")
    verdict("extra_output", "ERROR", "the model has 1 outputs, test_data_set_0 has 2")
    verdict("bad_model", "ERROR", "model.onnx")
    verdict("crash", "ERROR", "crashed: signal 11")
    verdict("hang", "ERROR", "timed out after 2 s")
    d, v = ints["int_off_by_one"]
    verdict("int_off_by_one", "FAILED", "1 of %d elements differ" % len(v),
            "worst at %s: got %d, want %d" % (index_text(d, len(v) - 1), v[-1] - 1, v[-1]))
    d, v = ints["bool_flipped"]
    verdict("bool_flipped", "FAILED", "1 of %d elements differ" % len(v),
            "worst at %s: got %d, want %d" % (index_text(d, len(v) - 1), 1 - v[-1], v[-1]))
    verdict("const_bound", "PASS", "(const-bound)")
    check(p.returncode == 1, "exit status 1 when expected tests are lost (got %d)" % p.returncode)
    check("EXPECTED PASS LOST beyond_tol: FAILED" in out, "the lost pass beyond_tol is named")
    check("EXPECTED PASS LOST no_such_test: no such test" in out, "a listed name no test has")
    check("EXPECTED PASS LOST pass" not in out, "pass, which passed, is not named")
    check("CRASH crash: crashed: signal 11" in out and "CRASH hang" not in out,
          "the crash is named as one (the timeout is an error, not a crash)")
    check("NEW PASS within_tol" in out and "NEW PASS pass" not in out, "the new pass is printed")
    check(": 3 passed, 6 failed, 4 errors, 13 total (1 passed const-bound" in out, "the counts")
    check(os.path.exists(written) and open(written).read() == "const_bound\npass\nwithin_tol\n",
          "--write-expected writes the passes, sorted")
    # Everything as expected: status 0, and the new pass alone is no failure.
    with open(expected, "w") as f:
        f.write("pass\n")
    p = subprocess.run([driver, "--only", "pass", "--only", "within_tol", "--expected", expected,
                        suite], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    print(p.stdout)
    check(p.returncode == 0 and "NEW PASS within_tol" in p.stdout,
          "status 0 when every expected test passes (got %d)" % p.returncode)
    p = subprocess.run([driver, "--expected", expected, os.path.join(work, "absent")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    check(p.returncode == 1 and "cannot read" in p.stdout and "libonnx-testdata" in p.stdout,
          "a missing folder fails, naming the package (got %d: %s)" % (p.returncode,
                                                                       p.stdout.strip()))
    p = subprocess.run([driver, "-j", "0", suite], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    check(p.returncode == 2 and "-j" in p.stdout, "-j 0 is a usage error")


if __name__ == "__main__":
    sys.exit(main())
