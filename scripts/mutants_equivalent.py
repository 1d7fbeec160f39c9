"""The mutants scripts/mutants.py may let through: each cannot change behaviour, and says why."""

from __future__ import annotations

# (module name, the mutated line as it reads, stripped, operator) -> why the mutant cannot
# change behaviour
EQUIVALENT: dict[tuple[str, str, str], str] = {
    (
        "framing",
        'headers = np.frombuffer(b"".join(header(int(length)) for length in distinct), np.uint8).reshape(-1, HEADER_SIZE)',
        operator,
    ): "-1 becomes -2: numpy infers the size of any negative dimension"
    for operator in ("ReplaceUnaryOperator_USub_Invert", "NumberReplacer")
}
EQUIVALENT[
    (
        "framing",
        "(crc32c(view[s:e]) for s, e in zip((starts + HEADER_SIZE).tolist(), ends.tolist(), strict=True)),",
        "ReplaceTrueWithFalse",
    )
] = "zip(strict=False): both lists come from arrays of one length, so they never differ"


# A rotation joins two shifts whose bits never overlap: | + ^ give one value
for _line in (
    "return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF",
    "return ((crcs >> 15) | (crcs << 17)) + np.uint32(_MASK_DELTA)",
    "return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF",
):
    for _operator in ("ReplaceBinaryOperator_BitOr_Add", "ReplaceBinaryOperator_BitOr_BitXor"):
        EQUIVALENT["crc", _line, _operator] = (
            "the two shifted halves of a 32-bit rotation have no bit in common, so OR, ADD and XOR agree"
        )
EQUIVALENT["splits", "for g in sorted(groups, key=lambda g: (-len(members[g]), rank_key(g))):",
           "ReplaceUnaryOperator_USub_Invert"] = "~n is -n - 1: the groups sort in the same order, largest first"  # fmt: skip
EQUIVALENT["fingerprints", "if now == _MISSING:", "ReplaceComparisonOperator_Eq_LtE"] = (
    "a listed or stat'ed file's size is 0 or more, so no entry but the missing one's is <= (-1, -1, -1)"
)
# The split module: a sorted array's neighbours, orders that do not matter, shifts that cancel
_TIES = "for at in np.flatnonzero(ordered[1:] == ordered[:-1]).tolist():  # equal keys rank alike"
for _operator in ("ReplaceComparisonOperator_Eq_LtE", "ReplaceComparisonOperator_Eq_GtE"):
    EQUIVALENT["splits", _TIES, _operator] = (
        "ordered is sorted ascending: a neighbour is never below the one before it, so <= finds the ties "
        "== finds, and >= visits every pair, where only tied ones can share a key"
    )
    EQUIVALENT["splits", "if key(first) == key(second):", _operator] = (
        "reached only for two items whose ranks tie, that is whose keys are equal (a 64-bit blake2b "
        "collision aside): equal strings are <= and >= each other"
    )
for _line in (
    "for _, members in sorted(groups.items(), key=lambda g: repr(g[0])):",
    "for _, groups in sorted(strata.items(), key=lambda s: repr(s[0])):",
):
    EQUIVALENT["splits", _line, "NumberReplacer"] = (
        "the order in which strata are placed: each stratum's choice depends on its own members only, and "
        "every split's items are sorted back into source order at the end"
    )
EQUIVALENT["splits", "placed = dict.fromkeys(names, 0)", "NumberReplacer"] = (
    "every split starts from the same count: the differences from the targets shift alike, the furthest below "
    "stays the furthest below"
)
_FURTHEST = "split = max(names, key=lambda s: (targets[names.index(s)] - placed[s], -names.index(s)))"
EQUIVALENT["splits", _FURTHEST, "ReplaceUnaryOperator_USub_Invert"] = (
    "~i is -i - 1: the tie-break orders the splits alike, the first named first"
)
EQUIVALENT["splits", _FURTHEST, "ReplaceUnaryOperator_USub_Not"] = (
    "max keeps the first of equal keys, and names are in order: `not i` prefers the first split and leaves "
    "the others tied, which max settles for the earlier one, as -i does"
)
EQUIVALENT["splits", "for (name, _), count in zip(spec.ratios, counts, strict=True):", "ReplaceTrueWithFalse"] = (
    "counts is exact_counts of spec.ratios' fractions: the two always have one length"
)
EQUIVALENT["splits", "*,", "ReplaceBinaryOperator_Mul_Div"] = (
    "`/` makes the parameters before it positional-only: every caller passes them by position"
)
EQUIVALENT[
    "fingerprints", 'f"{field} {a} then, {b} now" if field == "size" else field', "ReplaceComparisonOperator_Eq_Is"
] = "the field names and the literal are one interned string: `is` and `==` agree"
EQUIVALENT[
    "fingerprints", "root = self.roots[bisect.bisect_right(self.ends, i // size)]", "ReplaceBinaryOperator_FloorDiv_Div"
] = "i steps through the stats by the entry size, so i / size is that whole number as a float: bisect places it alike"
EQUIVALENT[
    "fingerprints",
    "for field, a, b in zip(REMOTE_FIELDS if fs.is_remote(root) else FIELDS, then, now, strict=True)",
    "ReplaceTrueWithFalse",
] = "three field names, and two unpacked entries of three numbers each: the lengths never differ"
_FAST_SORT = "if bool((ordered[1:] == ordered[:-1]).any()):"
for _operator in ("ReplaceComparisonOperator_Eq_NotEq", "ReplaceComparisonOperator_Eq_Gt",
                  "ReplaceComparisonOperator_Eq_GtE"):  # fmt: skip
    EQUIVALENT["splits", _FAST_SORT, _operator] = (
        "these take the stable sort whenever two neighbours differ: its order is the right one with ties or "
        "without; the default sort is only a shortcut for ranks that never tie"
    )
