/* SPDX-License-Identifier: MIT */
/* main.c — nodetune-harness: the engine (engine.h) is the program. */
#include "engine.h"

int main(int argc, char **argv)
{
	return engine_main(argc, argv);
}
