#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# nodetune-harness on corrupt data: a shard whose index, header or manifest
# lies is refused with exit 2 and one line naming the file, the chunk and
# the offset, before the lie sizes a read or an allocation.
. "$(dirname "$0")/lib.sh"
t_plan 7
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
H=$HARNESS
Q="--rows 1000 --warmup 0 --quiet --steps 2 --batch 256"
D=$T_TMP/data

# u64 FILE OFFSET: the little-endian 64-bit number at OFFSET
u64() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
# poke FILE OFFSET OCTAL-BYTES: overwrite bytes in place
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
# fresh DIR: a clean data set (20000 samples: shard 0 holds chunks 0..63)
fresh() {
	rm -rf "$D"
	"$H" --rows 1000 --write-data "$D" --samples 20000 --compress zstd 2>/dev/null ||
		t_not_ok "--write-data $D"
}

fresh
run "$H" $Q --data "$D"
check "the clean data set trains (exit $RC)" -- [ "$RC" -eq 0 ]

# chunk 7's length: 0xffffffff (the issue's case: it reached realloc)
S=$D/shard-00000.nts
IO=$(u64 "$S" 24)
C7=$(u64 "$S" $((IO + 7 * 16)))
poke "$S" $((IO + 7 * 16 + 8)) '\377\377\377\377\000\000\000\000'
expect_fail 2 "^nodetune-harness: rank 0: $S: offset $C7: chunk 7: length 4294967295 runs past the end of the file \(size $(wc -c <"$S")\)$" \
	"a chunk length beyond the file: exit 2, one line naming the shard, the chunk and its offset" -- "$H" $Q --data "$D"

# offset + length wrapping around 64 bits
fresh
poke "$S" $((IO + 7 * 16 + 8)) '\377\377\377\377\377\377\377\377'
expect_fail 2 "$S: offset $C7: chunk 7: length [0-9]+ overflows the offset$" \
	"offset + length overflowing: exit 2 naming the shard and chunk" -- "$H" $Q --data "$D"

# the index's own offset past the end of the file
fresh
poke "$S" 24 '\377\377\377\377\000\000\000\000'
expect_fail 2 "$S: offset 24: truncated: the chunk index \(64 entries at offset 4294967295\) runs past the end of the file" \
	"an index offset beyond the file: exit 2 naming the shard and the header field" -- "$H" $Q --data "$D"

# a manifest with a duplicate key, a giant line, garbage
fresh
echo "rows=1000" >>"$D/manifest"
expect_fail 2 "$D/manifest: line 9: duplicate key 'rows'" "a duplicate manifest key: exit 2" -- "$H" $Q --data "$D"
fresh
head -c 100000 /dev/zero | tr '\0' 7 >>"$D/manifest"
expect_fail 2 "$D/manifest: larger than any manifest" "a giant manifest: exit 2" -- "$H" $Q --data "$D"
printf 'format=nodetune-shards-1\nsamples=lots\n' >"$D/manifest"
expect_fail 2 "$D/manifest: line 2: samples 'lots': expected a whole number" "a non-numeric manifest value: exit 2" -- \
	"$H" $Q --data "$D"

t_done