EQUIVALENT["splits", _FAST_SORT, "ReplaceComparisonOperator_Eq_LtE"] = (
    "ordered is sorted ascending: a neighbour is <= the one before it only when equal to it"
)
EQUIVALENT["splits", "if abs(sum(f for _, f in ratios) - 1) > 1e-6:", "ReplaceComparisonOperator_Gt_GtE"] = (
    "the two differ only for fractions adding up to exactly 1 +- 1e-6, to the last bit of a float"
)
EQUIVALENT["splits", "if len(set(names)) != len(names):", "ReplaceComparisonOperator_NotEq_Lt"] = (
    "a set of the names is never longer than their list: < and != agree"
)
EQUIVALENT["splits", "if len(set(names)) != len(names):", "ReplaceComparisonOperator_NotEq_IsNot"] = (
    "lengths below 257 are Python's shared small ints (no split spec names that many): `is not` agrees with !="
)
EQUIVALENT[
    "splits",
    "return Counter(stratum(items[i]) for i in indices).most_common(1)[0][0]  # type: ignore[misc]",
    "NumberReplacer",
] = "most_common(2)[0] is most_common(1)[0], and index -1 of a one-item list is index 0"
EQUIVALENT["splits", "if TYPE_CHECKING:", "AddNot"] = (
    "numpy is then imported with the module instead of at the first ranking: start-up time, no behaviour"
)
EQUIVALENT[
    "splits", 'got = ", ".join(f"{name} {len(splits[name]) / (total or 1):.3f}" for name, _ in spec.ratios)',
    "NumberReplacer",
] = "with no examples every share is 0 over any denominator but 0"  # fmt: skip
_STALE_BY_LEASE = "return modified is not None and time.time() - modified > self.lease"
EQUIVALENT["remote_lock", _STALE_BY_LEASE, "ReplaceBinaryOperator_Sub_Mod"] = (
    "t % m is t - m whenever m <= t < 2m: for any last-modified time after half of now since the epoch"
)
EQUIVALENT["remote_lock", _STALE_BY_LEASE, "ReplaceComparisonOperator_Gt_GtE"] = (
    "the two differ only when exactly LEASE seconds have passed, to the last bit of a float clock"
)
EQUIVALENT["crc", "crcs = crcs.astype(np.uint32, copy=False)", "ReplaceFalseWithTrue"] = (
    "astype(copy=True) copies the same values; the copy is never written to"
)
# Salvage: how much is read, inflated or searched at a time changes the steps, not the stream
for _line, _why in (
    ("_READ = 1 << 20  # bytes read (or inflated) at a time", "how much is read or inflated at a time"),
    ("_WINDOW = 1 << 20  # bytes searched at once for the next record", "how much is searched at a time"),
    ("chunk = z.unconsumed_tail or self.raw.read(1 << 16)", "how much compressed data is read at a time"),
):
    EQUIVALENT["salvage", _line, "NumberReplacer"] = (
        f"{_why}: any positive amount gives the same bytes in other steps (0 never ends, and is caught)"
    )
EQUIVALENT["salvage", "self.base = 0", "NumberReplacer"] = (
    "the first thing salvage does is drop(0), which sets base to 0 before a byte is read"
)
EQUIVALENT["salvage", "while self.end < upto and not self.eof:", "ReplaceComparisonOperator_Lt_LtE"] = (
    "reads one step further than asked where the buffer already reaches `upto`: the bytes are the same"
)
EQUIVALENT["salvage", "if upto >= self.end:", "ReplaceComparisonOperator_GtE_Gt"] = (
    "at upto == end, deleting the whole buffer and moving base to upto is what the shortcut does"
)
for _line in (
    "if crc32c(data) == unmask(u32.unpack_from(stream.buf, end - FOOTER_SIZE - stream.base)[0]):",
    "return crc32c(payload) == unmask(u32.unpack_from(kept, size - FOOTER_SIZE)[0])",
    "if crc32c(body[:-FOOTER_SIZE]) == unmask(u32.unpack_from(body, length)[0]):",
):
    EQUIVALENT["salvage", _line, "NumberReplacer"] = "unpack_from gives a one-item tuple: [-1] is [0] ([1] fails)"
EQUIVALENT["salvage", 'self.wbits = 31 if compression == "gzip" else 15', "NumberReplacer"] = (
    "32 asks zlib to detect the header, and finds gzip's (30 and 14, windows too small, are caught)"
)
EQUIVALENT["salvage", "at = broken + 1", "NumberReplacer"] = (
    "the header at `broken` failed its CRC, so starting the search there finds the same first record"
)
EQUIVALENT[
    "coco_rle", "keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)", "ReplaceBinaryOperator_Sub_Add"
] = (
    "a crossing at column width or width + 1 lands at x * height + y >= height * width, which the last "
    "line of _toggles leaves out"
)
EQUIVALENT["coco_rle", "TRACE_POINTS = 1 << 20", "ReplaceBinaryOperator_LShift_RShift"] = (
    "0 points a chunk: each chunk still takes one edge at least, and any split toggles the same pixels"
)
EQUIVALENT["coco_rle", "TRACE_POINTS = 1 << 20", "NumberReplacer"] = EQUIVALENT[
    "coco_rle", "TRACE_POINTS = 1 << 20", "ReplaceBinaryOperator_LShift_RShift"
]
EQUIVALENT["salvage", "at += _WINDOW + 1  # the next header start not yet tried", "ReplaceBinaryOperator_Add_Sub"] = (
    "the next window then starts two bytes early: it tries two starts again, and finds the same first record"
)
EQUIVALENT["salvage", "at += _WINDOW + 1  # the next header start not yet tried", "NumberReplacer"] = (
    "+ 0 tries one start again, and finds the same first record (+ 2 skips one, and is caught)"
)
EQUIVALENT[
    "salvage",
    "if len(window) < _WINDOW + HEADER_SIZE:  # it reached the end: every start was tried",
    "ReplaceBinaryOperator_Add_Sub",
] = (
    "a last window a little short of full is then searched on: every start in it was tried, and the next "
    "window, past the end, is empty and ends the search"
)
EQUIVALENT["coco_rle", "while first < len(grid):", "ReplaceComparisonOperator_Lt_LtE"] = (
    "one more pass with no edges left: it traces nothing, and the point carried over toggles nothing alone"
)
EQUIVALENT["coco_rle", "column = np.where(u[moved] < u[moved - 1], u[moved], u[moved] - 1)",
           "ReplaceComparisonOperator_Lt_LtE"] = "`moved` are where u changes: u[moved] never equals u[moved - 1]"  # fmt: skip
EQUIVALENT["coco_rle", "return toggles[toggles < height * width]", "ReplaceComparisonOperator_Lt_LtE"] = (
    "a toggle at height * width (below the last pixel) is cut off by _filled's [: height * width] anyway"
)
EQUIVALENT["coco_rle", "along_x = dx >= dy", "ReplaceComparisonOperator_GtE_Gt"] = (
    "an edge as long across as down (a diagonal, slope +-1 exactly) is traced along y instead of x: "
    "the same grid points either way"
)
EQUIVALENT["coco_rle", "flip = np.where(along_x, start[:, 0] > end[:, 0], start[:, 1] > end[:, 1])",
           "ReplaceComparisonOperator_Gt_GtE"] = (
    "start and end equal along the edge's longer axis means a repeated vertex, one point: flipped or not, "
    "low and high are that point"
)  # fmt: skip
# header_candidates: a prefilter before the CRC and the limit decide. These only let more
# offsets through, or leave out only twelve equal bytes (never a header: no length below
# 256 has a masked CRC of 0, and seven equal nonzero bytes are a length past any limit).
_PREFILTER = "if np.count_nonzero(plausible) > n // 64:  # mostly zeros, say: leave out windows of twelve equal bytes"
for _operator in ("AddNot", "NumberReplacer", "ReplaceBinaryOperator_FloorDiv_Mul", "ReplaceBinaryOperator_FloorDiv_Div",
                  "ReplaceComparisonOperator_Gt_GtE", "ReplaceComparisonOperator_Gt_LtE"):  # fmt: skip
    EQUIVALENT["salvage", _PREFILTER, _operator] = (
        "whether the twelve-equal-bytes filter runs: it only leaves out offsets that are never a header"
    )
