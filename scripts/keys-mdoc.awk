# SPDX-License-Identifier: MIT
# keys-mdoc.awk -- `nodetune keys --markdown` (the knob table of
# agent/lib/machine/knob.c) as mdoc(7) for nodetune.conf(5): one .Ss per
# section, one .It per key with its values, scope, file and meaning.  The
# Makefile puts the result where the page's ".\" @KEYS@" line is.
BEGIN { FS = "|" }
function field(i,   s) { s = $i; gsub(/^ +| +$/, "", s); gsub(/`/, "", s); gsub(/\\/, "\\e", s); return s }
NF > 6 && $2 !~ /section/ && $2 !~ /---/ {
	sec = field(2); key = field(3); vals = field(4); scope = field(5); file = field(6); what = field(7)
	if (sec != "") {
		if (open) print ".El"
		print ".Ss [" sec "]"
		print ".Bl -tag -width Ds"
		open = 1
	}
	print ".It Cm " key
	print "\\&" what "."
	print "Values: " vals "; applies to: " scope "."
	if (file != "-") print "Writes \\&" file "."
}
END { if (open) print ".El" }
