# Build rules for tools/: libkiln (tools/lib) and the thin programs on it.
# Release builds are static musl binaries for $(ARCH); the sanitizer build
# (ASan + UBSan need glibc's dynamic runtime) is a host build in out/asan.

LIB_SRCS  := $(wildcard tools/lib/*/*.c)
LIB_HDRS  := $(wildcard tools/lib/*.h tools/lib/*/*.h)
PROGRAMS  := mkfs.erofs fsck.erofs dump.erofs kiln-bootstate kiln-update kiln-bundle
MKFS_SRCS := $(wildcard tools/mkfs/*.c)
FSCK_SRCS := $(wildcard tools/fsck/*.c)
DUMP_SRCS := $(wildcard tools/dump/*.c)
BOOTSTATE_SRCS := $(wildcard tools/bootstate/*.c)
# the updates: the bundle format and checks (both programs), the
# device's installer (with the boot state's library), the host's maker
OTA_SRCS    := $(filter-out %_main.c,$(wildcard tools/ota/*.c))
OTA_STATE   := $(filter-out %/main.c,$(BOOTSTATE_SRCS))
OTA_LIBS    := -larchive -lsodium
# the one piece of libkiln the boot state and update programs take: whole
# writes (fullio.c needs nothing else of it)
FULLIO_SRCS := tools/lib/common/fullio.c

WARN   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
          -Wmissing-prototypes -Wpointer-arith -Wvla -Wformat=2
CSTD   := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
SYSROOT = $(OUT)/$(ARCH)/sysroot
DEPLIBS := -lzstd -llz4 -llzma -ldeflate -lpthread

# $(1): build dir, $(2): cc, $(3): cflags, $(4): ldflags
define tool_build
$(1)/obj/%.o: %.c $(LIB_HDRS) $(wildcard tools/*/*.h) | $(1)/obj
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -Itools/lib -c $$< -o $$@
$(1)/lib/libkiln.a: $(LIB_SRCS:%.c=$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
# mkfs.erofs reads --tar=f streams with libarchive
$(1)/bin/mkfs.erofs: $(MKFS_SRCS:%.c=$(1)/obj/%.o) $(1)/lib/libkiln.a
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ -larchive $(4)
$(1)/bin/fsck.erofs: $(FSCK_SRCS:%.c=$(1)/obj/%.o) $(1)/lib/libkiln.a
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ $(4)
$(1)/bin/dump.erofs: $(DUMP_SRCS:%.c=$(1)/obj/%.o) $(1)/lib/libkiln.a
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ $(4)
# kiln-bootstate needs nothing of libkiln but fullio: its own files.
$(1)/bin/kiln-bootstate: $(BOOTSTATE_SRCS:%.c=$(1)/obj/%.o) $(FULLIO_SRCS:%.c=$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ $(4)
# kiln-update and kiln-bundle: libarchive (tar streams) and libsodium
# (Ed25519, SHA-256), nothing of libkiln but fullio.
$(1)/bin/kiln-update: $(1)/obj/tools/ota/update_main.o $(OTA_SRCS:%.c=$(1)/obj/%.o) \
		$(OTA_STATE:%.c=$(1)/obj/%.o) $(FULLIO_SRCS:%.c=$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ $(OTA_LIBS) $(4)
$(1)/bin/kiln-bundle: $(1)/obj/tools/ota/bundle_main.o $(OTA_SRCS:%.c=$(1)/obj/%.o) \
		$(FULLIO_SRCS:%.c=$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(Q)$(2) $(3) -o $$@ $$^ $(OTA_LIBS) $(4)
$(1)/obj:
	@mkdir -p $$@
endef

Q ?= @
MUSL_CC    := scripts/musl-cc $(ARCH)
REL_CFLAGS := $(CSTD) $(WARN) -O2 -g -I$(SYSROOT)/include
REL_LDFLAGS = -static -Wl,--wrap=memcpy -L$(SYSROOT)/lib $(DEPLIBS)
ASAN_FLAGS := $(CSTD) $(WARN) -O1 -g -fno-omit-frame-pointer \
              -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_LDFLAGS := -fsanitize=address,undefined $(DEPLIBS)

$(eval $(call tool_build,$(OUT)/$(ARCH),$(MUSL_CC),$(REL_CFLAGS),$(REL_LDFLAGS)))
# musl's memcpy is slow on short copies (tools/musl/memcpy.c): the release
# binaries take theirs; the sanitizer build keeps glibc's, which ASan checks.
$(PROGRAMS:%=$(OUT)/$(ARCH)/bin/%): $(OUT)/$(ARCH)/obj/tools/musl/memcpy.o
# The EROFS tools, which allocate from several threads at once, take
# mimalloc's malloc (scripts/build-deps.sh says why): an object, so it
# replaces musl's wherever it comes on the line. deps puts it there. The
# single-threaded boot state and update programs keep musl's, 100 KB less.
$(patsubst %,$(OUT)/$(ARCH)/bin/%,mkfs.erofs fsck.erofs dump.erofs): $(SYSROOT)/lib/mimalloc.o
$(SYSROOT)/lib/mimalloc.o: | deps ;
ifneq ($(ARCH),asan)
$(eval $(call tool_build,$(OUT)/asan,gcc,$(ASAN_FLAGS),$(ASAN_LDFLAGS)))
endif

.PHONY: tools tools-asan deps
# The sysroot (static musl builds of lz4, zstd, xz, libdeflate) comes first.
deps: host-deps
	@scripts/build-deps.sh $(ARCH)
$(LIB_SRCS:%.c=$(OUT)/$(ARCH)/obj/%.o) $(patsubst %.c,$(OUT)/$(ARCH)/obj/%.o,$(wildcard tools/ota/*.c)): | deps
tools: deps $(PROGRAMS:%=$(OUT)/$(ARCH)/bin/%)
tools-asan: host-deps $(PROGRAMS:%=$(OUT)/asan/bin/%)