for _operator in (
    "ReplaceComparisonOperator_NotEq_Eq",
    "ReplaceUnaryOperator_USub_UAdd",
    "ReplaceUnaryOperator_Delete_USub",
):
    EQUIVALENT["salvage", "np.cumsum(b[1:] != b[:-1], out=changes[1:])", _operator] = (
        "the filter then leaves out offsets followed by eleven bytes equal to each other or to the window's "
        "first: with a length's seven high bytes among them, never a header below any limit under 2^56"
    )
EQUIVALENT["salvage", "plausible &= changes[HEADER_SIZE - 1 : HEADER_SIZE - 1 + n] != changes[:n]",
           "ReplaceBinaryOperator_Sub_Add"] = "it then leaves out only fourteen equal bytes: fewer, never a header"  # fmt: skip
EQUIVALENT["salvage", "plausible = b[top - 1 : top - 1 + n] <= (max_record >> (8 * (top - 1)))",
           "ReplaceBinaryOperator_RShift_LShift"] = (
    "a larger bound for the length's top byte lets more offsets through, which the exact limit then drops"
)  # fmt: skip
EQUIVALENT["salvage", "if n <= 0 or window.count(window[:1]) == len(window):", "ReplaceComparisonOperator_LtE_Lt"] = (
    "at n == 0 (eleven bytes) the search goes on over no offsets and finds none"
)
EQUIVALENT["salvage", "if room > 0 and stop > self.base:", "ReplaceComparisonOperator_Gt_GtE"] = (
    "room == 0 or stop == base adds buf[:0]: nothing"
)
for _line in (
    "xy = np.array(polygon, np.float64).reshape(-1, 2)",
    "flat = (np.asarray(mask).T.reshape(-1) != 0).astype(np.int8)",
):
    EQUIVALENT["coco_rle", _line, "ReplaceUnaryOperator_USub_Invert"] = (
        "-1 becomes -2: numpy infers the size of any negative dimension"
    )
# png_check: bounds that a later check enforces as well
_PNG_DIMENSIONS = "if not (0 < width < 1 << 31 and 0 < height < 1 << 31) or width * height > max_pixels:"
for _operator in ("NumberReplacer", "ReplaceComparisonOperator_Lt_LtE"):
    EQUIVALENT["png_check", _PNG_DIMENSIONS, _operator] = (
        "the upper bound moved (2^30, 2^32 or 2^31 itself): a width or height anywhere near it makes more rows "
        "than the 16 MiB the check holds, which leaves the file to Pillow all the same (the lower bounds' "
        "mutants are caught)"
    )
for _operator in ("NumberReplacer", "ReplaceComparisonOperator_Lt_LtE"):
    EQUIVALENT["png_check", "if not data.startswith(_SIGNATURE) or len(data) < 8 + _IHDR_CHUNK_SIZE:", _operator] = (
        "a file of the signature and header alone (33 bytes) is refused a few lines on, no chunk following "
        "(a bound below 33 reads past the end, and is caught)"
    )
EQUIVALENT["png_check", "if pos + 12 > len(data):", "NumberReplacer"] = (
    "11: a chunk one byte short of its CRC is refused by the next check, `end + 4 > len(data)` (13 is caught)"
)
_PNG_INFLATE = "rows += inflater.decompress(memoryview(data)[pos + 8 : end], expected + 1 - len(rows))"
for _operator in ("ReplaceBinaryOperator_Sub_Add", "NumberReplacer"):
    EQUIVALENT["png_check", _PNG_INFLATE, _operator] = (
        "a larger bound on what one IDAT inflates to (or none: 0): rows past the declared ones still come out "
        "and are refused by the next line (the offset of the chunk's data is caught)"
    )
EQUIVALENT["png_check", "if len(rows) > expected or inflater.unconsumed_tail:", "ReplaceOrWithAnd"] = (
    "more rows than declared are then refused after the last chunk instead, by `len(rows) != expected`"
)
for _operator in ("ReplaceUnaryOperator_Delete_USub", "ReplaceUnaryOperator_USub_Invert",
                  "ReplaceUnaryOperator_USub_Not", "ReplaceUnaryOperator_USub_UAdd"):  # fmt: skip
    EQUIVALENT["jpeg_check", "last = max((i for i, c in enumerate(counts) if c), default=-1)", _operator] = (
        "the default is taken only when every count is 0: the loop then checks counts of 0, which never fail"
    )
EQUIVALENT[
    "jpeg_check",
    'pairs = [np.frombuffer(data, "<u2", (n - k) // 2, start + k) for k in (0, 1)]',
    "ReplaceBinaryOperator_Sub_Add",
] = "one pair more at odd offsets, the last one ending on the EOI's 0xFF: (x, 0xFF) is neither 0xFF00 nor RSTn, never counted"
EQUIVALENT[
    "jpeg_check",
    "def scan_end(data: bytes, start: int, last_scan: bool = False) -> int | None:",
    "ReplaceFalseWithTrue",
] = (
    "the flag only says whether counting is tried before the search, whose answer is the same "
    "(test_the_scan_end_found_by_counting_is_where_the_search_finds_it); the one caller passes it"
)
EQUIVALENT["jpeg_check", "if len(segment) < 6:", "ReplaceComparisonOperator_Lt_LtE"] = (
    "a frame header of exactly 6 bytes holds a component count and no component: _components refuses it"
)
# grouping: how many threads hash, in what chunks: pool.map keeps the order
for _operator in ("ReplaceOrWithAnd", "NumberReplacer"):
    EQUIVALENT["grouping", "with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:", _operator] = (
        "how many threads read and hash: pool.map gives the fingerprints in index order with any number"
    )
EQUIVALENT["grouping", "prints = list(pool.map(fingerprint, range(n), chunksize=64))", "NumberReplacer"] = (
    "chunksize is ignored by a thread pool's map (it matters to process pools only)"
)
EQUIVALENT["grouping", "for key, name in zip(keys, names, strict=True):", "ReplaceTrueWithFalse"] = (
    "keys are computed for the names given, one each: the two lists never differ in length"
)
EQUIVALENT["journal", 'while (end := data.find(b"\\n", at)) >= 0:', "ReplaceComparisonOperator_GtE_Gt"] = (
    "a newline at offset 0 is an empty first line, which json refuses: reading stops there either way"
)
EQUIVALENT["journal", "return [jsonable(v) for v in value] if isinstance(value, tuple) else value", "AddNot"] = (
    "observations are tuples, and json writes a tuple (and the tuples in it) as lists: converting them "
    "first or not gives the same line"
)
for _line in ("first = json.dumps(head, sort_keys=True)", "text = json.dumps(line, sort_keys=True)"):
    EQUIVALENT["journal", _line, "ReplaceTrueWithFalse"] = (
        "the order of keys in a journal line: lines are read back into dicts and compared as dicts"
    )
