/* SPDX-License-Identifier: MIT */
/* wdiff A B — compare two raw float32 weight dumps (--dump-weights).
 * Prints the relative L2 difference ||a-b|| / ||a|| and the largest absolute
 * difference; exits 0 when the relative difference is below the limit given
 * as a third argument (default 1e-5), 1 when not, 2 on bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	FILE *fa, *fb;
	double num = 0, den = 0, maxabs = 0, limit = argc > 3 ? atof(argv[3]) : 1e-5, rel;
	long n = 0;
	float a, b;

	if (argc < 3 || !(fa = fopen(argv[1], "rb")) || !(fb = fopen(argv[2], "rb"))) {
		fprintf(stderr, "usage: wdiff A B [LIMIT]\n");
		return 2;
	}
	for (;;) {
		size_t ra = fread(&a, 4, 1, fa), rb = fread(&b, 4, 1, fb);

		if (ra != rb) {
			fprintf(stderr, "wdiff: %s and %s differ in length\n", argv[1], argv[2]);
			return 2;
		}
		if (!ra)
			break;
		num += ((double)a - b) * ((double)a - b);
		den += (double)a * a;
		if (fabs((double)a - b) > maxabs)
			maxabs = fabs((double)a - b);
		n++;
	}
	if (n == 0 || den == 0) {
		fprintf(stderr, "wdiff: empty weights\n");
		return 2;
	}
	rel = sqrt(num / den);
	printf("%ld weights, relative L2 difference %.3e, max abs difference %.3e (limit %.1e)\n", n, rel, maxabs, limit);
	return rel < limit ? 0 : 1;
}
