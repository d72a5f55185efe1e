/* SPDX-License-Identifier: MIT */
/*
 * --file-contexts: SELinux labels from a text file_contexts, chosen as
 * libselinux's selabel_lookup does. One spec per line:
 *	REGEX [TYPE] CONTEXT
 * TYPE one of -- -d -c -b -s -l -p (regular file, directory, ...), absent
 * for any; CONTEXT "<<none>>" for no label. REGEX matches the whole path
 * ("/MOUNT/PATH"). The last matching spec wins, but a spec with no regex
 * metacharacters (an exact path; a backslash hides the next character, as
 * in libselinux 3.4) wins over any regex. PCRE's \d \w \s
 * (and \D \W \S) are taken; other PCRE-only syntax ("(?") is an error.
 * The compiled form (file_contexts.bin) is refused: give the text file.
 */
#ifndef KILN_WRITE_FCONTEXTS_H
#define KILN_WRITE_FCONTEXTS_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

struct kiln_fcspec {
	char *prefix;			/* the literal start: a quick test */
	bool exact;			/* libselinux's: it wins over regexes */
	bool literal;			/* no regex at all: prefix is all */
	regex_t re;			/* if not literal */
	uint32_t type;			/* S_IFMT bits, 0: any */
	char *context;			/* NULL: <<none>> */
};

struct kiln_fcontexts {
	struct kiln_fcspec *v;		/* regexes first, then exact paths,
					   each in file order */
	uint32_t nr;
};

int kiln_fcontexts_load(struct kiln_fcontexts *fc, const char *file);
/* The label of path (a file of type mode), or NULL for none. */
const char *kiln_fcontexts_lookup(const struct kiln_fcontexts *fc,
				  const char *path, uint32_t mode);
void kiln_fcontexts_free(struct kiln_fcontexts *fc);

#endif