EQUIVALENT["journal", "break", "ReplaceBreakWithContinue"] = (
    "after a gap every later line's number is off by one or more: each is skipped too, as break leaves them"
)
EQUIVALENT["journal", "self._next = 0  # remote: the number of the next line's object", "NumberReplacer"] = (
    "open() sets it before any line is appended"
)
for _line in (
    "parts = min(workers, len(items) // STATS_PER_PROCESS)",
    "parts = min(workers, sum(map(len, plan.values())) // DIGEST_ITEMS_PER_PROCESS)",
):
    EQUIVALENT["resume", _line, "ReplaceBinaryOperator_FloorDiv_Mul"] = (
        "forked parts even for a few items: the same bytes, computed in parts (test_plan_digest holds any number of parts "
        "to one answer; `/`, a fraction of a part, is caught)"
    )
for _operator in ("ReplaceComparisonOperator_Gt_GtE", "NumberReplacer"):
    EQUIVALENT[
        "resume", "more = [converter.item_files(item)[1:] for item in items] if len(roots) > 1 else []", _operator
    ] = (
        "a converter of one root gives no file past its first (item_files[1:] is empty for every item): `any(more)` "
        "is false and the first root's files are the answer either way; only the empty tuples are made"
    )
# resume: sizes that shape how the work is split, not what it gives
for _line, _why in (
    ("STATS_PER_PROCESS = 4096", "files stat'ed per forked process"),
    ("DIGEST_ITEMS_PER_PROCESS = 200_000", "items hashed per forked process"),
):
    EQUIVALENT["resume", _line, "NumberReplacer"] = f"{_why}: the parts join into the same bytes"
EQUIVALENT["resume", "PLAN_BLOCK = 4096  # items per block of the plan's digest", "NumberReplacer"] = (
    "blocks of another size give another digest, the same for the same plan: a journal is only compared "
    "with a run of the same tool, and any one item still changes it (test_plan_digest)"
)
EQUIVALENT["resume", "if not roots or not firsts or converter.item_file(firsts[0]) is None:", "NumberReplacer"] = (
    "the first item of the last split instead of the first's: a converter's items are all files or none"
)
for _operator in ("ExceptionReplacer", "ReplaceFalseWithTrue"):
    for _line in ("except (RecordError, OSError):", "return False"):
        EQUIVALENT["resume", _line, _operator] = (
            "reached only for a file whose size and sha256 are the journal's: one the run wrote whole, which "
            "reads, so its count never fails"
        )
# header_candidates, more: where a mutant only widens the prefilter (the CRC and the exact
# limit decide after it), or drops a byte that is zero in every length below 2^56
for _line, _operators, _why in (
    ("if n <= 0 or window.count(window[:1]) == len(window):", ("NumberReplacer", "ReplaceOrWithAnd"),
     "the shortcut for windows of one repeated byte, or of too few bytes for a record, fires less often or "
     "never (a 12-byte window cannot hold a record either): the search decides the same"),
    ("top = max(1, (max_record.bit_length() + 7) // 8)  # bytes of the length that may be nonzero",
     ("NumberReplacer",), "a larger `top` lets more lengths through the prefilter (a smaller one is caught)"),
    ("plausible = b[top - 1 : top - 1 + n] <= (max_record >> (8 * (top - 1)))", ("NumberReplacer",),
     "a looser bound on the length's top byte (a tighter one is caught)"),
    ("for k in range(top, 8):", ("NumberReplacer", "ZeroIterationForLoop"),
     "fewer high bytes held to zero: more lengths through the prefilter (byte 8, the CRC's, is caught)"),
    ("plausible &= changes[HEADER_SIZE - 1 : HEADER_SIZE - 1 + n] != changes[:n]", ("NumberReplacer",),
     "runs of 11 equal bytes instead of 12 are never a header either (no length below 256 has a masked "
     "CRC whose low two bytes are 0, and equal nonzero high bytes are a length past any limit); 13 leaves "
     "out fewer"),
    ("for k in range(8):", ("NumberReplacer",),
     "7 leaves out the length's top byte, zero in every length the prefilter lets through (9 is caught)"),
    ('lengths = [int.from_bytes(window[i : i + 8], "little") for i in candidates.tolist()]', ("NumberReplacer",),
     "7 bytes read the same length: the top byte is zero in every length the prefilter lets through"),
    ("if room > 0 and stop > self.base:", ("NumberReplacer", "ReplaceAndWithOr"),
     "the search has read a window past the loss before it is kept, so the cap is reached in one step: room "
     "is never 1, and stop is never below base"),
    ("chunk = z.unused_data or self.raw.read(1 << 16)", ("NumberReplacer",),
     "how much compressed data is read at a time after a gzip member ends: any positive amount (0 is caught)"),
):  # fmt: skip
    for _operator in _operators:
        EQUIVALENT["salvage", _line, _operator] = _why
for _operator in (
    "ReplaceUnaryOperator_USub_Invert",
    "ReplaceUnaryOperator_USub_Not",
    "ReplaceUnaryOperator_USub_UAdd",
    "ReplaceUnaryOperator_Delete_USub",
):
    EQUIVALENT["commit", "at_fdcwd, rename_exchange = -100, 2", _operator] = (
        "renameat2 ignores the directory descriptor for an absolute path, and both paths are (realpath)"
    )
for _line, _operators, _why in (
    ("self._batch = at.batch - 1  # the last batch written (none yet)", ("ReplaceBinaryOperator_Sub_Add", "NumberReplacer"),
     "read only where a shard closes after a chunk (skips, the split's end), and a shard is open only once "
     "write_chunk ran, which sets it"),
    ("*,", ("ReplaceBinaryOperator_Mul_Div",),
     "`/` instead of `*` in the signature: the parameters after it may then be given by position too, and "
     "every caller names them"),
    ("closes = n > 0 and self.written + self.skipped >= self.total and self.shard_records > 0",
     ("ReplaceComparisonOperator_Gt_GtE", "NumberReplacer"),
     "`n >= 0` (or `> -1`): skipping nothing never ends a split with a shard open, since the cut or skip that "
     "reached the end closed it (the shard-records variants are caught)"),
    ("@dataclass(frozen=True)", ("ReplaceTrueWithFalse",),
     "nothing assigns to a policy or hashes one; it is compared and pickled, which a plain dataclass does alike"),
    ("batch: int = 0", ("NumberReplacer",),
     "a fresh split from batch -1: the batches are cut from item -size to 0 first (an empty batch, numbered "
     "-1), then from 0 numbered 0 on, as from batch 0 (batch 1 is caught)"),
    ("needed = max(needed, 1)", ("NumberReplacer",),
     "every policy's count is already at least 1 (an open shard is below its count, a split not at its end "
     "has records to come, and the size search starts at the first record), so a floor of 0 changes nothing "
     "(2 is caught)"),
    ("self.shard_records, self.shard_bytes = 0, 0", ("NumberReplacer",),
     "the counters reset where skips close the split's last shard: the split is complete, nothing is cut "
     "after it, and only cut reads them"),
):  # fmt: skip
    for _operator in _operators:
        EQUIVALENT["shards", _line, _operator] = _why
