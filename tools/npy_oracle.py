#!/usr/bin/python3
"""NumPy as the oracle for aotgrad's .npy reader and writer.

    /usr/bin/python3 tools/npy_oracle.py [OUT_DIR]          (default: tests/data/npy/oracle)
    /usr/bin/python3 tools/npy_oracle.py --check-loadable FILE.npy ...

The first form builds a corpus of small .npy files, valid and invalid (files np.save writes;
hand-written headers in every spelling the format allows or almost allows; deterministic random
mutations of valid files), asks numpy.load (allow_pickle=False, as a user calls it) about each, and
writes the files plus OUT_DIR/expected.txt, one line per file:

    NAME ok DTYPE SHAPE FNV [exact]   numpy.load reads it; aotgrad must read the same dtype, shape
                                      and values (FNV-1a 64 of the little-endian C-order element
                                      bytes, bools as 0/1); `exact`: np.save wrote it, and
                                      aotgrad's write_npy must write these very bytes back
    NAME refused                      numpy.load refuses it; so must aotgrad
    NAME unsupported DTYPE            numpy.load reads it, but aotgrad has no such dtype: refused
    NAME deviation WHY                numpy.load reads it, aotgrad refuses it on purpose
                                      (npy_header.cpp lists why)

tests/tools/npy_oracle_test.cpp checks the reader against it, so CI needs no NumPy. The second
form loads files written by aotgrad (e.g. by `aotgrad run`) and fails unless NumPy reads each.
Needs NumPy 1.24 (the system /usr/bin/python3 has it).
"""
import io
import os
import random
import re
import struct
import sys
import warnings

import numpy as np

OURS = {("f", 2): "f16", ("f", 4): "f32", ("f", 8): "f64", ("i", 8): "i64", ("b", 1): "b8",
        ("i", 4): "i32", ("u", 1): "u8"}


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def header_bytes(text, version=1, pad=True, length=None):
    """The bytes before the data: magic, version, length, `text` padded as np.save pads it."""
    body = text.encode("latin1" if version < 3 else "utf8") if isinstance(text, str) else text
    prefix = 10 if version == 1 else 12
    if pad:
        total = prefix + len(body) + 1
        body = body + b" " * ((-total) % 64) + b"\n"
    n = len(body) if length is None else length
    size = struct.pack("<H", n) if version == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes([version, 0]) + size + body


def dict_text(descr="'<f4'", fortran="False", shape="(2, 3)", extra=""):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, %s}" % (descr, fortran, shape, extra)


def saved(array, version=None):
    f = io.BytesIO()
    np.lib.format.write_array(f, array, version=version, allow_pickle=False)
    return f.getvalue()


def values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "?":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.endswith("i8"):
        return rng.integers(-(2**40), 2**40, n, dtype=np.int64)
    return (rng.standard_normal(n) * 4).astype(np.dtype(dtype).newbyteorder("="))


