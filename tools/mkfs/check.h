/* SPDX-License-Identifier: MIT */
#ifndef KILN_MKFS_CHECK_H
#define KILN_MKFS_CHECK_H

#include <stdbool.h>
#include "kiln.h"

/*
 * After parsing: checks the options together and loads the files they
 * name. One line and -1 on a bad combination or file.
 */
int mkfs_check_opts(struct kiln_mkfs_opts *o, bool blksz_given,
		    const char *fs_config_file, const char *product_out);
/* Frees what mkfs_check_opts loaded. */
void mkfs_check_free(void);

#endif