# The Example codec: caches and ready-made encodings, whose bounds decide only how often
# the general route is taken; the tests hold both routes to TensorFlow's bytes
_CACHES = "a cache's bound or condition: fewer or more entries cached, the same bytes written"
for _line, _operators, _why in (
    ("yield number, wire, (pos, pos + width)", ("ReplaceBinaryOperator_Add_Sub",),
     "the end of a fixed-width field's span is never read: a float is read from its start, and other "
     "fixed fields are unknown ones, passed over"),
    ("_ENTRIES_MAX = 1 << 16", ("ReplaceBinaryOperator_LShift_RShift", "NumberReplacer"), _CACHES),
    ("if len(_KEY_CACHE) < 4096:", ("ReplaceComparisonOperator_Lt_LtE", "ReplaceComparisonOperator_Lt_GtE", "AddNot",
                                    "NumberReplacer"), _CACHES),
    ("if len(_ENTRIES) < _ENTRIES_MAX:", ("ReplaceComparisonOperator_Lt_LtE", "ReplaceComparisonOperator_Lt_GtE",
                                          "AddNot"), _CACHES),
    ("cached = _KEY_CACHE.get(name) if isinstance(name, str) else None", ("AddNot",),
     "a name is then computed afresh instead of looked up (and a name that is no string is refused all the "
     "same, after the look-up finds nothing)"),
    ("if (kind is int or (kind is str and len(value) <= _SHORT)) and type(name) is str:",
     ("ReplaceComparisonOperator_LtE_Lt", "ReplaceComparisonOperator_LtE_Gt", "ReplaceOrWithAnd",
      "ReplaceComparisonOperator_Is_IsNot"),
     "which entries are cached: strings of other lengths, or none (`type(name) is not str`); caching a value "
     "alike as a key to another kind's is caught (test_values_alike_as_keys...)"),
    ("_SHORT = 8", ("NumberReplacer",), _CACHES),
    ("if pos < stop:  # the rest only counted", ("ReplaceComparisonOperator_Lt_LtE",),
     "at pos == stop nothing is left to count: the last varint ended below stop, and zero more are counted"),
    ("if kind is int and 0 <= value <= _INT64_MAX:", ("ReplaceComparisonOperator_LtE_Lt", "NumberReplacer"),
     "0 or the int64 maximum through classify() instead: the same bytes (a negative through the fast path "
     "is caught)"),
    ("if value < 128:", ("NumberReplacer",), "127 through the varint instead of the ready-made feature: the same bytes"),
    ('_SMALL_INT_FEATURES = [b"\\x1a\\x03\\x0a\\x01" + bytes([i]) for i in range(128)]', ("NumberReplacer",),
     "a longer table: entry 128 is never looked up (value < 128 decides)"),
    ("if type(value) is bytes and len(value) >= _LARGE:", ("ReplaceComparisonOperator_GtE_Gt",),
     "a value of exactly _LARGE bytes framed inline instead of as a part of its own: the same bytes"),
    ("_LARGE = 256", ("NumberReplacer",), "where a bytes value becomes a part of its own: the same bytes joined"),
    ("if shift >= 70:", ("NumberReplacer",), "shift grows by 7: >= 69 stops at the same byte (71 is caught)"),
    ("return (1 << 62) if keep is None else keep - len(values)", ("NumberReplacer",),
     "with no `keep`, room for any count above what a record can hold (0 is caught)"),
    ('values.append(struct.unpack_from("<f", buf, value[0])[0])', ("NumberReplacer",),
     "[-1] of unpack_from's one-value tuple is its [0]"),
    ('values.extend(struct.unpack_from(f"<{max(0, min(n, room()))}f", buf, a))', ("NumberReplacer",),
     "room() is never negative (values are added only up to it), so a floor of -1 changes nothing (1 is caught)"),
    ('name, value, plain = "", (0, 0), True', ("NumberReplacer",),
     "another empty span for an entry without a value, (1, 0), (-1, 0) or (0, -1): nothing is read from it "
     "either ((0, 1) is caught)"),
):  # fmt: skip
    for _operator in _operators:
        EQUIVALENT["example", _line, _operator] = _why
