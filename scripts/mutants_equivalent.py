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