def written_cases():
    """Files np.save writes: every dtype, shapes from 0-dim to 32 dims, C and Fortran order."""
    shapes = [(), (0,), (5,), (2, 3), (0, 3), (3, 0), (1, 1, 1), (2, 3, 4), (1,) * 32, (7, 1, 2)]
    for dt in ["<f2", "<f4", "<f8", "<i8", "?"]:
        for k, shape in enumerate(shapes):
            a = values(dt, int(np.prod(shape)), k).reshape(shape)
            yield "save_%s_%s" % (dt.strip("<").replace("?", "b1"), "x".join(map(str, shape)) or "scalar"), saved(a), True
    special = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 65504], dtype="<f4")
    yield "save_f4_specials", saved(special), True
    yield "save_f2_specials", saved(special.astype("<f2")), True
    nan_payload = np.frombuffer(struct.pack("<Q", 0x7FF800000000ABCD), dtype="<f8")
    yield "save_f8_nan_payload", saved(nan_payload), True
    yield "save_i8_extremes", saved(np.array([-(2**63), 2**63 - 1, 0], dtype="<i8")), True
    # Not what write_npy writes (other order or version), but read the same.
    for dt in [">f2", ">f4", ">f8", ">i8"]:
        yield "save_big_endian_%s" % dt[1:], saved(values(dt, 6, 9).reshape(2, 3)), False
    for shape in [(2, 3), (2, 3, 4), (3, 1)]:
        a = np.asfortranarray(values("<f4", int(np.prod(shape)), 3).reshape(shape))
        yield "save_fortran_%s" % "x".join(map(str, shape)), saved(a), False
    yield "save_fortran_big_endian", saved(np.asfortranarray(values(">f8", 6, 4).reshape(2, 3))), False
    for version in [(1, 0), (2, 0), (3, 0)]:
        yield "save_version_%d" % version[0], saved(values("<f4", 4, 5), version), False
    # Types NumPy has and aotgrad does not.
    for dt in ["<i4", "|u1", "|i1", "<u8", "<c8", "<f16", "|S3", "<U2", "<M8[s]"]:
        a = np.zeros(3, dtype=dt)
        yield "save_other_%s" % dt.strip("<|").replace("[", "_").replace("]", ""), saved(a), False
    yield "save_structured", saved(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i8")])), False


DESCRS = [
    "'<f4'", "'f4'", "'|f4'", "'=f4'", "'>f4'", "'f'", "'<f'", "'float32'", "'single'",
    "'<f8'", "'f8'", "'d'", "'float64'", "'double'", "'float'", "'float_'", "'|f8'",
    "'<f2'", "'e'", "'half'", "'float16'", "'>e'", "'<i8'", "'i8'", "'q'", "'l'", "'p'",
    "'int64'", "'int'", "'int_'", "'intp'", "'long'", "'longlong'", "'int0'", "'|i8'", "'>q'",
    "'|b1'", "'b1'", "'<b1'", "'>b1'", "'?'", "'=?'", "'bool'", "'bool_'", "'bool8'",
    "'<float32'", "'>float64'", "'F4'", "'f4 '", "' f4'", "'f 4'", "''", "'<'", "'<f5'",
    "'<i4'", "'i'", "'b'", "'B'", "'u8'", "'c8'", "'O'", "'|O'", "'V4'", "'S4'",
    "'<f4,'", "'f4 ,  '", "'1f4'", "'<1f4'", "'1<f4'", "'=1<f4'", "'<1>f4'", "'()f4'", "'<()f4'",
    "'(1,)f4'", "'1,1f4'", "'(2,)f4'", "'2f4'", "'01f4'", "'f4,,'", "'f4,f4'", "'float32,'",
    "'<float32,'", "' 1 f4'", "'1 f4 '", "'(1)f4'", "'0f4'",
    "('<f4', ())", "('<f4', 1)", "('<f4', 1, 'x')", "('<f4', 1, 2.5)", "('<f4', 1, 1+2j)",
    "('<f4', (1,))", "('<f4', (1, 1))", "('<f4', [1])", "('<f4', [])", "('<f4', True)",
    "('<f4', (1))", "(('<f4', 1), 1)", "('<f4', 2)", "('<f4',)", "[('a', '<f4')]",
    "[('', '<f4')]", "b'<f4'", "u'<f4'", "r'<f4'", "U'<f4'", "'''<f4'''", '"""<f4"""', '"<f4"',
    "'<' 'f4'", "'<' \"f4\"", "'<' b'f4'", "'\\x3cf4'", "'\\074f4'", "'\\<f4'", "'<\\u0066\\U00000034'",
    "'\\N{LESS-THAN SIGN}f4'", "f'<f4'", "'<\\\nf4'", "r'<\\\nf4'", "1", "None", "('<f4')",
    "'f+4'", "'f04'", "'f\\t4'", "'<f +08'", "'i\\n8'", "'b 1'", "'<b+1'", "'f-4'", "'f 4 '",
    "'e 2'", "'? '", "'<?1'", "'i 8'", "'f0'", "'f\\x0b4'", "'l8'", "'1,f4'", "'1, f4'", "'(1),f4'",
    "'>(1,)f4'", "'(1,)>f4'", "'|1f4'", "'f4  '", "'f4\\n'", "'f4 ,'",
]

SHAPES = [
    "(2, 3)", "(2,3)", "(2, 3,)", "( 2 , 3 )", "(2L, 3L)", "(2 L, 3)", "(2l, 3)", "(2LL, 3)",
    "(2L L, 3)", "(0x2, 0o3)", "(0b10, 3)", "(2_0, 3)", "(02, 3)", "(00, 3)", "(+2, 3)",
    "(-2, -3)", "(- 2, 3)", "(--2, 3)", "(-(2), 3)", "(-0, 3)", "(2.0, 3)", "(2, 3.)", "[2, 3]",
    "(True, 3)", "(2, None)", "('2', 3)", "(2, (3,))", "((2, 3))", "(((2),3))", "2, 3", "{2, 3}",
    "(2 * 3,)", "(6,)", "(3, 2)", "(6, 1, 1)", "(1, 6)", "(2, 3, 1, 1)", "(2,)", "(7,)", "()",
    "(0,)", "(0, 2**62)", "(0, 4611686018427387904, 4)", "(0, 9223372036854775807)",
    "(0, 9223372036854775808)", "(4611686018427387904, 8)", "(18446744073709551616,)",
    "(2, 3)L", "(2, L)", "(" + "1, " * 32 + ")", "(" + "1, " * 33 + ")", "(-1,)", "(-1, 2)",
    "(2, 0x_3)", "(2, 0x)", "(2, 3e0)", "(2, 3j)", "(1+2j, 3)",
]


def header_cases():
    payload = np.arange(6, dtype="<f4").tobytes()
    for k, d in enumerate(DESCRS):
        yield "descr_%03d_%s" % (k, d), header_bytes(dict_text(descr=d, shape="(6,)")) + bytes(range(48)), d
    for k, s in enumerate(SHAPES):
        yield "shape_%03d_%s" % (k, s), header_bytes(dict_text(shape=s)) + payload, s
    for k, f in enumerate(["True", "False", "0", "1", "None", "'False'", "true", "(True)", "[False]"]):
        yield "fortran_%d_%s" % (k, f), header_bytes(dict_text(fortran=f)) + payload, f
    base = dict_text()
    variants = [
        ("keys_reordered", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}"),
        ("keys_double_quotes", '{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}'),
        ("no_trailing_comma", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("no_spaces", "{'descr':'<f4','fortran_order':False,'shape':(2,3),}"),
        ("extra_key", dict_text(extra="'x': 1")),
        ("missing_shape", "{'descr': '<f4', 'fortran_order': False}"),
        ("missing_descr", "{'fortran_order': False, 'shape': (2, 3)}"),
        ("duplicate_key_last_wins", dict_text(shape="(3, 3)", extra="'shape': (2, 3)")),
        ("duplicate_key_bad_last", dict_text(extra="'shape': [2, 3]")),
        ("int_key", dict_text(extra="1: 2")),
        ("bytes_key", "{b'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("u_key", "{u'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("concat_key", "{'de' \"scr\": '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("continued_key", "{'de\\\nscr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("escaped_key", "{'d\\x65scr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
        ("empty_dict", "{}"),
        ("empty_set_call", "set()"),
        ("set", "{'descr', 'fortran_order', 'shape'}"),
        ("list", "['descr', '<f4']"),
        ("dict_call", "dict(descr='<f4', fortran_order=False, shape=(2, 3))"),
        ("double_comma", dict_text().replace(", }", ",, }")),
        ("lone_comma", "{,}"),
        ("parenthesized", "(" + base + ")"),
        ("tuple_of_dict", base + ", 1"),
        ("semicolon", base + ";"),
        ("leading_space", "  " + base),
        ("leading_tab", "\t" + base),
        ("leading_newline", "\n" + base),
        ("leading_newline_indent", "\n  " + base),
        ("leading_space_newline", " \n" + base),
        ("leading_formfeed", "\f" + base),
        ("leading_continuation", "\\\n" + base),
        ("leading_comment", "# a comment\n" + base),
        ("trailing_comment", base + "  # a comment"),
        ("trailing_comment_lines", base + "\n #x\n\n"),
        ("trailing_text_line", base + "\n x"),
        ("trailing_L", base + " L"),
        ("trailing_formfeed", base + "\f"),
        ("trailing_vtab", base + "\v"),
        ("trailing_backslash", base + "\\"),
        ("newline_inside", base.replace(", 'shape'", ",\n'shape'")),
        ("newline_indent_inside", base.replace(", 'shape'", ",\n      'shape'")),
        ("continuation_inside", base.replace(", 'shape'", ", \\\n'shape'")),
        ("comment_inside", base.replace(", 'shape'", ", # c\n'shape'")),
        ("crlf_inside", base.replace(", 'shape'", ",\r\n'shape'")),
        ("cr_inside", base.replace(", 'shape'", ",\r'shape'")),
        ("cr_in_string", base.replace("'<f4'", "'<f\r4'")),
        ("nul_in_comment", base + "#\x00"),
        ("nul_in_string", base.replace("'descr'", "'descr\x00'")),
        ("control_in_string", base.replace("'<f4'", "'<f4\x01'")),
        ("unterminated_string", base.replace("'<f4'", "'<f4")),
        ("unterminated_triple", base.replace("'<f4'", "'''<f4'")),
        ("unbalanced_open", base[:-1]),
        ("unbalanced_close", base + "}"),
        ("nested_199", dict_text(shape="(" * 198 + "2, 3" + ")" * 198)),
        ("nested_200", dict_text(shape="(" * 199 + "2, 3" + ")" * 199)),
        ("star", dict_text(shape="(*[2, 3],)")),
        ("power", dict_text(shape="(2**1, 3)")),
        ("name_value", dict_text(fortran="F")),
        ("latin1_comment", base + " # \xe9"),
    ]
    for name, text in variants:
        yield "dict_" + name, header_bytes(text) + payload, None
    # Versions: Python 2 ints only in 1.0/2.0; UTF-8 only in 3.0.
    for v in [1, 2, 3]:
        yield "v%d_long_suffix" % v, header_bytes(dict_text(shape="(2L, 3L)"), v) + payload, None
        yield "v%d_plain" % v, header_bytes(base, v) + payload, None
        yield "v%d_utf8_comment" % v, header_bytes((base + " # \u00e9\u4e2d").encode("utf8"), v) + payload, None
        yield "v%d_latin1_byte" % v, header_bytes(base.encode() + b" # \xff", v) + payload, None
        yield "v%d_utf8_surrogate" % v, header_bytes(base.encode() + b" # \xed\xa0\x80", v) + payload, None
    yield "v3_utf8_in_descr", header_bytes(dict_text(descr="'<f4\u00e9'"), 3) + payload, None
    # Lengths and sizes.
    yield "unpadded", header_bytes(base, pad=False) + payload, None
    yield "no_final_newline", header_bytes(base + " " * 5, pad=False) + payload, None
    yield "header_9999_chars", header_bytes(base + " " * (9999 - len(base) - 1) + "\n", pad=False) + payload, None
    yield "header_10000_chars", header_bytes(base + " " * (10000 - len(base) - 1) + "\n", pad=False) + payload, None
    yield "header_10001_chars", header_bytes(base + " " * (10001 - len(base) - 1) + "\n", pad=False) + payload, None
    h = header_bytes(base)
    yield "length_past_end", h[:8] + struct.pack("<H", 60000) + h[10:] + payload, None
    yield "length_into_data", h[:8] + struct.pack("<H", len(h) - 10 + 8) + h[10:] + payload, None
    yield "length_short", h[:8] + struct.pack("<H", 20) + h[10:] + payload, None
    yield "data_short_by_one", h + payload[:-1], None
    yield "data_empty", h, None
    yield "data_trailing_garbage", h + payload + b"garbage", None
    yield "data_empty_array_trailing", header_bytes(dict_text(shape="(0, 3)")) + b"xyz", None
    yield "data_scalar", header_bytes(dict_text(shape="()")) + payload[:4], None
    yield "bool_bytes_nonzero", header_bytes(dict_text(descr="'|b1'", shape="(4,)")) + bytes([0, 1, 2, 255]), None
    yield "fortran_big_endian_i8", header_bytes(dict_text(descr="'>i8'", fortran="True", shape="(2, 2)")) + struct.pack(">4q", 1, -2, 3, 2**40), None
    for name, prefix in [("empty_file", b""), ("magic_only", b"\x93NUMPY"), ("magic_v", b"\x93NUMPY\x01"),
                         ("magic_len1", b"\x93NUMPY\x01\x00\x10"), ("bad_magic", b"\x93NUMPZ\x01\x00"),
                         ("zip", b"PK\x03\x04"), ("pickle", b"\x80\x04K\x01.")]:
        yield "file_" + name, prefix, None
    for major, minor in [(1, 1), (0, 0), (4, 0), (2, 1), (3, 255), (255, 0)]:
        yield "version_%d_%d" % (major, minor), b"\x93NUMPY" + bytes([major, minor]) + h[8:] + payload, None


def mutation_cases(seeds, count):
    rng = random.Random(20240610)
    for k in range(count):
        name, data = seeds[rng.randrange(len(seeds))]
        data = bytearray(data)
        op = rng.choice(["flip", "flip", "truncate", "insert", "delete", "replace_header_char"])
        if op == "truncate":
            data = data[: rng.randrange(len(data) + 1)]
        elif op == "insert":
            data.insert(rng.randrange(len(data) + 1), rng.choice(b" ,()'\"LTrue0123456789\n\\#\x00\xff"))
        elif op == "delete" and data:
            del data[rng.randrange(len(data))]
        elif op == "replace_header_char":
            at = rng.randrange(10, min(len(data), 80))
            data[at] = rng.choice(b" ,()'\":{}L0123456789\t\n")
        elif data:
            at = rng.randrange(min(len(data), 96))
            data[at] ^= 1 << rng.randrange(8)
        yield "mutant_%03d_%s_%s" % (k, op, name), bytes(data), None


def verdict(path):
    """numpy.load's answer: ('ok', array) or ('refused', reason)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", np.load(path)
        except Exception as e:  # every refusal counts, whatever NumPy raises
            reason = re.sub(r" at 0x[0-9a-f]+", "", str(e).splitlines()[0][:100] if str(e) else "")
            return "refused", "%s: %s" % (type(e).__name__, reason)


def declared_shape(data):
    """The header's shape as NumPy parses it, to spot a negative dim NumPy let through."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shape, _, _ = np.lib.format._read_array_header(f, version)
    return shape


def expectation(name, data, array, exact):
    if any(d < 0 for d in declared_shape(data)):
        return "deviation negative-dim"
    if name.startswith("descr_") and "\\N{" in data.decode("latin1"):
        return "deviation unicode-name-escape"
    key = (array.dtype.kind, array.dtype.itemsize)
    if key not in OURS or array.dtype.names is not None:
        return "unsupported " + array.dtype.str
    canon = (array != 0).astype(np.uint8) if array.dtype.kind == "b" else array.astype(array.dtype.newbyteorder("<"))
    digest = fnv1a64(np.ascontiguousarray(canon).tobytes())
    line = "ok %s [%s] %s" % (OURS[key], ",".join(map(str, array.shape)), digest)
    return line + (" exact" if exact else "")


def build(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if f.endswith(".npy") or f == "expected.txt":
            os.remove(os.path.join(out_dir, f))
    cases = [(n, d, exact) for n, d, exact in written_cases()]
    cases += [(n, d, False) for n, d, _ in header_cases()]
    seeds = [(n, d) for n, d, _ in cases if n.startswith(("save_f4_2x3", "save_i8_5", "save_b1_2x3", "dict_keys"))]
    cases += [(n, d, False) for n, d, _ in mutation_cases(seeds, 120)]
    lines = ["# numpy.load's verdict on each file here, from tools/npy_oracle.py (NumPy %s). Do not edit:"
             % np.__version__, "# regenerate with /usr/bin/python3 tools/npy_oracle.py"]
    counts = {}
    for k, (name, data, exact) in enumerate(cases):
        slug = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)
        fname = "%03d_%s.npy" % (k, slug[:48].rstrip("_"))
        path = os.path.join(out_dir, fname)
        with open(path, "wb") as f:
            f.write(data)
        kind, result = verdict(path)
        line = expectation(name, data, result, exact) if kind == "ok" else "refused"
        counts[line.split()[0]] = counts.get(line.split()[0], 0) + 1
        lines.append("%s %s" % (fname, line) + ("  # " + result if kind == "refused" else ""))
    with open(os.path.join(out_dir, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print("%d files, %d bytes: %s" % (len(cases), total, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))


def check_loadable(paths):
    bad = 0
    for p in paths:
        kind, result = verdict(p)
        if kind != "ok":
            bad += 1
            print("NOT LOADABLE %s: %s" % (p, result))
        else:
            print("ok %s %s %s" % (p, result.dtype.str, result.shape))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check-loadable":
        sys.exit(check_loadable(sys.argv[2:]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "npy", "oracle"))