# The JPEG check: a bound whose loosened form only lets an index or an unpack past the
# data, which the IndexError / struct.error handler around the walk turns into the same
# None; and caches
_BACKED = "a looser bound: the index or unpack past the data it let through fails, and the handler answers None alike"
for _line, _operators, _why in (
    ("except (struct.error, IndexError):  # a segment that claims more than the file holds", ("ExceptionReplacer",),
     "every index is checked against the data's length before it is read: the handler only backs those checks "
     "up (their loosened forms are the mutants it catches)"),
    ("if pos + 2 > end or data[pos] != 0xFF:", ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub"), _BACKED),
    ("if pos + 2 > end:", ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub"), _BACKED),
    ("if ifd < 8 or ifd + 2 > len(tiff):", ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub"), _BACKED),
    ("if ifd + 2 + 12 * entries > len(tiff):", ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub",
                                               "ReplaceBinaryOperator_Mul_Div"), _BACKED),
    ("if frame is None or not scans or (frame[0] in _SEQUENTIAL and scans != 1):", ("ReplaceOrWithAnd",),
     "`frame is None and not scans`: a scan is counted only after a frame, so no frame means no scans"),
    ("length = _U16.unpack_from(data, pos + 2)[0]", ("NumberReplacer",), "[-1] of unpack_from's one-value tuple"),
    ("if length < 2 or after > end:", ("NumberReplacer", "ReplaceComparisonOperator_Gt_GtE", "ReplaceOrWithAnd"),
     "a length of 0 or 1 puts the next marker inside the length field, whose low byte (0 or 1) is no 0xFF: "
     "the walk stops there; and a segment ending at the file's end leaves no room for EOI, refused next"),
    ("return (width, height), len(comps), orientation if orientation in range(1, 9) else 1", ("NumberReplacer",),
     "range(2, 9): orientation 1 becomes the default 1"),
    ("@functools.lru_cache(maxsize=256)", ("NumberReplacer", "RemoveDecorator"),
     "a cache of checked headers: another size or none checks them again, alike"),
    ("if kind > 1 or table > 3 or at + 17 > len(segment):", ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub"),
     "a table short of its 16 counts: the counts read are fewer, and the check of the symbols' length after "
     "them refuses it"),
    ("last = max((i for i, c in enumerate(counts) if c), default=-1)", ("NumberReplacer",),
     "with no codes at all, one round (or none) over zero counts refuses nothing"),
    ("if len(segment) < 6:", ("NumberReplacer",),
     "a frame header of 5 or 6 bytes is refused either way: the components' count or its unpacking fails"),
    ("spectral_start, spectral_end, approximation = segment[1 + 2 * count : 4 + 2 * count]", ("NumberReplacer",),
     "the slice's end past the segment's is clipped to it: len(segment) == 4 + 2 * count was checked"),
    ("limit = 1 if kind == 0xC0 else 3", ("NumberReplacer",), "no Huffman table above 3 is ever defined (_dht)"),
    ("if not dc_band and (spectral_start > spectral_end or spectral_end > 63 or count != 1):",
     ("ReplaceComparisonOperator_Gt_GtE",),
     "refuses more (a band of one coefficient, which libjpeg's scripts never write): such a file goes to "
     "Pillow's full decode, which writes the same shards (test_keep_mode_writes_the_same_shards...), slower"),
    ("return high > 0 or all((0, dc) in huffman for dc, _ in tables)", ("NumberReplacer",),
     "a DC refinement scan follows the first DC scan, which needed the same tables, and tables are never "
     "undefined"),
    ("return 1", ("NumberReplacer",), "0 is no orientation either: the caller answers 1 for it"),
    ("if len(tiff) < 8:", ("NumberReplacer", "ReplaceComparisonOperator_Lt_LtE"),
     "a TIFF of 7 or 8 bytes holds no IFD: its pointer fails to unpack, or the IFD check refuses it"),
):  # fmt: skip
    for _operator in _operators:
        EQUIVALENT["jpeg_check", _line, _operator] = _why
# Which int arrays the serializer packs with numpy: both routes write the same varints
# (the tests hold each, either side of the threshold, to TensorFlow's bytes)
for _line, _operators in (
    ("PACK_WITH_NUMPY = 32", ("NumberReplacer",)),
    (
        "if isinstance(values, np.ndarray) and len(values) >= PACK_WITH_NUMPY:",
        ("ReplaceComparisonOperator_GtE_Lt", "ReplaceComparisonOperator_GtE_Gt"),
    ),
):
    for _operator in _operators:
        EQUIVALENT["example", _line, _operator] = (
            "another threshold for packing int arrays with numpy: both routes write the same varints"
        )
_IN_THE_SERIALIZER = {
    "v = values.astype(np.uint64, copy=False)",
    "top = int(v.max()) if m else 0",
    "if width == 1:  # every value below 128 (lengths, small ints): each is its own byte",
}
# The columnar serializer: shortcuts and views whose other forms take the general route,
# which writes the same bytes (the tests hold every row to example.serialize)
for _line, _operators, _why in (
    ("@dataclass(frozen=True)", ("ReplaceTrueWithFalse",), "nothing assigns to a column or hashes one"),
    ("v = values.astype(np.uint64, copy=False)", ("ReplaceFalseWithTrue",), "a copy instead of a view: the same values"),
    ("groups, widths = varints(column.values.astype(np.int64, copy=False).view(np.uint64))", ("ReplaceFalseWithTrue",),
     "a copy instead of a view: the same values"),
    ("top = int(v.max()) if m else 0", ("NumberReplacer",), "with no values the width is max(1, ...) = 1 whichever"),
    ("top = int(n.max()) if len(n) else 0", ("NumberReplacer",), "with no lengths there is nothing to widen"),
    ("if width == 1:  # every value below 128 (lengths, small ints): each is its own byte", ("NumberReplacer",),
     "width is never 0: the shortcut is never taken, and the general route writes the same one-byte varints"),
    ("for k in range(1, 10):", ("NumberReplacer",),
     "one step more (2**70) or less (2**63): no length reaches either"),
    ("if top < 1 << (7 * k):", ("ReplaceBinaryOperator_LShift_RShift", "NumberReplacer"),
     "the loop ends early once every length is below the next step; ending it later, or never, adds zeros"),
    ("break", ("ReplaceBreakWithContinue",),
     "the loop ends early once every length is below the next step; going on adds zeros"),
    ("if block.shape[1]:", ("NumberReplacer",),
     "[-1] is [1]; [0] (the rows) also writes a block of no bytes, which places nothing"),
    ("if len(rows) and len(data):", ("ReplaceAndWithOr",), "placing nothing, or nothing anywhere, places nothing"),
    ("if width <= head + tail:", ("ReplaceBinaryOperator_Add_Sub", "ReplaceComparisonOperator_LtE_Lt"),
     "a stricter test: a matrix the margins would hold is placed byte by byte instead, which writes the same bytes "
     "(margins one byte short of a matrix are caught)"),
    ("_MAX_VARINT = 10  # bytes of the longest varint (2**64 - 1): the widest matrix of varints", ("NumberReplacer",),
     "11 bytes of room past the last row where a varint's padding reaches 10 at most: a byte never written "
     "(9 is caught)"),
    ("width = int(lengths[0]) if self.n else 0", ("NumberReplacer",),
     "another row's length: alike in every row where the run is fused (the test after it says where not); "
     "with no rows the first test decides"),
    ("if not self.n or (lengths != width).any():", ("ReplaceComparisonOperator_NotEq_Eq", "ReplaceUnaryOperator_Delete_Not",
                                                    "AddNot"),
     "every part then takes the unfused route (row 0's length always equals width; `not not self.n` holds with "
     "any rows), which writes the same bytes (`not` before the whole test is caught)"),
    ("rows = max(len(out) - width + 1, 0)", ("ReplaceBinaryOperator_Sub_Add", "NumberReplacer"),
     "a view with more rows than can start a run: only rows where a run starts are written, all inside the data"),
):  # fmt: skip
    for _operator in _operators:
        # varints is varints.py's (the one serializer packs long int lists with it too)
        _module = "varints" if _line in _IN_THE_SERIALIZER else "example_columns"
        EQUIVALENT[_module, _line, _operator] = _why
EQUIVALENT["commit", "for entry in os.listdir(self.build):", "ZeroIterationForLoop"] = (
    "keep_only clears a resumed run's build of what it does not keep, and every such file is one the resumed "
    "run writes again under the same name before its commit (a shard's temporary is named by its split and "
    "number, a metadata file's by its name; resume is the local engine's only): overwritten, never swapped in"
)
EQUIVALENT["commit", "shutil.rmtree(path, ignore_errors=True)", "ReplaceTrueWithFalse"] = (
    "differs only where a leftover cannot be removed, which cannot happen here (the tests run as root, and a "
    "folder of the work is the run's own): not observable on this machine, so left explained, not tested"
)
EQUIVALENT[
    "commit", "os.link(source, os.path.join(self.build, entry), follow_symlinks=False)", "ReplaceFalseWithTrue"
] = (
    "with no dir_fd, os.link(follow_symlinks=True) calls link(2), which on Linux links a symlink itself, as "
    "linkat without AT_SYMLINK_FOLLOW does (test_overwrite_replaces_only... checks a user's symlink stays one)"
)
EQUIVALENT["remote_commit", "if partial and not resume:", "AddNot"] = (
    "an interrupted run's work left in place when the next one starts over: the commit copies only this run's "
    "shards, by the names in its record, and removes new/ and the journal after; a resume of the new run "
    "keeps none of the old one's (test_an_overwrite_on_s3_after_an_interrupted_run...)"
)
EQUIVALENT["remote_commit", "return False  # gone since it was journaled", "ReplaceFalseWithTrue"] = (
    "a journaled object that is gone taken as whole: the record count read right after (resume's _holds) "
    "fails on it, so it is written again (a size that differs is caught: test_resume_on_s3_refuses_a_shard...)"
)
EQUIVALENT["remote_commit", "while block := f.read(8 << 20):", "NumberReplacer"] = (
    "how much of a shard is read at a time to hash it: any positive amount, the same digest"
)
EQUIVALENT[
    "remote_commit",
    "old = dataset_files(self.path) - {WORK_FOLDER} if self.overwrite and fs.isdir(self.path) else set()",
    "ReplaceAndWithOr",
] = (
    "without --overwrite DIR holds no dataset (a run into a non-empty DIR is refused at its start), and with "
    "it but no DIR there are no files to list: the old dataset's files are none either way"
)
EQUIVALENT[
    "shards",
    "if w >= total or (total - w) * (split_bytes + cumulative[j]) / w >= target:",
    "ReplaceComparisonOperator_GtE_Gt",
] = (
    "`w > total` for the split's last record: the estimate of what follows is 0 and the search ends without "
    "a close, so needed falls back to to_end, the same count (the estimate's own >= is caught)"
)
EQUIVALENT["remote_commit", "@staticmethod", "RemoveDecorator"] = (
    "claim is only called on the class (RemoteOutput.claim(path)): a plain function called so takes path alike"
)
EQUIVALENT["coco_rle", "if len(polygon) < 6 or len(polygon) % 2:", "NumberReplacer"] = (
    "`< 5`: the one count it lets through, 5, is odd and refused by the other test (4 and 7 numbers are caught)"
)
for _line in (
    "xy = np.array(polygon, np.float64).reshape(-1, 2)",
    "flat = (np.asarray(mask).T.reshape(-1) != 0).astype(np.int8)",
):
    EQUIVALENT["coco_rle", _line, "NumberReplacer"] = "-1 becomes -2: numpy infers the size of any negative dimension"
EQUIVALENT[
    "coco_rle", "u, v = np.concatenate((previous[0], u)), np.concatenate((previous[1], v))", "NumberReplacer"
] = (
    "the point carried over is the chunk's first point but where a vertex lies left of the image (the "
    "rounding of a negative x), so the pair it makes crosses a column only there, and a crossing left of "
    "the image is left out: which of its coordinates stands for its row cannot matter (a traced count of "
    "14,859 chunk joins found 1,802 such pairs, none right of x = 0)"
)
EQUIVALENT[
    "coco_rle", "(high[:, 1] - low[:, 1]) / np.maximum(dx, 1),  # a repeated vertex: one point", "NumberReplacer"
] = (
    "`np.maximum(dx, 0)`: dx is 0 along x only at a repeated vertex, whose one point (with a row of NaN) has "
    "the x of its neighbours, so no crossing reads its row (`np.maximum(dx, 2)` is caught)"
)
EQUIVALENT["coco_rle", "(high[:, 0] - low[:, 0]) / np.maximum(dy, 1),", "NumberReplacer"] = (
    "an edge is traced along y only when dy > dx >= 0: dy is 1 or more, and at 1 dx is 0, a slope of 0 "
    "divided by 1 or 2 alike (where the edge runs along x this quotient is computed and not used)"
)
EQUIVALENT["coco_rle", "keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)", "NumberReplacer"] = (
    "a crossing at column width lands at x * height + y >= height * width, which the last line of _toggles leaves out"
)
EQUIVALENT["journal", 'while (end := data.find(b"\\n", at)) >= 0:', "NumberReplacer"] = (
    "`>= 1` differs only for a newline at byte 0, an empty first line, where json.loads fails and reading "
    "stops either way; `>= -1` goes on once past the last newline, with the rest less its last byte: a "
    "strict prefix of a JSON object (every line is one) that json.loads refuses, so reading stops there too"
)
EQUIVALENT[
    "journal", 'self._writer = ThreadPoolExecutor(1, thread_name_prefix="tfr-convert-journal")', "NumberReplacer"
] = (
    "each line is its own object, named by its number: written two at a time they may land out of order, and "
    "a kill between them leaves a gap, after which the reader believes nothing; what follows is redone, "
    "the output the same"
)
EQUIVALENT["resume", "digest, at = hashlib.sha256(), 0", "NumberReplacer"] = (
    "the splits' slices start a byte into the block digests: every byte but the first block's first still "
    "enters the digest, in the plan's order, and a changed item changes all 32 bytes of its block's sha256"
)
EQUIVALENT[
    "resume", "size = 32 * -(-len(items) // PLAN_BLOCK)  # a sha256 per block, the last one short", "NumberReplacer"
] = (
    "31 or 33 bytes a block: the splits' slices shift by a byte a block, every block digest's bytes (but at "
    "most the very last) still enter the digest in the plan's order, and a changed item changes all 32 bytes "
    "of its block's sha256 (the slices' bounds themselves: caught, test_plan_digest)"
)
EQUIVALENT["commit", "for _ in range(20):", "NumberReplacer"] = (
    "19 or 21 tries at a lock file that keeps being replaced before giving up: a bound, reached only when "
    "another run unlinks it that many times in a row"
)
EQUIVALENT[
    "commit", 'holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"', "NumberReplacer"
] = "31 or 33 bytes read of a file holding a pid and a newline: at most 8 bytes on Linux (pid_max <= 2^22)"
EQUIVALENT["commit", "os.ftruncate(fd, 0)", "NumberReplacer"] = (
    "cut to 1 byte instead of 0: the pid's text (two bytes at least) is then written over it from byte 0"
)
EQUIVALENT["resume", "data = marshal.dumps(block, 2)", "NumberReplacer"] = (
    "version 1 differs from 2 only in writing floats as text: equal values still give equal bytes (version 3, "
    "which shares repeated objects, is caught)"
)
EQUIVALENT["commit", "at_fdcwd, rename_exchange = -100, 2", "NumberReplacer"] = (
    "-101 or -99 for AT_FDCWD: renameat2 ignores the directory descriptor for an absolute path, and both are (realpath)"
)
# varints.py's table of small varints (raw audio's samples): which of two paths that
# give the same bytes a long int64 list takes, decided by its length and its range
_PATH = "a choice of path: the table and the computed varints give the same bytes (test_example holds both to "
_PATH += "TensorFlow's), so a list packed by the other one, or a table of another range, writes the same list"
for _line, _operators in (
    ("_SMALL_RANGE = 1 << 15", ("ReplaceBinaryOperator_LShift_RShift", "NumberReplacer")),
    (
        "_SMALL_RANGE_AT = 256  # fewer values than this: the table's passes cost more than they save",
        ("NumberReplacer",),
    ),
    (
        "if len(signed) < _SMALL_RANGE_AT:",
        ("ReplaceComparisonOperator_Lt_LtE", "ReplaceComparisonOperator_Lt_GtE", "AddNot"),
    ),
    (
        "return -_SMALL_RANGE <= int(signed.min()) and int(signed.max()) < _SMALL_RANGE",
        ("ReplaceComparisonOperator_LtE_Lt", "ReplaceUnaryOperator_USub_UAdd", "ReplaceUnaryOperator_Delete_USub"),
    ),
):
    for _operator in _operators:
        EQUIVALENT["varints", _line, _operator] = _PATH
EQUIVALENT["varints", "signed = values.astype(np.int64, copy=False)", "ReplaceFalseWithTrue"] = (
    "a copy of the values instead of the array itself: read only, the same bytes"
)
EQUIVALENT["varints", "table[:, : groups.shape[1]] = groups", "NumberReplacer"] = (
    "shape[0] (65,536) for shape[1] (10): a slice past the table's 10 columns stops at its last, the same columns"
)
EQUIVALENT["splits", "for _, members in sorted(strata, key=lambda g: repr(g[0])):", "NumberReplacer"] = (
    "the strata of a table's rows are taken in another order: each is ranked on its own and every split's rows "
    "are sorted at the end, so the order they are taken in changes no split"
)
EQUIVALENT["rows", "ends = sorted((rows[0], rows[-1])) if rows else (0, 0)", "NumberReplacer"] = (
    "the bounds said of an empty range: it holds no value, and -1, 0 or 1 fit int32 alike, so the same empty array"
)
# The coded group split (a table's --group-column): as the list path's explanations say
_PLACE = "split = max(range(len(names)), key=lambda i: (targets[i] - placed[i], -i))"
EQUIVALENT["splits", _PLACE, "ReplaceUnaryOperator_USub_Invert"] = (
    "~i is -i - 1: ties go to the split named first all the same"
)
EQUIVALENT["splits", _PLACE, "ReplaceUnaryOperator_USub_Not"] = (
    "not i: the first split wins a tie with any other (True against False), and among the others max keeps the "
    "first of equal keys, the one named first: the split -i picks"
)
EQUIVALENT["splits", "order = present[np.lexsort((ranks.astype(np.uint64), -sizes[present]))]",
           "ReplaceUnaryOperator_USub_Invert"] = "~n is -n - 1: the groups sort in the same order, largest first"  # fmt: skip
EQUIVALENT["splits", "for code, size in zip(block.tolist(), sizes[block].tolist(), strict=True):",
           "ReplaceTrueWithFalse"] = "zip(strict=False): both lists are taken by one index array, one length"  # fmt: skip
EQUIVALENT["splits", "placed = [0] * len(names)", "NumberReplacer"] = (
    "every split starts from the same count, 1 or -1 for 0: the differences that place the groups are unchanged"
)
# varints.py's ready-made small varints
for _operator in ("ReplaceComparisonOperator_LtE_Lt", "ReplaceComparisonOperator_LtE_Gt", "NumberReplacer"):
    EQUIVALENT["varints", "if 0 <= n < 16384:", _operator] = (
        "a value left to the encoding loop instead of the table gets the same bytes, and n is never negative "
        "(a table index past it is caught)"
    )
EQUIVALENT[
    "varints",
    "_SMALL_VARINTS = [bytes([i]) if i < 128 else bytes([(i & 0x7F) | 0x80, i >> 7]) for i in range(1 << 14)]",
    "NumberReplacer",
] = "a longer table: its entries past 16383 are never looked up (n < 16384 decides)"
for _module, _line in (
    ("rows", "return [by_code[end - size : end] for end, size in zip(ends.tolist(), sizes.tolist(), strict=True)]"),
    ("splits", "strata = list(zip(codes, positions_by_code(coded, len(codes)), strict=True))"),
):
    EQUIVALENT[_module, _line, "ReplaceTrueWithFalse"] = (
        "zip(strict=False): one entry per code on both sides (bincount's minlength is the code count, and no "
        "code reaches it)"
    )
# rows.py and the array paths of splits.py: a width, a threshold or a path picked differently
EQUIVALENT["rows", "if TYPE_CHECKING:", "AddNot"] = (
    "numpy is then imported with the module instead of at the first use: start-up time, no behaviour"
)
_WIDTH = (
    "the same positions in int64 instead of int32 (or int32 where they fit): memory, not values; only 2**31 "
    "rows, out of a test's reach, tell the bounds apart"
)
for _operator in ("AddNot", "NumberReplacer", "ReplaceBinaryOperator_Pow_Mul", "ReplaceComparisonOperator_Lt_GtE",
                  "ReplaceComparisonOperator_Lt_LtE"):  # fmt: skip
    EQUIVALENT["rows", "return np.int32 if n < 2**31 else np.int64", _operator] = _WIDTH
EQUIVALENT[
    "splits",
    "chosen[name].append((taken if members is None else members[taken]).astype(position, copy=False))",
    "ReplaceFalseWithTrue",
] = "a copy of the positions where they were already of that width: the same values"
_FEW = "which of two ways finds each code's positions: tests/system/test_seams.py holds both to np.flatnonzero, code by code"
EQUIVALENT["rows", "FEW_CODES = 16  # positions_by_code of this many codes at most: found code by code",
           "NumberReplacer"] = _FEW  # fmt: skip
for _operator in ("AddNot", "ReplaceComparisonOperator_LtE_Gt", "ReplaceComparisonOperator_LtE_Lt"):
    EQUIVALENT["rows", "if count <= FEW_CODES:  # a pass per code: no sort, whose index and workspace are 16 bytes a position",
               _operator] = _FEW  # fmt: skip
_TABLE = (
    "whether the groups x strata table is counted or the items are, one by one: tests/system/test_seams.py holds the "
    "two paths to the same splits; past the bound only memory differs"
)
EQUIVALENT["rows", "MAX_STRATUM_CELLS = 1 << 24  # groups x strata counted in one table at most (a few hundred MB past it)",
           "NumberReplacer"] = _TABLE  # fmt: skip
for _operator in ("ReplaceBinaryOperator_Mul_Div", "ReplaceComparisonOperator_Gt_GtE"):
    EQUIVALENT["rows", "if count * kinds > MAX_STRATUM_CELLS or (n and int(strata.min()) < 0):", _operator] = _TABLE
EQUIVALENT["rows", "kinds = int(strata.max()) + 1 if n else 1", "NumberReplacer"] = (
    "one stratum more than the items hold: a column of the table no item counts in, whose score (minus the "
    "item count) is below every counted one, so argmax never picks it"
)
for _operator in ("NumberReplacer", "ReplaceBinaryOperator_Add_Sub"):
    EQUIVALENT["rows", "return (counts * (n + 1) - first).reshape(count, kinds).argmax(axis=1)", _operator] = (
        "a count weighs n - 1, n or n + 2 instead of n + 1: any weight of n - 1 or more outranks the first "
        "positions of two strata whose counts differ by one (the larger holds two items, so it first appears "
        "at n - 2 at the latest), and a stratum no item holds stays below every one that some item does"
    )
_ARRAY_PATH = "elif isinstance(group, RowStrata) and (held := group.values[values]).min(initial=0) >= 0:"
for _operator in ("NumberReplacer", "ReplaceComparisonOperator_GtE_Gt"):
    EQUIVALENT["splits", _ARRAY_PATH, _operator] = (
        "rows whose strata an array holds go the per-row call's way instead: tests/system/test_seams.py holds the two "
        "to the same splits (only a negative stratum must take that way, and every test with one does)"
    )
EQUIVALENT["splits", "by_stratum = positions_by_code(held, int(held.max()) + 1 if n else 0)", "NumberReplacer"] = (
    "a code more than the strata (or one for no rows): its positions are empty, and empty strata are dropped"
)
