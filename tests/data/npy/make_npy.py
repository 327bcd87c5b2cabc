#!/usr/bin/python3
"""Writes the .npy fixtures of tests/test_npy.c with numpy itself (Debian's python3-numpy,
under /usr/bin/python3): run once, from anywhere, and commit what it writes beside it.

    /usr/bin/python3 tests/data/npy/make_npy.py

test_npy.c checks the values these files hold against the formulas below (computed there
on its own), and that clg_tensor_save_npy writes the np.save files byte for byte."""
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def save(name, a):
    np.save(os.path.join(here, name), a, allow_pickle=False)


def write(name, a, version):
    with open(os.path.join(here, name), "wb") as f:
        np.lib.format.write_array(f, a, version=version, allow_pickle=False)


# Values test_npy.c recomputes: element i of each.
f32 = (np.arange(6, dtype=np.float32) * 0.5 - 1).reshape(2, 3)
save("f32_2x3.npy", f32)
save("f64_scalar.npy", np.array(3.25, dtype=np.float64))
save("f16_5.npy", np.array([0, 1, -2.5, 65504, 2.0**-24], dtype=np.float16))
save("i8_4.npy", np.array([-128, -1, 0, 127], dtype=np.int8))
save("i16_5.npy", np.array([-32768, -1, 0, 1, 32767], dtype=np.int16))
save("i32_2x2.npy", np.array([[-2147483648, -1], [0, 2147483647]], dtype=np.int32))
save("i64_3.npy", np.array([-(2**63), 0, 2**63 - 1], dtype=np.int64))
save("u8_3.npy", np.array([0, 128, 255], dtype=np.uint8))
save("bool_4.npy", np.array([True, False, False, True]))
save("f32_0x3.npy", np.zeros((0, 3), dtype=np.float32))
save("f32_rank8.npy", np.arange(2**8, dtype=np.float32).reshape((2,) * 8))
# Other versions of the format: the same values as f32_2x3.
write("f32_2x3_v2.npy", f32, (2, 0))
write("f32_2x3_v3.npy", f32, (3, 0))
# What clgraph refuses.
save("f32_big_endian.npy", f32.astype(">f4"))
save("f32_fortran.npy", np.asfortranarray(f32))
save("u16_2.npy", np.array([1, 2], dtype=np.uint16))
save("str_2.npy", np.array(["ab", "c"]))
save("f32_rank9.npy", np.zeros((1,) * 9, dtype=np.float32))
