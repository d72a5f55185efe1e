/* SPDX-License-Identifier: MIT */
/*
 * Where mkfs spends its time, stage by stage, for KILN_PROFILE=1 in the
 * environment. Main-thread stages are wall time; worker stages are summed
 * over the workers. Off (one branch per call) unless asked for.
 */
#ifndef KILN_PROFILE_H
#define KILN_PROFILE_H

#include <stdint.h>

enum kiln_prof_stage {
	KILN_PROF_WALK,		/* main: wait for directory scans; read a tar */
	KILN_PROF_LAYOUT,	/* main: xattr sharing, inode placement */
	KILN_PROF_QUEUE,	/* main: build and submit jobs */
	KILN_PROF_WAIT,		/* main: wait for the oldest job */
	KILN_PROF_PLACE,	/* main: write data, place compressed inodes */
	KILN_PROF_COPY,		/* main: copy uncompressed files */
	KILN_PROF_META,		/* main: directories, metadata, fsync */
	KILN_PROF_READ,		/* workers: open, read, check source files */
	KILN_PROF_COMPRESS,	/* workers: compress */
	KILN_PROF_FLAT,		/* workers: write uncompressed data */
	KILN_PROF_NR
};

void kiln_prof_init(void);
/* A start time for kiln_prof_add, or 0 when profiling is off. */
uint64_t kiln_prof_start(void);
/* Adds the time since start to stage; returns now, the next start. */
uint64_t kiln_prof_add(enum kiln_prof_stage stage, uint64_t start);
void kiln_prof_report(void);

#endif
